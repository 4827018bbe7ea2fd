//! RDMA completion queues (C5): rdma_dim, fed from every handler call, climbs the
//! moderation levels under load and cuts interrupts per I/O; counts still add up, on the
//! host and on the target's CPUs.

mod common;
use common::*;
use irqlab_core::{ModeratorKind, Policy};
use irqlab_report::RunReport;
use irqlab_sim::{Observer, Platform, SimOptions, simulate_observed};
use std::path::PathBuf;

/// One fio job on one nvme-rdma queue and its target core.
const ONE_QUEUE: &str = "\
[global]
ioengine=libaio
rw=randread
bs=512
iodepth=64
iodepth_batch_submit=8
iodepth_batch_complete_min=1
time_based
runtime=10ms
ramp_time=20ms

[q]
filename=/dev/nvme0n1
cpus_allowed=0
";

/// The highest moderation level any vector was programmed to.
#[derive(Default)]
struct Levels {
    top: f64,
    changes: u64,
}

impl Observer for Levels {
    fn wants_counters(&self) -> bool {
        true
    }
    fn counter(&mut self, _now: u64, name: &str, index: usize, value: f64) {
        // Vector 0 is the host's queue; the target's vectors run their own moderators.
        if name == "moderation_level" && index == 0 {
            self.top = self.top.max(value);
            self.changes += 1;
        }
    }
}

/// The C5 rig: one queue talks to one of the target's cores.
fn rdma_platform() -> Platform {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../platforms/nvmeof-rdma-cx5.toml");
    Platform::load(&p, &[]).expect("nvmeof-rdma-cx5 loads")
}

fn run_rdma(moderator: ModeratorKind, text: &str) -> (RunReport, Levels) {
    let policy = Policy {
        moderator,
        ..Policy::default()
    };
    let mut levels = Levels::default();
    let r = simulate_observed(
        &jobs(text),
        &rdma_platform(),
        &policy,
        &SimOptions::overriding(5),
        &mut levels,
    )
    .unwrap_or_else(|e| panic!("simulation runs: {e}"));
    (r, levels)
}

fn ios_per_interrupt(r: &RunReport) -> f64 {
    r.total_ios() as f64 / r.vector_interrupts() as f64
}

#[test]
fn rdma_dim_climbs_under_load_and_cuts_interrupts_per_io() {
    let (none, lv_none) = run_rdma(ModeratorKind::None, ONE_QUEUE);
    let (dim, lv_dim) = run_rdma(ModeratorKind::RdmaDim, ONE_QUEUE);
    assert_eq!(lv_none.changes, 0, "no moderator, no levels");
    assert!(
        lv_dim.top >= 5.0,
        "rdma_dim reached level {} only ({} changes)",
        lv_dim.top,
        lv_dim.changes
    );
    assert!(
        ios_per_interrupt(&dim) > 3.0 * ios_per_interrupt(&none),
        "I/Os per interrupt: rdma_dim {} vs none {}",
        ios_per_interrupt(&dim),
        ios_per_interrupt(&none)
    );
    // The report carries the course: programs as the tracer saw them, time at levels
    // above 0, and the final level among those visited.
    assert!(none.vectors.iter().all(|v| v.moderation.is_none()));
    let m = dim.vectors[0]
        .moderation
        .as_ref()
        .expect("rdma_dim's course");
    assert_eq!(m.moderator, "rdma_dim");
    assert_eq!(m.programs, lv_dim.changes);
    assert!(m.level_ns[1..].iter().sum::<u64>() > 0, "{m:?}");
    assert!(m.final_level <= lv_dim.top as usize);
    assert!(m.level_ns.len() > m.final_level);
    // Both sides are CPU-bound: the interrupt time saved becomes I/O.
    assert!(
        dim.total_ios() > none.total_ios(),
        "rdma_dim {} vs none {} I/Os",
        dim.total_ios(),
        none.total_ios()
    );
}

#[test]
fn rdma_runs_conserve_every_io_and_message() {
    let text = ONE_QUEUE.replace("ramp_time=20ms\n", "");
    for m in [ModeratorKind::None, ModeratorKind::RdmaDim] {
        let (r, _) = run_rdma(m, &text);
        let submitted = extra(&r, "ios_submitted");
        assert!(submitted > 100.0, "{m:?}");
        for key in ["ios_completed", "ios_reaped"] {
            assert_eq!(extra(&r, key), submitted, "{m:?}: {key}");
        }
        // nvme-rdma signals every SEND: the host CQ gets its work completion and the
        // response's RECV for each I/O.
        assert_eq!(
            extra(&r, "cqes_posted"),
            2.0 * submitted,
            "{m:?}: cqes_posted"
        );
        assert_eq!(r.total_ios() as f64, submitted, "{m:?}");
        let messages: u64 = r.vectors.iter().map(|v| v.messages).sum();
        let merged = extra(&r, "msi_merged") as u64;
        assert_eq!(messages, r.vector_interrupts() + merged, "{m:?}");
        // One event per arm on each side: fewer messages than work completions (two per
        // I/O on each side: the CQ arm gate), and the target's CQ saw every command.
        for side in [false, true] {
            let sent: u64 = r
                .vectors
                .iter()
                .filter(|v| v.name.contains("-target") == side)
                .map(|v| v.messages)
                .sum();
            let done: u64 = r
                .vectors
                .iter()
                .filter(|v| v.name.contains("-target") == side)
                .map(|v| v.completions)
                .sum();
            assert!(
                (sent as f64) < 2.0 * submitted,
                "{m:?} target={side}: {sent} messages"
            );
            assert_eq!(done as f64, submitted, "{m:?} target={side}");
        }
    }
}

/// Host I/Os per interrupt of the host's queue (vector 0), and the share of CPU 0's busy
/// time spent in the interrupt path (hardirq and softirq).
fn host_side(r: &RunReport) -> (f64, f64) {
    let v = &r.vectors[0];
    let c = &r.cpus[0];
    let irq = (c.hardirq_ns + c.softirq_ns + c.ksoftirqd_ns) as f64;
    let busy = irq + (c.usr_ns + c.sys_ns + c.irq_thread_ns) as f64;
    (v.completions as f64 / v.messages.max(1) as f64, irq / busy)
}

#[test]
fn without_moderation_each_work_completion_costs_the_host_an_interrupt() {
    // nvme-rdma's two work completions per I/O (the SEND's, a round trip after the
    // capsule, and the response's RECV) reach the host CQ apart: without moderation most
    // take an EQ interrupt and an IRQ_POLL softirq of their own, and that path fills the
    // host CPU; rdma_dim's levels gather them.
    let (none, _) = run_rdma(ModeratorKind::None, ONE_QUEUE);
    let (dim, _) = run_rdma(ModeratorKind::RdmaDim, ONE_QUEUE);
    let (per_none, irq_none) = host_side(&none);
    let (per_dim, _) = host_side(&dim);
    assert!(
        per_none < 1.0,
        "{per_none:.2} I/Os per host interrupt without moderation"
    );
    assert!(
        per_dim > 3.0 * per_none,
        "{per_dim:.2} vs {per_none:.2} I/Os per interrupt"
    );
    assert!(
        irq_none > 0.4,
        "interrupt path {:.0}% of the host CPU",
        100.0 * irq_none
    );
    let c = &none.cpus[0];
    let all = c.usr_ns + c.sys_ns + c.hardirq_ns + c.softirq_ns + c.ksoftirqd_ns;
    let idle = c.idle_ns as f64 / (all + c.irq_thread_ns + c.idle_ns) as f64;
    assert!(
        idle < 0.05,
        "the host CPU is the limit: {:.1}% idle",
        100.0 * idle
    );
}

/// Messages and CPU notifications as an observer (a trace, a timeline) counts them.
#[derive(Default)]
struct Seen {
    messages: u64,
    notifications: u64,
}

impl Observer for Seen {
    fn message(&mut self, _now: u64, _vector: usize) {
        self.messages += 1;
    }
    fn notification(&mut self, _now: u64, _cpu: usize, _pmn: bool) {
        self.notifications += 1;
    }
}

#[test]
fn observers_see_the_target_cpus_interrupts_as_notifications() {
    // Without moderation every message, the host's through the router and the target
    // NIC's straight to its CPU, is one notification: a trace must not count the target's
    // messages without their interrupts.
    let mut seen = Seen::default();
    let r = simulate_observed(
        &jobs(ONE_QUEUE),
        &rdma_platform(),
        &Policy::default(),
        &SimOptions::overriding(5),
        &mut seen,
    )
    .unwrap_or_else(|e| panic!("simulation runs: {e}"));
    assert!(r.total_ios() > 1000);
    let gap = seen.messages.abs_diff(seen.notifications);
    assert!(
        gap * 100 <= seen.messages,
        "{} messages, {} notifications",
        seen.messages,
        seen.notifications
    );
}

/// Eight jobs of 4 KiB reads, enough to fill a network scaled down to 2 B/ns; the ramp
/// gives rdma_dim time to climb.
const WIRE_BOUND: &str = "\
[global]
ioengine=libaio
rw=randread
bs=4k
iodepth=64
iodepth_batch_submit=16
iodepth_batch_complete_min=1
numjobs=8
cpus_allowed=0-7
cpus_allowed_policy=split
time_based
runtime=3ms
ramp_time=10ms

[q]
filename=/dev/nvme0n1
";

/// Host I/Os per host interrupt (the host's vectors come first) for a run whose
/// network (2 B/ns) is in the target NIC (`at_target`) or in the host's PCIe port.
fn host_ios_per_interrupt(moderator: ModeratorKind, at_target: bool) -> f64 {
    let p = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../platforms/nvmeof-rdma-cx5.toml");
    let sets: Vec<String> = if at_target {
        vec!["devices.0.target.bytes_per_ns=2".into()]
    } else {
        vec![
            "devices.0.target.bytes_per_ns=0".into(),
            "root_ports.0.bytes_per_ns=2".into(),
        ]
    };
    let platform = Platform::load(&p, &sets).expect("nvmeof-rdma-cx5 loads");
    let policy = Policy {
        moderator,
        ..Policy::default()
    };
    let r = simulate_observed(
        &jobs(WIRE_BOUND),
        &platform,
        &policy,
        &SimOptions::overriding(5),
        &mut Seen::default(),
    )
    .unwrap_or_else(|e| panic!("simulation runs: {e}"));
    let host = r.vectors.iter().filter(|v| !v.name.contains("target"));
    let (ios, irqs) = host.fold((0, 0), |(i, n), v| (i + v.completions, n + v.messages));
    assert!(ios > 500, "{ios} I/Os");
    ios as f64 / irqs.max(1) as f64
}

#[test]
fn a_wire_bound_initiator_takes_an_interrupt_per_work_completion() {
    // The network's backlog waits in the target's send queues; the host's PCIe port is
    // faster than the wire, so a host MSI reaches its CPU at once and, without
    // moderation, nearly every work completion (two per I/O) takes its own interrupt;
    // rdma_dim gathers them. Were the backlog in the host's port FIFO, each MSI would wait
    // behind it and gather tens of I/Os.
    let none = host_ios_per_interrupt(ModeratorKind::None, true);
    let dim = host_ios_per_interrupt(ModeratorKind::RdmaDim, true);
    let in_port = host_ios_per_interrupt(ModeratorKind::None, false);
    assert!(
        none < 0.8,
        "{none:.2} I/Os per host interrupt without moderation"
    );
    assert!(
        dim > 1.3 * none,
        "rdma_dim {dim:.2} vs {none:.2} I/Os per interrupt"
    );
    assert!(
        in_port > 5.0,
        "{in_port:.2} I/Os per host interrupt with the backlog in the host's port"
    );
}
