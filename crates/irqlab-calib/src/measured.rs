//! Measured values from a real machine: a fio JSON result (`--output-format=json`) and two
//! /proc/interrupts snapshots taken around the run, turned into the metrics the
//! simulator reports.

use crate::CalibError;
use crate::metrics::Metric;

/// fio's json+ of many jobs is larger than a job file: measurements may be up to 64 MiB.
const MAX_MEASUREMENT_BYTES: u64 = 64 << 20;
use serde_json::Value;
use std::path::Path;

/// IOPS, mean clat and the run's length from a fio JSON result.
#[derive(Clone, Debug, PartialEq)]
pub struct FioResult {
    pub iops: f64,
    pub clat_mean_us: f64,
    /// The longest job runtime, seconds.
    pub runtime_s: f64,
}

pub fn read_fio_json(path: &Path) -> Result<FioResult, CalibError> {
    let text = irqlab_fio::input::read_text(path, MAX_MEASUREMENT_BYTES)
        .map_err(|e| CalibError::at(path, e))?;
    parse_fio_json(&text).map_err(|e| CalibError::at(path, e))
}

pub fn parse_fio_json(text: &str) -> Result<FioResult, CalibError> {
    let bad = |m: &str| CalibError::Measured(m.to_string());
    // fio may print warnings before the JSON object.
    let start = text
        .find('{')
        .ok_or_else(|| bad("no JSON object in the file"))?;
    let v: Value = serde_json::from_str(&text[start..])
        .map_err(|e| CalibError::Measured(format!("not fio JSON: {e}")))?;
    let jobs = v
        .get("jobs")
        .and_then(Value::as_array)
        .ok_or_else(|| bad("no \"jobs\" array: not a fio JSON result"))?;
    let (mut iops, mut n, mut clat_sum, mut runtime_ms) = (0.0, 0.0, 0.0, 0.0f64);
    for j in jobs {
        for dir in ["read", "write"] {
            let Some(d) = j.get(dir) else { continue };
            let num = |k: &str| d.get(k).and_then(Value::as_f64).unwrap_or(0.0);
            iops += num("iops");
            let ios = num("total_ios");
            let mean_ns = d
                .get("clat_ns")
                .and_then(|c| c.get("mean"))
                .and_then(Value::as_f64)
                .unwrap_or(0.0);
            n += ios;
            clat_sum += ios * mean_ns;
            runtime_ms = runtime_ms.max(num("runtime"));
        }
        let jr = j.get("job_runtime").and_then(Value::as_f64).unwrap_or(0.0);
        runtime_ms = runtime_ms.max(jr);
    }
    Ok(FioResult {
        iops,
        clat_mean_us: if n > 0.0 { clat_sum / n / 1000.0 } else { 0.0 },
        runtime_s: runtime_ms / 1000.0,
    })
}

/// Interrupt counts of one /proc/interrupts snapshot.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct IrqSnapshot {
    /// Numbered (device) rows whose name contains the filter: the sum over CPUs.
    pub device: u64,
    /// The PMN row (posted MSI notifications).
    pub pmn: u64,
}

/// Sums a /proc/interrupts text: numbered rows whose description contains `filter` (all
/// numbered rows when empty), and the PMN row.
pub fn parse_proc_interrupts(text: &str, filter: &str) -> Result<IrqSnapshot, CalibError> {
    let mut lines = text.lines();
    let header = lines
        .next()
        .ok_or_else(|| CalibError::Measured("empty /proc/interrupts snapshot".into()))?;
    let ncpu = header
        .split_whitespace()
        .filter(|w| w.starts_with("CPU"))
        .count();
    if ncpu == 0 {
        return Err(CalibError::Measured(
            "the first line has no CPU columns: not a /proc/interrupts snapshot".into(),
        ));
    }
    let mut snap = IrqSnapshot::default();
    for line in lines {
        let Some((label, rest)) = line.split_once(':') else {
            continue;
        };
        let label = label.trim();
        let mut words = rest.split_whitespace();
        let counts: u64 = words
            .by_ref()
            .take(ncpu)
            .map_while(|w| w.parse::<u64>().ok())
            .sum();
        let desc: Vec<&str> = words.collect();
        if label == "PMN" {
            snap.pmn += counts;
        } else if label.chars().all(|c| c.is_ascii_digit())
            && (filter.is_empty() || desc.iter().any(|w| w.contains(filter)))
        {
            snap.device += counts;
        }
    }
    Ok(snap)
}

pub fn read_proc_interrupts(path: &Path, filter: &str) -> Result<IrqSnapshot, CalibError> {
    let text = irqlab_fio::input::read_text(path, MAX_MEASUREMENT_BYTES)
        .map_err(|e| CalibError::at(path, e))?;
    parse_proc_interrupts(&text, filter).map_err(|e| CalibError::at(path, e))
}

/// The metrics a fio result and optional snapshots give, with their values.
pub fn measured_metrics(
    fio: &FioResult,
    irqs: Option<(&IrqSnapshot, &IrqSnapshot)>,
) -> Result<Vec<(Metric, f64)>, CalibError> {
    let mut out = vec![(Metric::Iops, fio.iops)];
    if fio.clat_mean_us > 0.0 {
        out.push((Metric::ClatMeanUs, fio.clat_mean_us));
    }
    if let Some((a, b)) = irqs {
        if fio.runtime_s <= 0.0 {
            return Err(CalibError::Measured(
                "the fio result has no runtime to turn interrupt counts into rates".into(),
            ));
        }
        let dev = b.device.checked_sub(a.device).ok_or_else(|| {
            CalibError::Measured(
                "the second /proc/interrupts snapshot has fewer interrupts than the first: swapped?"
                    .into(),
            )
        })?;
        out.push((Metric::InterruptsPerSec, dev as f64 / fio.runtime_s));
        // Posted mode notifies the CPU by PMN; remapped mode once per device interrupt.
        let pmn = b.pmn.saturating_sub(a.pmn);
        let notifications = if pmn > 0 { pmn } else { dev };
        out.push((
            Metric::NotificationsPerSec,
            notifications as f64 / fio.runtime_s,
        ));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const IRQ0: &str = "           CPU0       CPU1\n  24:        10         20   IR-PCI-MSIX-0000:01:00.0    1-edge      nvme0q1\n  25:         5          0   IR-PCI-MSIX-0000:02:00.0    0-edge      eth0\n LOC:       100        100   Local timer interrupts\n PMN:         7          3   Posted MSI notification event\n";
    const IRQ1: &str = "           CPU0       CPU1\n  24:      1010       2020   IR-PCI-MSIX-0000:01:00.0    1-edge      nvme0q1\n  25:        15          0   IR-PCI-MSIX-0000:02:00.0    0-edge      eth0\n LOC:       200        200   Local timer interrupts\n PMN:         7          3   Posted MSI notification event\n";

    #[test]
    fn proc_interrupts_rows_are_filtered_and_summed() {
        let a = parse_proc_interrupts(IRQ0, "nvme").unwrap();
        assert_eq!(
            a,
            IrqSnapshot {
                device: 30,
                pmn: 10
            }
        );
        let all = parse_proc_interrupts(IRQ0, "").unwrap();
        assert_eq!(all.device, 35);
        assert!(parse_proc_interrupts("hello\n", "").is_err());
    }

    #[test]
    fn fio_json_gives_iops_clat_and_rates() {
        let json = r#"note: a warning
{"jobs":[{"job_runtime":2000,"read":{"iops":1000.0,"total_ios":2000,"runtime":2000,"clat_ns":{"mean":5000.0}},
 "write":{"iops":0.0,"total_ios":0,"runtime":0,"clat_ns":{"mean":0.0}}},
 {"job_runtime":2000,"read":{"iops":3000.0,"total_ios":6000,"runtime":2000,"clat_ns":{"mean":9000.0}}}]}"#;
        let r = parse_fio_json(json).unwrap();
        assert_eq!(r.iops, 4000.0);
        assert!((r.clat_mean_us - 8.0).abs() < 1e-9);
        assert_eq!(r.runtime_s, 2.0);
        let (a, b) = (
            parse_proc_interrupts(IRQ0, "nvme").unwrap(),
            parse_proc_interrupts(IRQ1, "nvme").unwrap(),
        );
        let m = measured_metrics(&r, Some((&a, &b))).unwrap();
        assert!(m.contains(&(Metric::InterruptsPerSec, 1500.0)), "{m:?}");
        assert!(parse_fio_json("{}").is_err());
    }
}
