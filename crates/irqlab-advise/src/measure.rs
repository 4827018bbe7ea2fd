//! What a candidate's run showed, as the table reports it: IOPS, completion latency
//! percentiles over every job, CPU time per I/O and in all, interrupts per second and
//! how late the timer ticks ran.

use irqlab_report::{Latency, RunReport};
use serde::Serialize;

/// One candidate's figures.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Figures {
    pub iops: f64,
    pub clat_p50_us: f64,
    pub clat_p99_us: f64,
    pub clat_mean_us: f64,
    /// Every CPU's busy time (user, system, interrupts, softirqs, threads) per I/O.
    pub cpu_per_io_us: f64,
    /// Busy time as a percentage of all the platform's CPUs.
    pub cpu_pct: f64,
    /// Device vector interrupts per second (the /proc/interrupts device rows).
    pub interrupts_per_s: f64,
    /// CPU notifications per second (remapped interrupts plus posted notifications).
    pub notifications_per_s: f64,
    /// The worst CPU's 99th percentile of timer-tick lateness, µs.
    pub tick_late_p99_us: f64,
}

/// The figures of `r`.
pub fn figures(r: &RunReport) -> Figures {
    let secs = r.duration_ns as f64 / 1e9;
    let per_s = |n: u64| if secs > 0.0 { n as f64 / secs } else { 0.0 };
    let mut clat = Latency::new();
    for j in &r.jobs {
        clat.merge(&j.read.clat);
        clat.merge(&j.write.clat);
    }
    let ios = r.total_ios();
    let busy: u64 = r
        .cpus
        .iter()
        .map(|c| {
            c.usr_ns + c.sys_ns + c.hardirq_ns + c.softirq_ns + c.ksoftirqd_ns + c.irq_thread_ns
        })
        .sum();
    let ncpus = r.cpus.len().max(1) as f64;
    let tick = r
        .cpus
        .iter()
        .map(|c| c.tick_lateness.percentile(99.0))
        .max()
        .unwrap_or(0);
    Figures {
        iops: per_s(ios),
        clat_p50_us: clat.percentile(50.0) as f64 / 1000.0,
        clat_p99_us: clat.percentile(99.0) as f64 / 1000.0,
        clat_mean_us: clat.mean() / 1000.0,
        cpu_per_io_us: if ios > 0 {
            busy as f64 / ios as f64 / 1000.0
        } else {
            0.0
        },
        cpu_pct: if r.duration_ns > 0 {
            busy as f64 * 100.0 / (r.duration_ns as f64 * ncpus)
        } else {
            0.0
        },
        interrupts_per_s: per_s(r.vector_interrupts()),
        notifications_per_s: per_s(r.notifications()),
        tick_late_p99_us: tick as f64 / 1000.0,
    }
}
