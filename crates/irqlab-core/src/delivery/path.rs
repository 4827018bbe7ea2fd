//! One CPU's delivery path, as the IOMMU and the CPU see it: the remapped IRTE target of
//! its vectors, or the posted-interrupt descriptor the IOMMU updates instead
//! (drivers/iommu/intel/irq_remapping.c: intel_ir_chip, intel_ir_chip_post_msi).

use super::handler::{NotificationHandler, PostedMode};
use super::remapped::RemappedTarget;
use super::{Delivery, posted};
use crate::posted::PiDesc;

/// A CPU interrupt raised by a message: the vector the CPU enters the IDT with, and the
/// destination APIC ID.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Notification {
    pub vector: u8,
    pub dest: u32,
}

/// Everything one message's delivery found out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Post {
    /// The interrupt the CPU gets, if any (posted: only when ON was clear).
    pub notify: Option<Notification>,
    /// The message merged with one still pending in the descriptor (its PIR bit was set).
    /// A remapped message merges in the CPU's IRR instead: that is [`crate::irq::Irr`]'s
    /// answer, not the path's.
    pub merged: bool,
}

/// The irq chip that remaps a device's MSI-X messages (the chip column of the report).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IrqChip {
    /// intel_ir_chip: one CPU interrupt per message.
    Remapped,
    /// intel_ir_chip_post_msi: messages posted into the CPU's descriptor.
    Posted,
}

impl IrqChip {
    /// The chip's name (struct irq_chip .name).
    pub fn name(self) -> &'static str {
        match self {
            IrqChip::Remapped => "INTEL-IR",
            IrqChip::Posted => "INTEL-IR-POST",
        }
    }
}

/// A posted path: the CPU's descriptor, the demux's loop limit and the handler mode.
#[derive(Debug)]
pub struct PostedPath {
    desc: PiDesc,
    max_loop: u32,
    mode: PostedMode,
}

impl PostedPath {
    /// intel_posted_msi_init(): NV is the mode's notification vector, NDST `dest`.
    pub fn new(mode: PostedMode, max_loop: u32, dest: u32) -> PostedPath {
        PostedPath {
            desc: PiDesc::new(mode.nv, dest),
            max_loop,
            mode,
        }
    }

    pub fn desc(&self) -> &PiDesc {
        &self.desc
    }

    /// MAX_POSTED_MSI_COALESCING_LOOP of this path.
    pub fn max_loop(&self) -> u32 {
        self.max_loop
    }

    pub fn mode(&self) -> PostedMode {
        self.mode
    }
}

/// Per-CPU delivery as the engines hold it, switchable by policy.
#[derive(Debug)]
pub enum DeliveryPath {
    Remapped(RemappedTarget),
    Posted(PostedPath),
}

impl DeliveryPath {
    /// The path to the CPU with APIC ID `dest` under `delivery`: an IRTE in remapped
    /// format, or a posted descriptor notifying on the mode's vector
    /// (intel_posted_msi_init); None when the run takes no interrupts (polled, hybrid).
    pub fn for_delivery(delivery: Delivery, dest: u32) -> Option<DeliveryPath> {
        if !delivery.takes_interrupts() {
            return None;
        }
        Some(match delivery.posted_mode() {
            Some((mode, max_loop)) => DeliveryPath::Posted(PostedPath::new(mode, max_loop, dest)),
            None => DeliveryPath::Remapped(RemappedTarget::new(dest)),
        })
    }

    /// The IOMMU delivers one message of device vector `vector` to this CPU.
    pub fn post(&self, vector: u8) -> Post {
        match self {
            DeliveryPath::Remapped(t) => Post {
                notify: Some(t.notification(vector)),
                merged: false,
            },
            DeliveryPath::Posted(p) => {
                let out = p.desc.post_vector(vector);
                Post {
                    notify: out.notify.then(|| Notification {
                        vector: p.desc.nv(),
                        dest: p.desc.ndst(),
                    }),
                    merged: out.merged,
                }
            }
        }
    }

    /// The CPU enters IDT vector `idt` (a device vector, or this path's notification
    /// vector): the handler it runs. System vectors (the timer, IPIs) are the engine's.
    pub fn begin(&self, idt: u8) -> NotificationHandler {
        match self {
            DeliveryPath::Posted(p) if idt == p.mode.nv => {
                NotificationHandler::posted(idt, p.mode, p.max_loop)
            }
            _ => NotificationHandler::device(idt),
        }
    }

    /// Whether `idt` is this path's posted notification vector (the PMN row counts it).
    pub fn is_notification(&self, idt: u8) -> bool {
        self.posted().is_some_and(|p| p.mode.nv == idt)
    }

    /// Device vectors allocated on this CPU end below this: FIRST_SYSTEM_VECTOR, or a
    /// notification vector below it (Attempt #2's).
    pub fn first_system_vector(&self) -> u8 {
        let first = crate::posted::FIRST_SYSTEM_VECTOR;
        self.posted().map_or(first, |p| p.mode.nv.min(first))
    }

    /// The chip that remaps this CPU's messages.
    pub fn chip(&self) -> IrqChip {
        match self {
            DeliveryPath::Remapped(_) => IrqChip::Remapped,
            DeliveryPath::Posted(_) => IrqChip::Posted,
        }
    }

    /// The destination APIC ID.
    pub fn dest(&self) -> u32 {
        match self {
            DeliveryPath::Remapped(t) => t.dest,
            DeliveryPath::Posted(p) => p.desc.ndst(),
        }
    }

    pub fn posted(&self) -> Option<&PostedPath> {
        match self {
            DeliveryPath::Posted(p) => Some(p),
            DeliveryPath::Remapped(_) => None,
        }
    }

    pub fn is_posted(&self) -> bool {
        self.posted().is_some()
    }

    /// The posted descriptor, for the handler's rounds.
    pub fn pi_desc(&self) -> Option<&PiDesc> {
        self.posted().map(PostedPath::desc)
    }

    /// A PIR bit is set for `vector` (pi_pending_this_cpu; false on a remapped path).
    pub fn vector_pending(&self, vector: u8) -> bool {
        self.pi_desc().is_some_and(|d| d.is_pending(vector))
    }
}

impl Default for PostedPath {
    /// The kernel's posted MSI to APIC ID 0.
    fn default() -> Self {
        PostedPath::new(
            posted::KERNEL,
            crate::posted::MAX_POSTED_MSI_COALESCING_LOOP,
            0,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::delivery::{preemptable, self_ipi};
    use crate::posted::POSTED_MSI_NOTIFICATION_VECTOR;

    #[test]
    fn a_post_says_whether_it_notified_and_whether_it_merged() {
        let p = DeliveryPath::Posted(PostedPath::default());
        let first = p.post(0x41);
        assert_eq!(
            first.notify,
            Some(Notification {
                vector: POSTED_MSI_NOTIFICATION_VECTOR,
                dest: 0
            })
        );
        assert!(!first.merged);
        let second = p.post(0x42);
        assert!(
            second.notify.is_none() && !second.merged,
            "ON set: coalesced"
        );
        assert!(p.post(0x41).merged, "its PIR bit was still set");
        let r = DeliveryPath::Remapped(RemappedTarget::new(4));
        for _ in 0..2 {
            let post = r.post(0x41);
            assert_eq!(post.notify.map(|n| (n.vector, n.dest)), Some((0x41, 4)));
            assert!(!post.merged);
        }
    }

    #[test]
    fn each_mode_notifies_on_its_own_vector_and_the_path_names_its_chip() {
        for (d, nv) in [
            (Delivery::Posted { max_loop: 3 }, posted::KERNEL.nv),
            (
                Delivery::PostedPreemptable { max_loop: 3 },
                preemptable::PREEMPTABLE.nv,
            ),
            (
                Delivery::PostedSelfIpi { max_loop: 3 },
                self_ipi::SELF_IPI.nv,
            ),
        ] {
            let p = DeliveryPath::for_delivery(d, 9).unwrap();
            assert_eq!(p.post(0x30).notify.map(|n| n.vector), Some(nv));
            assert!(p.is_notification(nv) && !p.is_notification(0x30));
            assert_eq!(p.chip().name(), "INTEL-IR-POST");
            assert_eq!(p.dest(), 9);
            assert!(p.first_system_vector() <= nv);
        }
        let r = DeliveryPath::for_delivery(Delivery::Remapped, 9).unwrap();
        assert_eq!(r.chip().name(), "INTEL-IR");
        assert!(!r.is_notification(POSTED_MSI_NOTIFICATION_VECTOR));
        assert!(DeliveryPath::for_delivery(Delivery::Polled, 9).is_none());
    }

    #[test]
    fn vector_pending_reads_the_pir_bit() {
        let p = DeliveryPath::Posted(PostedPath::default());
        assert!(!p.vector_pending(0x41));
        let _ = p.post(0x41);
        assert!(p.vector_pending(0x41) && !p.vector_pending(0x42));
        assert!(p.pi_desc().unwrap().take_vector(0x41));
        assert!(!p.vector_pending(0x41));
    }
}
