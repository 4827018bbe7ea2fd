//! VT-d remapped MSI (drivers/iommu/intel/irq_remapping.c, chip "INTEL-IR"): the IOMMU
//! looks up the IRTE and delivers the IRTE's vector to its destination, one CPU interrupt
//! per message, no coalescing in the IOMMU (the local APIC's IRR can still merge a second
//! message of a vector that is already pending: [`crate::irq::Irr`]). The CPU runs the
//! vector's handler and EOIs it: [`crate::delivery::NotificationHandler::device`].

use super::Notification;

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

    /// The interrupt one message of `vector` raises.
    pub fn notification(&self, vector: u8) -> Notification {
        Notification {
            vector,
            dest: self.dest,
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
