//! A platform that is a virtual machine (`[guest]`), and the paravirtual device that needs
//! one (`kind = "virtio-blk"`, with `[devices.virtio]` and `[devices.host]`).
//!
//! A guest pays for what the hypervisor does on its behalf. The `[guest]` costs are what
//! an exit or an injection adds to the native operation, so the native costs keep coming
//! from the CPU and kernel tables: irq entry + `inject_ns`, EOI + `eoi_exit_ns`, an MSI-X
//! mask + `msix_trap_ns` (an unmask + `unmask_hypercall_ns` more), a C-state exit + `vcpu_wake_ns` (a halted vCPU), and the
//! virtio notify write costs its submitter `kick_ns`.
//!
//! Posted MSI (`--delivery posted`) is refused on a guest: the posted-MSI patches run on
//! bare metal only, where the IOMMU's interrupt remapping table belongs to the kernel; in
//! a VM it belongs to the host, and a guest sees (at most) an emulated vIOMMU.

use crate::platform::{DeviceGroup, DeviceKind, Platform};
use irqlab_core::Policy;
use irqlab_core::virtio::{blk_descs_per_request, blk_queue_depth, valid_ring_size};
use serde::{Deserialize, Serialize};
use std::fmt;

/// The hypervisor a guest runs under.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum Hypervisor {
    /// KVM with a VMM not named below (QEMU included).
    Kvm,
    /// Firecracker on KVM.
    Firecracker,
    /// QEMU on KVM.
    Qemu,
    /// Cloud Hypervisor on KVM.
    CloudHypervisor,
    /// Microsoft Hyper-V (Azure).
    HyperV,
    Xen,
    Other,
}

impl Hypervisor {
    pub fn as_str(self) -> &'static str {
        match self {
            Hypervisor::Kvm => "kvm",
            Hypervisor::Firecracker => "firecracker",
            Hypervisor::Qemu => "qemu",
            Hypervisor::CloudHypervisor => "cloud-hypervisor",
            Hypervisor::HyperV => "hyper-v",
            Hypervisor::Xen => "xen",
            Hypervisor::Other => "other",
        }
    }
}

impl fmt::Display for Hypervisor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// `[guest]`: the platform is a VM. Costs in ns, each added to the native one.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Guest {
    pub hypervisor: Hypervisor,
    /// A paravirtual queue notify (virtio's `vp_notify`: an MMIO or PIO write that exits
    /// to the hypervisor, which signals the VMM's ioeventfd), paid by the submitter.
    pub kick_ns: u64,
    /// An interrupt or IPI reaching a halted vCPU: the HLT exit's other half, the host
    /// scheduling the vCPU thread back in; added to `cpu.idle_exit_ns`.
    pub vcpu_wake_ns: u64,
    /// What an injected interrupt costs the running vCPU besides its native entry: an
    /// exit to inject it where the interrupt cannot be posted to the vCPU (0 with posted
    /// interrupts, APICv or AVIC); added to `cpu.irq_entry_ns`.
    #[serde(default)]
    pub inject_ns: u64,
    /// The EOI's exit (0 with PV EOI, APICv or AVIC); added to `cpu.eoi_ns`.
    #[serde(default)]
    pub eoi_exit_ns: u64,
    /// A trapped access to an emulated MSI-X table (masking or unmasking a vector); added
    /// to `kernel.irq_mask_ns`.
    #[serde(default)]
    pub msix_trap_ns: u64,
    /// What unmasking a vector adds besides the table write: on Hyper-V, pci-hyperv's
    /// hv_irq_unmask issues HVCALL_RETARGET_INTERRUPT before pci_msi_unmask_irq, on every
    /// unmask (drivers/pci/controller/pci-hyperv.c, v4.x-v6.x on x86); 0 elsewhere.
    #[serde(default)]
    pub unmask_hypercall_ns: u64,
    /// enable_irq resends an interrupt that came while the IRQ was disabled through the
    /// resend tasklet (TASKLET_SOFTIRQ runs its flow handler) instead of a self-IPI:
    /// kernel/irq/resend.c before v5.10 asked only the outermost chip for irq_retrigger,
    /// and pci-hyperv's "Hyper-V PCIe MSI" chip has none.
    #[serde(default)]
    pub resend_tasklet: bool,
    /// cpuidle-haltpoll's window (`haltpoll.guest_halt_poll_ns`): an idle vCPU polls this
    /// long before it halts, so a wake-up within it costs no `vcpu_wake_ns`. The polling
    /// is idle time to the guest.
    #[serde(default)]
    pub guest_halt_poll_ns: u64,
}

/// What a guest adds to the native cost of each operation it traps (all 0 on bare metal).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GuestAdds {
    pub irq_entry: u64,
    pub eoi: u64,
    pub irq_mask: u64,
    /// Unmasking's extra over a mask (`unmask_hypercall_ns`).
    pub irq_unmask: u64,
    /// `resend_tasklet`.
    pub resend_tasklet: bool,
    pub vcpu_wake: u64,
    pub guest_halt_poll: u64,
    pub kick: u64,
}

impl Platform {
    /// The guest's additions to native costs; all 0 on bare metal.
    pub fn guest_adds(&self) -> GuestAdds {
        self.guest
            .as_ref()
            .map_or(GuestAdds::default(), |g| GuestAdds {
                irq_entry: g.inject_ns,
                eoi: g.eoi_exit_ns,
                irq_mask: g.msix_trap_ns,
                irq_unmask: g.unmask_hypercall_ns,
                resend_tasklet: g.resend_tasklet,
                vcpu_wake: g.vcpu_wake_ns,
                guest_halt_poll: g.guest_halt_poll_ns,
                kick: g.kick_ns,
            })
    }

    /// Whether `policy` can run on this platform at all: posted MSI cannot on a guest.
    pub fn allows(&self, policy: &Policy) -> Result<(), PolicyRefused> {
        match (&self.guest, policy.delivery) {
            (Some(g), d) if d.is_posted() => Err(PolicyRefused::PostedOnGuest {
                platform: self.name.clone(),
                hypervisor: g.hypervisor,
            }),
            _ => Ok(()),
        }
    }
}

/// A policy this platform cannot run, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PolicyRefused {
    /// `--delivery posted` on a virtual machine.
    PostedOnGuest {
        platform: String,
        hypervisor: Hypervisor,
    },
}

impl fmt::Display for PolicyRefused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PolicyRefused::PostedOnGuest {
                platform,
                hypervisor,
            } => write!(
                f,
                "--delivery posted on platform '{platform}', a {hypervisor} guest: posted MSI is bare-metal only (the posted-MSI patches program the IOMMU's interrupt remapping table, which in a VM belongs to the host; a guest's interrupts are injected by the hypervisor); use --delivery remapped"
            ),
        }
    }
}

impl std::error::Error for PolicyRefused {}

/// `[devices.virtio]`: a virtio-blk device's virtqueues as the driver negotiated them.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct VirtioQueues {
    /// Entries per virtqueue (QueueNumMax; a power of two up to 32768).
    pub ring_size: u32,
    /// VIRTIO_RING_F_INDIRECT_DESC: a request takes one ring entry instead of three.
    pub indirect: bool,
    /// VIRTIO_RING_F_EVENT_IDX: kicks and interrupts decided by `avail_event` and
    /// `used_event`; without it by the NO_NOTIFY and NO_INTERRUPT flags.
    pub event_idx: bool,
    /// virtio_blk.poll_queues: the last of `queues` are polled, with no vector (v5.19+).
    pub poll_queues: usize,
}

/// When the host makes its used entries visible and decides about an interrupt.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum Publish {
    /// Once per pass over the avail ring (Firecracker's process_queue: add_used per
    /// request, advance_used_ring_idx and prepare_kick after the loop) and once per batch
    /// of backend completions.
    PerPass,
    /// Each request as its backend completes it (QEMU's virtqueue_push), with one irqfd
    /// write per batch of completions (defer_call, QEMU 8.2).
    PerCompletionBatch,
}

/// `[devices.host]`: the VMM side of a virtio-blk device.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct VirtioHost {
    /// 1: one VMM thread serves each request synchronously (Firecracker's Sync file
    /// engine), `service_ns` each. N > 1: an asynchronous backend with up to N requests
    /// in flight on the device's media (max_iops × read_ns servers).
    pub servers: u32,
    /// The host thread's time per request: pop and parse the descriptor chain, write the
    /// status and the used entry, and with `servers = 1` the read or write itself.
    pub service_ns: u64,
    pub publish: Publish,
    /// From a kick (ioeventfd) or a backend completion to the sleeping host thread
    /// running: the epoll wake-up.
    pub wake_ns: u64,
    /// After a pass, the host thread polls the avail ring this long with kicks disabled
    /// before it asks for one and sleeps (QEMU's IOThread poll-max-ns; 0 for Firecracker).
    pub poll_ns: u64,
    /// From the irqfd write to the interrupt at the guest vCPU's local APIC (KVM's
    /// injection).
    pub notify_ns: u64,
}

/// Checks the `[guest]` section, and every virtio-blk device against it.
pub(crate) fn check(p: &Platform) -> Result<(), String> {
    for (i, d) in p.devices.iter().enumerate() {
        check_device(p, i, d)?;
    }
    Ok(())
}

fn check_device(p: &Platform, i: usize, d: &DeviceGroup) -> Result<(), String> {
    if d.kind != DeviceKind::VirtioBlk {
        if d.virtio.is_some() || d.host.is_some() {
            return Err(format!(
                "devices.{i}: [devices.virtio] and [devices.host] belong to kind = \"virtio-blk\", not \"{}\"",
                d.kind.as_str()
            ));
        }
        return Ok(());
    }
    if p.guest.is_none() {
        return Err(format!(
            "devices.{i}: a virtio-blk device is a paravirtual device: the platform needs a [guest] section (hypervisor, kick_ns, vcpu_wake_ns)"
        ));
    }
    if !d.port.is_empty() {
        return Err(format!(
            "devices.{i}.port = \"{}\": a virtio-blk device has no root port (its host writes guest memory itself); remove the key",
            d.port
        ));
    }
    let (Some(v), Some(h)) = (&d.virtio, &d.host) else {
        return Err(format!(
            "devices.{i}: kind = \"virtio-blk\" needs [devices.virtio] (ring_size, indirect, event_idx, poll_queues) and [devices.host] (servers, service_ns, publish, wake_ns, poll_ns, notify_ns)"
        ));
    };
    if !valid_ring_size(v.ring_size) || v.ring_size < 4 {
        return Err(format!(
            "devices.{i}.virtio.ring_size = {}: a split virtqueue's size is a power of two from 4 to 32768",
            v.ring_size
        ));
    }
    let tags = u32::from(blk_queue_depth(v.ring_size as u16, v.indirect));
    if d.queue_depth > tags {
        return Err(format!(
            "devices.{i}.queue_depth = {}: virtio_blk gives a ring of {} entries at most {tags} tags{} (queue_depth is blk-mq's nr_tags)",
            d.queue_depth,
            v.ring_size,
            if v.indirect {
                ""
            } else {
                " without indirect descriptors"
            }
        ));
    }
    let queues = d.queues;
    if queues == 0 {
        return Err(format!(
            "devices.{i}.queues = 0: give a virtio-blk device its number of virtqueues (num_queues; 1 without VIRTIO_BLK_F_MQ)"
        ));
    }
    if v.poll_queues >= queues {
        return Err(format!(
            "devices.{i}.virtio.poll_queues = {}: virtio_blk keeps at least one of the {queues} queues for interrupts (min(poll_queues, num_vqs - 1))",
            v.poll_queues
        ));
    }
    if h.servers == 0 || h.servers > 65536 {
        return Err(format!(
            "devices.{i}.host.servers = {} is not in 1..=65536",
            h.servers
        ));
    }
    if h.service_ns == 0 {
        return Err(format!(
            "devices.{i}.host.service_ns must be above 0 (the host thread's time per request)"
        ));
    }
    Ok(())
}

/// Requests a virtqueue's ring holds at once: each takes [`blk_descs_per_request`]
/// descriptors.
pub(crate) fn ring_requests(v: &VirtioQueues) -> u32 {
    v.ring_size / u32::from(blk_descs_per_request(v.indirect))
}
