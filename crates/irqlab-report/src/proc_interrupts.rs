//! /proc/interrupts as Linux 6.18 prints it (kernel/irq/proc.c show_interrupts,
//! arch/x86/kernel/irq.c arch_show_interrupts): a header with one `CPU%-8d` column per
//! online CPU, then per interrupt `%*d:` (width from the number of IRQs), ` %10u` per
//! CPU (irq_proc_emit_counts), ` %8s` chip, ` %*lu` hwirq, `-%-8s` flow ("edge"), `  `
//! and the action name; then the architecture's rows, which 6.18 still prints the old
//! way: `%*s: `, `%10u ` per CPU, then two spaces and the description.

use crate::RunReport;
use std::fmt::Write;

/// The IRQ number given to the first device vector: a stand-in for the numbers the
/// kernel's vector domain hands out, which irqlab does not model.
pub const FIRST_IRQ: usize = 128;

/// One device interrupt row.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IrqRow {
    pub irq: usize,
    /// Handler runs per online CPU.
    pub counts: Vec<u64>,
    /// The irq_chip name, e.g. "IR-PCI-MSIX-0000:01:00.0".
    pub chip: String,
    pub hwirq: u32,
    /// The action (handler) name, e.g. "nvme0q1".
    pub action: String,
}

/// One architecture row such as LOC or PMN.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ArchRow {
    pub symbol: &'static str,
    pub counts: Vec<u64>,
    pub text: &'static str,
}

/// arch/x86/kernel/irq.c: the rows irqlab counts.
pub const LOC: (&str, &str) = ("LOC", "Local timer interrupts");
pub const PMN: (&str, &str) = ("PMN", "Posted MSI notification event");

/// A whole /proc/interrupts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Table {
    pub ncpus: usize,
    /// The kernel's total_nr_irqs, which sets the width of the first column.
    pub nr_irqs: usize,
    pub rows: Vec<IrqRow>,
    pub arch: Vec<ArchRow>,
}

impl Table {
    /// The text, byte for byte as 6.18 prints it.
    pub fn format(&self) -> String {
        // proc.c irq_proc_calc_prec: 3 digits, one more per power of ten up to nr_irqs.
        let mut prec = 3;
        let mut n = 1000;
        while prec < 10 && n <= self.nr_irqs {
            prec += 1;
            n *= 10;
        }
        let mut out = String::new();
        let _ = write!(out, "{:width$}", "", width = prec + 8);
        for cpu in 0..self.ncpus {
            let _ = write!(out, "CPU{cpu:<8}");
        }
        out.push('\n');
        let counts = |out: &mut String, c: &[u64]| {
            for cpu in 0..self.ncpus {
                let _ = write!(out, " {:>10}", c.get(cpu).copied().unwrap_or(0));
            }
        };
        for r in &self.rows {
            let _ = write!(out, "{:>prec$}:", r.irq);
            counts(&mut out, &r.counts);
            // " " then "%8s" chip, " " then the hwirq in the IRQ column's width, then
            // "-%-8s" with the flow handler's name and "  " before the action.
            let _ = writeln!(
                out,
                " {:>8} {:>prec$}-{:<8}  {}",
                r.chip, r.hwirq, "edge", r.action
            );
        }
        for a in &self.arch {
            let _ = write!(out, "{:>prec$}: ", a.symbol);
            for cpu in 0..self.ncpus {
                let _ = write!(out, "{:>10} ", a.counts.get(cpu).copied().unwrap_or(0));
            }
            let _ = writeln!(out, "  {}", a.text);
        }
        out
    }
}

/// The table of a run: every CPU, the device vectors (poll queues have no interrupt
/// and no row), then LOC and PMN.
pub fn table(r: &RunReport) -> Table {
    let ncpus = r
        .vectors
        .iter()
        .map(|v| v.per_cpu.len())
        .chain(r.cpus.iter().map(|c| c.cpu + 1))
        .max()
        .unwrap_or(0);
    let rows = r
        .vectors
        .iter()
        .enumerate()
        .filter(|(_, v)| v.chip != crate::CHIP_POLLED)
        .map(|(i, v)| IrqRow {
            irq: FIRST_IRQ + i,
            counts: v.per_cpu.clone(),
            chip: v.proc_chip(),
            hwirq: v.hwirq,
            action: v.name.clone(),
        })
        .collect();
    let per_cpu = |f: fn(&crate::CpuReport) -> u64| -> Vec<u64> {
        (0..ncpus)
            .map(|cpu| r.cpus.iter().filter(|c| c.cpu == cpu).map(f).sum())
            .collect()
    };
    Table {
        ncpus,
        nr_irqs: FIRST_IRQ + r.vectors.len(),
        rows,
        arch: vec![
            ArchRow {
                symbol: LOC.0,
                counts: per_cpu(|c| c.timer_ticks),
                text: LOC.1,
            },
            ArchRow {
                symbol: PMN.0,
                counts: per_cpu(|c| c.pmn),
                text: PMN.1,
            },
        ],
    }
}

/// [`table`] as text.
pub fn render(r: &RunReport) -> String {
    table(r).format()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// /proc/interrupts of a 2-CPU guest on Linux 6.18.44, captured with
    /// `cat /proc/interrupts`.
    const CAPTURED: &str = include_str!("../tests/data/proc-interrupts-6.18.txt");

    /// Reads the captured file back into a [`Table`] (ERR and MIS, single counters with
    /// no description, are left out).
    fn parse(text: &str) -> (Table, Vec<&str>) {
        let mut lines = text.lines();
        let ncpus = lines.next().unwrap().split_whitespace().count();
        let (mut rows, mut arch, mut kept) = (Vec::new(), Vec::new(), Vec::new());
        for line in lines {
            let (label, rest) = line.split_once(':').unwrap();
            let mut words = rest.split_whitespace();
            let counts: Vec<u64> = words
                .by_ref()
                .take(ncpus)
                .map(|w| w.parse().unwrap())
                .collect();
            let tail: Vec<&str> = words.collect();
            if let Ok(irq) = label.trim().parse::<usize>() {
                let (hwirq, flow) = tail[1].split_once('-').unwrap();
                assert_eq!(flow, "edge");
                rows.push(IrqRow {
                    irq,
                    counts,
                    chip: tail[0].to_string(),
                    hwirq: hwirq.parse().unwrap(),
                    action: tail[2..].join(" "),
                });
            } else if counts.len() == ncpus && !tail.is_empty() {
                let text = line.rsplit_once("  ").unwrap().1;
                arch.push(ArchRow {
                    symbol: Box::leak(label.trim().to_string().into_boxed_str()),
                    counts,
                    text: Box::leak(text.to_string().into_boxed_str()),
                });
            } else {
                continue;
            }
            kept.push(line);
        }
        let nr_irqs = rows.iter().map(|r| r.irq + 1).max().unwrap_or(0);
        (
            Table {
                ncpus,
                nr_irqs,
                rows,
                arch,
            },
            kept,
        )
    }

    #[test]
    fn a_captured_6_18_file_is_reprinted_byte_for_byte() {
        let (table, kept) = parse(CAPTURED);
        assert!(table.rows.len() >= 10 && table.arch.len() >= 10);
        let mut want = CAPTURED.lines().next().unwrap().to_string();
        want.push('\n');
        for line in kept {
            want.push_str(line);
            want.push('\n');
        }
        assert_eq!(table.format(), want);
    }

    #[test]
    fn wide_irq_numbers_widen_both_columns() {
        let t = Table {
            ncpus: 1,
            nr_irqs: 1200,
            rows: vec![IrqRow {
                irq: 1128,
                counts: vec![5],
                chip: "IR-PCI-MSIX-0000:01:00.0".into(),
                hwirq: 3,
                action: "nvme0q3".into(),
            }],
            arch: vec![ArchRow {
                symbol: "PMN",
                counts: vec![2],
                text: PMN.1,
            }],
        };
        assert_eq!(
            t.format(),
            "            CPU0       \n\
             1128:          5 IR-PCI-MSIX-0000:01:00.0    3-edge      nvme0q3\n\
             \x20PMN:          2   Posted MSI notification event\n"
        );
    }
}
