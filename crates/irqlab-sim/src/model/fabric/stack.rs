//! An IIO stack: its DMAR unit handles the MSIs of all its root ports one at a time, in
//! arrival order (drivers/iommu/intel/irq_remapping.c: one IR domain per DMAR unit).

use crate::model::ids::{PortId, VectorId};
use std::collections::VecDeque;

/// The MSI an IIO stack's DMAR unit handles: a message between the port, the stack and
/// the router, not state of its own.
#[derive(Clone, Copy, Debug)]
pub(crate) struct HeldMsi {
    pub vector: VectorId,
    /// Remapped (held until the router sent it on), or posted (held for the PID update).
    pub remapped: bool,
    /// A CPU notification is due when the stack's work ends.
    pub notify: bool,
}

#[derive(Default)]
pub(crate) struct Stack {
    /// The MSI it handles (None: idle).
    held: Option<HeldMsi>,
    /// Its ports whose FIFO head is an MSI waiting for the stack, in arrival order.
    waiting: VecDeque<PortId>,
}

impl Stack {
    /// The DMAR unit handles an MSI.
    #[inline]
    pub(crate) fn is_busy(&self) -> bool {
        self.held.is_some()
    }

    /// The DMAR unit starts on `msi`.
    #[inline]
    pub(crate) fn take(&mut self, msi: HeldMsi) {
        debug_assert!(self.held.is_none(), "the stack handles one MSI at a time");
        self.held = Some(msi);
    }

    /// The MSI the DMAR unit handles.
    #[inline]
    pub(crate) fn held(&self) -> HeldMsi {
        self.held.expect("the stack holds an MSI")
    }

    /// Port `p`'s head MSI waits for the DMAR unit, behind those already waiting.
    pub(crate) fn enqueue(&mut self, p: PortId) {
        self.waiting.push_back(p);
    }

    /// The DMAR unit is idle again. Returns the port that waited longest, whose MSI goes
    /// next.
    #[inline]
    pub(crate) fn release(&mut self) -> Option<PortId> {
        self.held = None;
        self.waiting.pop_front()
    }
}
