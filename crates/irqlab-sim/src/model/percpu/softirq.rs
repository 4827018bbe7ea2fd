//! A CPU's softirq side: core's pending mask and restart rules (SoftirqCpu), its irq_poll
//! list (IrqPollCpu) with the vector of each instance, its ksoftirqd, where the inline
//! softirq is inside handle_softirqs, and the request lists its actions complete.

use crate::model::ids::{IoId, ThreadId, VectorId};
use crate::model::state::SoftPhase;
use irqlab_core::irq_poll::{IrqPollCpu, IrqPollId};
use irqlab_core::softirq::{SoftirqCpu, SoftirqVec};

pub(crate) struct CpuSoftirq {
    /// Pending softirqs and the invocation's restart rules (kernel/softirq.c).
    pending: SoftirqCpu,
    /// This CPU's irq_poll list (lib/irq_poll.c).
    irq_poll: IrqPollCpu,
    /// The vector of each irq_poll instance on this CPU.
    poller_vector: Vec<VectorId>,
    /// This CPU's ksoftirqd (set by the build once the threads exist).
    ksoftirqd: Option<ThreadId>,
    /// The inline softirq was interrupted by a hardirq and resumes after it.
    inline_active: bool,
    /// The inline softirq's next step, to run after a nested hardirq (0: none).
    inline_left: u64,
    phase: SoftPhase,
    /// CQEs popped by the softirq step in progress (inline or ksoftirqd).
    reaping: Vec<IoId>,
    /// blk-mq's per-CPU blk_cpu_done list: requests BLOCK_SOFTIRQ will complete.
    blk_done: Vec<IoId>,
}

impl CpuSoftirq {
    pub fn new(pending: SoftirqCpu, irq_poll: IrqPollCpu) -> Self {
        CpuSoftirq {
            pending,
            irq_poll,
            poller_vector: Vec::new(),
            ksoftirqd: None,
            inline_active: false,
            inline_left: 0,
            phase: SoftPhase::Begin,
            reaping: Vec::with_capacity(256),
            blk_done: Vec::new(),
        }
    }

    /// raise_softirq_irqoff.
    #[inline]
    pub fn raise(&mut self, v: SoftirqVec) {
        self.pending.raise(v);
    }

    /// Pending softirqs and the invocation's state (core's).
    #[inline]
    pub fn pending(&self) -> &SoftirqCpu {
        &self.pending
    }

    #[inline]
    pub fn pending_mut(&mut self) -> &mut SoftirqCpu {
        &mut self.pending
    }

    /// This CPU's irq_poll list (core's).
    #[inline]
    pub fn irq_poll(&self) -> &IrqPollCpu {
        &self.irq_poll
    }

    #[inline]
    pub fn irq_poll_mut(&mut self) -> &mut IrqPollCpu {
        &mut self.irq_poll
    }

    /// irq_poll_init for vector `v`'s instance with `weight`.
    pub fn add_poller(
        &mut self,
        v: VectorId,
        weight: u32,
    ) -> Result<IrqPollId, irqlab_core::irq_poll::IrqPollError> {
        let id = self.irq_poll.init(weight)?;
        self.poller_vector.push(v);
        Ok(id)
    }

    /// The vector of irq_poll instance `id`.
    #[inline]
    pub fn poller_vector(&self, id: IrqPollId) -> VectorId {
        self.poller_vector[id.0]
    }

    pub fn set_ksoftirqd(&mut self, t: ThreadId) {
        self.ksoftirqd = Some(t);
    }

    pub fn ksoftirqd(&self) -> ThreadId {
        self.ksoftirqd.expect("every CPU has its ksoftirqd")
    }

    // ------------------------------------------------------------------------ inline

    /// The inline softirq a hardirq interrupted: its next step's length.
    #[inline]
    pub fn interrupted(&self) -> Option<u64> {
        self.inline_active.then_some(self.inline_left)
    }

    /// A ksoftirqd invocation in progress (in_softirq without an inline one).
    #[inline]
    pub fn in_ksoftirqd(&self) -> bool {
        self.pending.in_softirq() && !self.inline_active
    }

    /// irq_exit starts the inline softirq.
    pub fn start_inline(&mut self) {
        self.inline_active = true;
        self.phase = SoftPhase::Begin;
    }

    /// The inline softirq's next step takes `ns`.
    pub fn inline_step(&mut self, ns: u64) {
        self.inline_left = ns;
    }

    /// handle_softirqs returned to irq_exit.
    pub fn end_inline(&mut self) {
        self.inline_active = false;
        self.inline_left = 0;
    }

    // ------------------------------------------------------------------------ steps

    #[inline]
    pub fn phase(&self) -> SoftPhase {
        self.phase
    }

    #[inline]
    pub fn enter(&mut self, phase: SoftPhase) {
        self.phase = phase;
    }

    /// The requests the step in progress completes, lent out while they complete (the
    /// completion path needs the whole model).
    #[inline]
    pub fn take_reaping(&mut self) -> Vec<IoId> {
        std::mem::take(&mut self.reaping)
    }

    #[inline]
    pub fn restore_reaping(&mut self, list: Vec<IoId>) {
        self.reaping = list;
    }

    /// blk_mq_complete_request_remote's list_add_tail onto blk_cpu_done, and
    /// raise_softirq_irqoff(BLOCK_SOFTIRQ).
    pub fn queue_block(&mut self, ios: &mut Vec<IoId>) {
        self.blk_done.append(ios);
        self.pending.raise(SoftirqVec::Block);
    }

    /// blk_done_softirq takes the CPU's whole list (blk_complete_reqs).
    pub fn start_block(&mut self) -> &[IoId] {
        std::mem::swap(&mut self.reaping, &mut self.blk_done);
        self.phase = SoftPhase::Block;
        &self.reaping
    }
}
