//! The platform as the capture shows it, before any fit: CPUs and frequency, the kernel,
//! the devices the runs used with their queues, depth, vectors and vector CPUs, their
//! PCIe links and the interrupt path, every value with its provenance; the costs no
//! capture sees come from the shared tables (cpus/, kernels/) and the kind tables
//! (kinds/).

use crate::FromCaptureError;
use crate::doc::{Doc, Section};
use crate::kinds::KindTable;
use crate::measure::{device_group, int, measured};
use crate::tables::{Choice, choose_cpu, choose_kernel, choose_uncore, copy};
use irqlab_capture::devices::BlockDevice;
use irqlab_capture::{Capture, DeviceKind};
use irqlab_sim::ledger::{Provenance, SourceKind};
use std::collections::BTreeMap;
use std::path::Path;

/// A capture device as the platform names it.
#[derive(Clone, Debug, PartialEq)]
pub struct Mapped {
    /// The capture's name (`nvme0`, `vda`).
    pub capture: String,
    /// The disk's name as a job names it on the capture's machine (`nvme0n1`, `vda`).
    pub disk: String,
    /// The platform's device name (`nvme0`).
    pub platform: String,
    /// The file a job names for it on the platform (`/dev/nvme0n1`).
    pub file: String,
    /// Its `[[devices]]` group.
    pub group: usize,
}

/// The platform before the fit, and what was decided on the way.
#[derive(Clone, Debug)]
pub struct Template {
    pub doc: Doc,
    /// The machine's name in provenance (`machine = ...`).
    pub machine: String,
    pub devices: Vec<Mapped>,
    /// The tables used, each with why.
    pub tables: Vec<Choice>,
    /// Assumptions and approximations, one line each.
    pub notes: Vec<String>,
    pub mhz: u64,
    /// The platform's CPU count.
    pub cpus: usize,
    /// Interrupt remapping in use on a bare-metal host (posted MSI is possible there).
    pub remapping: bool,
    pub virtualized: bool,
    /// The kind of each `[[devices]]` group, in order.
    pub group_kinds: Vec<DeviceKind>,
    /// The kind tables used (`kinds/nvme.toml`, ...), with what each gave.
    pub kinds_used: Vec<String>,
}

/// The machine's name: its hostname, or the capture directory's.
pub fn machine_name(c: &Capture) -> String {
    let dir = c
        .dir
        .canonicalize()
        .unwrap_or_else(|_| c.dir.clone())
        .file_name()
        .map_or_else(
            || "capture".to_string(),
            |n| n.to_string_lossy().into_owned(),
        );
    match c.host.hostname.as_deref() {
        Some(h) if !h.is_empty() && h != dir => format!("{h} ({dir})"),
        _ => dir,
    }
}

/// The disks the runs used: the run's device, the disks fio's disk_util names, in the
/// order the capture lists its devices.
fn used_devices(c: &Capture) -> Vec<&BlockDevice> {
    let named = |d: &BlockDevice| {
        c.runs.iter().any(|r| {
            r.device.as_deref() == Some(d.name.as_str())
                || r.fio.disk_util.iter().any(|u| {
                    u.name == d.name
                        || d.irq_prefix
                            .as_deref()
                            .is_some_and(|p| disk_of(&u.name) == p)
                })
        })
    };
    let used: Vec<&BlockDevice> = c.host.devices.iter().filter(|d| named(d)).collect();
    if used.is_empty() {
        c.host.devices.iter().collect()
    } else {
        used
    }
}

/// `nvme3n1` → `nvme3` (an NVMe namespace's controller); other names as they are.
pub fn disk_of(name: &str) -> String {
    if let Some(rest) = name.strip_prefix("nvme") {
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        if !digits.is_empty() {
            return format!("nvme{digits}");
        }
    }
    name.to_string()
}

/// The CPU each of a device's vectors interrupts: its effective affinity, else the CPU
/// that took most of its interrupts in the runs (a hand-made capture has no /proc/irq).
fn vector_cpus(c: &Capture, d: &BlockDevice) -> Vec<Option<u32>> {
    d.vectors
        .iter()
        .map(|v| {
            if let [one] = v.effective_cpus.as_slice() {
                return Some(*one);
            }
            let mut per: BTreeMap<u32, u64> = BTreeMap::new();
            for r in &c.runs {
                for w in r.vectors.iter().filter(|w| w.irq == v.irq) {
                    for (i, n) in w.per_cpu.iter().enumerate() {
                        *per.entry(r.cpus.get(i).copied().unwrap_or(i as u32))
                            .or_default() += n;
                    }
                }
            }
            per.into_iter()
                .filter(|(_, n)| *n > 0)
                .max_by_key(|(_, n)| *n)
                .map(|(c, _)| c)
        })
        .collect()
}

/// The PCIe link of a device: from the capture's sysfs, else lspci.txt of the capture.
fn link(d: &BlockDevice, lspci: &BTreeMap<String, (f64, u32)>) -> Option<(f64, u32, String)> {
    if let Some(p) = &d.pci {
        let speed = p
            .current_link_speed
            .as_deref()
            .and_then(|s| s.split_whitespace().next()?.parse::<f64>().ok());
        let width = p
            .current_link_width
            .as_deref()
            .and_then(|w| w.trim().parse::<u32>().ok());
        if let (Some(s), Some(w)) = (speed, width) {
            return Some((
                s,
                w,
                format!("/sys/bus/pci/devices/{}/current_link_*", p.address),
            ));
        }
    }
    let addr = d
        .pci
        .as_ref()
        .map(|p| p.address.clone())
        .or_else(|| d.vectors.first().and_then(|v| pci_of_chip(&v.chip)))?;
    lspci
        .get(&addr)
        .map(|&(s, w)| (s, w, format!("lspci.txt {addr} LnkSta")))
}

/// `IR-PCI-MSIX-0000:64:00.0` → `0000:64:00.0`.
fn pci_of_chip(chip: &str) -> Option<String> {
    let i = chip.find("MSI")?;
    let rest = &chip[i..];
    let addr = rest.split_once('-')?.1;
    (addr.len() == 12).then(|| addr.to_string())
}

/// lspci -vv's `LnkSta: Speed 32GT/s (ok), Width x4 (ok)` per function, by address.
pub fn parse_lspci(text: &str) -> BTreeMap<String, (f64, u32)> {
    let mut out = BTreeMap::new();
    let mut cur: Option<String> = None;
    for line in text.lines() {
        if !line.starts_with(char::is_whitespace) {
            let first = line.split_whitespace().next().unwrap_or("");
            let addr = if first.len() == 7 {
                format!("0000:{first}")
            } else {
                first.to_string()
            };
            cur = (addr.len() == 12 && addr.as_bytes()[7] == b':').then_some(addr);
            continue;
        }
        let Some(a) = &cur else { continue };
        let Some(rest) = line.trim().strip_prefix("LnkSta:") else {
            continue;
        };
        let speed = rest
            .split("Speed")
            .nth(1)
            .and_then(|s| s.trim().split("GT/s").next()?.trim().parse::<f64>().ok());
        let width = rest.split("Width x").nth(1).and_then(|s| {
            s.chars()
                .take_while(char::is_ascii_digit)
                .collect::<String>()
                .parse()
                .ok()
        });
        if let (Some(s), Some(w)) = (speed, width) {
            out.insert(a.clone(), (s, w));
        }
    }
    out
}

/// Payload bytes per ns of a link: GT/s × lanes, 128b/130b encoding from 8 GT/s on
/// (8b/10b below), and 256-byte TLPs behind 24 bytes of header, framing and CRC.
pub fn link_bytes_per_ns(gts: f64, lanes: u32) -> f64 {
    let encoding = if gts >= 8.0 { 128.0 / 130.0 } else { 0.8 };
    gts * f64::from(lanes) * encoding / 8.0 * 256.0 / 280.0
}

/// Builds the platform document of `c` with the tables and kinds in `platforms`.
pub fn build(c: &Capture, platforms: &Path) -> Result<Template, FromCaptureError> {
    let machine = machine_name(c);
    let topo = &c.host.topology;
    let cpus = topo.cpus();
    let mut notes = Vec::new();
    let mhz = topo
        .mhz
        .filter(|m| *m >= 100.0)
        .or(topo.max_mhz)
        .map(|m| m.round() as u64)
        .ok_or_else(|| FromCaptureError::Unmodelled {
            what: format!("the CPUs of {machine}"),
            missing: "their frequency: the capture has no 'cpu MHz' (cpuinfo) nor 'CPU MHz'/'CPU max MHz' (lscpu); add it to lscpu.txt".into(),
        })?
        .clamp(100, 10_000);
    let cpu = choose_cpu(platforms, topo)?;
    let (kernel, base) = choose_kernel(platforms, c.host.kernel.release.as_deref())?;
    let mut doc = Doc::default();
    let prefixes = [
        "",
        "cpu",
        "kernel",
        "engine",
        "engine.libaio",
        "engine.io_uring",
        "engine.pvsync2",
        "iommu",
    ];
    for p in prefixes {
        doc.sections.push(Section::new(p, false, p));
    }
    doc.set("name", toml::Value::String(name_of(&machine)), None);
    let online = irqlab_capture::cpulist::format(&topo.online);
    let freq = if topo.mhz.is_some_and(|m| m >= 100.0) {
        "cpu MHz"
    } else {
        "CPU max MHz"
    };
    doc.set(
        "cpu.ghz",
        toml::Value::Float(mhz as f64 / 1000.0),
        Some(measured(
            &machine,
            source_of(c),
            Some(format!("{freq} {mhz}")),
            Some("the frequency the core-bound costs of the tables are scaled to".into()),
        )),
    );
    doc.set(
        "cpu.count",
        int(cpus as u64),
        Some(measured(
            &machine,
            source_of(c),
            Some(format!("online CPUs {online}")),
            None,
        )),
    );
    // Table values: the newest kernel table as the base, the nearest version over it, the
    // core's table over both (what a platform naming both would get).
    let mut tables = vec![cpu.clone(), kernel.clone()];
    let mut copied = Vec::new();
    if let Some(b) = &base {
        copied.extend(copy(b, mhz)?);
        notes.push(format!(
            "kernel: {} lacks some costs; they come from {}",
            kernel.said(),
            b.path.display()
        ));
        tables.push(b.clone());
    }
    copied.extend(copy(&kernel, mhz)?);
    copied.extend(copy(&cpu, mhz)?);
    for (key, value, p) in copied {
        doc.set(&key, value, Some(p));
    }
    if doc.get("cpu.scheduler").and_then(|i| i.value.as_str()) == Some("eevdf") {
        // sysctl_sched_base_slice, 0.75 ms, scaled by 1 + ilog2(min(ncpus, 8))
        // (kernel/sched/fair.c get_update_sysctl_factor, SCHED_TUNABLESCALING_LOG).
        let factor = 1 + (cpus.clamp(1, 8) as u64).ilog2() as u64;
        let mut p = Provenance::new(SourceKind::Kernel);
        p.cite = Some("kernel/sched/fair.c sysctl_sched_base_slice".into());
        p.note = Some(format!(
            "0.75 ms scaled by 1 + ilog2(min(ncpus, 8)) = {factor} at {cpus} CPUs"
        ));
        doc.set("cpu.sched_slice_ns", int(750_000 * factor), Some(p));
    }
    let used = used_devices(c);
    let lspci = match std::fs::read_to_string(c.dir.join("lspci.txt")) {
        Ok(t) => parse_lspci(&t),
        Err(_) => BTreeMap::new(),
    };
    let mut devices = Vec::new();
    let remapping = c.host.iommu.remapping_in_use;
    let virtualized = topo.virtualized;
    for d in &used {
        if matches!(d.kind, DeviceKind::Scsi | DeviceKind::Other) {
            return Err(FromCaptureError::Unmodelled {
                what: format!(
                    "{} ({}, driver {})",
                    d.name,
                    d.kind.name(),
                    d.driver.as_deref().unwrap_or("unknown")
                ),
                missing: "a device kind the model has: NVMe, virtio-blk (a guest's disk), DSA or RDMA; a SCSI or SATA disk's completion path (its HBA, the SCSI midlayer) is not modelled".into(),
            });
        }
        if d.kind == DeviceKind::VirtioBlk && !virtualized {
            return Err(FromCaptureError::Unmodelled {
                what: format!("{} (virtio-blk)", d.name),
                missing: "a virtual machine: a virtio-blk disk is a guest's, and the capture does not say the machine runs under a hypervisor (no hypervisor flag in cpuinfo or lscpu's Flags)".into(),
            });
        }
    }
    if used.is_empty() {
        return Err(FromCaptureError::Unmodelled {
            what: format!("the disks of {machine}"),
            missing: "any block device: the capture lists none (a hand layout tells NVMe and virtio-blk disks from their vector names in NAME.irq0)".into(),
        });
    }
    if virtualized {
        // A guest: the hypervisor's costs, and no uncore of its own on the interrupts' way.
        let g = crate::kinds::load(platforms, "kvm-guest")?;
        doc.sections
            .insert(1, Section::new("guest", false, "guest"));
        crate::virtio::guest(&mut doc, c, &g, &machine);
        for section in ["iommu", "uncore"] {
            for (k, v, p) in g.section(section) {
                doc.set(&format!("{section}.{k}"), v.clone(), Some(p.clone()));
            }
        }
        notes.push(format!(
            "{machine} is a virtual machine ({}): its interrupts are injected (no IIO stack, router or posting of its own); the [guest] costs are kinds/kvm-guest.toml's{}",
            topo.hypervisor.as_deref().unwrap_or("hypervisor unknown"),
            if c.bench.is_some() { ", the idle vCPU's wake the capture's hostbench" } else { "" }
        ));
    } else {
        iommu(
            &mut doc,
            c,
            platforms,
            &machine,
            &mut tables,
            mhz,
            &mut notes,
        )?;
    }
    let nvme_used: Vec<&BlockDevice> = used
        .iter()
        .copied()
        .filter(|d| d.kind == DeviceKind::Nvme)
        .collect();
    let virtio_used: Vec<&BlockDevice> = used
        .iter()
        .copied()
        .filter(|d| d.kind == DeviceKind::VirtioBlk)
        .collect();
    if !nvme_used.is_empty() {
        let nvme = crate::kinds::load(platforms, "nvme")?;
        let host = crate::kinds::load(platforms, "pcie-host")?;
        nvme_groups(
            &mut doc,
            c,
            &nvme_used,
            &nvme,
            &host,
            &lspci,
            &machine,
            cpus,
            &mut devices,
            &mut notes,
        )?;
    }
    if !virtio_used.is_empty() {
        let v = crate::kinds::load(platforms, "virtio-blk")?;
        crate::virtio::groups(
            &mut doc,
            &virtio_used,
            &v,
            &machine,
            nvme_used.len(),
            &mut devices,
            &mut notes,
        )?;
    }
    let group_kinds: Vec<DeviceKind> = nvme_used
        .iter()
        .chain(&virtio_used)
        .map(|d| d.kind)
        .collect();
    let mut kinds_used = Vec::new();
    if virtualized {
        kinds_used.push("kinds/kvm-guest.toml (the guest's exits and injections)".to_string());
    }
    if !nvme_used.is_empty() {
        kinds_used.push("kinds/nvme.toml (the NVMe devices)".into());
        kinds_used.push("kinds/pcie-host.toml (root ports, their stack, DMA translation)".into());
    }
    if !virtio_used.is_empty() {
        kinds_used.push("kinds/virtio-blk.toml (the VMM's side of virtio-blk)".into());
    }
    Ok(Template {
        kinds_used,
        group_kinds,
        doc,
        machine,
        devices,
        tables,
        notes,
        mhz,
        cpus,
        remapping: remapping && !virtualized,
        virtualized,
    })
}

/// A platform name from the machine's (alphanumerics, `-`, `_`, `.`; at most 64).
fn name_of(machine: &str) -> String {
    let s: String = machine
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-_.".contains(c) {
                c
            } else {
                '-'
            }
        })
        .collect();
    let mut squeezed = String::new();
    for ch in s.trim_matches('-').chars() {
        if !(ch == '-' && squeezed.ends_with('-')) {
            squeezed.push(ch);
        }
    }
    let s: String = squeezed.chars().take(64).collect();
    if s.is_empty() { "captured".into() } else { s }
}

/// Where the capture's host facts were read: its manifest, or the hand layout's lscpu.
fn source_of(c: &Capture) -> &'static str {
    if c.manifest.is_some() {
        "capture manifest.json"
    } else {
        "capture lscpu.txt"
    }
}

/// The interrupt path: DMA translation and the stack's part from the kind table, the
/// socket's router and posted-descriptor update from the uncores/ table of the CPU's
/// core; nothing posts when the capture shows no interrupt remapping.
fn iommu(
    doc: &mut Doc,
    c: &Capture,
    platforms: &Path,
    machine: &str,
    tables: &mut Vec<Choice>,
    mhz: u64,
    notes: &mut Vec<String>,
) -> Result<(), FromCaptureError> {
    let host = crate::kinds::load(platforms, "pcie-host")?;
    for section in ["iommu", "uncore"] {
        for (k, v, p) in host.section(section) {
            doc.set(&format!("{section}.{k}"), v.clone(), Some(p.clone()));
        }
    }
    let uncore = choose_uncore(platforms, &c.host.topology)?;
    for (key, value, p) in copy(&uncore, mhz)? {
        doc.set(&key, value, Some(p));
    }
    tables.push(uncore);
    if !c.host.iommu.remapping_in_use {
        doc.set(
            "uncore.pid_ns",
            int(0),
            Some(measured(
                machine,
                "capture /proc/interrupts",
                None,
                Some("no interrupt remapping (no IR- chip on any vector), so nothing posts: posted MSI needs VT-d interrupt remapping (intel_iommu=on)".into()),
            )),
        );
        notes.push("no interrupt remapping on the capture's vectors (no IR- chip): posted MSI needs it (intel_iommu=on with interrupt remapping)".into());
    }
    Ok(())
}

/// The NVMe devices the runs used, each on a root port of its own (a PCIe device is
/// behind its port; lspci shows each on its own bus), the ports of a NUMA node on one
/// IIO stack: the capture cannot see which stack (DMAR unit) a port hangs off.
#[allow(clippy::too_many_arguments)]
fn nvme_groups(
    doc: &mut Doc,
    c: &Capture,
    used: &[&BlockDevice],
    nvme: &KindTable,
    host: &KindTable,
    lspci: &BTreeMap<String, (f64, u32)>,
    machine: &str,
    cpus: usize,
    devices: &mut Vec<Mapped>,
    notes: &mut Vec<String>,
) -> Result<(), FromCaptureError> {
    let node_of = |d: &BlockDevice| {
        d.pci
            .as_ref()
            .and_then(|p| p.numa_node)
            .filter(|n| *n >= 0)
            .unwrap_or(0)
    };
    let mut nodes: Vec<i32> = used.iter().map(|d| node_of(d)).collect();
    nodes.sort_unstable();
    nodes.dedup();
    if used.len() > 1 {
        notes.push(format!(
            "the {} disks' root ports are on {} IIO stack(s), one per NUMA node: the capture cannot see which stack (DMAR unit) a port hangs off (lspci -t can); ports on separate stacks would each have their own",
            used.len(),
            nodes.len()
        ));
    }
    for (i, d) in used.iter().enumerate() {
        let rp = format!("root_ports.{i}");
        doc.sections.push(Section::new("root_ports", true, &rp));
        doc.set(
            &format!("{rp}.name"),
            toml::Value::String(format!("rp{i}")),
            None,
        );
        let stack = nodes.iter().position(|n| *n == node_of(d)).unwrap_or(0);
        doc.set(
            &format!("{rp}.stack"),
            toml::Value::String(format!("iio{stack}")),
            None,
        );
        for (k, v, p) in host.section("root_port") {
            doc.set(&format!("{rp}.{k}"), v.clone(), Some(p.clone()));
        }
        let (bpn, prov) = match link(d, lspci) {
            Some((speed, width, from)) => {
                let mut p = Provenance::new(SourceKind::Physics);
                p.note = Some(format!(
                    "the disk's link, {speed} GT/s x{width} ({from}): GT/s x lanes x 128/130 / 8, 256-byte TLPs behind 24 bytes"
                ));
                (link_bytes_per_ns(speed, width), p)
            }
            None => {
                let mut p = Provenance::new(SourceKind::Estimate);
                p.note = Some("the capture gives no PCIe link (a VM, or a hand layout without lspci.txt): a Gen4 x4 link's payload".into());
                (7.2, p)
            }
        };
        doc.set(
            &format!("{rp}.bytes_per_ns"),
            toml::Value::Float((bpn * 100.0).round() / 100.0),
            Some(prov),
        );
        let dp = device_group(doc, i, "nvme", "nvme", machine, &d.name);
        doc.set(
            &format!("{dp}.port"),
            toml::Value::String(format!("rp{i}")),
            None,
        );
        queues(doc, c, d, &dp, machine, cpus, notes)?;
        for (k, v, p) in nvme.section("device") {
            if doc.get(&format!("{dp}.{k}")).is_none() {
                doc.set(&format!("{dp}.{k}"), v.clone(), Some(p.clone()));
            }
        }
        devices.push(Mapped {
            capture: d.name.clone(),
            disk: disk_name(d),
            platform: format!("nvme{i}"),
            file: format!("/dev/nvme{i}n1"),
            group: i,
        });
    }
    Ok(())
}

/// The disk a job names: `nvme0n1` for a controller `nvme0`, else the block device.
fn disk_name(d: &BlockDevice) -> String {
    match d.name.strip_prefix("nvme") {
        Some(rest) if rest.chars().all(|c| c.is_ascii_digit()) => format!("{}n1", d.name),
        _ => d.name.clone(),
    }
}

/// A device's I/O queues, their depth and where their vectors interrupt.
fn queues(
    doc: &mut Doc,
    c: &Capture,
    d: &BlockDevice,
    dp: &str,
    machine: &str,
    cpus: usize,
    notes: &mut Vec<String>,
) -> Result<(), FromCaptureError> {
    let nvec = d.vectors.len();
    if nvec == 0 {
        return Err(FromCaptureError::Unmodelled {
            what: format!("{} ({})", d.name, d.kind.name()),
            missing: "its I/O vectors: no row of /proc/interrupts is one of its queues' (nvmeXqN); a capture of the device at rest (interrupts.txt) shows them".into(),
        });
    }
    let vcpus = vector_cpus(c, d);
    // One queue per CPU, vector k on CPU k: blk-mq's and the managed affinity's default.
    let queue_k_on_cpu_k = vcpus.iter().zip(&d.vectors).all(|(cpu, v)| {
        v.queue
            .is_some_and(|q| Some(q) == *cpu && (q as usize) < cpus)
    });
    let in_order = vcpus
        .iter()
        .enumerate()
        .all(|(i, cpu)| *cpu == Some(i as u32));
    let per_cpu = nvec >= cpus && (queue_k_on_cpu_k || in_order);
    let active_per_cpu = !per_cpu
        && d.vectors
            .iter()
            .zip(&vcpus)
            .all(|(v, cpu)| v.queue.is_some() && v.queue == *cpu);
    let quote = format!(
        "{} I/O vector(s): {}",
        nvec,
        d.vectors
            .iter()
            .zip(&vcpus)
            .take(4)
            .map(|(v, cpu)| format!(
                "{} on CPU {}",
                v.name,
                cpu.map_or("?".into(), |c| c.to_string())
            ))
            .collect::<Vec<_>>()
            .join(", ")
            + if nvec > 4 { ", ..." } else { "" }
    );
    if per_cpu || active_per_cpu {
        doc.set(
            &format!("{dp}.queues"),
            int(0),
            Some(measured(
                machine,
                "capture /proc/interrupts",
                Some(quote),
                Some(if per_cpu {
                    "one queue per CPU, queue k's vector on CPU k: managed affinity".into()
                } else {
                    "the active vectors are queue k's on CPU k: one queue per CPU (managed affinity), the others idle in the runs".into()
                }),
            )),
        );
    } else {
        doc.set(
            &format!("{dp}.queues"),
            int(nvec as u64),
            Some(measured(
                machine,
                "capture /proc/interrupts",
                Some(quote),
                None,
            )),
        );
        let on: Vec<u32> = vcpus.iter().flatten().copied().collect();
        if !on.is_empty() && on.iter().all(|x| *x == on[0]) && (on[0] as usize) < cpus {
            doc.set(
                &format!("{dp}.irq_cpu"),
                int(u64::from(on[0])),
                Some(measured(
                    machine,
                    "capture /proc/irq/*/effective_affinity_list or the runs' /proc/interrupts",
                    None,
                    Some(format!("every vector interrupts CPU {}", on[0])),
                )),
            );
        } else if nvec > 1 {
            notes.push(format!(
                "{}: its {nvec} vectors are placed as the model's managed affinity places them (queue q's on the first CPU of its range)",
                d.name
            ));
        }
    }
    if let Some(tags) = d.queues.first().and_then(|q| q.nr_tags) {
        // nvme_alloc_io_tag_set: tags = the queue's entries less one (pci.c q_depth - 1).
        doc.set(
            &format!("{dp}.queue_depth"),
            int(u64::from(tags) + 1),
            Some(measured(
                machine,
                "capture /sys/block/*/mq/0/nr_tags",
                Some(format!("nr_tags {tags}")),
                Some("blk-mq's tags are the queue's entries less one (drivers/nvme/host/pci.c q_depth - 1)".into()),
            )),
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_and_lspci_give_bytes_per_ns() {
        let t = "64:00.0 Non-Volatile memory controller: Samsung PM174X\n\tLnkCap:\tPort #0, Speed 32GT/s, Width x4\n\t\tLnkSta:\tSpeed 32GT/s (ok), Width x4 (ok)\n0000:65:00.0 Non-Volatile memory controller: x\n\t\tLnkSta:\tSpeed 16GT/s, Width x2\n";
        let m = parse_lspci(t);
        assert_eq!(m.get("0000:64:00.0"), Some(&(32.0, 4)));
        assert_eq!(m.get("0000:65:00.0"), Some(&(16.0, 2)));
        // Gen5 x4: 15.75 GB/s raw, 14.4 GB/s of payload.
        let b = link_bytes_per_ns(32.0, 4);
        assert!((b - 14.40).abs() < 0.05, "{b}");
        assert_eq!(
            pci_of_chip("IR-PCI-MSIX-0000:64:00.0").as_deref(),
            Some("0000:64:00.0")
        );
        assert_eq!(pci_of_chip("IO-APIC"), None);
        assert_eq!(disk_of("nvme12n1"), "nvme12");
        assert_eq!(disk_of("vda"), "vda");
        assert_eq!(name_of("vm (dev vm)"), "vm-dev-vm");
    }
}
