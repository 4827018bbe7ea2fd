//! VT-d remapped MSI delivery beside posted delivery, behind one question the engines ask:
//! "a message for vector v arrives at CPU c: does the CPU get an interrupt, and with which
//! vector does it enter?".
//!
//! Remapped: the IOMMU looks up the IRTE (drivers/iommu/intel/irq_remapping.c, chip
//! "INTEL-IR") and delivers the IRTE's vector to its destination: one CPU notification per
//! message, no coalescing in the IOMMU. (The local APIC's IRR can still merge a second
//! message of a vector that is already pending; that is the CPU model's business.)

use crate::policy::Delivery;
use crate::posted::{POSTED_MSI_NOTIFICATION_VECTOR, PiDesc};

/// A CPU interrupt raised by a message: the vector the CPU enters the IDT with, and the
/// destination APIC ID.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Notification {
    pub vector: u8,
    pub dest: u32,
}

/// Anything a device message can be delivered through.
pub trait Deliver {
    /// Delivers one message of `vector`; Some when the CPU gets an interrupt.
    fn deliver(&self, vector: u8) -> Option<Notification>;
}

/// Remapped-format IRTE destination of one CPU: every message becomes a notification of
/// its own vector.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RemappedTarget {
    /// Destination APIC ID from the IRTE.
    pub dest: u32,
}

impl RemappedTarget {
    pub fn new(dest: u32) -> Self {
        RemappedTarget { dest }
    }
}

impl Deliver for RemappedTarget {
    fn deliver(&self, vector: u8) -> Option<Notification> {
        Some(Notification {
            vector,
            dest: self.dest,
        })
    }
}

impl Deliver for PiDesc {
    /// Posted: a PIR bit, and a notification on NV to NDST only when ON was clear.
    fn deliver(&self, vector: u8) -> Option<Notification> {
        self.post(vector).then(|| Notification {
            vector: self.nv(),
            dest: self.ndst(),
        })
    }
}

/// Per-CPU delivery as the engines hold it, switchable by policy.
#[derive(Debug)]
pub enum DeliveryPath {
    Remapped(RemappedTarget),
    Posted(PiDesc),
}

impl DeliveryPath {
    /// The path to the CPU with APIC ID `dest` under `delivery`: an IRTE in remapped
    /// format, or a posted descriptor notifying on POSTED_MSI_NOTIFICATION_VECTOR
    /// (intel_posted_msi_init); None when the run takes no interrupts (polled, hybrid).
    pub fn for_delivery(delivery: Delivery, dest: u32) -> Option<DeliveryPath> {
        match delivery {
            Delivery::Remapped => Some(DeliveryPath::Remapped(RemappedTarget::new(dest))),
            Delivery::Posted { .. } => Some(DeliveryPath::Posted(PiDesc::new(
                POSTED_MSI_NOTIFICATION_VECTOR,
                dest,
            ))),
            Delivery::Polled | Delivery::Hybrid => None,
        }
    }

    pub fn is_posted(&self) -> bool {
        matches!(self, DeliveryPath::Posted(_))
    }

    /// The posted descriptor, for the handler's demux.
    pub fn pi_desc(&self) -> Option<&PiDesc> {
        match self {
            DeliveryPath::Posted(d) => Some(d),
            DeliveryPath::Remapped(_) => None,
        }
    }
}

impl Deliver for DeliveryPath {
    fn deliver(&self, vector: u8) -> Option<Notification> {
        match self {
            DeliveryPath::Remapped(t) => t.deliver(vector),
            DeliveryPath::Posted(d) => d.deliver(vector),
        }
    }
}

/// Counters of remapped delivery; `notifications == messages` by construction.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RemappedStats {
    pub messages: u64,
    pub notifications: u64,
}

impl RemappedStats {
    /// Counts one message and the notification it may have raised.
    pub fn record(&mut self, result: Option<Notification>) {
        self.messages += 1;
        self.notifications += u64::from(result.is_some());
    }

    pub fn merge(&mut self, other: &RemappedStats) {
        self.messages += other.messages;
        self.notifications += other.notifications;
    }

    /// Messages per CPU notification: 1.0 for remapped delivery.
    pub fn coalescing_ratio(&self) -> f64 {
        if self.notifications == 0 {
            0.0
        } else {
            self.messages as f64 / self.notifications as f64
        }
    }
}
