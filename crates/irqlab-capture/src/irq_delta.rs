//! The interrupts of a window: the difference of two /proc/interrupts snapshots, per row
//! and per CPU, refused when the snapshots cannot be one boot's, in order.

use crate::error::Malformed;
use crate::interrupts::Snapshot;

/// One row's counts over the window.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RowDelta {
    pub label: String,
    pub chip: String,
    pub actions: Vec<String>,
    /// Per CPU column of the snapshots.
    pub per_cpu: Vec<u64>,
}

impl RowDelta {
    pub fn total(&self) -> u64 {
        self.per_cpu.iter().sum()
    }
}

/// Every row's counts over the window between two snapshots.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Delta {
    pub cpus: Vec<u32>,
    pub rows: Vec<RowDelta>,
    /// Seconds between the reads, when irqlab took both.
    pub window_s: Option<f64>,
}

impl Delta {
    pub fn row(&self, label: &str) -> Option<&RowDelta> {
        self.rows.iter().find(|r| r.label == label)
    }
}

/// Counts are 32-bit per CPU in /proc/interrupts (kstat_irqs_usr returns unsigned int).
const WRAP: u64 = 1 << 32;

/// `after - before`, row by row; a row only in `after` (registered during the window)
/// counts from zero.
pub fn delta(before: &Snapshot, after: &Snapshot) -> Result<Delta, Malformed> {
    let (b0, b1) = (before.meta.btime, after.meta.btime);
    if let (Some(x), Some(y)) = (b0, b1)
        && x != y
    {
        return Err(Malformed(format!(
            "taken in different boots (btime {x} and {y})"
        )));
    }
    let same_boot = b0.is_some() && b0 == b1;
    let window_s = match (before.meta.taken_s, after.meta.taken_s) {
        (Some(t0), Some(t1)) if t1 < t0 => {
            return Err(Malformed(format!(
                "the first was taken after the second ({t0:.3} > {t1:.3} s since the epoch): swapped?"
            )));
        }
        (Some(t0), Some(t1)) => Some(t1 - t0),
        _ => None,
    };
    if before.cpus != after.cpus {
        return Err(Malformed(format!(
            "their CPU columns differ ({} and {} CPUs): a CPU went on- or offline between them",
            before.cpus.len(),
            after.cpus.len()
        )));
    }
    let mut rows = Vec::with_capacity(after.rows.len());
    for r1 in &after.rows {
        let r0 = before.row(&r1.label);
        let mut per_cpu = Vec::with_capacity(r1.counts.len());
        for (i, &c1) in r1.counts.iter().enumerate() {
            let c0 = r0.and_then(|r| r.counts.get(i)).copied().unwrap_or(0);
            let d = if c1 >= c0 {
                c1 - c0
            } else if same_boot && c0 < WRAP && c0 - c1 > WRAP / 2 {
                c1 + WRAP - c0
            } else {
                let cpu = after
                    .cpus
                    .get(i)
                    .map_or(String::new(), |c| format!(" on CPU{c}"));
                return Err(Malformed(format!(
                    "row {}{cpu} goes down from {c0} to {c1}: swapped, or a reboot between them",
                    r1.label
                )));
            };
            per_cpu.push(d);
        }
        rows.push(RowDelta {
            label: r1.label.clone(),
            chip: r1.chip.clone(),
            actions: r1.actions.clone(),
            per_cpu,
        });
    }
    Ok(Delta {
        cpus: after.cpus.clone(),
        rows,
        window_s,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::interrupts::parse;

    fn snap(meta: &str, c0: u64, c1: u64) -> Snapshot {
        parse(&format!(
            "{meta}\n   CPU0 CPU1\n 36: {c0} {c1} PCI-MSIX-0000:00:02.0 1-edge virtio1-req.0\n LOC: 5 5 Local timer interrupts\n"
        ))
        .unwrap()
    }

    #[test]
    fn a_window_counts_per_row_and_cpu() {
        let d = delta(
            &snap("# irqlab snapshot: btime=7 taken=10.0", 1, 10),
            &snap("# irqlab snapshot: btime=7 taken=12.5", 4, 30),
        )
        .unwrap();
        assert_eq!(d.row("36").unwrap().per_cpu, vec![3, 20]);
        assert_eq!(d.row("LOC").unwrap().total(), 0);
        assert_eq!(d.window_s, Some(2.5));
    }

    #[test]
    fn swapped_rebooted_or_different_boot_snapshots_are_refused() {
        let e = delta(&snap("", 5, 10), &snap("", 4, 30)).unwrap_err();
        assert!(e.0.contains("row 36 on CPU0 goes down from 5 to 4"), "{e}");
        let e = delta(
            &snap("# irqlab snapshot: btime=1", 0, 0),
            &snap("# irqlab snapshot: btime=2", 1, 1),
        )
        .unwrap_err();
        assert!(e.0.contains("different boots"), "{e}");
        let e = delta(
            &snap("# irqlab snapshot: taken=9", 0, 0),
            &snap("# irqlab snapshot: taken=8", 1, 1),
        )
        .unwrap_err();
        assert!(e.0.contains("swapped"), "{e}");
        let one = parse("  CPU0\n 36: 1 PCI-MSIX 1-edge virtio1-req.0\n").unwrap();
        assert!(
            delta(&one, &snap("", 1, 1))
                .unwrap_err()
                .0
                .contains("CPU columns differ")
        );
    }

    #[test]
    fn a_32_bit_counter_wraps_only_within_one_known_boot() {
        let near = (1u64 << 32) - 10;
        let m = "# irqlab snapshot: btime=3";
        let d = delta(&snap(m, near, 0), &snap(m, 5, 0)).unwrap();
        assert_eq!(d.row("36").unwrap().per_cpu[0], 15);
        assert!(delta(&snap("", near, 0), &snap("", 5, 0)).is_err());
    }
}
