//! A CPU thread's softirqs (kernel/softirq.c): core's `SoftirqCpu` (pending mask,
//! MAX_SOFTIRQ_RESTART, the 2 ms MAX_SOFTIRQ_TIME, the need_resched rule, the hand-over
//! to ksoftirqd) and its IRQ_POLL action, core's `IrqPollCpu` (lib/irq_poll.c, or Sagi's
//! until-need_resched variant), whose instances end their polls by core's `NvmePoll`
//! (re-enable, or NAPI's deferral with its timer). Two host threads run them: the CPU
//! thread at irq_exit and the CPU's ksoftirqd. The state is per CPU under one lock taken
//! for each step, never across a poll call, so the hardirq handler can schedule an
//! instance while a softirq run polls another, as it can between the kernel's IRQs-off
//! sections.

use crate::clock::now_ns;
use crate::error::RtError;
use crate::wake::Notifier;
use irqlab_core::irq_poll::{IrqPollCounters, IrqPollCpu, IrqPollId, IrqPollUntil, jiffies};
use irqlab_core::nvme::{NvmePoll, PollEnd};
use irqlab_core::softirq::{
    SoftirqConfig, SoftirqContext, SoftirqCounters, SoftirqCpu, SoftirqStep, SoftirqVec,
};
use std::sync::atomic::{AtomicBool, Ordering::*};
use std::sync::{Mutex, MutexGuard, PoisonError};

/// What a softirq run needs from the context running it.
pub trait SoftirqContextOps {
    /// TIF_NEED_RESCHED at the end of a pass: another thread of this CPU wants it.
    fn need_resched(&mut self) -> bool;
    /// The IRQ_POLL poll handler of queue `queue`: reap at most `weight` CQEs and
    /// complete them; returns how many.
    fn poll(&mut self, queue: usize, weight: u32) -> u32;
    /// irq_poll_complete done: enable_irq() on the queue's vector.
    fn reenable(&mut self, queue: usize);
    /// irq_poll_complete done with the IRQ left disabled and a timer armed (NAPI's
    /// deferral): the CPU thread must see the timer before it halts.
    fn deferred(&mut self, queue: usize);
}

/// How one handle_softirqs invocation went.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SoftirqRun {
    /// An invocation ran (false: nothing pending, or another context is inside one).
    pub ran: bool,
    /// It ended on a limit with work pending: wakeup_softirqd.
    pub wake_ksoftirqd: bool,
    /// Poll calls it made.
    pub polls: u32,
}

#[derive(Debug)]
struct SoftState {
    softirq: SoftirqCpu,
    irq_poll: IrqPollCpu,
    /// The queue of each irq_poll instance, and its poll function's end, by IrqPollId.
    queue_of: Vec<usize>,
    polls: Vec<NvmePoll>,
    /// NAPI deferral timers: (expiry, instance), napi_watchdog's irq_poll_sched.
    deferred: Vec<(u64, IrqPollId)>,
}

/// One CPU thread's softirq state and its ksoftirqd's wake word.
#[derive(Debug)]
pub struct SoftirqShared {
    state: Mutex<SoftState>,
    config: SoftirqConfig,
    /// Wakes ksoftirqd/N (wake_up_process on a sleeping thread only).
    pub ksoftirqd: Notifier,
    stop: AtomicBool,
}

impl Default for SoftirqShared {
    /// The mainline limits: CONFIG_HZ=1000, MAX_SOFTIRQ_RESTART, 2 ms, irq_poll's budget.
    fn default() -> Self {
        SoftirqShared::new(SoftirqConfig::default(), IrqPollUntil::Budget)
    }
}

impl SoftirqShared {
    /// `config`'s limits, with IRQ_POLL runs ending by `until`.
    pub fn new(config: SoftirqConfig, until: IrqPollUntil) -> SoftirqShared {
        SoftirqShared {
            state: Mutex::new(SoftState {
                softirq: SoftirqCpu::new(config),
                irq_poll: IrqPollCpu::with_until(until),
                queue_of: Vec::new(),
                polls: Vec::new(),
                deferred: Vec::new(),
            }),
            config,
            ksoftirqd: Notifier::lazy(),
            stop: AtomicBool::new(false),
        }
    }

    fn lock(&self) -> MutexGuard<'_, SoftState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn jiffies(&self) -> u64 {
        jiffies(now_ns(), self.config.hz)
    }

    /// CONFIG_HZ of this CPU.
    pub fn hz(&self) -> u32 {
        self.config.hz
    }

    /// irq_poll_init for queue `queue` with `weight`, its polls ended by `poll`.
    pub fn add_poll_queue(
        &self,
        queue: usize,
        weight: u32,
        poll: NvmePoll,
    ) -> Result<IrqPollId, RtError> {
        let mut s = self.lock();
        let id = s
            .irq_poll
            .init(weight)
            .map_err(|e| RtError::Refused(format!("--weight {weight}: {e}")))?;
        s.queue_of.push(queue);
        s.polls.push(poll);
        Ok(id)
    }

    /// NAPI timers due at `now` schedule their polls again (napi_watchdog); true when
    /// one did, so the caller runs the softirq.
    pub fn fire_deferred(&self, now: u64) -> bool {
        let mut s = self.lock();
        if s.deferred.iter().all(|&(at, _)| at > now) {
            return false;
        }
        let (due, later): (Vec<_>, Vec<_>) = s.deferred.iter().partition(|&&(at, _)| at <= now);
        s.deferred = later;
        for (_, id) in due {
            if s.irq_poll.sched(id).unwrap_or(false) {
                s.softirq.raise(SoftirqVec::IrqPoll);
            }
        }
        true
    }

    /// The earliest NAPI timer, for a halted CPU's wake-up.
    pub fn next_deferred(&self) -> Option<u64> {
        self.lock().deferred.iter().map(|&(at, _)| at).min()
    }

    /// Polls that kept their IRQ disabled (napi_defer_hard_irqs), all queues.
    pub fn napi_deferrals(&self) -> u64 {
        self.lock().polls.iter().map(NvmePoll::deferrals).sum()
    }

    /// irq_poll_sched from the hardirq handler: lists the instance and raises
    /// IRQ_POLL_SOFTIRQ. False when it was scheduled already.
    pub fn sched(&self, id: IrqPollId) -> bool {
        let mut s = self.lock();
        let listed = s.irq_poll.sched(id).unwrap_or(false);
        if listed {
            s.softirq.raise(SoftirqVec::IrqPoll);
        }
        listed
    }

    /// Whether the instance is owned by irq_poll (SCHED set).
    pub fn is_scheduled(&self, id: IrqPollId) -> bool {
        self.lock().irq_poll.is_scheduled(id)
    }

    /// irq_exit: run the pending softirqs now?
    pub fn irq_exit_should_run(&self) -> bool {
        self.lock().softirq.irq_exit_should_run()
    }

    /// ksoftirqd_should_run (goes back to sleep when another context drained the work).
    pub fn ksoftirqd_should_run(&self) -> bool {
        self.lock().softirq.ksoftirqd_should_run()
    }

    pub fn counters(&self) -> (SoftirqCounters, IrqPollCounters) {
        let s = self.lock();
        (s.softirq.counters(), s.irq_poll.counters())
    }

    /// Asks ksoftirqd to end once nothing is pending.
    pub fn stop(&self) {
        self.stop.store(true, SeqCst);
        self.ksoftirqd.wake_to_stop();
    }

    pub fn stopping(&self) -> bool {
        self.stop.load(SeqCst)
    }

    /// handle_softirqs in `ctx`: snapshot the pending mask, run the IRQ_POLL action
    /// (irq_poll_softirq: poll listed instances under the 256 budget until the jiffy
    /// changes, re-raise when cut short), then restart while the 2 ms window, the restart
    /// count and need_resched allow.
    pub fn handle(&self, ctx: SoftirqContext, ops: &mut dyn SoftirqContextOps) -> SoftirqRun {
        let mut run = SoftirqRun::default();
        if !self.lock().softirq.begin(self.jiffies(), ctx) {
            return run;
        }
        run.ran = true;
        loop {
            // need_resched is read without the lock: it looks at other threads.
            let resched = ops.need_resched();
            let j = self.jiffies();
            let mut s = self.lock();
            match s.irq_poll.next_poll_checked(j, resched) {
                Ok(Some((id, weight))) => {
                    let queue = s.queue_of[id.0];
                    drop(s);
                    let work = ops.poll(queue, weight);
                    run.polls += 1;
                    let mut s = self.lock();
                    let end = s.polls[id.0].done(work, weight);
                    let done = s.irq_poll.poll_done(id, work, end != PollEnd::KeepPolling);
                    match end {
                        PollEnd::Reenable if done.is_ok() => {
                            drop(s);
                            ops.reenable(queue);
                        }
                        PollEnd::Defer { timer_ns } if done.is_ok() => {
                            s.deferred.push((now_ns() + timer_ns, id));
                            drop(s);
                            ops.deferred(queue);
                        }
                        _ => {}
                    }
                    continue;
                }
                Ok(None) => {
                    if let Ok((true, _, _)) = s.irq_poll.finish() {
                        s.softirq.raise(SoftirqVec::IrqPoll);
                    }
                }
                // No IRQ_POLL run in progress: between actions.
                Err(_) => {}
            }
            match s.softirq.next(j, resched) {
                SoftirqStep::Run(SoftirqVec::IrqPoll) => {
                    let _ = s.irq_poll.start_softirq(j);
                }
                SoftirqStep::Run(_) => {}
                SoftirqStep::Done => return run,
                SoftirqStep::WakeKsoftirqd => {
                    run.wake_ksoftirqd = true;
                    return run;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn irq_poll() -> NvmePoll {
        NvmePoll::for_style(irqlab_core::HandlerStyle::IrqPoll {
            budget: 256,
            weight: 64,
        })
        .unwrap()
    }

    /// A queue with `left` CQEs that reaps at most `weight` per poll.
    struct Fake {
        left: Vec<u32>,
        resched: bool,
        unmasked: Vec<usize>,
    }

    impl SoftirqContextOps for Fake {
        fn need_resched(&mut self) -> bool {
            self.resched
        }
        fn poll(&mut self, queue: usize, weight: u32) -> u32 {
            let n = self.left[queue].min(weight);
            self.left[queue] -= n;
            n
        }
        fn reenable(&mut self, queue: usize) {
            self.unmasked.push(queue);
        }
        fn deferred(&mut self, _queue: usize) {}
    }

    #[test]
    fn a_queue_drained_under_budget_completes_and_is_unmasked() {
        let s = SoftirqShared::default();
        let id = s.add_poll_queue(3, 64, irq_poll()).unwrap();
        assert!(!s.irq_exit_should_run());
        assert!(s.sched(id));
        assert!(!s.sched(id), "already scheduled");
        assert!(s.irq_exit_should_run());
        let mut f = Fake {
            left: vec![0, 0, 0, 100],
            resched: false,
            unmasked: vec![],
        };
        let run = s.handle(SoftirqContext::IrqExit, &mut f);
        assert!(run.ran && !run.wake_ksoftirqd);
        assert_eq!(run.polls, 2, "64, then 36 < weight completes");
        assert_eq!(f.unmasked, [3]);
        assert!(!s.is_scheduled(id));
        assert!(!s.irq_exit_should_run());
    }

    #[test]
    fn endless_work_with_need_resched_goes_to_ksoftirqd_after_one_pass() {
        let s = SoftirqShared::default();
        let id = s.add_poll_queue(0, 1, irq_poll()).unwrap();
        s.sched(id);
        let mut f = Fake {
            left: vec![u32::MAX],
            resched: true,
            unmasked: vec![],
        };
        let run = s.handle(SoftirqContext::IrqExit, &mut f);
        // One pass spends the 256 budget at weight 1 (or stops at a jiffy edge),
        // re-raises, and need_resched ends the invocation.
        assert!(run.wake_ksoftirqd);
        assert!((1..=256).contains(&run.polls), "{}", run.polls);
        assert!(s.ksoftirqd_should_run());
        assert!(!s.irq_exit_should_run() || s.ksoftirqd_should_run());
        // Without need_resched, MAX_SOFTIRQ_RESTART (or the 2 ms window) ends it.
        f.resched = false;
        let run = s.handle(SoftirqContext::Ksoftirqd, &mut f);
        assert!(run.wake_ksoftirqd);
        // At least two passes: a jiffy edge ends one, but the window is two jiffies.
        assert!((2..=2560).contains(&run.polls), "{}", run.polls);
        let (c, p) = s.counters();
        assert_eq!(c.ksoftirqd_runs, 1);
        assert_eq!(c.ksoftirqd_wakeups, 2);
        assert!(p.budget_exhausted + p.time_limit >= 2);
        assert!(f.unmasked.is_empty(), "never completed");
    }
}
