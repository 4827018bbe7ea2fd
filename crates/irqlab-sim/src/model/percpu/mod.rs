//! One CPU of the model, as parts that own their state: the local APIC with its delivery
//! path (apic.rs), the hardirq frame (frame.rs), the softirq side (softirq.rs), the run
//! queue (runqueue.rs), software moderation (soft_moderation.rs), the kworker's work
//! queue (workqueue.rs) and time accounting (accounting.rs). The CPU itself keeps its
//! mode and the step in progress. model/cpu.rs drives them.

mod accounting;
mod apic;
mod frame;
mod runqueue;
mod soft_moderation;
mod softirq;
mod workqueue;

pub(crate) use accounting::Accounting;
pub(crate) use apic::LocalApic;
pub(crate) use frame::IrqFrame;
pub(crate) use runqueue::RunQueue;
pub(crate) use soft_moderation::SoftModeration;
pub(crate) use softirq::CpuSoftirq;
pub(crate) use workqueue::{WorkStep, Workqueue};

use super::ids::{IoId, ThreadId};
use super::state::Mode;

pub(crate) struct Cpu {
    mode: Mode,
    /// The step in progress: its epoch (a CpuStep event of another epoch is stale),
    /// whether one runs, and when it ends.
    epoch: u32,
    stepping: bool,
    step_end: u64,
    /// Time accounting and the window's counters (accounting.rs).
    pub acct: Accounting,
    /// The run queue (runqueue.rs).
    pub rq: RunQueue,
    /// The local APIC, its IDT and the delivery path MSIs take here (apic.rs).
    pub apic: LocalApic,
    /// The hardirq in progress (frame.rs).
    pub irq: IrqFrame,
    /// `--notification preemptable`: the notification handler a system vector preempted
    /// between two of its steps; it goes on when that interrupt exits.
    preempted: Option<IrqFrame>,
    /// Softirqs, irq_poll and ksoftirqd (softirq.rs).
    pub soft: CpuSoftirq,
    /// CQEs popped by the hardirq step in progress.
    reaping: Vec<IoId>,
    /// GSIM and the flood detector (soft_moderation.rs).
    pub moderation: SoftModeration,
    /// Threads whose hrtimer expired, woken by the hrtimer interrupt.
    hrtimer_wake: Vec<ThreadId>,
    /// The kworker and its moderation work items (workqueue.rs).
    pub wq: Workqueue,
}

impl Cpu {
    /// An idle CPU with these parts.
    pub fn new(apic: LocalApic, soft: CpuSoftirq, moderation: SoftModeration) -> Self {
        Cpu {
            mode: Mode::Idle,
            epoch: 0,
            stepping: false,
            step_end: 0,
            acct: Accounting::default(),
            rq: RunQueue::default(),
            apic,
            irq: IrqFrame::new(0),
            preempted: None,
            soft,
            reaping: Vec::with_capacity(256),
            moderation,
            hrtimer_wake: Vec::new(),
            wq: Workqueue::default(),
        }
    }

    /// What the CPU is in the middle of.
    #[inline(always)]
    pub fn mode(&self) -> Mode {
        self.mode
    }

    #[inline(always)]
    pub fn enter_mode(&mut self, mode: Mode) {
        self.mode = mode;
    }

    // ------------------------------------------------------------------------ steps

    /// A step of `ns` starts at `now`: the epoch its CpuStep event carries.
    #[inline(always)]
    pub fn start_step(&mut self, now: u64, ns: u64) -> u32 {
        self.epoch = self.epoch.wrapping_add(1);
        self.stepping = true;
        self.step_end = now + ns;
        self.epoch
    }

    /// The CpuStep event of `epoch` came due: true when it ends the step in progress (a
    /// stale one's step was preempted or replaced).
    #[inline]
    pub fn end_step(&mut self, epoch: u32) -> bool {
        let current = self.epoch == epoch && self.stepping;
        if current {
            self.stepping = false;
        }
        current
    }

    /// The step in progress is cut short: its event's epoch and end, to take it out of
    /// the queue (None when no step runs).
    #[inline]
    pub fn cancel_step(&mut self) -> Option<(u32, u64)> {
        if !self.stepping {
            return None;
        }
        self.stepping = false;
        let old = self.epoch;
        self.epoch = self.epoch.wrapping_add(1);
        Some((old, self.step_end))
    }

    #[inline]
    pub fn is_stepping(&self) -> bool {
        self.stepping
    }

    // ------------------------------------------------------------------------ hardirq

    /// Attempt #2: a system vector preempts the notification's demux between steps.
    pub fn preempt_frame(&mut self) {
        self.preempted = Some(self.irq.clone());
    }

    pub fn has_preempted(&self) -> bool {
        self.preempted.is_some()
    }

    /// Back into the preempted demux, if there is one.
    pub fn resume_preempted(&mut self) -> bool {
        match self.preempted.take() {
            Some(frame) => {
                self.irq = frame;
                true
            }
            None => false,
        }
    }

    /// The requests the hardirq step in progress reaped, lent out while they complete
    /// (the completion path needs the whole model).
    #[inline(always)]
    pub fn take_reaping(&mut self) -> Vec<IoId> {
        std::mem::take(&mut self.reaping)
    }

    #[inline(always)]
    pub fn restore_reaping(&mut self, list: Vec<IoId>) {
        self.reaping = list;
    }

    #[inline]
    pub fn reaping_len(&self) -> usize {
        self.reaping.len()
    }

    /// virtblk_done's requests go to BLOCK_SOFTIRQ (one hardware queue).
    pub fn reaped_to_block_softirq(&mut self) {
        self.soft.queue_block(&mut self.reaping);
    }

    /// Thread `t`'s hrtimer expired: the hrtimer interrupt wakes it.
    pub fn hrtimer_expired(&mut self, t: ThreadId) {
        self.hrtimer_wake.push(t);
    }

    /// The threads the hrtimer interrupt wakes, lent out while they wake.
    pub fn take_hrtimer_wakes(&mut self) -> Vec<ThreadId> {
        std::mem::take(&mut self.hrtimer_wake)
    }

    /// The list comes back, woken.
    pub fn woke_hrtimer_wakes(&mut self, mut list: Vec<ThreadId>) {
        list.clear();
        self.hrtimer_wake = list;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use irqlab_core::delivery::{DeliveryPath, RemappedTarget};
    use irqlab_core::irq_poll::IrqPollCpu;
    use irqlab_core::softirq::{SoftirqConfig, SoftirqCpu};

    fn cpu() -> Cpu {
        Cpu::new(
            LocalApic::new(DeliveryPath::Remapped(RemappedTarget::new(0))),
            CpuSoftirq::new(
                SoftirqCpu::new(SoftirqConfig::new(1000)),
                IrqPollCpu::default(),
            ),
            SoftModeration::new(None),
        )
    }

    #[test]
    fn only_the_current_step_ends() {
        let mut c = cpu();
        let stale = c.start_step(0, 10);
        let epoch = c.start_step(5, 10);
        assert!(!c.end_step(stale), "a stale step event");
        assert!(c.end_step(epoch));
        assert!(!c.end_step(epoch), "the step already ended");
    }

    #[test]
    fn a_cancelled_step_names_its_event_and_leaves_none_running() {
        let mut c = cpu();
        assert_eq!(c.cancel_step(), None);
        let epoch = c.start_step(100, 50);
        assert_eq!(c.cancel_step(), Some((epoch, 150)));
        assert!(!c.is_stepping());
        assert!(!c.end_step(epoch), "its event, if it still came, is stale");
    }
}
