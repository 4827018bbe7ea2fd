//! One run of a capture: its fio result and the interrupts of its window, and what
//! follows from them: interrupts per second and per CPU, I/Os per interrupt.

use crate::fio_json::FioOutput;
use crate::fio_summary::FioSummary;
use crate::irq_delta::Delta;
use serde::Serialize;

/// One of the device's vectors over the run's window.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct VectorWindow {
    pub irq: u32,
    pub name: String,
    /// Per CPU column of the snapshots.
    pub per_cpu: Vec<u64>,
}

impl VectorWindow {
    pub fn total(&self) -> u64 {
        self.per_cpu.iter().sum()
    }
}

#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Run {
    pub name: String,
    pub what: Option<String>,
    /// The device whose vectors count.
    pub device: Option<String>,
    /// /proc/loadavg before and after, when irqlab ran it.
    pub loadavg: Vec<String>,
    #[serde(skip)]
    pub fio: FioOutput,
    pub summary: FioSummary,
    #[serde(skip)]
    pub delta: Delta,
    /// The CPU numbers of the per-CPU columns.
    pub cpus: Vec<u32>,
    pub vectors: Vec<VectorWindow>,
    /// The device's interrupts in the window, all vectors and CPUs.
    pub interrupts: u64,
    /// The window the rates are over: fio's runtime, seconds.
    pub window_s: f64,
    pub interrupts_per_s: f64,
    /// fio's I/Os per device interrupt.
    pub ios_per_interrupt: Option<f64>,
    /// The disk's I/Os (fio's disk_util, everything the disk completed in the window,
    /// other processes' I/O included) per device interrupt.
    pub device_ios_per_interrupt: Option<f64>,
}

impl Run {
    /// fio's usr + sys, % of one CPU.
    pub fn cpu_pct(&self) -> f64 {
        self.summary.usr_cpu_pct + self.summary.sys_cpu_pct
    }

    /// The device's interrupts per CPU column over the window.
    pub fn interrupts_per_cpu(&self) -> Vec<u64> {
        let mut out = vec![0; self.cpus.len()];
        for v in &self.vectors {
            for (o, c) in out.iter_mut().zip(&v.per_cpu) {
                *o += c;
            }
        }
        out
    }
}

/// What a run is made of, read and checked by the reader.
pub struct Parts {
    pub name: String,
    pub what: Option<String>,
    pub device: Option<String>,
    pub loadavg: Vec<String>,
    pub fio: FioOutput,
    pub delta: Delta,
    /// The IRQ numbers of the device's I/O vectors.
    pub vector_irqs: Vec<u32>,
}

pub fn build(p: Parts) -> Run {
    let summary = p.fio.summary();
    let vectors: Vec<VectorWindow> = p
        .delta
        .rows
        .iter()
        .filter_map(|r| {
            let irq = r.label.parse::<u32>().ok()?;
            p.vector_irqs.contains(&irq).then(|| VectorWindow {
                irq,
                name: r.actions.join(","),
                per_cpu: r.per_cpu.clone(),
            })
        })
        .collect();
    let interrupts: u64 = vectors.iter().map(VectorWindow::total).sum();
    let window_s = if summary.runtime_s > 0.0 {
        summary.runtime_s
    } else {
        p.delta.window_s.unwrap_or(0.0)
    };
    let disk = match &p.device {
        Some(d) => p.fio.disk_util.iter().find(|u| &u.name == d),
        None => None,
    }
    .or(if p.fio.disk_util.len() == 1 {
        p.fio.disk_util.first()
    } else {
        None
    });
    let per_irq = |ios: u64| (interrupts > 0).then(|| ios as f64 / interrupts as f64);
    Run {
        interrupts_per_s: if window_s > 0.0 {
            interrupts as f64 / window_s
        } else {
            0.0
        },
        ios_per_interrupt: per_irq(summary.total_ios),
        device_ios_per_interrupt: disk.and_then(|d| per_irq(d.read_ios + d.write_ios)),
        cpus: p.delta.cpus.clone(),
        name: p.name,
        what: p.what,
        device: p.device,
        loadavg: p.loadavg,
        fio: p.fio,
        summary,
        delta: p.delta,
        vectors,
        interrupts,
        window_s,
    }
}
