//! The simulator's hands for genirq's flow decisions, which each vector's core `IrqDesc`
//! makes (the same descriptor the runtime locks): disable_irq_nosync and enable_irq
//! (kernel/irq/manage.c), handle_edge_irq's mask-and-pend and its loop while IRQS_PENDING
//! (kernel/irq/chip.c), and the resend at enable (kernel/irq/resend.c). This file carries
//! out the chip writes and resends; the callers charge the CPU time.

use super::ids::VectorId;
use super::state::*;
use crate::observer::Observer;
use irqlab_core::irq::{AfterHandler, ChipOp, Edge};
use irqlab_core::softirq::SoftirqVec;

impl<O: Observer> Sim<'_, O> {
    /// disable_irq_nosync() by irq_poll's handler or GSIM: lazy, the chip stays unmasked
    /// until the next interrupt finds the IRQ disabled.
    pub(crate) fn disable_vector(&mut self, v: usize) {
        let vec = &mut self.vectors[v];
        if vec.desc.disable_nosync() == ChipOp::Mask {
            vec.msix.mask();
        }
    }

    /// handle_edge_irq's entry for an interrupt of vector `v`: Handle (the caller runs the
    /// handler and, when it returns, [`Sim::end_vector_handler`]) or Pend (disabled, or its
    /// handler runs elsewhere: IRQS_PENDING, and the chip masked when it was not).
    pub(crate) fn edge(&mut self, v: usize) -> Edge {
        let vec = &mut self.vectors[v];
        let e = vec.desc.edge();
        if let Edge::Pend { mask } = e {
            if mask {
                vec.msix.mask();
            }
            vec.pended += 1;
        }
        e
    }

    /// The handler of vector `v` returned: Again when an interrupt was pended meanwhile
    /// and the IRQ is enabled (the chip is unmasked first when `unmask`: the device sends
    /// what its pending bit held).
    pub(crate) fn handler_done(&mut self, v: usize) -> AfterHandler {
        let after = self.vectors[v].desc.handler_done();
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
        let Ok(e) = self.vectors[v].desc.enable() else {
            // Unbalanced: the kernel WARNs and changes nothing.
            return false;
        };
        let was_masked = self.vectors[v].msix.is_masked();
        let a = self.unmask_action(v);
        if e.resend {
            if self.measuring {
                self.vectors[v].resent += 1;
            }
            if self.costs.resend_tasklet {
                if self.resend.resend(c, v) {
                    self.cpus[c].softirq.raise(SoftirqVec::Tasklet);
                }
            } else {
                let (cpu, idt) = (self.vectors[v].cpu.ix(), self.vectors[v].idt);
                self.notify(cpu, idt);
            }
        }
        self.carry_out(v, a);
        was_masked
    }

    /// The MSI-X mask bit cleared.
    fn unmask_chip(&mut self, v: usize) {
        let a = self.unmask_action(v);
        self.carry_out(v, a);
    }

    /// Clears vector `v`'s mask bit: the device raises what its pending bit holds, or what
    /// entries still at the host's CQ head owe (a poller that re-enables the vector left
    /// them), through its interrupt rule.
    fn unmask_action(&mut self, v: usize) -> irqlab_core::nvme::MsixAction {
        let q = self.vectors[v].queue.ix();
        let (unacked, cqe_pending) = (self.unacked(q), self.queues[q].qp.cqe_pending());
        self.vectors[v].msix.unmask(unacked, cqe_pending)
    }

    /// The vector whose handler CPU `c` ran has returned (IRQD_IRQ_INPROGRESS cleared);
    /// true when handle_edge_irq's loop runs it again, which this starts.
    pub(crate) fn end_vector_handler(&mut self, c: usize) -> bool {
        let Some(v) = self.cpus[c].irq.vector.take() else {
            return false;
        };
        let v = v.ix();
        match self.handler_done(v) {
            AfterHandler::Done => false,
            AfterHandler::Again { unmask } => {
                self.cpus[c].irq.vector = Some(VectorId::new(v));
                self.rerun_vector_handler(c, unmask);
                true
            }
        }
    }
}
