//! One CPU of the model, as parts that own their state: the local APIC with its delivery
//! path (apic.rs), and the step, run queue, softirq, moderation and accounting state the
//! CPU model (model/cpu.rs) drives.

mod apic;
mod runqueue;
mod softirq;

pub(crate) use apic::LocalApic;
pub(crate) use runqueue::RunQueue;
pub(crate) use softirq::CpuSoftirq;

use super::ids::{IoId, JobId, ThreadId, VectorId};
use super::state::{CpuStats, IrqFrame, Mode, WorkState};
use crate::observer::SliceKind;
use std::collections::VecDeque;

pub(crate) struct Cpu {
    pub epoch: u32,
    pub stepping: bool,
    pub mode: Mode,
    pub kind: SliceKind,
    /// Time accounting, charged lazily (cpu.rs `account`): the CPU's time up to
    /// `acct_from` is charged; [acct_from, acct_mark) is owed to `kind` and the thread
    /// `owed_to`; the time since `acct_mark` (the last step boundary) is not owed yet.
    pub acct_from: u64,
    pub acct_mark: u64,
    pub owed_to: Option<ThreadId>,
    /// The job `owed_to` runs (its usr and sys).
    pub owed_job: Option<JobId>,
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
    /// GSIM's per-CPU moderation state (with --moderator gsim) and its timer's epoch.
    pub gsim: Option<irqlab_core::gsim::GsimCpu>,
    pub gsim_epoch: u32,
    /// Hardirq time since boot (CPUTIME_IRQ), for GSIM's hardirq_percent.
    pub hardirq_total: u64,
    /// Ming Lei's 2019 flood detector (used with --flood-detection).
    pub flood: irqlab_core::flood::FloodDetector,
    /// When the step in progress ends (valid while `stepping`).
    pub step_end: u64,
    /// Threads whose hrtimer expired, woken by the hrtimer interrupt.
    pub hrtimer_wake: Vec<ThreadId>,
    /// This CPU's kworker (system_wq's bound pool), when an adaptive moderator needs one.
    pub kworker: Option<ThreadId>,
    /// Moderation work items queued on this CPU's kworker (schedule_work), in order.
    pub work: VecDeque<VectorId>,
    /// Where the kworker is in the item at the head of `work`.
    pub work_state: WorkState,
    pub stats: CpuStats,
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
