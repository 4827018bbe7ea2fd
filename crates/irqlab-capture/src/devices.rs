//! The block devices worth modelling (/sys/block, virtual ones such as loop, zram, dm
//! left out): what drives each, its blk-mq hardware queues and the CPUs each serves
//! (block/blk-mq-sysfs.c: mq/N/cpu_list), whether it has poll queues, the PCI function
//! behind it with its link and MSI-X vectors, and each vector's affinity
//! (kernel/irq/proc.c: /proc/irq/N/effective_affinity_list).

use crate::interrupts::Snapshot;
use crate::probe::Probe;
use crate::vectors::{DeviceKind, Vector, vector_of};
use serde::{Deserialize, Serialize};

/// One blk-mq hardware queue.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HwQueue {
    pub index: u32,
    #[serde(with = "crate::cpuset_serde")]
    pub cpus: Vec<u32>,
    pub nr_tags: Option<u32>,
}

/// The PCI function behind a device.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pci {
    pub address: String,
    pub current_link_speed: Option<String>,
    pub current_link_width: Option<String>,
    pub max_link_speed: Option<String>,
    pub max_link_width: Option<String>,
    pub numa_node: Option<i32>,
    /// Its MSI/MSI-X IRQ numbers (msi_irqs/).
    pub msi_irqs: Vec<u32>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BlockDevice {
    /// The disk's name in /sys/block (`nvme0n1`, `vda`, `sda`).
    pub name: String,
    pub kind: DeviceKind,
    pub driver: Option<String>,
    pub model: Option<String>,
    pub size_bytes: Option<u64>,
    pub rotational: Option<bool>,
    /// What its vectors are named after (`nvme0`, `virtio1`).
    pub irq_prefix: Option<String>,
    pub pci: Option<Pci>,
    pub queues: Vec<HwQueue>,
    /// queue/io_poll: the queue can be polled (it has poll queues).
    pub io_poll: Option<bool>,
    /// Hardware queues without a vector when polling is on: the poll queues.
    pub poll_queues: u32,
    pub nr_requests: Option<u32>,
    pub scheduler: Option<String>,
    /// virtio devices: the feature bits the driver negotiated (/sys/bus/virtio/devices/
    /// virtioN/features, bit 0 first), e.g. 29 VIRTIO_RING_F_EVENT_IDX, 12 VIRTIO_BLK_F_MQ.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub virtio_features: Vec<u32>,
    pub vectors: Vec<Vector>,
}

/// VIRTIO_RING_F_EVENT_IDX (include/uapi/linux/virtio_ring.h): the device notifies only
/// when it passes the driver's used_event index.
pub const VIRTIO_RING_F_EVENT_IDX: u32 = 29;

impl BlockDevice {
    pub fn has_virtio_feature(&self, bit: u32) -> bool {
        self.virtio_features.contains(&bit)
    }
}

/// The set bits of a virtio features string ("0010..."; drivers/virtio/virtio.c,
/// features_show prints bit 0 first).
fn feature_bits(s: &str) -> Vec<u32> {
    s.trim()
        .chars()
        .enumerate()
        .filter(|(_, c)| *c == '1')
        .map(|(i, _)| i as u32)
        .collect()
}

/// A PCI address: `0000:00:02.0`.
fn is_pci_address(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 12
        && b[4] == b':'
        && b[7] == b':'
        && b[10] == b'.'
        && s.chars()
            .enumerate()
            .all(|(i, c)| matches!(i, 4 | 7 | 10) || c.is_ascii_hexdigit())
}

fn kind_of(name: &str, driver: Option<&str>) -> DeviceKind {
    match driver {
        Some("nvme") => DeviceKind::Nvme,
        Some("virtio_blk") => DeviceKind::VirtioBlk,
        Some("sd") => DeviceKind::Scsi,
        _ if name.starts_with("nvme") => DeviceKind::Nvme,
        _ => DeviceKind::Other,
    }
}

/// `nvme0n1` → `nvme0`; what NVMe vectors are named after when the link does not say.
fn nvme_controller(name: &str) -> Option<String> {
    let rest = name.strip_prefix("nvme")?;
    let digits: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
    (!digits.is_empty()).then(|| format!("nvme{digits}"))
}

/// The selected scheduler of queue/scheduler (`none [mq-deadline] kyber`).
fn selected(s: &str) -> String {
    s.split_whitespace()
        .find_map(|w| w.strip_prefix('[')?.strip_suffix(']'))
        .unwrap_or(s)
        .to_string()
}

fn pci(p: &Probe, dev_path: &str) -> Option<Pci> {
    let comps: Vec<&str> = dev_path.split('/').collect();
    let i = comps.iter().rposition(|c| is_pci_address(c))?;
    let path = comps[..=i].join("/");
    let f = |n: &str| p.value(&format!("{path}/{n}"));
    let mut msi_irqs: Vec<u32> = p
        .list(&format!("{path}/msi_irqs"))
        .iter()
        .filter_map(|s| s.parse().ok())
        .collect();
    msi_irqs.sort_unstable();
    Some(Pci {
        address: comps[i].to_string(),
        current_link_speed: f("current_link_speed"),
        current_link_width: f("current_link_width"),
        max_link_speed: f("max_link_speed"),
        max_link_width: f("max_link_width"),
        numa_node: f("numa_node").and_then(|s| s.parse().ok()),
        msi_irqs,
    })
}

fn queues(p: &Probe, name: &str) -> Vec<HwQueue> {
    let mq = format!("/sys/block/{name}/mq");
    p.list(&mq)
        .iter()
        .filter_map(|q| {
            let index: u32 = q.parse().ok()?;
            let cpus = p
                .value(&format!("{mq}/{q}/cpu_list"))
                .and_then(|s| crate::cpulist::parse(&s).ok())
                .unwrap_or_default();
            Some(HwQueue {
                index,
                cpus,
                nr_tags: p.number(&format!("{mq}/{q}/nr_tags")),
            })
        })
        .collect()
}

/// The device's I/O vectors among the snapshot's rows (those of its PCI function when
/// msi_irqs lists them), with their affinity from /proc/irq.
fn vectors(p: &Probe, dev: &BlockDevice, at_rest: &Snapshot) -> Vec<Vector> {
    let prefix = dev.irq_prefix.as_deref().unwrap_or("");
    let msi = dev
        .pci
        .as_ref()
        .map(|c| c.msi_irqs.as_slice())
        .unwrap_or(&[]);
    if prefix.is_empty() && msi.is_empty() {
        return Vec::new();
    }
    at_rest
        .rows
        .iter()
        .filter(|r| r.irq().is_some_and(|n| msi.is_empty() || msi.contains(&n)))
        .filter_map(|r| vector_of(dev.kind, prefix, r))
        .map(|mut v| {
            let list = |f: &str| {
                p.value(&format!("/proc/irq/{}/{f}", v.irq))
                    .and_then(|s| crate::cpulist::parse(&s).ok())
                    .unwrap_or_default()
            };
            v.effective_cpus = list("effective_affinity_list");
            v.affinity_cpus = list("smp_affinity_list");
            v
        })
        .collect()
}

/// One disk of /sys/block; None for virtual ones.
fn device(p: &Probe, name: &str, at_rest: Option<&Snapshot>) -> Option<BlockDevice> {
    let path = p.resolve(&format!("/sys/block/{name}"))?;
    if path.contains("/virtual/") {
        return None;
    }
    let base = format!("/sys/block/{name}");
    let dev_path = p.resolve(&format!("{base}/device"))?;
    let driver = p
        .link_name(&format!("{base}/device/driver"))
        .or_else(|| p.link_name(&format!("{base}/device/device/driver")));
    let kind = kind_of(name, driver.as_deref());
    let leaf = dev_path.rsplit('/').next().unwrap_or("").to_string();
    let irq_prefix = match kind {
        DeviceKind::Nvme => nvme_controller(&leaf).or_else(|| nvme_controller(name)),
        DeviceKind::VirtioBlk => Some(leaf).filter(|l| l.starts_with("virtio")),
        _ => None,
    };
    let q = |f: &str| p.value(&format!("{base}/queue/{f}"));
    let mut dev = BlockDevice {
        name: name.to_string(),
        kind,
        driver,
        model: p.value(&format!("{base}/device/model")),
        size_bytes: p.number::<u64>(&format!("{base}/size")).map(|s| s * 512),
        rotational: q("rotational").map(|v| v == "1"),
        irq_prefix,
        pci: pci(p, &dev_path),
        queues: queues(p, name),
        io_poll: q("io_poll").map(|v| v == "1"),
        poll_queues: 0,
        nr_requests: q("nr_requests").and_then(|v| v.parse().ok()),
        scheduler: q("scheduler").map(|s| selected(&s)),
        virtio_features: match kind {
            DeviceKind::VirtioBlk => p
                .value(&format!("{base}/device/features"))
                .map(|f| feature_bits(&f))
                .unwrap_or_default(),
            _ => Vec::new(),
        },
        vectors: Vec::new(),
    };
    if let Some(s) = at_rest {
        dev.vectors = vectors(p, &dev, s);
    }
    // Poll queues are hctxs with no vector (nvme_setup_irqs gives them none).
    if dev.io_poll == Some(true) && !dev.vectors.is_empty() {
        dev.poll_queues = dev.queues.len().saturating_sub(dev.vectors.len()) as u32;
    }
    Some(dev)
}

/// Every block device worth modelling, with its vectors among the rows of `at_rest`.
pub fn read(p: &Probe, at_rest: Option<&Snapshot>) -> Vec<BlockDevice> {
    p.list("/sys/block")
        .iter()
        .filter_map(|n| device(p, n, at_rest))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_addresses_and_schedulers_are_recognised() {
        assert!(is_pci_address("0000:00:02.0"));
        assert!(!is_pci_address("10000:0a:00.1"));
        assert!(!is_pci_address("virtio1"));
        assert_eq!(nvme_controller("nvme12n1").as_deref(), Some("nvme12"));
        assert_eq!(nvme_controller("vda"), None);
        assert_eq!(selected("none [mq-deadline] kyber"), "mq-deadline");
        assert_eq!(selected("none"), "none");
        assert_eq!(kind_of("vda", Some("virtio_blk")), DeviceKind::VirtioBlk);
        assert_eq!(kind_of("nvme0n1", None), DeviceKind::Nvme);
        assert_eq!(kind_of("sda", Some("sd")), DeviceKind::Scsi);
        assert_eq!(
            feature_bits("0010001001100100000000000000010010\n"),
            vec![2, 6, 9, 10, 13, 29, 32]
        );
    }
}
