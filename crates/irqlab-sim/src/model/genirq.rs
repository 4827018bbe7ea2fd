//! The simulator's hands for genirq's flow decisions, which each vector's core `IrqDesc`
//! makes (the same descriptor the runtime locks): disable_irq_nosync and enable_irq
//! (kernel/irq/manage.c), handle_edge_irq's mask-and-pend and its loop while IRQS_PENDING
//! (kernel/irq/chip.c), and the resend at enable (kernel/irq/resend.c). The vector
//! (model/vector.rs) decides and writes its own chip; this file carries out what it
//! answers (a resend, a message); the callers charge the CPU time.

use super::ids::VectorId;
use super::state::*;
use crate::observer::Observer;
use irqlab_core::irq::AfterHandler;
use irqlab_core::softirq::SoftirqVec;

impl<O: Observer> Sim<'_, O> {
    /// The handler of vector `v` returned: Again when an interrupt was pended meanwhile
    /// and the IRQ is enabled (the chip is unmasked first when `unmask`: the device sends
    /// what its pending bit held).
    pub(crate) fn handler_done(&mut self, v: usize) -> AfterHandler {
        let after = self.vectors[v].handler_done();
        if let AfterHandler::Again { unmask: true } = after {
            self.unmask_chip(v);
        }
        after
    }

    /// enable_irq() on CPU `c` after irq_poll or GSIM. Unmasking lets the device send the
    /// message its pending bit holds; an interrupt that found the IRQ disabled is resent
    /// (check_irq_resend): by the chip's retrigger, a self-IPI of the vector to its CPU
    /// (try_retrigger → apic_retrigger_irq), or, on a platform whose MSI chip has none
    /// (`guest.resend_tasklet`), by the machine-wide resend tasklet raised on `c`.
    /// Returns whether the chip had been masked (an MSI-X table write to undo).
    pub(crate) fn enable_vector(&mut self, c: usize, v: usize) -> bool {
        let (unacked, cqe_pending) = self.cq_state(v);
        let Some(e) = self.vectors[v].enable(unacked, cqe_pending, self.measuring) else {
            // Unbalanced: the kernel WARNs and changes nothing.
            return false;
        };
        if e.resend {
            if self.costs.resend_tasklet {
                if self.resend.resend(c, v) {
                    self.cpus[c].soft.raise(SoftirqVec::Tasklet);
                }
            } else {
                let (cpu, idt) = (self.vectors[v].cpu().ix(), self.vectors[v].idt());
                self.notify(cpu, idt);
            }
        }
        self.carry_out(v, e.action);
        e.was_masked
    }

    /// The MSI-X mask bit cleared.
    fn unmask_chip(&mut self, v: usize) {
        let (unacked, cqe_pending) = self.cq_state(v);
        let a = self.vectors[v].unmask(unacked, cqe_pending);
        self.carry_out(v, a);
    }

    /// What vector `v`'s unmask needs of its CQ: the entries the host has not
    /// acknowledged, and whether one is pending at its head (a poller that re-enables
    /// the vector left them).
    fn cq_state(&self, v: usize) -> (u32, bool) {
        let q = self.vectors[v].queue().ix();
        (self.unacked(q), self.queues[q].cqe_pending())
    }

    /// The vector whose handler CPU `c` ran has returned (IRQD_IRQ_INPROGRESS cleared);
    /// true when handle_edge_irq's loop runs it again, which this starts.
    pub(crate) fn end_vector_handler(&mut self, c: usize) -> bool {
        let Some(v) = self.cpus[c].irq.handler_returned() else {
            return false;
        };
        let v = v.ix();
        match self.handler_done(v) {
            AfterHandler::Done => false,
            AfterHandler::Again { unmask } => {
                self.cpus[c].irq.handler_again(VectorId::new(v));
                self.rerun_vector_handler(c, unmask);
                true
            }
        }
    }
}
