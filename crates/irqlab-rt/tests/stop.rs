//! Stopping a run from another thread, as `irqlab rt` does on Ctrl-C: the jobs stop
//! issuing and reap what is in flight, so no completion is lost or doubled, and the report
//! covers the run so far, marked interrupted.

use irqlab_core::{Delivery, HandlerStyle, ModeratorKind, Policy};
use irqlab_report::{EXTRA_INTERRUPTED, RunReport};
use irqlab_rt::{LiveCounters, Media, MediaModel, RtConfig, StopFlag, run};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::time::Duration;

/// Two jobs on two CPU threads that would run for 30 s, with no ramp (every I/O counts).
fn long_jobs() -> Vec<irqlab_fio::JobSpec> {
    irqlab_fio::parse_str(
        "[global]\nioengine=io_uring\nrw=randread\nbs=4k\niodepth=32\niodepth_batch_submit=8\n\
         time_based\nruntime=30s\n[a]\nfilename=/dev/nvme0n1\n[b]\nfilename=/dev/nvme1n1\n",
        Path::new("t.fio"),
    )
    .unwrap()
}

fn cfg(stop: &Arc<AtomicBool>) -> RtConfig {
    RtConfig {
        cpu_threads: 2,
        controller_threads: 2,
        media: Media::Model(MediaModel::new(5_000, 400_000).unwrap()),
        stop: StopFlag::new(stop.clone()),
        ..RtConfig::default()
    }
}

fn extra(r: &RunReport, key: &str) -> f64 {
    r.extra
        .iter()
        .find(|(k, _)| k == key)
        .map_or_else(|| panic!("no {key}"), |(_, v)| *v)
}

/// Runs `p`, setting the stop flag once `after` I/Os have completed and every CPU thread
/// (each runs one of the jobs) has reaped some: on a loaded host one thread may start its
/// job well after the other has done `after`.
fn stopped_after(p: &Policy, after: u64) -> RunReport {
    let flag = Arc::new(AtomicBool::new(false));
    let live = Arc::new(LiveCounters::new());
    let c = RtConfig {
        live: Some(live.clone()),
        ..cfg(&flag)
    };
    std::thread::scope(|s| {
        s.spawn(|| {
            while !live.is_over() {
                if live.snapshot().is_some_and(|n| {
                    n.completions >= after && n.cpu_completions.iter().all(|&c| c > 0)
                }) {
                    flag.store(true, SeqCst);
                    return;
                }
                std::thread::sleep(Duration::from_millis(1));
            }
        });
        run(&long_jobs(), p, &c).unwrap_or_else(|e| panic!("{p:?}: {e}"))
    })
}

#[test]
fn a_stopped_run_reaps_what_is_in_flight_and_says_it_was_interrupted() {
    let irq_poll = HandlerStyle::IrqPoll {
        budget: 4,
        weight: 8,
    };
    let posted = Delivery::Posted { max_loop: 3 };
    for p in [
        Policy::default(),
        Policy {
            delivery: posted,
            handler: HandlerStyle::Threaded,
            ..Policy::default()
        },
        Policy {
            handler: irq_poll,
            ..Policy::default()
        },
        Policy {
            delivery: posted,
            moderator: ModeratorKind::NetDim,
            reap_after_submit: true,
            ..Policy::default()
        },
        Policy {
            moderator: ModeratorKind::Gsim,
            ..Policy::default()
        },
        Policy {
            delivery: Delivery::Polled,
            ..Policy::default()
        },
        Policy {
            delivery: Delivery::Hybrid,
            ..Policy::default()
        },
    ] {
        let r = stopped_after(&p, 2_000);
        assert!(r.flag(EXTRA_INTERRUPTED), "{p:?}: {:?}", r.extra);
        let ios = r.total_ios();
        assert!(ios >= 2_000, "{p:?}: ran until the stop: {ios}");
        // Each I/O submitted was reaped once: in flight at the stop, then completed.
        assert_eq!(extra(&r, "completions") as u64, ios, "{p:?}");
        assert_eq!(extra(&r, "unknown_cqes"), 0.0, "{p:?}");
        assert_eq!(extra(&r, "submit_overflow"), 0.0, "{p:?}");
        for j in &r.jobs {
            assert!(j.read.total_ios > 0, "{p:?}: both jobs ran");
            assert!(
                j.runtime_ns < 30_000_000_000,
                "{p:?}: stopped before its end"
            );
        }
        let text = irqlab_report::text::render(&r);
        assert!(
            text.contains("interrupted: the run was stopped (Ctrl-C)"),
            "{text}"
        );
    }
}

#[test]
fn a_flag_set_before_the_start_issues_nothing_and_one_never_set_changes_nothing() {
    let flag = Arc::new(AtomicBool::new(true));
    let r = run(&long_jobs(), &Policy::default(), &cfg(&flag)).unwrap();
    assert!(r.flag(EXTRA_INTERRUPTED));
    assert_eq!(r.total_ios(), 0);
    assert_eq!(extra(&r, "completions"), 0.0);

    let flag = Arc::new(AtomicBool::new(false));
    let short = irqlab_fio::parse_str(
        "[j]\nfilename=/dev/nvme0n1\nrw=randread\nbs=4k\niodepth=8\nnumber_ios=500\n",
        Path::new("t.fio"),
    )
    .unwrap();
    let r = run(&short, &Policy::default(), &cfg(&flag)).unwrap();
    assert!(!r.flag(EXTRA_INTERRUPTED));
    assert!(r.extra.iter().all(|(k, _)| k != EXTRA_INTERRUPTED));
    assert_eq!(r.total_ios(), 500);
}
