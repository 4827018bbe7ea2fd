//! A /proc/interrupts-style table, laid out as kernel/irq/proc.c show_interrupts and
//! arch/x86/kernel/irq.c arch_show_interrupts print it.

use crate::RunReport;
use std::fmt::Write;

/// The IRQ number given to the first device vector: a stand-in for the numbers the
/// kernel's vector domain hands out, which irqlab does not model.
pub const FIRST_IRQ: usize = 128;
/// With more CPUs than this, columns whose every count is zero are left out.
const MAX_CPUS_SHOWN_ALWAYS: usize = 8;

/// The table: device vectors, then LOC (timer ticks) and PMN (posted MSI notifications).
pub fn render(r: &RunReport) -> String {
    let ncpus = r
        .vectors
        .iter()
        .map(|v| v.per_cpu.len())
        .chain(r.cpus.iter().map(|c| c.cpu + 1))
        .max()
        .unwrap_or(0);
    let vector_count = |cpu: usize| -> u64 {
        r.vectors
            .iter()
            .map(|v| v.per_cpu.get(cpu).copied().unwrap_or(0))
            .sum()
    };
    let cpu_stat = |cpu: usize, f: fn(&crate::CpuReport) -> u64| -> u64 {
        r.cpus.iter().filter(|c| c.cpu == cpu).map(f).sum()
    };
    let shown: Vec<usize> = (0..ncpus)
        .filter(|&cpu| {
            ncpus <= MAX_CPUS_SHOWN_ALWAYS
                || vector_count(cpu) > 0
                || cpu_stat(cpu, |c| c.timer_ticks) > 0
                || cpu_stat(cpu, |c| c.pmn) > 0
        })
        .collect();

    // proc.c: prec = 3, one more digit per power of ten up to nr_irqs.
    let nr_irqs = FIRST_IRQ + r.vectors.len();
    let mut prec = 3;
    let mut j = 1000;
    while prec < 10 && j <= nr_irqs {
        prec += 1;
        j *= 10;
    }

    let mut out = String::new();
    let _ = write!(out, "{:width$}", "", width = prec + 8);
    for &cpu in &shown {
        let _ = write!(out, "CPU{cpu:<8}");
    }
    out.push('\n');

    for (i, v) in r.vectors.iter().enumerate() {
        let _ = write!(out, "{:>prec$}: ", FIRST_IRQ + i);
        for &cpu in &shown {
            let _ = write!(out, "{:>10} ", v.per_cpu.get(cpu).copied().unwrap_or(0));
        }
        // proc.c: " %8s" chip, then the handler flow and the action name.
        let _ = writeln!(out, " {:>8} {:>4}-edge      {}", v.chip, i, v.name);
    }

    let arch_row = |out: &mut String, name: &str, f: fn(&crate::CpuReport) -> u64, desc: &str| {
        let _ = write!(out, "{name:>prec$}: ");
        for &cpu in &shown {
            let _ = write!(out, "{:>10} ", cpu_stat(cpu, f));
        }
        let _ = writeln!(out, "  {desc}");
    };
    arch_row(&mut out, "LOC", |c| c.timer_ticks, "Local timer interrupts");
    arch_row(&mut out, "PMN", |c| c.pmn, "Posted MSI notification event");

    let hidden = ncpus - shown.len();
    if hidden > 0 {
        let _ = writeln!(
            out,
            "({hidden} of {ncpus} CPUs not shown: no interrupts on them)"
        );
    }
    out
}
