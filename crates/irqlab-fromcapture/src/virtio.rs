//! A guest and its virtio-blk disks (docs/model.md "virtio-blk", "Guest platforms"): the
//! `[guest]` section from the kvm-guest kind table, the idle vCPU's wake from the
//! capture's hostbench when it has one, the hypervisor and cpuidle-haltpoll from the
//! kernel's command line; each virtio-blk disk with its virtqueues as the driver
//! negotiated them (ring size, indirect descriptors, EVENT_IDX, poll queues) and the
//! VMM's side from the virtio-blk kind table.

use crate::FromCaptureError;
use crate::doc::{Doc, Section};
use crate::kinds::KindTable;
use crate::measure::{device_group, int, measured};
use crate::template::Mapped;
use irqlab_capture::Capture;
use irqlab_capture::devices::BlockDevice;
use irqlab_sim::ledger::{Provenance, SourceKind};

/// VIRTIO_RING_F_INDIRECT_DESC and VIRTIO_RING_F_EVENT_IDX (include/uapi/linux/
/// virtio_ring.h).
const INDIRECT_DESC: u32 = 28;
const EVENT_IDX: u32 = 29;

/// The hypervisor's name as platforms write it, and what says so.
fn hypervisor(c: &Capture) -> (&'static str, String) {
    let cmdline = c.host.kernel.cmdline.as_deref().unwrap_or("");
    if cmdline.contains("firecracker") {
        return (
            "firecracker",
            "the kernel command line names Firecracker's init".into(),
        );
    }
    let t = &c.host.topology;
    let said = t.hypervisor_evidence.join(", ");
    match t.hypervisor.as_deref() {
        Some("KVM") => ("kvm", said),
        Some("Microsoft") => ("hyper-v", said),
        Some("Xen") => ("xen", said),
        Some(_) | None => ("other", said),
    }
}

/// The `[guest]` section of a virtual machine.
pub fn guest(doc: &mut Doc, c: &Capture, t: &KindTable, machine: &str) {
    let (hv, why) = hypervisor(c);
    doc.set(
        "guest.hypervisor",
        toml::Value::String(hv.into()),
        Some(measured(machine, "capture manifest.json", Some(why), None)),
    );
    for (k, v, p) in t.section("guest") {
        doc.set(&format!("guest.{k}"), v.clone(), Some(p.clone()));
    }
    if let Some(w) = c
        .bench
        .as_ref()
        .and_then(|b| b.results.iter().find(|m| m.key == "wake_idle_cpu"))
    {
        doc.set(
            "guest.vcpu_wake_ns",
            int(w.median_ns.round() as u64),
            Some(measured(
                machine,
                "capture bench.json (irqlab hostbench)",
                Some(format!("wake_idle_cpu median {:.0} ns", w.median_ns)),
                Some("an eventfd write waking a thread on a vCPU idle for 200 us: the IPI, the halted vCPU's exit and its switch-in, one way".into()),
            )),
        );
    }
    let cmdline = c.host.kernel.cmdline.as_deref().unwrap_or("");
    if let Some(v) = cmdline
        .split_whitespace()
        .take_while(|w| *w != "--")
        .find_map(|w| w.strip_prefix("haltpoll.guest_halt_poll_ns="))
        .and_then(|v| v.parse::<u64>().ok())
    {
        doc.set(
            "guest.guest_halt_poll_ns",
            int(v),
            Some(measured(
                machine,
                "capture /proc/cmdline",
                Some(format!("haltpoll.guest_halt_poll_ns={v}")),
                Some(
                    "cpuidle-haltpoll's window: an idle vCPU polls this long before it halts"
                        .into(),
                ),
            )),
        );
    }
}

/// `vda`, `vdb`, ... `vdz`, `vdaa` (virtblk_name_format).
fn letters(mut i: usize) -> String {
    let mut s = Vec::new();
    loop {
        s.push(b'a' + (i % 26) as u8);
        if i < 26 {
            break;
        }
        i = i / 26 - 1;
    }
    s.reverse();
    String::from_utf8(s).unwrap_or_default()
}

/// Every virtio-blk disk of `used`, one device group each (after `first` groups).
#[allow(clippy::too_many_arguments)]
pub fn groups(
    doc: &mut Doc,
    used: &[&BlockDevice],
    t: &KindTable,
    machine: &str,
    first: usize,
    devices: &mut Vec<Mapped>,
    notes: &mut Vec<String>,
) -> Result<(), FromCaptureError> {
    for (k, d) in used.iter().enumerate() {
        let g = first + k;
        let dp = device_group(doc, g, "virtio-blk", "vd", machine, &d.name);
        let nvec = d.vectors.len();
        let queues = d.queues.len().max(nvec).max(1);
        doc.set(
            &format!("{dp}.queues"),
            int(queues as u64),
            Some(measured(
                machine,
                "capture /sys/block/*/mq",
                Some(format!("{queues} hardware queue(s), {nvec} with a vector")),
                None,
            )),
        );
        let tags = d.queues.first().and_then(|q| q.nr_tags).unwrap_or(128);
        doc.set(
            &format!("{dp}.queue_depth"),
            int(u64::from(tags)),
            Some(measured(
                machine,
                "capture /sys/block/*/mq/0/nr_tags",
                Some(format!("nr_tags {tags}")),
                None,
            )),
        );
        let cpus: Vec<u32> = d
            .vectors
            .iter()
            .filter_map(|v| match v.effective_cpus.as_slice() {
                [one] => Some(*one),
                _ => None,
            })
            .collect();
        if !cpus.is_empty() && cpus.iter().all(|x| *x == cpus[0]) {
            doc.set(
                &format!("{dp}.irq_cpu"),
                int(u64::from(cpus[0])),
                Some(measured(
                    machine,
                    "capture /proc/irq/*/effective_affinity_list",
                    None,
                    Some(format!(
                        "every vector of {} interrupts CPU {}",
                        d.name, cpus[0]
                    )),
                )),
            );
        }
        for (key, v, p) in t.section("device") {
            doc.set(&format!("{dp}.{key}"), v.clone(), Some(p.clone()));
        }
        let vp = format!("{dp}.virtio");
        doc.sections
            .push(Section::new("devices.virtio", false, &vp));
        let known = !d.virtio_features.is_empty();
        let indirect = known && d.has_virtio_feature(INDIRECT_DESC);
        let features = format!(
            "features {}",
            d.virtio_features
                .iter()
                .map(|b| b.to_string())
                .collect::<Vec<_>>()
                .join(",")
        );
        // virtblk_probe: tags = the ring's entries, halved without indirect descriptors.
        let ring = if indirect { tags } else { tags * 2 }
            .next_power_of_two()
            .clamp(4, 32768);
        doc.set(
            &format!("{vp}.ring_size"),
            int(u64::from(ring)),
            Some(measured(
                machine,
                "capture /sys/block/*/mq/0/nr_tags and virtio features",
                Some(format!("nr_tags {tags}")),
                Some("virtblk_probe gives the tag set the ring's entries, halved without indirect descriptors".into()),
            )),
        );
        doc.set(
            &format!("{vp}.indirect"),
            toml::Value::Boolean(indirect),
            Some(measured(
                machine,
                "capture /sys/bus/virtio/devices/*/features",
                Some(features.clone()),
                Some("bit 28, VIRTIO_RING_F_INDIRECT_DESC".into()),
            )),
        );
        let event_idx = !known || d.has_virtio_feature(EVENT_IDX);
        let prov = if known {
            measured(
                machine,
                "capture /sys/bus/virtio/devices/*/features",
                Some(features),
                Some("bit 29, VIRTIO_RING_F_EVENT_IDX".into()),
            )
        } else {
            let mut p = Provenance::new(SourceKind::Estimate);
            p.note = Some(
                "the capture has no virtio features: EVENT_IDX, which every current host offers"
                    .into(),
            );
            p
        };
        doc.set(
            &format!("{vp}.event_idx"),
            toml::Value::Boolean(event_idx),
            Some(prov),
        );
        doc.set(
            &format!("{vp}.poll_queues"),
            int(u64::from(d.poll_queues)),
            Some(measured(
                machine,
                "capture /sys/block/*/mq and /proc/interrupts",
                None,
                Some("hardware queues without a vector".into()),
            )),
        );
        let hp = format!("{dp}.host");
        doc.sections.push(Section::new("devices.host", false, &hp));
        for (key, v, p) in t.section("host") {
            doc.set(&format!("{hp}.{key}"), v.clone(), Some(p.clone()));
        }
        if d.virtio_features.is_empty() {
            notes.push(format!(
                "{}: the capture has no virtio features (a hand layout): indirect descriptors and EVENT_IDX are taken as off and on",
                d.name
            ));
        }
        let name = format!("vd{}", letters(g - first));
        devices.push(Mapped {
            capture: d.name.clone(),
            disk: d.name.clone(),
            file: format!("/dev/{name}"),
            platform: name,
            group: g,
        });
    }
    notes.push("the VMM serves each virtio-blk request itself, one at a time, and publishes once per pass (Firecracker's Sync engine; kinds/virtio-blk.toml): the deep runs' I/Os per interrupt test it".into());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::letters;

    #[test]
    fn disks_are_lettered_as_virtio_blk_names_them() {
        assert_eq!(letters(0), "a");
        assert_eq!(letters(25), "z");
        assert_eq!(letters(26), "aa");
        assert_eq!(letters(27), "ab");
    }
}
