//! The NVMe queue's interrupt handler and its poll function as step machines built from
//! the policy's [`HandlerStyle`]: the engine asks for the next step, carries it out (the
//! simulator charges its time, the runtime does it) and reports what it found.
//!
//! - `hardirq`: nvme_irq (drivers/nvme/host/pci.c): nvme_poll_cq reaps every pending CQE
//!   and rings the CQ head doorbell once, nvme_pci_complete_batch completes them.
//! - `threaded`: nvme_irq_check returns IRQ_WAKE_THREAD when a CQE is pending; the irq
//!   thread then runs nvme_irq.
//! - `irq-poll`: Sagi Grimberg's 2019 patch: reap at most the budget
//!   (NVME_POLL_BUDGET_IRQ), and if CQEs are still pending `disable_irq_nosync()` and
//!   `irq_poll_sched()`; the poll function reaps up to its weight and re-enables the IRQ
//!   when it did less (irq_poll_complete, enable_irq).
//! - `napi-defer`: NAPI's shape on the same poll loop: the hardirq handler only masks and
//!   schedules the poll (napi_schedule); at the end of a poll that did less than its
//!   weight, napi_complete_done ([`NapiDefer`]) either re-enables the IRQ or keeps it
//!   disabled and re-polls after gro_flush_timeout (net/core/dev.c).

use crate::napi_defer::{NapiComplete, NapiDefer, NapiDeferConfig};
use crate::policy::HandlerStyle;

/// What the handler returns to genirq.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IrqReturn {
    /// IRQ_NONE: nothing was pending.
    None,
    /// IRQ_HANDLED.
    Handled,
    /// IRQ_WAKE_THREAD: the irq thread runs the rest.
    WakeThread,
}

/// One step of the hardirq handler.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HandlerStep {
    /// nvme_poll_cq with this budget (u32::MAX: everything pending), ringing the CQ head
    /// doorbell when it found anything; report the count with
    /// [`NvmeIrqHandler::reaped`].
    Reap { budget: u32 },
    /// nvme_pci_complete_batch: the reaped requests complete (tags freed, waiters woken).
    CompleteBatch,
    /// __irq_wake_thread: mark the irq thread to run and wake it.
    WakeThread,
    /// disable_irq_nosync() and irq_poll_sched() (napi_schedule for `napi-defer`).
    DisableAndPoll,
    /// The handler returns.
    Return(IrqReturn),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stage {
    Start,
    Reaped,
    Completed,
    Returning(IrqReturn),
    Done,
}

/// One run of a queue's hardirq handler.
#[derive(Clone, Debug)]
pub struct NvmeIrqHandler {
    style: HandlerStyle,
    stage: Stage,
    reaped: u32,
}

impl NvmeIrqHandler {
    #[inline]
    pub fn new(style: HandlerStyle) -> NvmeIrqHandler {
        NvmeIrqHandler {
            style,
            stage: Stage::Start,
            reaped: 0,
        }
    }

    /// The next step, given whether a CQE is pending at the CQ head now; None after
    /// [`HandlerStep::Return`].
    #[inline]
    pub fn next(&mut self, cqe_pending: bool) -> Option<HandlerStep> {
        let step = match (self.stage, self.style) {
            (Stage::Done, _) => return None,
            (Stage::Returning(r), _) => {
                self.stage = Stage::Done;
                HandlerStep::Return(r)
            }
            (Stage::Start, HandlerStyle::Threaded) => {
                if cqe_pending {
                    self.stage = Stage::Returning(IrqReturn::WakeThread);
                    HandlerStep::WakeThread
                } else {
                    self.stage = Stage::Done;
                    HandlerStep::Return(IrqReturn::None)
                }
            }
            (Stage::Start, HandlerStyle::NapiDefer { .. }) => {
                self.stage = Stage::Returning(IrqReturn::Handled);
                HandlerStep::DisableAndPoll
            }
            (Stage::Start, HandlerStyle::IrqPoll { budget, .. }) => {
                self.stage = Stage::Reaped;
                HandlerStep::Reap { budget }
            }
            (Stage::Start, HandlerStyle::Hardirq) => {
                self.stage = Stage::Reaped;
                HandlerStep::Reap { budget: u32::MAX }
            }
            (Stage::Reaped, _) if self.reaped == 0 => {
                self.stage = Stage::Done;
                HandlerStep::Return(IrqReturn::None)
            }
            (Stage::Reaped, _) => {
                self.stage = Stage::Completed;
                HandlerStep::CompleteBatch
            }
            (Stage::Completed, HandlerStyle::IrqPoll { .. }) if cqe_pending => {
                self.stage = Stage::Returning(IrqReturn::Handled);
                HandlerStep::DisableAndPoll
            }
            (Stage::Completed, _) => {
                self.stage = Stage::Done;
                HandlerStep::Return(IrqReturn::Handled)
            }
        };
        Some(step)
    }

    /// The [`HandlerStep::Reap`] step reaped `n` CQEs.
    #[inline]
    pub fn reaped(&mut self, n: u32) {
        self.reaped += n;
    }

    /// CQEs this run reaped.
    pub fn total_reaped(&self) -> u32 {
        self.reaped
    }
}

/// What the poll function does after reaping `work` CQEs of its `weight`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PollEnd {
    /// The whole weight was used: irq_poll keeps the instance and polls it again.
    KeepPolling,
    /// irq_poll_complete(), then enable_irq().
    Reenable,
    /// irq_poll_complete() with the IRQ left disabled: poll again (irq_poll_sched) after
    /// `timer_ns` (napi_complete_done returned false; napi_watchdog).
    Defer { timer_ns: u64 },
}

/// A queue's poll function: nvme_irqpoll_handler, or with `napi-defer` the same with
/// napi_complete_done's deferral.
#[derive(Clone, Debug)]
pub struct NvmePoll {
    napi: Option<NapiDefer>,
}

impl NvmePoll {
    /// The poll function the handler style schedules, if it schedules one.
    pub fn for_style(style: HandlerStyle) -> Option<NvmePoll> {
        match style {
            HandlerStyle::IrqPoll { .. } => Some(NvmePoll { napi: None }),
            HandlerStyle::NapiDefer {
                defer_hard_irqs,
                gro_flush_timeout_ns,
                ..
            } => Some(NvmePoll {
                napi: Some(NapiDefer::new(NapiDeferConfig {
                    napi_defer_hard_irqs: defer_hard_irqs,
                    gro_flush_timeout_ns,
                    ..NapiDeferConfig::default()
                })),
            }),
            HandlerStyle::Hardirq | HandlerStyle::Threaded => None,
        }
    }

    /// The poll reaped `work` of `weight`.
    pub fn done(&mut self, work: u32, weight: u32) -> PollEnd {
        if work >= weight {
            return PollEnd::KeepPolling;
        }
        match self.napi.as_mut().map(|n| n.napi_complete_done(work)) {
            Some(NapiComplete::KeepMasked { timer_ns }) => PollEnd::Defer { timer_ns },
            Some(NapiComplete::ReenableIrq) | None => PollEnd::Reenable,
        }
    }

    /// Completions that kept the IRQ disabled (napi_defer_hard_irqs), 0 without NAPI.
    pub fn deferrals(&self) -> u64 {
        self.napi.as_ref().map_or(0, |n| n.deferrals().0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs a handler against a queue of `pending` CQEs, `arriving` more posted during
    /// the reap; returns its steps.
    fn run(style: HandlerStyle, mut pending: u32, arriving: u32) -> Vec<HandlerStep> {
        let mut h = NvmeIrqHandler::new(style);
        let mut steps = Vec::new();
        while let Some(s) = h.next(pending > 0) {
            if let HandlerStep::Reap { budget } = s {
                let n = pending.min(budget);
                pending = pending - n + arriving;
                h.reaped(n);
            }
            steps.push(s);
        }
        steps
    }

    const IRQ_POLL: HandlerStyle = HandlerStyle::IrqPoll {
        budget: 4,
        weight: 2,
    };

    #[test]
    fn nvme_irq_reaps_everything_then_completes_the_batch() {
        assert_eq!(
            run(HandlerStyle::Hardirq, 3, 0),
            [
                HandlerStep::Reap { budget: u32::MAX },
                HandlerStep::CompleteBatch,
                HandlerStep::Return(IrqReturn::Handled)
            ]
        );
        assert_eq!(
            run(HandlerStyle::Hardirq, 0, 0),
            [
                HandlerStep::Reap { budget: u32::MAX },
                HandlerStep::Return(IrqReturn::None)
            ]
        );
    }

    #[test]
    fn the_threaded_primary_handler_only_checks_and_wakes() {
        assert_eq!(
            run(HandlerStyle::Threaded, 1, 0),
            [
                HandlerStep::WakeThread,
                HandlerStep::Return(IrqReturn::WakeThread)
            ]
        );
        assert_eq!(
            run(HandlerStyle::Threaded, 0, 0),
            [HandlerStep::Return(IrqReturn::None)]
        );
    }

    #[test]
    fn sagis_handler_hands_over_to_irq_poll_only_when_cqes_remain() {
        let over = run(IRQ_POLL, 6, 0);
        assert_eq!(
            over,
            [
                HandlerStep::Reap { budget: 4 },
                HandlerStep::CompleteBatch,
                HandlerStep::DisableAndPoll,
                HandlerStep::Return(IrqReturn::Handled)
            ]
        );
        // Under budget, but a CQE arrived while it reaped: still handed over.
        assert!(run(IRQ_POLL, 2, 1).contains(&HandlerStep::DisableAndPoll));
        assert!(!run(IRQ_POLL, 2, 0).contains(&HandlerStep::DisableAndPoll));
    }

    #[test]
    fn napi_style_masks_and_schedules_without_reaping() {
        let napi = HandlerStyle::NapiDefer {
            weight: 2,
            defer_hard_irqs: 2,
            gro_flush_timeout_ns: 50_000,
        };
        assert_eq!(
            run(napi, 5, 0),
            [
                HandlerStep::DisableAndPoll,
                HandlerStep::Return(IrqReturn::Handled)
            ]
        );
    }

    #[test]
    fn the_poll_reenables_under_weight_and_napi_defers_empty_polls() {
        let mut p = NvmePoll::for_style(IRQ_POLL).unwrap();
        assert_eq!(p.done(2, 2), PollEnd::KeepPolling);
        assert_eq!(p.done(1, 2), PollEnd::Reenable);
        let napi = HandlerStyle::NapiDefer {
            weight: 2,
            defer_hard_irqs: 2,
            gro_flush_timeout_ns: 50_000,
        };
        let mut n = NvmePoll::for_style(napi).unwrap();
        // Work resets the count of empty polls that may still be deferred to 2.
        assert_eq!(n.done(1, 2), PollEnd::Defer { timer_ns: 50_000 });
        assert_eq!(n.done(0, 2), PollEnd::Defer { timer_ns: 50_000 });
        assert_eq!(n.done(0, 2), PollEnd::Reenable);
        assert_eq!(n.deferrals(), 2);
        assert!(NvmePoll::for_style(HandlerStyle::Hardirq).is_none());
    }
}
