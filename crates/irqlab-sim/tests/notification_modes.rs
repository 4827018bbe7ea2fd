//! The posted-MSI talk's notification handler variants against the kernel's:
//! `--notification self-ipi` (Attempt #3: the demux sends each harvested vector to its CPU
//! as an IPI, so every vector pays an interrupt entry, EOI and exit of its own again) and
//! `--notification preemptable` (Attempt #2: the demux runs with interrupts enabled, so
//! the timer tick is taken inside it).

mod common;
use common::*;
use irqlab_core::delivery::PostedMode;
use irqlab_core::{Delivery, Policy};
use irqlab_report::RunReport;

/// A C1-like run made CPU-bound: four fast disks, their sixteen jobs on two CPUs, so each
/// CPU carries a vector of every disk and posted delivery coalesces them.
const TWO_CPUS: &str = "\
[global]
ioengine=libaio
rw=randread
bs=4k
iodepth=64
iodepth_batch_submit=8
iodepth_batch_complete_min=1
runtime=8ms
ramp_time=1ms
time_based
numjobs=4
cpus_allowed=0-1
cpus_allowed_policy=split
[a]
filename=nvme0n1
[b]
filename=nvme1n1
[c]
filename=nvme2n1
[d]
filename=nvme3n1
";

const FAST_DISKS: [&str; 2] = ["devices.0.max_iops=3000000", "devices.0.read_ns=20000"];

fn go(delivery: Delivery) -> RunReport {
    run(
        TWO_CPUS,
        Policy {
            delivery,
            ..Policy::default()
        },
        &FAST_DISKS,
        1,
    )
}

fn sum(r: &RunReport, f: impl Fn(&irqlab_report::CpuReport) -> u64) -> u64 {
    r.cpus.iter().map(f).sum()
}

fn mode(d: Delivery) -> PostedMode {
    d.posted_mode().expect("a posted mode").0
}

#[test]
fn self_ipi_pays_an_interrupt_per_vector_and_loses_posted_iops() {
    let posted = go(Delivery::Posted { max_loop: 3 });
    let self_ipi = go(Delivery::PostedSelfIpi { max_loop: 3 });
    assert!(mode(Delivery::PostedSelfIpi { max_loop: 3 }).self_ipi);
    let (p_io, s_io) = (posted.total_ios(), self_ipi.total_ios());
    assert!(p_io > 0 && s_io > 0);
    // Both harvest through notifications (the PMN row) ...
    let (p_pmn, s_pmn) = (sum(&posted, |c| c.pmn), sum(&self_ipi, |c| c.pmn));
    assert!(p_pmn > 0 && s_pmn > 0, "posted {p_pmn}, self-ipi {s_pmn}");
    // ... but with self-IPIs every dispatched vector is an interrupt entry of its own.
    let p_other = sum(&posted, |c| c.hardirqs - c.pmn);
    let s_other = sum(&self_ipi, |c| c.hardirqs - c.pmn);
    assert!(
        s_other > s_pmn && s_other > 2 * p_other,
        "non-PMN entries: self-ipi {s_other} (PMN {s_pmn}), posted {p_other}"
    );
    // The extra entries cost CPU time on CPU-bound queues: fewer I/Os than posted.
    assert!(
        (s_io as f64) < 0.97 * p_io as f64,
        "self-ipi {s_io} I/Os, posted {p_io}"
    );
}

fn tick_lateness_sum(r: &RunReport) -> (f64, u64) {
    r.cpus.iter().fold((0.0, 0), |(s, n), c| {
        let t = &c.tick_lateness;
        (s + t.mean() * t.count() as f64, n + t.count())
    })
}

#[test]
fn preemptable_takes_the_tick_inside_the_demux_and_keeps_posted_iops() {
    let posted = go(Delivery::Posted { max_loop: 3 });
    let pre = go(Delivery::PostedPreemptable { max_loop: 3 });
    assert!(mode(Delivery::PostedPreemptable { max_loop: 3 }).preemptable);
    let (p_late, p_n) = tick_lateness_sum(&posted);
    let (s_late, s_n) = tick_lateness_sum(&pre);
    assert!(p_n > 0 && s_n > 0);
    // The tick no longer waits for the demux's EOI.
    assert!(
        s_late / (s_n as f64) < 0.8 * p_late / (p_n as f64),
        "mean tick lateness: preemptable {} ns, posted {} ns",
        s_late / s_n as f64,
        p_late / p_n as f64
    );
    // Still one notification harvesting many vectors: the I/O rate stays posted's.
    let (p_io, s_io) = (posted.total_ios() as f64, pre.total_ios() as f64);
    assert!(
        (s_io - p_io).abs() < 0.03 * p_io,
        "preemptable {s_io}, posted {p_io}"
    );
}
