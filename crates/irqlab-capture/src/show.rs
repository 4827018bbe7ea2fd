//! `irqlab capture --show DIR`: a capture as text: the host, its devices and vectors with
//! their CPUs, and a table of the runs.

use crate::cpulist::format as cpus;
use crate::host::Host;
use crate::reader::Capture;
use crate::run::Run;
use std::fmt::Write;

fn or_q<T: std::fmt::Display>(v: &Option<T>) -> String {
    v.as_ref().map_or("?".into(), T::to_string)
}

fn bytes(b: u64) -> String {
    if b >= 1 << 30 {
        format!("{:.0} GiB", b as f64 / (1u64 << 30) as f64)
    } else {
        format!("{} MiB", b >> 20)
    }
}

fn host_lines(s: &mut String, h: &Host) {
    let t = &h.topology;
    let _ = writeln!(
        s,
        "host: {}, {} CPUs ({} cores, {} socket(s), {} NUMA node(s), {} thread(s) per core)",
        h.hostname.as_deref().unwrap_or("?"),
        t.cpus(),
        t.cores,
        t.sockets,
        t.numa_nodes,
        t.threads_per_core
    );
    let _ = writeln!(
        s,
        "cpu: {} {} (family {} model {} stepping {}), {} MHz{}",
        t.vendor.as_deref().unwrap_or("?"),
        t.model_name.as_deref().unwrap_or("?"),
        or_q(&t.family),
        or_q(&t.model),
        or_q(&t.stepping),
        t.mhz.map_or("?".into(), |m| format!("{m:.0}")),
        t.max_mhz
            .map_or(String::new(), |m| format!(" (max {m:.0})"))
    );
    let virt = if t.virtualized {
        format!(
            "a VM ({}; {})",
            t.hypervisor.as_deref().unwrap_or("hypervisor unknown"),
            t.hypervisor_evidence.join(", ")
        )
    } else {
        "bare metal (no hypervisor flag)".into()
    };
    let _ = writeln!(s, "runs on: {virt}");
    let k = &h.kernel;
    if k.release.is_some() {
        let opts: Vec<String> = k
            .options
            .iter()
            .map(|(k, v)| {
                if v.is_empty() {
                    k.clone()
                } else {
                    format!("{k}={v}")
                }
            })
            .collect();
        let _ = writeln!(
            s,
            "kernel: {}; options that matter: {}",
            or_q(&k.release),
            if opts.is_empty() {
                "none".into()
            } else {
                opts.join(" ")
            }
        );
        for (m, params) in &k.modules {
            let ps: Vec<String> = params.iter().map(|(p, v)| format!("{p}={v}")).collect();
            let _ = writeln!(s, "  module {m}: {}", ps.join(" "));
        }
        let i = &h.iommu;
        let units: Vec<String> = i.units.iter().map(|u| u.name.clone()).collect();
        let _ = writeln!(
            s,
            "iommu: units {}; ACPI tables {}; interrupt remapping in use: {}; PMN row (posted MSI): {}",
            if units.is_empty() {
                "none".into()
            } else {
                units.join(",")
            },
            if i.acpi_tables.is_empty() {
                "none readable".into()
            } else {
                i.acpi_tables.join(",")
            },
            if i.remapping_in_use {
                "yes (IR- chips)"
            } else {
                "no"
            },
            if i.posted_msi_row { "yes" } else { "no" }
        );
    }
}

fn device_lines(s: &mut String, h: &Host) {
    for d in &h.devices {
        let mut facts = vec![d.kind.name().to_string()];
        facts.extend(d.driver.as_ref().map(|x| format!("driver {x}")));
        facts.extend(d.model.clone());
        facts.extend(d.size_bytes.map(bytes));
        if let Some(p) = &d.pci {
            let link = match (&p.current_link_speed, &p.current_link_width) {
                (Some(sp), Some(w)) => format!(", link {sp} x{w}"),
                _ => String::new(),
            };
            facts.push(format!("PCI {}{link}", p.address));
        }
        if !d.queues.is_empty() {
            facts.push(format!(
                "{} hw queue(s), {} poll",
                d.queues.len(),
                d.poll_queues
            ));
        }
        facts.extend(d.scheduler.as_ref().map(|x| format!("scheduler {x}")));
        if d.kind == crate::DeviceKind::VirtioBlk && !d.virtio_features.is_empty() {
            let idx = d.has_virtio_feature(crate::devices::VIRTIO_RING_F_EVENT_IDX);
            facts.push(format!("EVENT_IDX {}", if idx { "on" } else { "off" }));
        }
        let _ = writeln!(s, "  {}: {}", d.name, facts.join(", "));
        for q in &d.queues {
            let _ = writeln!(s, "    queue {}: CPUs {}", q.index, cpus(&q.cpus));
        }
        for v in &d.vectors {
            let _ = writeln!(
                s,
                "    vector {} {} ({}){}: delivered to CPU {} (may go to {})",
                v.irq,
                v.name,
                v.chip,
                v.queue.map_or(String::new(), |q| format!(", queue {q}")),
                if v.effective_cpus.is_empty() {
                    "?".into()
                } else {
                    cpus(&v.effective_cpus)
                },
                if v.affinity_cpus.is_empty() {
                    "?".into()
                } else {
                    cpus(&v.affinity_cpus)
                }
            );
        }
    }
}

/// Where a run's device interrupts landed: CPUs with at least 1% of them.
fn landed(r: &Run) -> String {
    let per = r.interrupts_per_cpu();
    let total: u64 = per.iter().sum();
    if total == 0 {
        return "-".into();
    }
    let parts: Vec<String> = r
        .cpus
        .iter()
        .zip(&per)
        .filter(|(_, n)| **n * 100 >= total)
        .map(|(c, n)| format!("{c}:{:.0}%", *n as f64 * 100.0 / total as f64))
        .collect();
    parts.join(" ")
}

fn opt2(v: Option<f64>) -> String {
    v.map_or("-".into(), |x| format!("{x:.2}"))
}

fn run_table(s: &mut String, runs: &[Run]) {
    let _ = writeln!(
        s,
        "  {:<18} {:>9} {:>10} {:>9} {:>10} {:>8} {:>8} {:>6} {:>5}  irq CPUs",
        "run", "IOPS", "clat mean", "clat p99", "irq/s", "I/O/irq", "dev/irq", "CPU%", "load"
    );
    for r in runs {
        let p99 = r.summary.clat_p99_us.map_or("-".into(), |p| {
            format!(
                "{p:.1}{}",
                if r.summary.percentiles_exact { "" } else { "*" }
            )
        });
        let _ = writeln!(
            s,
            "  {:<18} {:>9.0} {:>10.1} {:>9} {:>10.0} {:>8} {:>8} {:>6.1} {:>5}  {}",
            r.name,
            r.summary.iops,
            r.summary.clat_mean_us,
            p99,
            r.interrupts_per_s,
            opt2(r.ios_per_interrupt),
            opt2(r.device_ios_per_interrupt),
            r.cpu_pct(),
            r.loadavg
                .first()
                .and_then(|l| l.split_whitespace().next())
                .unwrap_or("-"),
            landed(r)
        );
    }
    let _ = writeln!(
        s,
        "  (latencies in us; I/O/irq: fio's I/Os per device interrupt; dev/irq: the disk's I/Os,\n   all processes, per interrupt; CPU%: fio's usr+sys, % of one CPU; load: the 1-minute\n   load average as the run began)"
    );
    if runs.iter().any(|r| !r.summary.percentiles_exact) {
        let _ = writeln!(
            s,
            "  * the largest job's p99 (plain JSON of several jobs has no merged percentile)"
        );
    }
}

/// The capture as text.
pub fn show(c: &Capture) -> String {
    let mut s = String::new();
    match &c.manifest {
        Some(m) => {
            let _ = writeln!(
                s,
                "capture {} ({}, {}{})",
                c.dir.display(),
                m.tool,
                m.date,
                if m.quick { ", quick" } else { "" }
            );
        }
        None => {
            let _ = writeln!(s, "capture {} (laid out by hand)", c.dir.display());
        }
    }
    host_lines(&mut s, &c.host);
    let _ = writeln!(s, "devices:");
    if c.host.devices.is_empty() {
        let _ = writeln!(s, "  none found");
    }
    device_lines(&mut s, &c.host);
    if let Some(m) = &c.manifest {
        if let Some(t) = &m.target {
            let _ = writeln!(
                s,
                "target: {} ({}, {}, on {}{})",
                t.path,
                t.kind,
                bytes(t.size_bytes),
                t.device.as_deref().unwrap_or("no block device found"),
                if t.created {
                    "; laid out and removed by irqlab"
                } else {
                    ""
                }
            );
        }
        if let Some(f) = &m.fio {
            let _ = writeln!(s, "fio: {} ({})", f.version, f.path);
        }
    }
    if !c.runs.is_empty() {
        let _ = writeln!(s, "runs:");
        run_table(&mut s, &c.runs);
    }
    for k in &c.skipped {
        let _ = writeln!(s, "skipped {}: {}", k.name, k.why);
    }
    for n in c.manifest.iter().flat_map(|m| &m.notes) {
        let _ = writeln!(s, "note: {n}");
    }
    if let Some(b) = &c.bench {
        let _ = writeln!(s, "hostbench ({}):", b.date);
        for line in crate::hostbench::render(b).lines() {
            let _ = writeln!(s, "  {line}");
        }
    }
    s
}
