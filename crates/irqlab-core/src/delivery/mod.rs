//! How a device's MSI reaches a CPU, as one component both engines drive: the policy's
//! [`Delivery`] mode, each CPU's [`DeliveryPath`] (a remapped IRTE target or a posted
//! descriptor), [`DeliveryPath::post`] (what the IOMMU does with one message) and the
//! interrupt handler the CPU enters, a step machine ([`DeliveryPath::begin`], then
//! [`Step`]s until [`Step::Eoi`]) that the simulator charges time for step by step and the
//! runtime executes.
//!
//! A mode is a file here: [`remapped`] (VT-d remapped MSI), [`posted`] (the kernel's
//! posted MSI, v6.10), [`preemptable`] (the posted-MSI talk's Attempt #2) and
//! [`self_ipi`] (its Attempt #3). [`migrate`] holds what an affinity change or a CPU going
//! offline does to a vector in flight, and [`events`] when they happen. docs/model.md
//! ("How to add a delivery mode") lists the places a new mode touches.

pub mod events;
mod handler;
pub mod migrate;
mod path;
pub mod posted;
pub mod preemptable;
pub mod remapped;
pub mod self_ipi;

pub use events::{AffinityChange, AffinityEvent, EventError, plan_events};
pub use handler::{NotificationHandler, PostedMode, Step};
pub use path::{DeliveryPath, IrqChip, Notification, Post, PostedPath};
pub use remapped::RemappedTarget;

use std::fmt;

/// How a device's completion message reaches a CPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Delivery {
    /// VT-d remapped MSI: every message is a CPU notification (IR-PCI-MSIX).
    Remapped,
    /// Posted MSI (arch/x86/kernel/irq.c): PIR bit plus a notification only while ON is
    /// clear; `max_loop` is MAX_POSTED_MSI_COALESCING_LOOP (3 in the kernel).
    Posted { max_loop: u32 },
    /// Posted MSI with the talk's Attempt #2 handler: a lower-priority notification vector
    /// and interrupts enabled in the demux ([`preemptable`]).
    PostedPreemptable { max_loop: u32 },
    /// Posted MSI with the talk's Attempt #3 handler: the demux sends each harvested
    /// vector to its own CPU as a self-IPI ([`self_ipi`]).
    PostedSelfIpi { max_loop: u32 },
    /// No interrupts: the submitter polls its completion queue (nvme poll_queues + hipri).
    Polled,
    /// io_uring hybrid IOPOLL: sleep half the fastest observed completion time, then poll.
    Hybrid,
}

impl Delivery {
    /// Whether completions raise interrupts at all (polled and hybrid runs poll instead).
    pub fn takes_interrupts(self) -> bool {
        !matches!(self, Delivery::Polled | Delivery::Hybrid)
    }

    /// The posted notification handler this mode runs and its loop limit; None for a
    /// mode without a posted descriptor.
    pub fn posted_mode(self) -> Option<(PostedMode, u32)> {
        match self {
            Delivery::Posted { max_loop } => Some((posted::KERNEL, max_loop)),
            Delivery::PostedPreemptable { max_loop } => Some((preemptable::PREEMPTABLE, max_loop)),
            Delivery::PostedSelfIpi { max_loop } => Some((self_ipi::SELF_IPI, max_loop)),
            Delivery::Remapped | Delivery::Polled | Delivery::Hybrid => None,
        }
    }

    /// Whether messages are posted into a descriptor (any posted notification handler).
    pub fn is_posted(self) -> bool {
        self.posted_mode().is_some()
    }

    /// The irq chip under the device's MSI-X chip, None when nothing interrupts.
    pub fn chip(self) -> Option<IrqChip> {
        if !self.takes_interrupts() {
            None
        } else if self.is_posted() {
            Some(IrqChip::Posted)
        } else {
            Some(IrqChip::Remapped)
        }
    }
}

impl fmt::Display for Delivery {
    /// The `--delivery` value; a posted mode's notification handler is reported apart
    /// (`notification=` in [`crate::Policy::describe`]).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Delivery::Remapped => "remapped",
            Delivery::Posted { .. }
            | Delivery::PostedPreemptable { .. }
            | Delivery::PostedSelfIpi { .. } => "posted",
            Delivery::Polled => "polled",
            Delivery::Hybrid => "hybrid",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_posted_mode_has_a_descriptor_and_polling_modes_take_no_interrupt() {
        for d in [
            Delivery::Posted { max_loop: 3 },
            Delivery::PostedPreemptable { max_loop: 3 },
            Delivery::PostedSelfIpi { max_loop: 3 },
        ] {
            assert!(d.is_posted() && d.takes_interrupts(), "{d:?}");
            assert_eq!(d.chip(), Some(IrqChip::Posted));
            assert_eq!(d.to_string(), "posted");
            assert_eq!(d.posted_mode().map(|(_, l)| l), Some(3));
        }
        assert_eq!(Delivery::Remapped.chip(), Some(IrqChip::Remapped));
        for d in [Delivery::Polled, Delivery::Hybrid] {
            assert!(!d.takes_interrupts() && d.chip().is_none());
        }
        let names: Vec<&str> = [
            Delivery::Posted { max_loop: 3 },
            Delivery::PostedPreemptable { max_loop: 3 },
            Delivery::PostedSelfIpi { max_loop: 3 },
        ]
        .iter()
        .filter_map(|d| d.posted_mode())
        .map(|(m, _)| m.name)
        .collect();
        assert_eq!(names, ["kernel", "preemptable", "self-ipi"]);
    }
}
