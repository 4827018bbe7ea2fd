//! A block device's interrupt vectors, told from /proc/interrupts by the names the
//! drivers give them: `nvme0q1` (drivers/nvme/host/pci.c, queue_request_irq: "nvme%dq%d";
//! q0 is the admin queue), `virtio1-req.0` (drivers/block/virtio_blk.c init_vq,
//! "req.%u", prefixed with the virtio device by virtio_pci_common.c; its poll queues,
//! "req_poll.%u", have no vector).

use crate::interrupts::{IrqRow, Snapshot};
use serde::{Deserialize, Serialize};

/// What drives a block device, as far as the model cares.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum DeviceKind {
    Nvme,
    VirtioBlk,
    Scsi,
    Other,
}

impl DeviceKind {
    pub fn name(self) -> &'static str {
        match self {
            DeviceKind::Nvme => "nvme",
            DeviceKind::VirtioBlk => "virtio-blk",
            DeviceKind::Scsi => "scsi",
            DeviceKind::Other => "other",
        }
    }
}

/// One MSI-X vector of a device.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Vector {
    pub irq: u32,
    /// The action's name in /proc/interrupts.
    pub name: String,
    pub chip: String,
    /// The hardware queue (blk-mq hctx index) it completes, where the name says.
    pub queue: Option<u32>,
    /// /proc/irq/N/effective_affinity_list: the CPUs it is delivered to.
    #[serde(with = "crate::cpuset_serde")]
    pub effective_cpus: Vec<u32>,
    /// /proc/irq/N/smp_affinity_list: the CPUs it may be delivered to.
    #[serde(with = "crate::cpuset_serde")]
    pub affinity_cpus: Vec<u32>,
}

fn number_after<'a>(s: &'a str, prefix: &str) -> Option<u32> {
    let rest: &'a str = s.strip_prefix(prefix)?;
    if rest.is_empty() || !rest.chars().all(|c| c.is_ascii_digit()) {
        return None;
    }
    rest.parse().ok()
}

/// The hctx an I/O vector named `action` completes, for a device whose vectors are named
/// after `prefix` (`nvme0`, `virtio1`): `Some(Some(q))`; `Some(None)` for an I/O vector
/// whose queue the name does not say; None when it is not one of the device's I/O
/// vectors (the admin queue, the config vector).
pub fn io_queue(kind: DeviceKind, prefix: &str, action: &str) -> Option<Option<u32>> {
    match kind {
        DeviceKind::Nvme => {
            let q = number_after(action, &format!("{prefix}q"))?;
            (q >= 1).then(|| Some(q - 1))
        }
        DeviceKind::VirtioBlk => Some(Some(number_after(action, &format!("{prefix}-req."))?)),
        DeviceKind::Scsi | DeviceKind::Other => {
            let lower = action.to_ascii_lowercase();
            let not_io = ["config", "admin", "control", "ctrl", "event", "aen"];
            (!not_io.iter().any(|w| lower.contains(w))).then_some(None)
        }
    }
}

/// The vector of `row` if one of its actions is an I/O vector of the device.
pub fn vector_of(kind: DeviceKind, prefix: &str, row: &IrqRow) -> Option<Vector> {
    let irq = row.irq()?;
    row.actions.iter().find_map(|a| {
        let queue = io_queue(kind, prefix, a)?;
        Some(Vector {
            irq,
            name: a.clone(),
            chip: row.chip.clone(),
            queue,
            effective_cpus: Vec::new(),
            affinity_cpus: Vec::new(),
        })
    })
}

/// The NVMe controllers and virtio-blk devices a snapshot's vector names show, each with
/// its I/O vectors: what a capture laid out by hand says about its devices.
pub fn infer(snap: &Snapshot) -> Vec<(String, DeviceKind, Vec<Vector>)> {
    let mut found: Vec<(String, DeviceKind, Vec<Vector>)> = Vec::new();
    for row in &snap.rows {
        for a in &row.actions {
            let guess = if let Some(i) = a.find("-req.") {
                Some((a[..i].to_string(), DeviceKind::VirtioBlk))
            } else if a.starts_with("nvme") {
                a.rfind('q').map(|i| (a[..i].to_string(), DeviceKind::Nvme))
            } else {
                None
            };
            let Some((prefix, kind)) = guess else {
                continue;
            };
            let Some(v) = vector_of(kind, &prefix, row) else {
                continue;
            };
            match found.iter_mut().find(|(p, _, _)| *p == prefix) {
                Some((_, _, vs)) if !vs.iter().any(|x| x.irq == v.irq) => vs.push(v),
                Some(_) => {}
                None => found.push((prefix, kind, vec![v])),
            }
        }
    }
    found.sort_by(|a, b| a.0.cmp(&b.0));
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn driver_names_give_the_queue_and_leave_admin_and_config_out() {
        use DeviceKind::*;
        assert_eq!(io_queue(Nvme, "nvme0", "nvme0q1"), Some(Some(0)));
        assert_eq!(io_queue(Nvme, "nvme0", "nvme0q0"), None);
        assert_eq!(io_queue(Nvme, "nvme1", "nvme10q3"), None);
        assert_eq!(
            io_queue(VirtioBlk, "virtio1", "virtio1-req.3"),
            Some(Some(3))
        );
        assert_eq!(io_queue(VirtioBlk, "virtio1", "virtio1-config"), None);
        assert_eq!(io_queue(VirtioBlk, "virtio1", "virtio12-req.0"), None);
        assert_eq!(io_queue(Scsi, "", "virtio2-request"), Some(None));
        assert_eq!(io_queue(Scsi, "", "virtio2-control"), None);
    }

    #[test]
    fn a_snapshot_shows_the_devices_behind_its_vector_names() {
        let s = crate::interrupts::parse(
            "  CPU0 CPU1\n 36: 0 5 PCI-MSIX-0000:00:02.0 1-edge virtio1-req.0\n 35: 0 1 PCI-MSIX-0000:00:02.0 0-edge virtio1-config\n 50: 1 0 IR-PCI-MSIX-0000:01:00.0 0-edge nvme0q0, nvme0q1\n 51: 1 0 IR-PCI-MSIX-0000:01:00.0 1-edge nvme0q2\n 38: 0 9 PCI-MSIX-0000:00:03.0 1-edge virtio2-input.0\n",
        )
        .unwrap();
        let d = infer(&s);
        let names: Vec<_> = d
            .iter()
            .map(|(p, k, v)| (p.as_str(), *k, v.len()))
            .collect();
        assert_eq!(
            names,
            vec![
                ("nvme0", DeviceKind::Nvme, 2),
                ("virtio1", DeviceKind::VirtioBlk, 1)
            ]
        );
        assert_eq!(d[0].2[0].queue, Some(0));
        assert_eq!(d[0].2[1].queue, Some(1));
    }
}
