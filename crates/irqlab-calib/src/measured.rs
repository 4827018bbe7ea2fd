//! Measured values from a real machine: a fio JSON result (`--output-format=json`) and two
//! /proc/interrupts snapshots taken around the run, turned into the metrics the
//! simulator reports. Both files are parsed by irqlab-capture (the reader of capture
//! directories), so a fio result or a snapshot means the same to `calibrate` and to
//! `irqlab capture`.

use crate::CalibError;
use crate::metrics::Metric;

/// fio's json+ of many jobs is larger than a job file: measurements may be up to 64 MiB.
const MAX_MEASUREMENT_BYTES: u64 = 64 << 20;
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
    let s = irqlab_capture::fio_json::parse(text)
        .map_err(|e| CalibError::Measured(e.to_string()))?
        .summary();
    Ok(FioResult {
        iops: s.iops,
        clat_mean_us: s.clat_mean_us,
        runtime_s: s.runtime_s,
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
    let parsed =
        irqlab_capture::interrupts::parse(text).map_err(|e| CalibError::Measured(e.to_string()))?;
    let mut snap = IrqSnapshot::default();
    for row in &parsed.rows {
        if row.label == "PMN" {
            snap.pmn += row.total();
        } else if row.irq().is_some()
            && (filter.is_empty()
                || row.chip.contains(filter)
                || row.actions.iter().any(|a| a.contains(filter)))
        {
            snap.device += row.total();
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
