//! One CPU of the model, as parts that own their state: the local APIC with its delivery
//! path (apic.rs), and the step, run queue, softirq, moderation and accounting state the
//! CPU model (model/cpu.rs) drives.

mod accounting;
mod apic;
mod runqueue;
mod soft_moderation;
mod softirq;
mod workqueue;

pub(crate) use accounting::Accounting;
pub(crate) use apic::LocalApic;
pub(crate) use runqueue::RunQueue;
pub(crate) use soft_moderation::SoftModeration;
pub(crate) use softirq::CpuSoftirq;
pub(crate) use workqueue::{WorkStep, Workqueue};

use super::ids::{IoId, ThreadId};
use super::state::{IrqFrame, Mode};

pub(crate) struct Cpu {
    pub epoch: u32,
    pub stepping: bool,
    pub mode: Mode,
    /// Time accounting and the window's counters (accounting.rs).
    pub acct: Accounting,
    /// The run queue (runqueue.rs).
    pub rq: RunQueue,
    /// The local APIC, its IDT and the delivery path MSIs take here.
    pub apic: LocalApic,
    pub irq: IrqFrame,
    /// `--notification preemptable`: the notification handler a system vector preempted
    /// between two of its steps; it goes on when that interrupt exits.
    pub preempted: Option<IrqFrame>,
    /// Softirqs, irq_poll and ksoftirqd (softirq.rs).
    pub soft: CpuSoftirq,
    /// CQEs popped by the step in progress (handler, poll call, polled reap).
    pub reaping: Vec<IoId>,
    /// GSIM and the flood detector (soft_moderation.rs).
    pub moderation: SoftModeration,
    /// When the step in progress ends (valid while `stepping`).
    pub step_end: u64,
    /// Threads whose hrtimer expired, woken by the hrtimer interrupt.
    pub hrtimer_wake: Vec<ThreadId>,
    /// The kworker and its moderation work items (workqueue.rs).
    pub wq: Workqueue,
}

impl Cpu {
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
}
