//! An IIO stack: its DMAR unit handles the MSIs of all its root ports one at a time, in
//! arrival order (drivers/iommu/intel/irq_remapping.c: one IR domain per DMAR unit).

use crate::model::ids::{CpuId, PortId, VectorId};
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
    /// The route the IRTE gave it (an `--event` may rewrite the entry meanwhile).
    pub cpu: CpuId,
    pub idt: u16,
}

pub(crate) struct Stack {
    /// A remapped MSI's time at the stack before the router (uncore.stack_rtt_ns), and a
    /// posted MSI's atomic update of the posted-interrupt descriptor (uncore.pid_ns).
    remap_ns: u64,
    post_ns: u64,
    /// The MSI it handles (None: idle).
    held: Option<HeldMsi>,
    /// Its ports whose FIFO head is an MSI waiting for the stack, in arrival order.
    waiting: VecDeque<PortId>,
}

impl Stack {
    /// An idle stack whose DMAR unit takes `remap_ns` per remapped MSI and `post_ns` per
    /// posted one.
    pub(crate) fn idle(remap_ns: u64, post_ns: u64) -> Stack {
        Stack {
            remap_ns,
            post_ns,
            held: None,
            waiting: VecDeque::new(),
        }
    }

    /// The DMAR unit handles an MSI.
    #[inline]
    pub(crate) fn is_busy(&self) -> bool {
        self.held.is_some()
    }

    /// The DMAR unit starts on `msi`. Returns how long its work takes.
    #[inline]
    pub(crate) fn take(&mut self, msi: HeldMsi) -> u64 {
        debug_assert!(self.held.is_none(), "the stack handles one MSI at a time");
        self.held = Some(msi);
        if msi.remapped {
            self.remap_ns
        } else {
            self.post_ns
        }
    }

    /// The MSI the DMAR unit handles, if any.
    pub(crate) fn holding(&self) -> Option<HeldMsi> {
        self.held
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
