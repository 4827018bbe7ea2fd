//! What a report must not hide: a job that did no I/O (starved, or stopped before its
//! ramp_time ended), a CPU row that does not add up to the window, a job that shows more
//! CPU than its window. Both engines' reports are checked here, and the text and JSON
//! formats say it (`warning:` lines, `x-irqlab.warnings`).

use crate::RunReport;

/// A row may differ from the window by this share (rounding of per-kind sums).
const SLACK: f64 = 0.01;

/// The warnings `r` calls for, in words; empty for a report that adds up.
pub fn warnings(r: &RunReport) -> Vec<String> {
    let mut out = Vec::new();
    for j in &r.jobs {
        let ios = j.read.total_ios + j.write.total_ios + j.trim.total_ios;
        if ios == 0 && !j.no_io {
            out.push(if j.runtime_ns == 0 {
                format!(
                    "job '{}' measured no I/O: it never started, or the run ended before its ramp_time did",
                    j.name
                )
            } else {
                format!(
                    "job '{}' completed no I/O in its {} window: it was starved (its CPU busy with other work, its queue held by another) or its window was shorter than one I/O",
                    j.name,
                    ms(j.runtime_ns)
                )
            });
        }
        let cpu = j.usr_ns.saturating_add(j.sys_ns);
        if j.runtime_ns > 0 && cpu as f64 > j.runtime_ns as f64 * (1.0 + SLACK) {
            out.push(format!(
                "job '{}' reports {:.1}% CPU, more than its window holds",
                j.name,
                100.0 * cpu as f64 / j.runtime_ns as f64
            ));
        }
    }
    if r.duration_ns > 0 {
        let stolen = r.measured.as_ref().map(|m| m.cpu_stolen_ns.as_slice());
        for (i, c) in r.cpus.iter().enumerate() {
            let sum = c.usr_ns
                + c.sys_ns
                + c.hardirq_ns
                + c.softirq_ns
                + c.ksoftirqd_ns
                + c.irq_thread_ns
                + c.idle_ns
                + stolen.and_then(|s| s.get(i)).copied().unwrap_or(0);
            let off = (sum as f64 - r.duration_ns as f64).abs();
            if off > r.duration_ns as f64 * SLACK && off > 1_000.0 {
                out.push(format!(
                    "CPU {}'s time adds up to {:.1}% of the measured window, not 100%",
                    c.cpu,
                    100.0 * sum as f64 / r.duration_ns as f64
                ));
            }
        }
    }
    out
}

fn ms(ns: u64) -> String {
    if ns < 1_000_000 {
        format!("{:.3} ms", ns as f64 / 1e6)
    } else {
        format!("{:.1} ms", ns as f64 / 1e6)
    }
}
