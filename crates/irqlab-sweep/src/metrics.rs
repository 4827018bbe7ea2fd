//! What a sweep measures at each point, with names for the CSV and labels with units
//! for plots.

use irqlab_report::{Latency, RunReport};

/// One column of the CSV.
pub struct Metric {
    /// CSV header and `--metric` name.
    pub name: &'static str,
    /// Axis label with its unit.
    pub label: &'static str,
}

/// Every metric, in CSV order.
pub const METRICS: [Metric; 16] = [
    Metric {
        name: "iops",
        label: "IOPS (I/Os per second)",
    },
    Metric {
        name: "iops_per_device",
        label: "IOPS per device (I/Os per second)",
    },
    Metric {
        name: "bw_MiBps",
        label: "bandwidth (MiB/s)",
    },
    Metric {
        name: "clat_mean_us",
        label: "mean completion latency (µs)",
    },
    Metric {
        name: "clat_p50_us",
        label: "median completion latency (µs)",
    },
    Metric {
        name: "clat_p99_us",
        label: "99th percentile completion latency (µs)",
    },
    Metric {
        name: "interrupts_per_sec",
        label: "device vector interrupts per second (1/s)",
    },
    Metric {
        name: "notifications_per_sec",
        label: "CPU notifications per second (1/s)",
    },
    Metric {
        name: "pmn_per_sec",
        label: "posted MSI notifications per second (1/s)",
    },
    Metric {
        name: "msi_per_sec",
        label: "MSI messages raised per second (1/s)",
    },
    Metric {
        name: "ios_per_notification",
        label: "I/Os per CPU notification (ratio)",
    },
    Metric {
        name: "coalescing_ratio",
        label: "vectors handled per notification (ratio)",
    },
    Metric {
        name: "cpu_busy_pct",
        label: "CPU busy (% of one CPU)",
    },
    Metric {
        name: "irq_cpu_pct",
        label: "interrupt and softirq time (% of one CPU)",
    },
    Metric {
        name: "ctx_switches_per_sec",
        label: "context switches per second (1/s)",
    },
    Metric {
        name: "duration_ms",
        label: "measured window (ms)",
    },
];

/// The index of metric `name` in [`METRICS`].
pub fn find(name: &str) -> Result<usize, crate::SweepError> {
    METRICS
        .iter()
        .position(|m| m.name == name)
        .ok_or_else(|| crate::SweepError::UnknownMetric(name.to_string()))
}

/// Every metric of one run, in [`METRICS`] order. `devices` is the number of devices
/// the jobs use (for iops_per_device).
pub fn measure(r: &RunReport, devices: usize) -> Vec<f64> {
    let secs = r.duration_ns as f64 / 1e9;
    let per_sec = |n: u64| if secs > 0.0 { n as f64 / secs } else { 0.0 };
    let pct = |ns: u64| {
        if r.duration_ns > 0 {
            ns as f64 * 100.0 / r.duration_ns as f64
        } else {
            0.0
        }
    };
    let mut clat = Latency::new();
    let mut bytes = 0u64;
    for j in &r.jobs {
        clat.merge(&j.read.clat);
        clat.merge(&j.write.clat);
        bytes += j.read.io_bytes + j.write.io_bytes;
    }
    let iops = per_sec(r.total_ios());
    let irq_ns: u64 = r
        .cpus
        .iter()
        .map(|c| c.hardirq_ns + c.softirq_ns + c.ksoftirqd_ns + c.irq_thread_ns)
        .sum();
    let busy_ns: u64 = irq_ns + r.cpus.iter().map(|c| c.usr_ns + c.sys_ns).sum::<u64>();
    let values = [
        iops,
        iops / devices.max(1) as f64,
        per_sec(bytes) / (1024.0 * 1024.0),
        clat.mean() / 1e3,
        clat.percentile(50.0) as f64 / 1e3,
        clat.percentile(99.0) as f64 / 1e3,
        per_sec(r.vector_interrupts()),
        per_sec(r.notifications()),
        per_sec(r.cpus.iter().map(|c| c.pmn).sum()),
        per_sec(r.vectors.iter().map(|v| v.messages).sum()),
        r.ios_per_notification(),
        r.coalescing_ratio(),
        pct(busy_ns),
        pct(irq_ns),
        per_sec(r.cpus.iter().map(|c| c.ctx_switches).sum()),
        r.duration_ns as f64 / 1e6,
    ];
    values.to_vec()
}

/// A metric value as the CSV writes it: at most three decimals, no trailing zeros.
pub fn fmt(x: f64) -> String {
    if !x.is_finite() {
        return "0".into();
    }
    let s = format!("{x:.3}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    if s == "-0" { "0".into() } else { s.to_string() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_found() {
        for (i, m) in METRICS.iter().enumerate() {
            assert_eq!(find(m.name).ok(), Some(i));
            assert!(m.label.contains('('), "{} has no unit", m.name);
        }
        assert!(
            find("iopz")
                .unwrap_err()
                .to_string()
                .contains("iops_per_device")
        );
    }

    #[test]
    fn fmt_trims() {
        assert_eq!(fmt(1234.5), "1234.5");
        assert_eq!(fmt(2.0), "2");
        assert_eq!(fmt(0.00001), "0");
        assert_eq!(fmt(1.23456), "1.235");
    }
}
