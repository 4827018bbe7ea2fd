//! The CPUs as lscpu reads them (util-linux sys-utils/lscpu-topology.c, lscpu-cputype.c):
//! online CPUs, each one's core, socket and NUMA node from /sys/devices/system, the model
//! from /proc/cpuinfo, the frequency from cpufreq or cpuinfo, and whether the kernel runs
//! under a hypervisor.

use crate::probe::Probe;
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;

/// Where one CPU sits.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct CpuPlace {
    pub cpu: u32,
    pub core: u32,
    pub socket: u32,
    pub node: u32,
}

/// The machine's CPUs.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Topology {
    /// Online CPUs.
    #[serde(with = "crate::cpuset_serde")]
    pub online: Vec<u32>,
    pub threads_per_core: u32,
    /// Physical cores in all.
    pub cores: u32,
    pub sockets: u32,
    pub numa_nodes: u32,
    pub vendor: Option<String>,
    pub model_name: Option<String>,
    pub family: Option<u32>,
    pub model: Option<u32>,
    pub stepping: Option<u32>,
    /// The current (or, without cpufreq, the cpuinfo) frequency of the first CPU.
    pub mhz: Option<f64>,
    pub max_mhz: Option<f64>,
    /// Whether the CPU says it runs under a hypervisor (the `hypervisor` cpuinfo flag).
    pub virtualized: bool,
    /// Which one, where something readable says it.
    pub hypervisor: Option<String>,
    /// What said so: `cpuinfo flag hypervisor`, `clocksource kvm-clock`, `dmi QEMU`, ...
    pub hypervisor_evidence: Vec<String>,
    /// Every online CPU's core, socket and node (empty when read from lscpu's text).
    pub cpu_map: Vec<CpuPlace>,
}

impl Topology {
    pub fn cpus(&self) -> usize {
        self.online.len()
    }
}

/// `key : value` of the first processor block of /proc/cpuinfo.
fn cpuinfo_field<'a>(cpuinfo: &'a str, key: &str) -> Option<&'a str> {
    cpuinfo
        .lines()
        .take_while(|l| !l.trim().is_empty())
        .filter_map(|l| l.split_once(':'))
        .find(|(k, _)| k.trim() == key)
        .map(|(_, v)| v.trim())
}

/// Reads the topology of the host behind `p`.
pub fn read(p: &Probe) -> Topology {
    let cpuinfo = p.text("/proc/cpuinfo").unwrap_or_default();
    let online = p
        .value("/sys/devices/system/cpu/online")
        .and_then(|s| crate::cpulist::parse(&s).ok())
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| {
            let n = cpuinfo
                .lines()
                .filter(|l| l.starts_with("processor"))
                .count()
                .max(1);
            (0..n as u32).collect()
        });
    let mut cpu_map = Vec::with_capacity(online.len());
    for &cpu in &online {
        let base = format!("/sys/devices/system/cpu/cpu{cpu}");
        let core = p.number(&format!("{base}/topology/core_id")).unwrap_or(cpu);
        let socket = p
            .number(&format!("{base}/topology/physical_package_id"))
            .unwrap_or(0);
        let node = p
            .list(&base)
            .iter()
            .find_map(|e| e.strip_prefix("node")?.parse().ok())
            .unwrap_or(0);
        cpu_map.push(CpuPlace {
            cpu,
            core,
            socket,
            node,
        });
    }
    let cores: BTreeSet<(u32, u32)> = cpu_map.iter().map(|c| (c.socket, c.core)).collect();
    let sockets: BTreeSet<u32> = cpu_map.iter().map(|c| c.socket).collect();
    let numa_nodes = p
        .value("/sys/devices/system/node/online")
        .and_then(|s| crate::cpulist::parse(&s).ok())
        .map_or(1, |v| v.len().max(1) as u32);
    let field = |k: &str| cpuinfo_field(&cpuinfo, k).map(str::to_string);
    let khz = |f: &str| {
        p.number::<f64>(&format!(
            "/sys/devices/system/cpu/cpu{}/cpufreq/{f}",
            online[0]
        ))
    };
    let mhz = khz("scaling_cur_freq")
        .map(|k| k / 1000.0)
        .or_else(|| field("cpu MHz")?.parse().ok());
    let max_mhz = khz("cpuinfo_max_freq").map(|k| k / 1000.0);
    let flags = field("flags").unwrap_or_default();
    let virtualized = flags.split_whitespace().any(|f| f == "hypervisor");
    let (hypervisor, mut evidence) = hypervisor(p);
    if virtualized {
        evidence.insert(0, "cpuinfo flag hypervisor".into());
    }
    Topology {
        threads_per_core: (online.len() / cores.len().max(1)).max(1) as u32,
        cores: cores.len() as u32,
        sockets: sockets.len() as u32,
        numa_nodes,
        vendor: field("vendor_id"),
        model_name: field("model name"),
        family: field("cpu family").and_then(|s| s.parse().ok()),
        model: field("model").and_then(|s| s.parse().ok()),
        stepping: field("stepping").and_then(|s| s.parse().ok()),
        mhz,
        max_mhz,
        virtualized: virtualized || hypervisor.is_some(),
        hypervisor,
        hypervisor_evidence: evidence,
        cpu_map,
        online,
    }
}

/// Which hypervisor, from what a guest can read without root: /sys/hypervisor (Xen), the
/// paravirtual clock the kernel chose, and the DMI system vendor and product.
fn hypervisor(p: &Probe) -> (Option<String>, Vec<String>) {
    let mut evidence = Vec::new();
    let mut vendor = None;
    if let Some(t) = p.value("/sys/hypervisor/type") {
        evidence.push(format!("/sys/hypervisor/type {t}"));
        vendor = Some(if t == "xen" { "Xen".into() } else { t });
    }
    let cs = "/sys/devices/system/clocksource/clocksource0";
    let clocks = format!(
        "{} {}",
        p.value(&format!("{cs}/current_clocksource"))
            .unwrap_or_default(),
        p.value(&format!("{cs}/available_clocksource"))
            .unwrap_or_default()
    );
    for (clock, name) in [
        ("kvm-clock", "KVM"),
        ("hyperv_clocksource", "Microsoft"),
        ("xen", "Xen"),
        ("vmware", "VMware"),
    ] {
        if let Some(w) = clocks.split_whitespace().find(|w| w.starts_with(clock)) {
            evidence.push(format!("clocksource {w}"));
            vendor.get_or_insert_with(|| name.to_string());
        }
    }
    let dmi = |f: &str| p.value(&format!("/sys/class/dmi/id/{f}"));
    if let (Some(v), product) = (dmi("sys_vendor"), dmi("product_name")) {
        let known = [
            ("QEMU", "KVM"),
            ("Amazon EC2", "KVM"),
            ("Google", "KVM"),
            ("Microsoft", "Microsoft"),
            ("VMware", "VMware"),
            ("Xen", "Xen"),
            ("innotek", "VirtualBox"),
        ];
        if let Some((_, name)) = known.iter().find(|(k, _)| v.starts_with(k)) {
            evidence.push(
                format!("dmi {v} {}", product.unwrap_or_default())
                    .trim_end()
                    .to_string(),
            );
            vendor.get_or_insert_with(|| name.to_string());
        }
    }
    (vendor, evidence)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_processor_block_gives_the_model() {
        let c = "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Xeon\ncpu MHz\t\t: 2100.000\n\nprocessor\t: 1\nmodel name\t: other\n";
        assert_eq!(cpuinfo_field(c, "model name"), Some("Xeon"));
        assert_eq!(cpuinfo_field(c, "cpu MHz"), Some("2100.000"));
        assert_eq!(cpuinfo_field(c, "stepping"), None);
    }
}
