//! A machine that splits into independent parts (each drive with its own CPU and root
//! port, nothing shared on the notification path) runs them on threads and reports the
//! same bytes as a one-thread run; a machine whose parts share a delivery unit, a queue
//! or a CPU does not split.

mod common;
use common::*;
use irqlab_core::{Delivery, HandlerStyle, ModeratorKind, Policy};
use irqlab_report::RunReport;
use irqlab_sim::{Platform, SimOptions, independent_parts, simulate, simulate_parallel};
use std::path::PathBuf;

/// The C3 rig: five drives, each on its own x4 port.
fn c3(sets: &[&str]) -> Platform {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../platforms/optane-gen2.toml");
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    Platform::load(&p, &sets).expect("optane-gen2 loads")
}

/// One io_uring job per drive, each pinned to its own CPU.
fn per_drive_jobs(hipri: bool) -> String {
    let mut t = String::from(
        "[global]\nioengine=io_uring\nrw=randread\nbs=512\niodepth=64\n\
         iodepth_batch_submit=16\niodepth_batch_complete_min=16\ntime_based\nruntime=3ms\n\
         ramp_time=1ms\n",
    );
    if hipri {
        t.push_str("hipri\n");
    }
    for d in 0..4 {
        t.push_str(&format!(
            "[d{d}]\nfilename=/dev/nvme{d}n1\ncpus_allowed={d}\n"
        ));
    }
    t
}

fn same(a: &RunReport, b: &RunReport, what: &str) {
    let (a, b) = (format!("{a:?}"), format!("{b:?}"));
    if let Some(at) = a.bytes().zip(b.bytes()).position(|(x, y)| x != y) {
        let from = a[..at].rfind("name:").unwrap_or(at.saturating_sub(200));
        panic!(
            "{what}: reports differ at byte {at}:\n one: ...{}\nmany: ...{}",
            &a[from..(at + 80).min(a.len())],
            &b[from..(at + 80).min(b.len())]
        );
    }
    assert_eq!(a.len(), b.len(), "{what}: report lengths");
}

fn check(text: &str, platform: &Platform, policy: Policy, parts: usize, what: &str) {
    let jobs = jobs(text);
    let opts = SimOptions::overriding(3);
    assert_eq!(
        independent_parts(&jobs, platform, &policy, &opts).expect("builds"),
        parts,
        "{what}: parts"
    );
    let one = simulate(&jobs, platform, &policy, &opts).expect("runs");
    assert!(one.total_ios() > 1000, "{what}: too few I/Os");
    for threads in [2, 3, 8] {
        let many = simulate_parallel(&jobs, platform, &policy, &opts, threads).expect("runs");
        same(&one, &many, &format!("{what} on {threads} threads"));
    }
}

#[test]
fn polled_drives_split_and_report_the_same_bytes() {
    let polled = Policy {
        delivery: Delivery::Polled,
        ..Policy::default()
    };
    // Four drives with their jobs (the CPUs that only tick ride with the first).
    check(&per_drive_jobs(true), &c3(&[]), polled, 4, "polled");
}

#[test]
fn interrupt_driven_drives_split_when_the_path_is_not_shared() {
    // No delivery unit time: each port's IOMMU engine delivers on its own.
    let p = c3(&["uncore.ubox_ns=0"]);
    for (what, policy) in [
        ("remapped", Policy::default()),
        (
            "posted",
            Policy {
                delivery: Delivery::Posted { max_loop: 3 },
                ..Policy::default()
            },
        ),
        (
            "irq_poll",
            Policy {
                handler: HandlerStyle::IrqPoll {
                    budget: 64,
                    weight: 64,
                },
                ..Policy::default()
            },
        ),
        (
            "net_dim",
            Policy {
                moderator: ModeratorKind::NetDim,
                ..Policy::default()
            },
        ),
    ] {
        check(&per_drive_jobs(false), &p, policy, 4, what);
    }
}

#[test]
fn a_shared_delivery_unit_or_queue_keeps_the_machine_whole() {
    // The socket's delivery unit serves every port: the drives interact through it.
    check(
        &per_drive_jobs(false),
        &c3(&[]),
        Policy::default(),
        1,
        "shared delivery unit",
    );
    // Fifteen CPUs submit to one queue.
    check(
        SHARED_QUEUE,
        &platform(&[]),
        Policy::default(),
        1,
        "shared queue",
    );
}

#[test]
fn a_split_run_stops_on_its_flag_with_a_report_marked_interrupted() {
    use irqlab_sim::StopFlag;
    use std::sync::Arc;
    use std::sync::atomic::AtomicBool;
    let polled = Policy {
        delivery: Delivery::Polled,
        ..Policy::default()
    };
    // A run of 10 s of simulated time, stopped before it starts: every part stops at
    // once, the merged report says so and nothing panics.
    let long = per_drive_jobs(true).replace("runtime=3ms", "runtime=10s");
    let jobs = jobs(&long);
    let opts = SimOptions::overriding(3).stopped_by(StopFlag::new(Arc::new(AtomicBool::new(true))));
    assert_eq!(
        independent_parts(&jobs, &c3(&[]), &polled, &opts).unwrap(),
        4
    );
    let r = simulate_parallel(&jobs, &c3(&[]), &polled, &opts, 4).expect("runs");
    assert!(r.flag(irqlab_report::EXTRA_INTERRUPTED), "{:?}", r.extra);
    assert!(!r.flag(irqlab_report::EXTRA_CUT_SHORT), "{:?}", r.extra);
    assert!(r.end_ns < 1_000_000_000, "stopped at {} ns", r.end_ns);
}
