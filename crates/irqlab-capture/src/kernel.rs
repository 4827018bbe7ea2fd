//! The kernel: its release, the boot options that change interrupt delivery or polling,
//! the block drivers' module parameters, and the boot time that ties snapshots to a boot.

use crate::probe::Probe;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Boot options that matter here (Documentation/admin-guide/kernel-parameters.txt):
/// interrupt remapping and posting, threaded handlers, the block drivers' queues, the
/// IOMMU, CPU isolation, idle and mitigations (which change the syscall and entry cost).
pub const OPTIONS: &[&str] = &[
    "intremap",
    "threadirqs",
    "irqaffinity",
    "nvme.poll_queues",
    "nvme.write_queues",
    "nvme.io_queue_depth",
    "virtio_blk.poll_queues",
    "virtio_blk.num_request_queues",
    "virtio_blk.queue_depth",
    "iommu",
    "iommu.strict",
    "iommu.passthrough",
    "intel_iommu",
    "amd_iommu",
    "isolcpus",
    "nohz_full",
    "idle",
    "mitigations",
    "nosmt",
    "intel_idle.max_cstate",
    "processor.max_cstate",
];

/// Modules whose parameters are recorded (/sys/module/M/parameters).
pub const MODULES: &[&str] = &["nvme", "nvme_core", "virtio_blk"];

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Kernel {
    /// `uname -r`.
    pub release: Option<String>,
    /// `uname -v`.
    pub version: Option<String>,
    pub cmdline: Option<String>,
    /// The [`OPTIONS`] the command line sets: value, or "" for a bare flag.
    pub options: BTreeMap<String, String>,
    /// Module → parameter → value.
    pub modules: BTreeMap<String, BTreeMap<String, String>>,
    pub clocksource: Option<String>,
    /// /proc/stat btime when the host was read.
    pub btime: Option<u64>,
}

/// The [`OPTIONS`] a command line sets; what follows `--` is init's, not the kernel's.
pub fn options(cmdline: &str) -> BTreeMap<String, String> {
    cmdline
        .split_whitespace()
        .take_while(|w| *w != "--")
        .filter_map(|w| {
            let (k, v) = w.split_once('=').unwrap_or((w, ""));
            // The kernel treats '-' and '_' in parameter names alike (kernel/params.c).
            let key = k.replace('-', "_");
            OPTIONS
                .contains(&key.as_str())
                .then(|| (key, v.to_string()))
        })
        .collect()
}

/// /proc/stat's btime: the boot time, seconds since the epoch.
pub fn btime(stat: &str) -> Option<u64> {
    stat.lines()
        .find_map(|l| l.strip_prefix("btime "))
        .and_then(|v| v.trim().parse().ok())
}

pub fn read(p: &Probe) -> Kernel {
    let cmdline = p.value("/proc/cmdline");
    let mut modules = BTreeMap::new();
    for m in MODULES {
        let dir = format!("/sys/module/{m}/parameters");
        let params: BTreeMap<String, String> = p
            .list(&dir)
            .into_iter()
            .filter_map(|f| Some((f.clone(), p.value(&format!("{dir}/{f}"))?)))
            .collect();
        if !params.is_empty() {
            modules.insert(m.to_string(), params);
        }
    }
    Kernel {
        release: p.value("/proc/sys/kernel/osrelease"),
        version: p.value("/proc/sys/kernel/version"),
        options: cmdline.as_deref().map(options).unwrap_or_default(),
        cmdline,
        modules,
        clocksource: p.value("/sys/devices/system/clocksource/clocksource0/current_clocksource"),
        btime: p.text("/proc/stat").as_deref().and_then(btime),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_options_that_matter_are_kept_and_inits_arguments_are_not() {
        let o = options(
            "ro intremap=posted_msi threadirqs nvme.poll_queues=4 quiet intel-iommu=on -- idle=poll",
        );
        assert_eq!(o.get("intremap").map(String::as_str), Some("posted_msi"));
        assert_eq!(o.get("threadirqs").map(String::as_str), Some(""));
        assert_eq!(o.get("nvme.poll_queues").map(String::as_str), Some("4"));
        assert_eq!(o.get("intel_iommu").map(String::as_str), Some("on"));
        assert!(!o.contains_key("idle") && !o.contains_key("quiet"));
        assert_eq!(btime("cpu 1 2\nbtime 1795668900\n"), Some(1795668900));
        assert_eq!(btime("cpu 1 2\n"), None);
    }
}
