//! A capture of a simulated machine: what a platform's fio runs and /proc/interrupts
//! would have shown, written as a capture directory (irqlab's layout: manifest.json, and
//! per run NAME.fio, NAME.json in fio's schema, NAME.irq0 and NAME.irq1). The round trip
//! of the tests builds a platform from it and compares what it fitted with the costs the
//! simulation was given.

use crate::FromCaptureError;
use irqlab_capture::DeviceKind;
use irqlab_capture::devices::{BlockDevice, HwQueue, Pci};
use irqlab_capture::host::Host;
use irqlab_capture::iommu::Iommu;
use irqlab_capture::kernel::Kernel;
use irqlab_capture::manifest::{Manifest, RunEntry, SCHEMA};
use irqlab_capture::topology::{CpuPlace, Topology};
use irqlab_capture::vectors::Vector;
use irqlab_sim::Platform;
use std::path::Path;

/// The machine a simulated capture claims to be: one socket of `cpus` Sapphire Rapids
/// cores at `mhz`, Linux `release`, VT-d remapping, and `disks` NVMe drives with one
/// queue per CPU on Gen5 x4 links.
#[derive(Clone, Debug)]
pub struct Machine {
    pub hostname: String,
    pub cpus: u32,
    pub mhz: f64,
    pub release: String,
    pub disks: usize,
    /// CPUID family and model (6, 143: Sapphire Rapids).
    pub family: u32,
    pub model: u32,
}

impl Machine {
    /// What `irqlab capture` would have recorded about it.
    pub fn host(&self) -> Host {
        let online: Vec<u32> = (0..self.cpus).collect();
        let topology = Topology {
            online: online.clone(),
            threads_per_core: 1,
            cores: self.cpus,
            sockets: 1,
            numa_nodes: 1,
            vendor: Some("GenuineIntel".into()),
            model_name: Some("simulated".into()),
            family: Some(self.family),
            model: Some(self.model),
            stepping: Some(1),
            mhz: Some(self.mhz),
            max_mhz: Some(self.mhz),
            virtualized: false,
            hypervisor: None,
            hypervisor_evidence: Vec::new(),
            cpu_map: online
                .iter()
                .map(|&c| CpuPlace {
                    cpu: c,
                    core: c,
                    socket: 0,
                    node: 0,
                })
                .collect(),
        };
        let devices = (0..self.disks)
            .map(|d| {
                let address = irqlab_report::pci_address(d);
                BlockDevice {
                    name: format!("nvme{d}n1"),
                    kind: DeviceKind::Nvme,
                    driver: Some("nvme".into()),
                    model: Some("simulated NVMe".into()),
                    size_bytes: Some(1 << 40),
                    rotational: Some(false),
                    irq_prefix: Some(format!("nvme{d}")),
                    pci: Some(Pci {
                        address: address.clone(),
                        current_link_speed: Some("32.0 GT/s PCIe".into()),
                        current_link_width: Some("4".into()),
                        max_link_speed: Some("32.0 GT/s PCIe".into()),
                        max_link_width: Some("4".into()),
                        numa_node: Some(0),
                        msi_irqs: Vec::new(),
                    }),
                    queues: online
                        .iter()
                        .map(|&c| HwQueue {
                            index: c,
                            cpus: vec![c],
                            nr_tags: Some(1023),
                        })
                        .collect(),
                    io_poll: Some(true),
                    poll_queues: 0,
                    nr_requests: Some(1023),
                    scheduler: Some("none".into()),
                    virtio_features: Vec::new(),
                    vectors: online
                        .iter()
                        .map(|&c| Vector {
                            irq: (irqlab_report::proc_interrupts::FIRST_IRQ
                                + d * self.cpus as usize
                                + c as usize) as u32,
                            name: format!("nvme{d}q{}", c + 1),
                            chip: format!("IR-PCI-MSIX-{address}"),
                            queue: Some(c),
                            effective_cpus: vec![c],
                            affinity_cpus: vec![c],
                        })
                        .collect(),
                }
            })
            .collect();
        Host {
            hostname: Some(self.hostname.clone()),
            topology,
            kernel: Kernel {
                release: Some(self.release.clone()),
                ..Kernel::default()
            },
            iommu: Iommu {
                remapping_in_use: true,
                ..Iommu::default()
            },
            devices,
        }
    }
}

/// One run to simulate: its name, what it measures and its job (files `/dev/nvmeXn1`).
#[derive(Clone, Debug)]
pub struct Run {
    pub name: String,
    pub what: String,
    pub job: String,
}

/// The same /proc/interrupts with every count zero: the snapshot before the run.
fn zeroed(t: &irqlab_report::proc_interrupts::Table) -> String {
    let mut z = t.clone();
    for r in &mut z.rows {
        r.counts.iter_mut().for_each(|c| *c = 0);
    }
    for a in &mut z.arch {
        a.counts.iter_mut().for_each(|c| *c = 0);
    }
    z.format()
}

/// Simulates `runs` on `platform` (seed `seed`) and writes them, with `machine`'s
/// manifest, into `dir`.
pub fn write(
    dir: &Path,
    machine: &Machine,
    platform: &Platform,
    runs: &[Run],
    seed: u64,
) -> Result<(), FromCaptureError> {
    write_runs(dir, machine, platform, runs, seed).map_err(|why| FromCaptureError::Synthetic {
        dir: dir.to_path_buf(),
        why,
    })
}

fn write_runs(
    dir: &Path,
    machine: &Machine,
    platform: &Platform,
    runs: &[Run],
    seed: u64,
) -> Result<(), String> {
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let put = |name: &str, text: &str| {
        std::fs::write(dir.join(name), text)
            .map_err(|e| format!("{}: {e}", dir.join(name).display()))
    };
    let mut entries = Vec::new();
    for r in runs {
        let jobs = irqlab_fio::parse_str(&r.job, Path::new(&format!("{}.fio", r.name)))
            .map_err(|e| e.to_string())?;
        let opts = irqlab_sim::SimOptions::with_seed(seed);
        let report = irqlab_sim::simulate(&jobs, platform, &irqlab_core::Policy::default(), &opts)
            .map_err(|e| format!("{}: {e}", r.name))?;
        let json = irqlab_report::fio_json::render(&report, false);
        put(
            &format!("{}.json", r.name),
            &serde_json::to_string_pretty(&json).map_err(|e| e.to_string())?,
        )?;
        let mut table = irqlab_report::proc_interrupts::table(&report);
        // Every vector of the machine, idle ones included, as /proc/interrupts lists them.
        let ncpu = platform.cpu.count;
        for d in 0..machine.disks {
            for c in 0..ncpu {
                let name = format!("nvme{d}q{}", c + 1);
                if !table.rows.iter().any(|x| x.action == name) {
                    table.rows.push(irqlab_report::proc_interrupts::IrqRow {
                        irq: irqlab_report::proc_interrupts::FIRST_IRQ + d * ncpu + c,
                        counts: vec![0; table.ncpus],
                        chip: format!("IR-PCI-MSIX-{}", irqlab_report::pci_address(d)),
                        hwirq: (c + 1) as u32,
                        action: name,
                    });
                }
            }
        }
        for x in &mut table.rows {
            if let Some(rest) = x.action.strip_prefix("nvme")
                && let Some((d, q)) = rest.split_once('q')
                && let (Ok(d), Ok(q)) = (d.parse::<usize>(), q.parse::<usize>())
            {
                x.irq = irqlab_report::proc_interrupts::FIRST_IRQ + d * ncpu + q - 1;
            }
        }
        table.rows.sort_by_key(|x| x.irq);
        table.nr_irqs = table
            .nr_irqs
            .max(table.rows.last().map_or(0, |x| x.irq + 1));
        put(&format!("{}.irq0", r.name), &zeroed(&table))?;
        put(&format!("{}.irq1", r.name), &table.format())?;
        put(&format!("{}.fio", r.name), &r.job)?;
        entries.push(RunEntry {
            name: r.name.clone(),
            what: r.what.clone(),
            args: Vec::new(),
            job_file: format!("{}.fio", r.name),
            json: format!("{}.json", r.name),
            irq_before: format!("{}.irq0", r.name),
            irq_after: format!("{}.irq1", r.name),
            device: (machine.disks == 1).then(|| "nvme0n1".to_string()),
            loadavg: Vec::new(),
            failed: None,
        });
    }
    let m = Manifest {
        schema: SCHEMA.to_string(),
        tool: format!("irqlab {} (simulated)", env!("CARGO_PKG_VERSION")),
        date: "simulated".into(),
        host: machine.host(),
        sources: Default::default(),
        interrupts_at_rest: None,
        quick: false,
        target: None,
        fio: None,
        runs: entries,
        notes: vec!["a simulated machine: irqlab-fromcapture's round trip".into()],
    };
    put(
        "manifest.json",
        &serde_json::to_string_pretty(&m).map_err(|e| e.to_string())?,
    )
}
