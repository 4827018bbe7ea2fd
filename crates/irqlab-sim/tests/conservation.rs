//! Every submitted I/O completes and is reaped exactly once; every device message is
//! either handled or merged into a pending one, and the counts add up.

mod common;
use common::*;
use irqlab_core::{Delivery, DeviceCoalescing, HandlerStyle, ModeratorKind, Policy};
use irqlab_report::RunReport;

fn check(r: &RunReport, what: &str) {
    let submitted = extra(r, "ios_submitted");
    assert!(submitted > 100.0, "{what}: too few I/Os ({submitted})");
    assert_eq!(extra(r, "ios_completed"), submitted, "{what}: completed");
    assert_eq!(extra(r, "ios_reaped"), submitted, "{what}: reaped");
    assert_eq!(extra(r, "cqes_posted"), submitted, "{what}: CQEs posted");
    // No ramp time: the window covers the whole run, so the job counts are the totals.
    assert_eq!(r.total_ios() as f64, submitted, "{what}: job I/O counts");
    let reaped_by_queues: u64 = r.vectors.iter().map(|v| v.completions).sum();
    assert_eq!(
        reaped_by_queues as f64, submitted,
        "{what}: per-vector completions"
    );
    let messages: u64 = r.vectors.iter().map(|v| v.messages).sum();
    let handled = r.vector_interrupts();
    let merged = extra(r, "msi_merged") as u64;
    // A message that finds its vector disabled is pended; enable_irq retriggers it with a
    // self-IPI, an interrupt without a message.
    let pended = extra(r, "irq_pended") as u64;
    let resent = extra(r, "irq_resent") as u64;
    assert_eq!(
        messages + resent,
        handled + merged + pended,
        "{what}: messages + retriggers = handled + merged + pended"
    );
    let pmn: u64 = r.cpus.iter().map(|c| c.pmn).sum();
    if r.vectors
        .iter()
        .any(|v| v.chip == irqlab_report::CHIP_REMAPPED)
    {
        assert_eq!(pmn, 0, "{what}: no PMN in remapped mode");
        assert_eq!(
            r.notifications(),
            handled,
            "{what}: one notification per handler call"
        );
    }
    let hardirqs: u64 = r.cpus.iter().map(|c| c.hardirqs).sum();
    assert!(
        hardirqs >= r.notifications(),
        "{what}: every notification is an entry"
    );
}

#[test]
fn counts_add_up_under_every_policy() {
    let base = Policy::default();
    let cases = [
        ("remapped", base),
        (
            "posted",
            Policy {
                delivery: Delivery::Posted { max_loop: 3 },
                ..base
            },
        ),
        (
            "coalesced",
            Policy {
                coalescing: DeviceCoalescing::Nvme {
                    thr: 7,
                    time_100us: 1,
                },
                ..base
            },
        ),
        (
            "threaded",
            Policy {
                handler: HandlerStyle::Threaded,
                ..base
            },
        ),
        (
            "irq_poll",
            Policy {
                handler: HandlerStyle::IrqPoll {
                    budget: 8,
                    weight: 4,
                },
                ..base
            },
        ),
    ];
    for (what, policy) in cases {
        check(&run(FOUR_DISKS, policy, &[], 1), what);
        check(
            &run(SHARED_QUEUE, policy, &["devices.0.queues=1"], 1),
            &format!("{what}, shared queue"),
        );
    }
    for moderator in [
        ModeratorKind::NetDim,
        ModeratorKind::RdmaDim,
        ModeratorKind::IrqAm,
        ModeratorKind::Gsim,
    ] {
        let policy = Policy { moderator, ..base };
        check(&run(FOUR_DISKS, policy, &[], 1), &format!("{moderator}"));
    }
    let flood = Policy {
        flood_detection: true,
        ..base
    };
    check(
        &run(
            SHARED_QUEUE,
            flood,
            &["devices.0.queues=1", "devices.0.max_iops=4000000"],
            1,
        ),
        "flood detection",
    );
    let ras = Policy {
        reap_after_submit: true,
        ..base
    };
    check(
        &run(SHARED_QUEUE, ras, &["devices.0.queues=2"], 1),
        "reap after submit",
    );
}

#[test]
fn polled_runs_conserve_and_raise_no_interrupts() {
    let job = "[p]\nioengine=io_uring\nhipri\nrw=randread\nbs=4k\niodepth=8\nfilename=nvme0n1\ncpus_allowed=0\nnumber_ios=500\n";
    let r = run(job, Policy::default(), &[], 1);
    check(&r, "polled");
    assert_eq!(r.vector_interrupts(), 0);
    assert!(
        r.vectors
            .iter()
            .any(|v| v.chip == "POLLED" && v.completions == 500)
    );
}

#[test]
fn batch_completion_after_the_doorbell_conserves_under_every_handler() {
    // A long nvme_pci_complete_batch (2 us per request) after the doorbell: the device
    // signals again while requests complete, under every delivery and handler style.
    let sets = ["devices.0.queues=1", "kernel.complete_io_ns=2000"];
    for delivery in [Delivery::Remapped, Delivery::Posted { max_loop: 3 }] {
        for handler in [
            HandlerStyle::Hardirq,
            HandlerStyle::Threaded,
            HandlerStyle::IrqPoll {
                budget: 2,
                weight: 2,
            },
        ] {
            let policy = Policy {
                delivery,
                handler,
                ..Policy::default()
            };
            check(
                &run(SHARED_QUEUE, policy, &sets, 1),
                &format!("{delivery:?} {handler:?}"),
            );
        }
        let flood = Policy {
            delivery,
            flood_detection: true,
            ..Policy::default()
        };
        let r = run(
            SHARED_QUEUE,
            flood,
            &[sets[0], sets[1], "devices.0.max_iops=4000000"],
            1,
        );
        check(&r, &format!("{delivery:?} flood detection"));
        let rescue: u64 = r.cpus.iter().map(|c| c.irq_thread_ns).sum();
        assert!(rescue > 0, "{delivery:?}: the rescue thread ran");
    }
}

/// The CPU time the job threads were charged and the CPUs' usr and sys time agree: a
/// thread's last step before it blocks (the pvsync2 read call) is its own, not the next
/// thread's or nobody's.
fn job_time_is_cpu_time(r: &RunReport, what: &str) {
    let jobs: u64 = r.jobs.iter().map(|j| j.usr_ns + j.sys_ns).sum();
    let cpus: u64 = r.cpus.iter().map(|c| c.usr_ns + c.sys_ns).sum();
    let diff = jobs.abs_diff(cpus) as f64;
    assert!(
        diff <= 0.01 * cpus as f64,
        "{what}: jobs charged {jobs} ns of usr+sys, the CPUs ran {cpus} ns"
    );
}

#[test]
fn a_blocking_threads_last_step_is_charged_to_it() {
    // QD1 pvsync2: every I/O ends in a blocking read call.
    let qd1 = "[q]\nioengine=pvsync2\nrw=randread\nbs=4k\niodepth=1\nfilename=nvme0n1\ncpus_allowed=0\nruntime=3ms\ntime_based\n";
    job_time_is_cpu_time(&run(qd1, Policy::default(), &[], 1), "one QD1 job");
    // Several jobs sharing CPU 0, so that the next thread could take the charge.
    let shared = "[global]\nioengine=libaio\nrw=randread\nbs=4k\niodepth=4\nruntime=3ms\ntime_based\ncpus_allowed=0\n[a]\nfilename=nvme0n1\n[b]\nfilename=nvme1n1\n[c]\nfilename=nvme2n1\n";
    job_time_is_cpu_time(
        &run(shared, Policy::default(), &[], 1),
        "three jobs on CPU 0",
    );
}
