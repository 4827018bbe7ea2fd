//! Progress on an oversubscribed host: more CPU threads and more controller threads than
//! host CPUs, plus a thread spinning beside them. There a 10 ms time-based job can end
//! its runtime before its first batch completes, because the host runs the other
//! threads; that is starvation, and it must never be a lost wake-up. Jobs here are
//! bounded by I/O counts, so the host sets how long the test takes, never its verdict:
//! every job must complete all its I/Os (1024 batches, far beyond its first), and the
//! lost-wake-up audit must find no CPU thread asleep next to work whose delivery ended
//! without waking it. A run that completes nothing for two minutes fails.

use irqlab_core::{Delivery, HandlerStyle, Policy};
use irqlab_rt::{Media, MediaModel, RtConfig, run};
use rustix::thread::{CpuSet, sched_getaffinity, sched_setaffinity};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};

const IODEPTH: u64 = 16;
const IOS_PER_JOB: u64 = 1024 * IODEPTH;

fn extra(r: &irqlab_report::RunReport, key: &str) -> f64 {
    r.extra
        .iter()
        .find(|(k, _)| k == key)
        .map_or_else(|| panic!("no {key}"), |(_, v)| *v)
}

/// Confines the calling thread, and the threads it starts, to at most two host CPUs.
fn confine_to_two_cpus() -> usize {
    let allowed = sched_getaffinity(None).unwrap();
    let mut two = CpuSet::new();
    let mut n = 0;
    for c in (0..CpuSet::MAX_CPU).filter(|&c| allowed.is_set(c)).take(2) {
        two.set(c);
        n += 1;
    }
    sched_setaffinity(None, &two).unwrap();
    n
}

#[test]
fn every_job_progresses_and_no_wake_up_is_lost_on_an_oversubscribed_host() {
    let host = confine_to_two_cpus();
    // Each of `threads` jobs on its own CPU thread and its own controller thread.
    let threads = host + 2;
    let mut text = format!(
        "[global]\nioengine=libaio\nrw=randread\nbs=4k\niodepth={IODEPTH}\n\
         iodepth_batch_submit=4\nnumber_ios={IOS_PER_JOB}\n"
    );
    for i in 0..threads {
        text.push_str(&format!(
            "[j{i}]\nfilename=/dev/nvme{i}n1\ncpus_allowed={i}\n"
        ));
    }
    let jobs = irqlab_fio::parse_str(&text, Path::new("t.fio")).unwrap();
    let cfg = RtConfig {
        cpu_threads: threads,
        controller_threads: threads,
        media: Media::Model(MediaModel::new(10_000, 500_000).unwrap()),
        stall_timeout_ns: 120_000_000_000,
        ..RtConfig::default()
    };
    let irq_poll = HandlerStyle::IrqPoll {
        budget: 2,
        weight: 4,
    };
    for p in [
        Policy::default(),
        Policy {
            delivery: Delivery::Posted { max_loop: 3 },
            handler: HandlerStyle::Threaded,
            ..Policy::default()
        },
        Policy {
            handler: irq_poll,
            ..Policy::default()
        },
    ] {
        let spin = AtomicBool::new(true);
        let r = std::thread::scope(|s| {
            s.spawn(|| {
                while spin.load(Relaxed) {
                    std::hint::spin_loop();
                }
            });
            let r = run(&jobs, &p, &cfg);
            spin.store(false, Relaxed);
            r
        })
        .unwrap_or_else(|e| panic!("{p:?}: {e}"));
        assert_eq!(r.jobs.len(), threads);
        for j in &r.jobs {
            assert_eq!(j.read.total_ios, IOS_PER_JOB, "{p:?}: {}", j.name);
        }
        assert_eq!(
            extra(&r, "completions") as u64,
            threads as u64 * IOS_PER_JOB
        );
        assert_eq!(extra(&r, "unknown_cqes"), 0.0, "{p:?}");
        assert_eq!(extra(&r, "lost_wakeups"), 0.0, "{p:?}");
        // How much the host took: shown, not asserted (it depends on the host).
        let stolen: u64 = r.measured.as_ref().unwrap().cpu_stolen_ns.iter().sum();
        eprintln!(
            "{:?}/{:?}: wall {:.1} ms, controllers off-CPU {:.0}%, CPU threads' stolen time {:.1} ms",
            p.delivery,
            p.handler,
            r.measured.as_ref().unwrap().wall_ns as f64 / 1e6,
            extra(&r, "controller_off_cpu_pct"),
            stolen as f64 / 1e6
        );
    }
}
