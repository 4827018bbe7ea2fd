//! The figures a scenario is compared on, computed from a run report the way the
//! published measurements were taken (fio's IOPS and clat, /proc/interrupts rates,
//! CPU time).

use irqlab_report::RunReport;
use std::fmt;
use std::str::FromStr;

/// A figure of a run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Metric {
    /// Completed I/Os per second, all jobs (fio's IOPS summed).
    Iops,
    /// IOPS divided by the number of disks the jobs use.
    IopsPerDisk,
    /// Device vector handler runs per second: the /proc/interrupts device rows.
    InterruptsPerSec,
    /// CPU notifications per second: vectors delivered directly plus PMN.
    NotificationsPerSec,
    /// Busy CPU time (everything but idle) as a percentage of one CPU.
    CpuBusyPct,
    /// Mean completion latency (fio's clat), µs.
    ClatMeanUs,
    /// Mean submission latency (fio's slat: the submit call, a virtio kick included), µs.
    SlatMeanUs,
    /// Mean total latency (fio's lat: slat + clat; for a synchronous engine, whose slat
    /// fio does not measure, the whole call), µs.
    LatMeanUs,
    /// Completed I/Os per device interrupt.
    IosPerInterrupt,
    /// MSI-X messages the devices sent per second (one per descriptor for a DSA work
    /// queue whose descriptors request completion interrupts).
    MessagesPerSec,
    /// Posted MSI notifications per second (the PMN row of /proc/interrupts).
    PmnPerSec,
    /// Context switches of the fio job threads per second (perf sched's count for fio).
    JobCtxPerSec,
    /// Context switches on every CPU per second (vmstat's `cs`).
    CtxPerSec,
    /// fio's `cpu` line: the job threads' usr+sys time as a percentage of their runtime,
    /// averaged over the jobs (interrupt time excluded, as with IRQ_TIME_ACCOUNTING).
    JobCpuPct,
}

pub const ALL: [Metric; 14] = [
    Metric::Iops,
    Metric::IopsPerDisk,
    Metric::InterruptsPerSec,
    Metric::NotificationsPerSec,
    Metric::CpuBusyPct,
    Metric::ClatMeanUs,
    Metric::SlatMeanUs,
    Metric::LatMeanUs,
    Metric::IosPerInterrupt,
    Metric::MessagesPerSec,
    Metric::PmnPerSec,
    Metric::JobCtxPerSec,
    Metric::JobCpuPct,
    Metric::CtxPerSec,
];

impl Metric {
    pub fn name(self) -> &'static str {
        match self {
            Metric::Iops => "iops",
            Metric::IopsPerDisk => "iops_per_disk",
            Metric::InterruptsPerSec => "interrupts_per_sec",
            Metric::NotificationsPerSec => "notifications_per_sec",
            Metric::CpuBusyPct => "cpu_busy_pct",
            Metric::ClatMeanUs => "clat_mean_us",
            Metric::SlatMeanUs => "slat_mean_us",
            Metric::LatMeanUs => "lat_mean_us",
            Metric::IosPerInterrupt => "ios_per_interrupt",
            Metric::MessagesPerSec => "messages_per_sec",
            Metric::PmnPerSec => "pmn_per_sec",
            Metric::JobCtxPerSec => "job_ctx_per_sec",
            Metric::JobCpuPct => "job_cpu_pct",
            Metric::CtxPerSec => "ctx_per_sec",
        }
    }

    /// The metric of `report`; `disks` is how many devices the jobs used.
    pub fn of(self, report: &RunReport, disks: usize) -> f64 {
        let secs = report.duration_ns as f64 / 1e9;
        let per_sec = |n: u64| if secs > 0.0 { n as f64 / secs } else { 0.0 };
        match self {
            Metric::Iops => per_sec(report.total_ios()),
            Metric::IopsPerDisk => per_sec(report.total_ios()) / disks.max(1) as f64,
            Metric::InterruptsPerSec => per_sec(report.vector_interrupts()),
            Metric::NotificationsPerSec => per_sec(report.notifications()),
            Metric::CpuBusyPct => {
                let busy: u64 = report
                    .cpus
                    .iter()
                    .map(|c| {
                        c.usr_ns
                            + c.sys_ns
                            + c.hardirq_ns
                            + c.softirq_ns
                            + c.ksoftirqd_ns
                            + c.irq_thread_ns
                    })
                    .sum();
                if report.duration_ns == 0 {
                    0.0
                } else {
                    busy as f64 * 100.0 / report.duration_ns as f64
                }
            }
            Metric::ClatMeanUs => mean_us(report, |d| &d.clat),
            Metric::SlatMeanUs => mean_us(report, |d| &d.slat),
            Metric::LatMeanUs => mean_us(report, |d| &d.lat),
            Metric::IosPerInterrupt => {
                let irqs = report.vector_interrupts();
                if irqs == 0 {
                    0.0
                } else {
                    report.total_ios() as f64 / irqs as f64
                }
            }
            Metric::MessagesPerSec => per_sec(report.vectors.iter().map(|v| v.messages).sum()),
            Metric::PmnPerSec => per_sec(report.cpus.iter().map(|c| c.pmn).sum()),
            Metric::JobCtxPerSec => per_sec(report.jobs.iter().map(|j| j.ctx).sum()),
            Metric::CtxPerSec => per_sec(report.cpus.iter().map(|c| c.ctx_switches).sum()),
            Metric::JobCpuPct => {
                let (cpu, runtime) = report.jobs.iter().fold((0u64, 0u64), |(c, r), j| {
                    (c + j.usr_ns + j.sys_ns, r + j.runtime_ns)
                });
                if runtime == 0 {
                    0.0
                } else {
                    cpu as f64 * 100.0 / runtime as f64
                }
            }
        }
    }
}

impl fmt::Display for Metric {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Metric {
    type Err = crate::CalibError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        ALL.iter()
            .copied()
            .find(|m| m.name() == s)
            .ok_or_else(|| crate::CalibError::UnknownMetric(s.to_string()))
    }
}

/// The mean of one of fio's latencies over every job and direction, µs.
fn mean_us(
    report: &RunReport,
    which: impl Fn(&irqlab_report::DirReport) -> &irqlab_report::Latency,
) -> f64 {
    let (mut n, mut sum) = (0u64, 0.0);
    for j in &report.jobs {
        for d in [&j.read, &j.write] {
            let l = which(d);
            n += l.count();
            sum += l.mean() * l.count() as f64;
        }
    }
    if n == 0 { 0.0 } else { sum / n as f64 / 1000.0 }
}

/// Signed relative error of `simulated` against `published`, in percent.
pub fn error_pct(simulated: f64, published: f64) -> f64 {
    if published == 0.0 {
        if simulated == 0.0 { 0.0 } else { f64::INFINITY }
    } else {
        (simulated - published) / published * 100.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for m in ALL {
            assert_eq!(m.name().parse::<Metric>(), Ok(m));
        }
        assert!(
            "x".parse::<Metric>()
                .unwrap_err()
                .to_string()
                .contains("iops_per_disk")
        );
    }

    #[test]
    fn error_is_signed_and_relative() {
        assert_eq!(error_pct(110.0, 100.0), 10.0);
        assert_eq!(error_pct(90.0, 100.0), -10.0);
        assert_eq!(error_pct(0.0, 0.0), 0.0);
    }
}
