//! The kernel mechanisms the runtime drives from irqlab-core's state machines, on real
//! threads: softirq limits and ksoftirqd, GSIM, flood detection, hybrid polling, the
//! moderators' work items. Every assertion is a count or a direction with a wide margin,
//! so a loaded 2-core host passes as a quiet one does.

use irqlab_core::{Delivery, HandlerStyle, ModeratorKind, Policy};
use irqlab_report::RunReport;
use irqlab_rt::{Media, MediaModel, RtConfig, run};
use std::path::Path;

fn jobs(text: &str) -> Vec<irqlab_fio::JobSpec> {
    irqlab_fio::parse_str(text, Path::new("t.fio")).unwrap()
}

fn uring(iodepth: u32, batch: u32, ios: u64) -> Vec<irqlab_fio::JobSpec> {
    jobs(&format!(
        "[j]\nioengine=io_uring\nfilename=/dev/nvme0n1\nrw=randread\nbs=4k\n\
         iodepth={iodepth}\niodepth_batch_submit={batch}\niodepth_batch_complete_min=1\n\
         number_ios={ios}\n"
    ))
}

fn cfg(latency_ns: u64, iops: u64) -> RtConfig {
    RtConfig {
        media: Media::Model(MediaModel::new(latency_ns, iops).unwrap()),
        stall_timeout_ns: 5_000_000_000,
        ..RtConfig::default()
    }
}

fn extra(r: &RunReport, key: &str) -> f64 {
    r.extra
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| *v)
        .unwrap_or_else(|| panic!("no {key} in {:?}", r.extra))
}

fn check_exact(r: &RunReport, ios: u64) {
    assert_eq!(r.total_ios(), ios);
    assert_eq!(extra(r, "completions") as u64, ios, "each completion once");
    assert_eq!(extra(r, "unknown_cqes"), 0.0);
    assert_eq!(extra(r, "submit_overflow"), 0.0);
}

#[test]
fn a_flood_on_one_cpu_thread_hands_softirq_work_to_ksoftirqd() {
    // 1024 in flight on a 10 M IOPS device, one CQE per poll call: every pass spends the
    // 256 budget, the softirq re-raises itself, and the restart rule (a job made
    // runnable sets need_resched; else 10 passes or 2 ms) hands the rest to ksoftirqd.
    let p = Policy {
        handler: HandlerStyle::IrqPoll {
            budget: 1,
            weight: 1,
        },
        ..Policy::default()
    };
    let r = run(&uring(1024, 64, 200_000), &p, &cfg(1_000, 10_000_000)).unwrap();
    check_exact(&r, 200_000);
    let cpu = &r.cpus[0];
    assert!(extra(&r, "softirq_handovers") > 0.0, "{:?}", r.extra);
    assert!(extra(&r, "ksoftirqd_runs") > 0.0);
    assert!(extra(&r, "ksoftirqd_completions") > 0.0);
    assert!(cpu.ksoftirqd_ns > 0, "ksoftirqd time is shown");
    assert!(cpu.ksoftirqd_wakeups > 0, "ksoftirqd was woken from sleep");
    // Only a sleeping ksoftirqd is woken: never more wake-ups than hand-overs.
    assert!(cpu.ksoftirqd_wakeups as f64 <= extra(&r, "softirq_handovers"));
    assert!(extra(&r, "ksoftirqd_runs") <= extra(&r, "softirq_invocations"));
}

#[test]
fn gsim_holds_vectors_until_its_timer_and_cuts_interrupts_per_io() {
    let none = run(
        &uring(32, 8, 6_000),
        &Policy::default(),
        &cfg(10_000, 500_000),
    )
    .unwrap();
    let p = Policy {
        moderator: ModeratorKind::Gsim,
        ..Policy::default()
    };
    let gsim = run(&uring(32, 8, 6_000), &p, &cfg(10_000, 500_000)).unwrap();
    check_exact(&gsim, 6_000);
    assert!(extra(&gsim, "gsim_disables") > 0.0, "{:?}", gsim.extra);
    assert!(extra(&gsim, "gsim_timer_set") > 0.0);
    // The suggested 100 µs delay holds each vector ten media latencies: completions pile
    // up behind it, so each handler run reaps more.
    let per_irq = |r: &RunReport| r.total_ios() as f64 / r.vector_interrupts() as f64;
    assert!(
        per_irq(&gsim) > per_irq(&none),
        "I/Os per interrupt: gsim {} vs none {}",
        per_irq(&gsim),
        per_irq(&none)
    );
}

#[test]
fn flood_detection_measures_interrupt_gaps_and_rescues_nothing_here() {
    let p = Policy {
        flood_detection: true,
        ..Policy::default()
    };
    let r = run(&uring(32, 8, 3_000), &p, &cfg(5_000, 400_000)).unwrap();
    check_exact(&r, 3_000);
    assert!(extra(&r, "flood_min_avg_interval_ns") > 0.0);
    // Each runtime queue serves one CPU thread: the 2019 patch asks for no rescue thread.
    assert_eq!(extra(&r, "flood_rescued"), 0.0);
    assert!(extra(&r, "flooded_interrupts") <= r.vector_interrupts() as f64);
}

#[test]
fn hybrid_polling_sleeps_half_the_fastest_completion_before_polling() {
    let qd1 = jobs(
        "[j]\nioengine=io_uring\nfilename=/dev/nvme0n1\nrw=randread\nbs=4k\niodepth=1\n\
         number_ios=2000\n",
    );
    // 200 µs media: every completion takes at least that, so each sleep is at least
    // 100 µs minus the time from submission to the sleep (timers never fire early).
    let c = cfg(200_000, 500_000);
    let polled = run(
        &qd1,
        &Policy {
            delivery: Delivery::Polled,
            ..Policy::default()
        },
        &c,
    )
    .unwrap();
    assert_eq!(
        extra(&polled, "cpu_thread_sleeps"),
        0.0,
        "classic polling spins"
    );
    let p = Policy {
        delivery: Delivery::Hybrid,
        ..Policy::default()
    };
    let hybrid = run(&qd1, &p, &c).unwrap();
    check_exact(&hybrid, 2_000);
    assert_eq!(hybrid.vectors[0].chip, "POLLED");
    assert_eq!(hybrid.vectors[0].messages, 0);
    // Every wait after the first completion sleeps once.
    let sleeps = extra(&hybrid, "hybrid_sleeps");
    assert!(sleeps > 1_000.0, "{:?}", hybrid.extra);
    assert!(
        extra(&hybrid, "hybrid_sleep_ns") > sleeps * 50_000.0,
        "{:?}",
        hybrid.extra
    );
    assert!(hybrid.cpus[0].idle_ns > 0);
}

#[test]
fn moderator_levels_reach_the_device_through_a_measured_work_item() {
    let sat = jobs(
        "[j]\nioengine=io_uring\nfilename=/dev/nvme0n1\nrw=randread\nbs=4k\niodepth=128\n\
         iodepth_batch_submit=16\niodepth_batch_complete_min=1\ntime_based\nruntime=150ms\n",
    );
    for m in [
        ModeratorKind::NetDim,
        ModeratorKind::RdmaDim,
        ModeratorKind::IrqAm,
    ] {
        let p = Policy {
            moderator: m,
            delivery: Delivery::Posted { max_loop: 3 },
            ..Policy::default()
        };
        let r = run(&sat, &p, &cfg(10_000, 500_000)).unwrap();
        let programs = extra(&r, "moderator_programs");
        // Every level decided was programmed by the kworker, and acknowledged.
        assert_eq!(extra(&r, "moderator_work_items"), programs, "{m:?}");
        let course = r.vectors[0]
            .moderation
            .as_ref()
            .expect("a moderated vector");
        assert_eq!(course.programs as f64, programs);
        assert!(course.level_ns.iter().sum::<u64>() > 0, "{m:?}: {course:?}");
        assert!(course.final_level < course.level_ns.len());
        if programs > 0.0 {
            assert!(extra(&r, "moderator_work_delay_mean_ns") > 0.0, "{m:?}");
            assert!(extra(&r, "kworker_wakeups") <= programs);
        }
    }
}

#[test]
fn threaded_handlers_and_reap_after_submit_share_the_cq_by_trylock() {
    let p = Policy {
        handler: HandlerStyle::Threaded,
        reap_after_submit: true,
        ..Policy::default()
    };
    let r = run(&uring(32, 8, 5_000), &p, &cfg(5_000, 400_000)).unwrap();
    check_exact(&r, 5_000);
    assert!(extra(&r, "irq_thread_runs") > 0.0);
    assert!(extra(&r, "reaped_after_submit") > 0.0, "{:?}", r.extra);
    // The threaded handler leaves hardirq work to the thread: its CPU row shows it.
    assert!(r.cpus[0].irq_thread_ns > 0);
}
