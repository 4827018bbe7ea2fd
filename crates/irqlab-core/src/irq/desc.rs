//! One interrupt's `struct irq_desc` state as genirq keeps it, and the flow decisions made
//! on it (kernel/irq/manage.c, chip.c, resend.c):
//!
//! - `disable_irq_nosync()` raises `depth`; the first disable sets IRQD_IRQ_DISABLED and,
//!   lazily, leaves the chip unmasked (irq_disable masks only with IRQ_DISABLE_UNLAZY or a
//!   chip with irq_disable; the MSI chips have neither).
//! - handle_edge_irq: an interrupt that finds the IRQ disabled, or its handler running on
//!   another CPU (IRQD_IRQ_INPROGRESS), sets IRQS_PENDING and masks the chip
//!   (mask_ack_irq) instead of running the handler; the handler running elsewhere runs
//!   again while IRQS_PENDING is set and the IRQ is enabled, unmasking first.
//! - `enable_irq()` at depth 1 clears IRQD_IRQ_DISABLED, unmasks a masked chip and, with
//!   IRQS_PENDING set, resends the interrupt (check_irq_resend: the chip's retrigger, an
//!   IPI of the vector to its CPU). (IRQS_REPLAY, which refuses a second resend before the
//!   first arrives, never matters here: only an interrupt sets IRQS_PENDING, and its
//!   arrival clears IRQS_REPLAY.)
//!
//! The engine carries out what each call returns (a mask or unmask write to the MSI-X
//! table, a resend); one lock per descriptor (desc->lock) serialises the calls.

use std::fmt;

/// A write to the interrupt's chip (the MSI-X Vector Control mask bit).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ChipOp {
    Nothing,
    Mask,
}

/// What handle_edge_irq does with an interrupt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Edge {
    /// Run the handler (IRQD_IRQ_INPROGRESS is set), then call
    /// [`IrqDesc::handler_done`].
    Handle,
    /// Disabled, or running elsewhere: IRQS_PENDING is set; `mask` when the chip must be
    /// masked now (it was not masked yet).
    Pend { mask: bool },
}

/// What the flow handler does after a handler run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AfterHandler {
    /// IRQS_PENDING was set meanwhile and the IRQ is enabled: run the handler again,
    /// unmasking the chip first when `unmask`.
    Again {
        unmask: bool,
    },
    Done,
}

/// What `enable_irq()` does besides lowering the depth.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Enable {
    /// Unmask the chip (it was masked by a pended interrupt or an unlazy disable).
    pub unmask: bool,
    /// Resend the interrupt that found the IRQ disabled (IRQS_PENDING).
    pub resend: bool,
}

/// `enable_irq()` at depth 0: the kernel WARNs "Unbalanced enable for IRQ".
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct UnbalancedEnable;

impl fmt::Display for UnbalancedEnable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("unbalanced enable_irq: the interrupt was not disabled")
    }
}

impl std::error::Error for UnbalancedEnable {}

/// What happened to the interrupt, whole-run totals.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IrqDescCounters {
    /// Interrupts whose handler ran (kstat_incr_irqs_this_cpu).
    pub handled: u64,
    /// Handler runs repeated for an interrupt that came in meanwhile.
    pub reruns: u64,
    /// Interrupts that found the IRQ disabled or running and were marked pending.
    pub pended: u64,
    /// Chip masks written (by pended interrupts or an unlazy disable).
    pub masks: u64,
    /// Resends at enable_irq.
    pub resends: u64,
}

/// One interrupt's descriptor flags.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct IrqDesc {
    /// desc->depth: nested disables.
    depth: u32,
    /// IRQD_IRQ_DISABLED.
    disabled: bool,
    /// IRQD_IRQ_MASKED: the chip is masked.
    masked: bool,
    /// IRQD_IRQ_INPROGRESS: a handler runs.
    in_progress: bool,
    /// IRQS_PENDING.
    pending: bool,
    /// IRQ_DISABLE_UNLAZY: disable masks the chip at once.
    unlazy: bool,
    counters: IrqDescCounters,
}

impl IrqDesc {
    /// An enabled, unmasked interrupt with the kernel's lazy disable.
    pub fn new() -> IrqDesc {
        IrqDesc::default()
    }

    /// An interrupt whose disable masks at once (irq_set_status_flags(IRQ_DISABLE_UNLAZY)).
    pub fn unlazy() -> IrqDesc {
        IrqDesc {
            unlazy: true,
            ..IrqDesc::default()
        }
    }

    /// disable_irq_nosync(): returns the chip write to make now.
    #[inline]
    pub fn disable_nosync(&mut self) -> ChipOp {
        self.depth += 1;
        if self.depth > 1 {
            return ChipOp::Nothing;
        }
        self.disabled = true;
        if self.unlazy && !self.masked {
            self.masked = true;
            self.counters.masks += 1;
            return ChipOp::Mask;
        }
        ChipOp::Nothing
    }

    /// enable_irq().
    #[inline]
    pub fn enable(&mut self) -> Result<Enable, UnbalancedEnable> {
        match self.depth {
            0 => Err(UnbalancedEnable),
            1 => {
                self.depth = 0;
                self.disabled = false;
                let unmask = std::mem::take(&mut self.masked);
                let resend = std::mem::take(&mut self.pending);
                self.counters.resends += u64::from(resend);
                Ok(Enable { unmask, resend })
            }
            _ => {
                self.depth -= 1;
                Ok(Enable::default())
            }
        }
    }

    /// handle_edge_irq's entry for an interrupt that reached a CPU.
    #[inline]
    pub fn edge(&mut self) -> Edge {
        if self.in_progress || self.disabled {
            self.pending = true;
            self.counters.pended += 1;
            let mask = !self.masked;
            if mask {
                self.masked = true;
                self.counters.masks += 1;
            }
            return Edge::Pend { mask };
        }
        self.counters.handled += 1;
        self.pending = false;
        self.in_progress = true;
        Edge::Handle
    }

    /// The handler returned (handle_irq_event clears IRQD_IRQ_INPROGRESS; the loop runs
    /// again while IRQS_PENDING is set and the IRQ is enabled).
    #[inline]
    pub fn handler_done(&mut self) -> AfterHandler {
        if self.pending && !self.disabled {
            let unmask = std::mem::take(&mut self.masked);
            self.pending = false;
            self.counters.reruns += 1;
            return AfterHandler::Again { unmask };
        }
        self.in_progress = false;
        AfterHandler::Done
    }

    /// IRQD_IRQ_DISABLED.
    #[inline]
    pub fn is_disabled(&self) -> bool {
        self.disabled
    }

    /// IRQD_IRQ_MASKED.
    pub fn is_masked(&self) -> bool {
        self.masked
    }

    /// IRQS_PENDING.
    #[inline]
    pub fn is_pending(&self) -> bool {
        self.pending
    }

    /// IRQD_IRQ_INPROGRESS.
    pub fn in_progress(&self) -> bool {
        self.in_progress
    }

    pub fn depth(&self) -> u32 {
        self.depth
    }

    pub fn counters(&self) -> IrqDescCounters {
        self.counters
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lazy_disable_masks_only_when_an_interrupt_comes_and_enable_resends_it() {
        let mut d = IrqDesc::new();
        assert_eq!(
            d.disable_nosync(),
            ChipOp::Nothing,
            "lazy: the chip stays unmasked"
        );
        assert!(d.is_disabled() && !d.is_masked());
        assert_eq!(d.edge(), Edge::Pend { mask: true });
        assert!(d.is_pending() && d.is_masked());
        assert_eq!(d.edge(), Edge::Pend { mask: false }, "masked already");
        assert_eq!(
            d.enable(),
            Ok(Enable {
                unmask: true,
                resend: true
            })
        );
        assert!(!d.is_disabled() && !d.is_masked() && !d.is_pending());
        let c = d.counters();
        assert_eq!((c.pended, c.masks, c.resends, c.handled), (2, 1, 1, 0));
    }

    #[test]
    fn an_enable_with_nothing_pending_neither_unmasks_nor_resends() {
        let mut d = IrqDesc::new();
        d.disable_nosync();
        assert_eq!(d.enable(), Ok(Enable::default()));
        assert_eq!(d.enable(), Err(UnbalancedEnable));
    }

    #[test]
    fn disables_nest_and_only_the_last_enable_reenables() {
        let mut d = IrqDesc::new();
        d.disable_nosync();
        d.disable_nosync();
        assert_eq!(d.depth(), 2);
        let _ = d.edge();
        assert_eq!(d.enable(), Ok(Enable::default()));
        assert!(d.is_disabled());
        assert_eq!(d.enable().map(|e| e.resend), Ok(true));
    }

    #[test]
    fn an_unlazy_disable_masks_at_once() {
        let mut d = IrqDesc::unlazy();
        assert_eq!(d.disable_nosync(), ChipOp::Mask);
        assert_eq!(d.edge(), Edge::Pend { mask: false });
        assert_eq!(d.enable().map(|e| e.unmask), Ok(true));
    }

    #[test]
    fn an_interrupt_while_the_handler_runs_elsewhere_reruns_it_there() {
        // The vector moved: the old CPU still runs the handler when the new CPU takes the
        // next interrupt (handle_edge_irq's "another irq arrived while we were handling").
        let mut d = IrqDesc::new();
        assert_eq!(d.edge(), Edge::Handle);
        assert!(d.in_progress());
        assert_eq!(d.edge(), Edge::Pend { mask: true });
        assert_eq!(d.handler_done(), AfterHandler::Again { unmask: true });
        assert!(d.in_progress() && !d.is_masked());
        assert_eq!(d.handler_done(), AfterHandler::Done);
        assert!(!d.in_progress());
        let c = d.counters();
        assert_eq!((c.handled, c.reruns, c.pended), (1, 1, 1));
    }

    #[test]
    fn a_pending_interrupt_of_a_disabled_irq_does_not_rerun() {
        let mut d = IrqDesc::new();
        assert_eq!(d.edge(), Edge::Handle);
        // The handler itself disables (irq_poll, GSIM), then an interrupt arrives.
        d.disable_nosync();
        assert_eq!(d.edge(), Edge::Pend { mask: true });
        assert_eq!(d.handler_done(), AfterHandler::Done);
        assert_eq!(d.enable().map(|e| e.resend), Ok(true));
    }
}
