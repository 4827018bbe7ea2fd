//! Round-2 mechanisms: root-port posted-write credits, a device's own interrupt
//! aggregation, striped media, io_uring's task_work completion, and that every run ends.

mod common;
use common::*;
use irqlab_core::{DeviceCoalescing, Policy};

/// Eight disks' 4 KiB reads through one narrow port: the port, not the disks, limits.
const SATURATED_PORT: &str = "\
[global]
ioengine=libaio
rw=randread
bs=4k
iodepth=64
iodepth_batch_submit=8
runtime=4ms
ramp_time=1ms
time_based
[a]
filename=nvme0n1
cpus_allowed=0
[b]
filename=nvme1n1
cpus_allowed=1
[c]
filename=nvme2n1
cpus_allowed=2
[d]
filename=nvme3n1
cpus_allowed=3
";

/// A narrow port whose remapped interrupts go one at a time (its stack holds each), on
/// disks that hold their next message until the CQ head doorbell.
const NARROW: [&str; 4] = [
    "devices.0.count=4",
    "root_ports.0.bytes_per_ns=8.0",
    "uncore.stack_rtt_ns=420",
    "devices.0.msi=until_doorbell",
];

fn ios_per_irq(r: &irqlab_report::RunReport) -> f64 {
    r.total_ios() as f64 / r.vector_interrupts().max(1) as f64
}

#[test]
fn port_credits_stop_completions_piling_up_behind_a_busy_port() {
    let unlimited = run(SATURATED_PORT, Policy::default(), &NARROW, 1);
    let mut sets = NARROW.to_vec();
    sets.push("root_ports.0.credits=34");
    let limited = run(SATURATED_PORT, Policy::default(), &sets, 1);
    // Unbounded, CQEs queue in the port for long and one message covers many; with
    // credits the device holds them, so each message covers about one, and the
    // remapped interrupt rate limits the port's throughput.
    assert!(
        ios_per_irq(&unlimited) > 2.0,
        "unbounded FIFO merges: {}",
        ios_per_irq(&unlimited)
    );
    assert!(
        ios_per_irq(&limited) < 1.6,
        "credits keep ~1 I/O per message: {}",
        ios_per_irq(&limited)
    );
    assert!(limited.total_ios() < unlimited.total_ios());
    assert_eq!(extra(&limited, "cut_short"), 0.0);
}

#[test]
fn credits_conserve_every_io() {
    let mut sets = NARROW.to_vec();
    sets.push("root_ports.0.credits=20");
    let r = run(SATURATED_PORT, Policy::default(), &sets, 3);
    assert_eq!(
        extra(&r, "ios_submitted"),
        extra(&r, "ios_reaped"),
        "every submitted I/O is reaped when the jobs end"
    );
    assert_eq!(extra(&r, "cqes_posted"), extra(&r, "ios_completed"));
}

const QD32: &str = "[q]\nioengine=libaio\nrw=randread\nbs=4k\niodepth=32\nfilename=nvme0n1\ncpus_allowed=0\nruntime=5ms\ntime_based\n";

#[test]
fn a_device_that_coalesces_on_its_own_does_so_only_without_policy_coalescing() {
    let own = [
        "devices.0.coalesce_count=8",
        "devices.0.coalesce_time_ns=500000",
    ];
    let plain = run(QD32, Policy::default(), &[], 1);
    let coalescing = run(QD32, Policy::default(), &own, 1);
    assert!(ios_per_irq(&plain) < 3.0, "{}", ios_per_irq(&plain));
    let n = ios_per_irq(&coalescing);
    assert!((7.0..=9.0).contains(&n), "8 completions per message: {n}");
    // The policy's own 08h setting replaces the device's.
    let policy = Policy {
        coalescing: DeviceCoalescing::Nvme {
            thr: 1,
            time_100us: 1,
        },
        ..Policy::default()
    };
    let overridden = run(QD32, policy, &own, 1);
    assert!(
        ios_per_irq(&overridden) < 4.0,
        "{}",
        ios_per_irq(&overridden)
    );
}

/// Eight QD1 jobs on one device with few media units.
const EIGHT_QD1: &str = "[global]\nioengine=pvsync2\nrw=randread\nbs=4k\nhipri\nfilename=nvme0n1\nruntime=5ms\ntime_based\n[j]\nnumjobs=8\ncpus_allowed=0-7\ncpus_allowed_policy=split\n";

#[test]
fn striped_media_collide_at_low_depth() {
    let units = ["devices.0.max_iops=1000000", "devices.0.read_ns=6000"];
    let pooled = run(EIGHT_QD1, Policy::default(), &units, 1);
    let mut sets = units.to_vec();
    sets.push("devices.0.striped=true");
    let striped = run(EIGHT_QD1, Policy::default(), &sets, 1);
    assert!(
        (striped.total_ios() as f64) < 0.95 * pooled.total_ios() as f64,
        "striped {} vs pooled {}",
        striped.total_ios(),
        pooled.total_ios()
    );
}

const URING: &str = "[u]\nioengine=io_uring\nrw=randread\nbs=4k\niodepth=32\niodepth_batch_submit=8\niodepth_batch_complete_min=8\nfilename=nvme0n1\ncpus_allowed=0\nruntime=5ms\ntime_based\n";

#[test]
fn task_work_is_charged_to_interrupt_driven_io_uring_only() {
    let tw = ["engine.io_uring.task_work_io_ns=2000"];
    let base = run(URING, Policy::default(), &[], 1);
    let charged = run(URING, Policy::default(), &tw, 1);
    let sys_per_io =
        |r: &irqlab_report::RunReport| r.jobs[0].sys_ns as f64 / r.total_ios().max(1) as f64;
    assert!(sys_per_io(&charged) > sys_per_io(&base) + 1000.0);
    let polled = URING.replace("[u]\n", "[u]\nhipri\n");
    let a = run(&polled, Policy::default(), &[], 1);
    let b = run(&polled, Policy::default(), &tw, 1);
    assert_eq!(
        a.total_ios(),
        b.total_ios(),
        "IOPOLL completes without task_work"
    );
}

#[test]
fn polled_jobs_sharing_one_cpu_take_turns_and_the_run_ends() {
    // Eight spinning pollers pinned to one CPU: each must yield at the tick (every 1 ms,
    // so 20 ms give each a few turns), and a job whose completion another poller reaped
    // must notice it.
    let text = "[global]\nioengine=pvsync2\nrw=randread\nbs=4k\nhipri\nfilename=nvme0n1\nruntime=20ms\ntime_based\n[j]\nnumjobs=8\ncpus_allowed=2\ncpus_allowed_policy=shared\n";
    let r = run(text, Policy::default(), &[], 1);
    assert_eq!(extra(&r, "cut_short"), 0.0, "the run ends on its own");
    assert_eq!(r.jobs.len(), 8);
    for j in &r.jobs {
        assert!(j.read.total_ios > 0, "job {} got the CPU", j.name);
    }
    assert!(extra(&r, "simulated_ns") < 22e6);
}
