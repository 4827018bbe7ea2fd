//! The interrupt path in the uncore (mechanism P of docs/calibration.md, "The uncore"):
//! from a root port's FIFO through its IIO stack's DMAR unit and the socket's interrupt
//! router to a CPU's local APIC.
//!
//! Root ports belong to IIO stacks, one DMAR unit each (VT-d §5.1: interrupt remapping
//! is "co-located with the remapping hardware units"). A stack handles the MSIs of all
//! its ports one at a time, in arrival order; the FIFO pays only the MSI write itself
//! (`root_ports.N.msi_ns`), and the MSI at a FIFO head that finds its stack busy waits
//! there with every write behind it (PCIe ordering rule A2a).
//!
//! - Remapped: the stack drains its earlier writes to their commit point, looks up the
//!   IRTE and sends the interrupt to the router (`uncore.stack_rtt_ns`), and holds it
//!   until the router has sent it on ("step #3 is also expensive and requires strong
//!   ordering w.r.t DMA", Jacob Pan's posted MSI cover letter; VT-d §5.2.4: an interrupt
//!   is not seen before the DMA writes ahead of it are committed).
//! - Posted: the stack updates the CPU's posted-interrupt descriptor with an atomic
//!   read-modify-write of its line (`uncore.pid_ns`, VT-d §5.2.3); when ON was clear, the
//!   notification leaves for the router without holding the stack ("Ordering between
//!   distinct interrupt requests does not need to be maintained within the
//!   interrupt-posting hardware", §5.2.4).
//!
//! The router (`uncore.ubox_ns` per message) serves every stack of the socket, one message
//! at a time. A posted notification waiting there keeps ON set, so the stacks' later
//! posts to that CPU only set PIR bits: a busy router coalesces.

use super::fabric::{HeldMsi, Notification, Routed};
use super::ids::{PortId, StackId, VectorId};
use super::state::*;
use crate::engine::Event;
use crate::observer::Observer;

impl<O: Observer> Sim<'_, O> {
    /// The MSI of vector `v` at port `p`'s FIFO head goes to the port's stack. False: the
    /// stack is busy, the port waits in its queue, and the FIFO with it.
    pub(crate) fn stack_take(&mut self, p: usize, v: usize) -> bool {
        if !self.fabric.stack_free(p) {
            return false;
        }
        let remapped = !self.posted_vector(v);
        let notify = remapped || self.post_msi(v);
        let msi = HeldMsi {
            vector: VectorId::new(v),
            remapped,
            notify,
            cpu: self.vectors[v].cpu(),
            idt: self.vectors[v].idt(),
        };
        let at = self.fabric.stack_take(p, msi, self.now);
        self.q.push(
            at,
            Event::EngineDone {
                port: PortId::new(p),
            },
        );
        true
    }

    /// Port `p`'s stack finished its part of the MSI it holds: the notification, if any,
    /// leaves for the router; a posted MSI frees the stack now, a remapped one once the
    /// router has sent it on.
    pub(crate) fn engine_done(&mut self, p: usize) {
        let (s, held) = self.fabric.held_at(p);
        if held.notify {
            // The route read when the stack took the MSI: an entry rewritten since
            // (model/irq_move.rs) does not redirect it.
            let cpu = &self.cpus[held.cpu.ix()];
            // Remapped: the vector itself; posted: the descriptor's notification vector.
            let idt = match cpu.apic.path().pi_desc() {
                Some(pi) if !held.remapped => u16::from(pi.nv()),
                _ => held.idt,
            };
            self.send_notification(Notification {
                cpu: held.cpu,
                idt,
                holds: held.remapped.then_some(s),
            });
        }
        if !held.remapped || !held.notify {
            self.free_stack(s);
        }
    }

    /// The stack is idle again: the port that waited longest starts its MSI.
    fn free_stack(&mut self, s: StackId) {
        if let Some(p) = self.fabric.free_stack(s) {
            self.port_start(p);
        }
    }

    /// The IOMMU posts an MSI of vector `v` into its CPU's descriptor: PIR bit, then ON
    /// unless already set (`PiDesc::post`). Returns whether a notification is due.
    fn post_msi(&mut self, v: usize) -> bool {
        let c = self.vectors[v].cpu().ix();
        let posted = self.cpus[c].apic.post_interrupt(self.vectors[v].idt());
        if posted.merged {
            self.vectors[v].count_merged();
        }
        self.report_pir_pending(c);
        posted.notify
    }

    /// Whether vector `v`'s IRTE is in posted format (its CPU's delivery path).
    pub(crate) fn posted_vector(&self, v: usize) -> bool {
        self.cpus[self.vectors[v].cpu().ix()]
            .apic
            .path()
            .is_posted()
    }

    /// A notification leaves its stack for the router.
    fn send_notification(&mut self, n: Notification) {
        match self.fabric.route(n, self.now) {
            Routed::Now(n) => self.deliver(n),
            Routed::At(at) => self.q.push(at, Event::Delivered),
            Routed::Queued => {}
        }
    }

    /// The router sent the message at its head to the CPU, and starts on the next.
    pub(crate) fn delivered(&mut self) {
        let window = self.measuring.then_some(self.window_start);
        let Some(n) = self.fabric.router_sent(self.now, window) else {
            return;
        };
        self.deliver(n);
        if let Some(at) = self.fabric.router_next(self.now) {
            self.q.push(at, Event::Delivered);
        }
    }

    /// The interrupt message reaches the CPU, and a remapped one frees its stack.
    fn deliver(&mut self, n: Notification) {
        let c = n.cpu.ix();
        let posted = self.cpus[c].apic.path().is_notification(n.idt as u8);
        self.obs.notification(self.now, c, posted);
        self.notify(c, n.idt);
        if let Some(s) = n.holds {
            self.free_stack(s);
        }
    }
}
