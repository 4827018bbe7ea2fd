//! CPUs: time accounting, interrupt entry (local APIC IRR), the hardirq handlers (nvme_irq,
//! the posted MSI demux, the threaded primary handler, the budgeted irq_poll variant), the
//! tick, softirq at irq_exit and in ksoftirqd, and a per-CPU scheduler.

use super::ids::{CpuId, IoId, QueueId, ThreadId, VectorId};
use super::state::*;
use crate::engine::Event;
use crate::observer::{Observer, SliceKind};
use irqlab_core::HandlerStyle;
use irqlab_core::delivery::Step;
use irqlab_core::flood::HandlerPlacement;
use irqlab_core::gsim::GsimExpiry;
use irqlab_core::irq::{AfterHandler, Edge, TaskletAction, priority_class};
use irqlab_core::irq_poll::jiffies;
use irqlab_core::nvme::irq_handler::{HandlerStep, NvmeIrqHandler};
use irqlab_core::softirq::{SoftirqContext, SoftirqStep, SoftirqVec};

impl<O: Observer> Sim<'_, O> {
    // ---------------------------------------------------------------- accounting

    /// Charges CPU `c`'s time up to now to what it was doing and for whom.
    #[inline]
    pub(crate) fn account(&mut self, c: usize) {
        self.mark(c);
        self.settle(c);
    }

    /// A step boundary: the time since the last one is owed to the CPU's kind of slice
    /// and to the thread that owned the CPU during it (`owed_to`: the owner at the last
    /// boundary; a thread that blocks, exits, yields or is preempted at the end of its
    /// step gives the CPU up before the next boundary, and that step is still its own).
    /// Owed time is charged (`settle`) only when the kind or the owner changes, or before
    /// someone reads the charges (the scheduler's vruntimes, GSIM's hardirq time, the
    /// window's edges): the sums are what charging at every step gives.
    #[inline(always)]
    fn mark(&mut self, c: usize) {
        let now = self.now;
        let cpu = &mut self.cpus[c];
        mark_cpu(cpu, now, &mut self.threads, &mut self.jobs, self.measuring);
    }

    /// Charges the time CPU `c` owes (up to its last step boundary) to its kind of slice
    /// and its thread: the CPU's buckets, the thread's vruntime, the job's usr and sys.
    #[inline(always)]
    pub(crate) fn settle(&mut self, c: usize) {
        let cpu = &mut self.cpus[c];
        settle_cpu(cpu, &mut self.threads, &mut self.jobs, self.measuring);
    }

    /// A step boundary, after which CPU `c` does `kind`.
    #[inline(always)]
    pub(crate) fn set_kind(&mut self, c: usize, kind: SliceKind) {
        if self.boundary(c, kind) {
            self.slice_starts(c, kind);
        }
    }

    /// A step boundary's accounting on CPU `c` (one look-up of the CPU): true when `kind`
    /// is a new kind of slice.
    #[inline(always)]
    fn boundary(&mut self, c: usize, kind: SliceKind) -> bool {
        let now = self.now;
        let cpu = &mut self.cpus[c];
        mark_cpu(cpu, now, &mut self.threads, &mut self.jobs, self.measuring);
        if cpu.acct.kind() == kind {
            return false;
        }
        settle_cpu(cpu, &mut self.threads, &mut self.jobs, self.measuring);
        cpu.acct.begin_slice(kind);
        true
    }

    /// A new kind of slice starts on CPU `c`: what a tracer sees, out of line so that the
    /// step path stays small (without an observer the call itself is gone: its body is
    /// empty).
    #[inline(never)]
    fn slice_starts(&mut self, c: usize, kind: SliceKind) {
        self.obs.slice(self.now, c, kind);
    }

    /// Starts a step of `ns` on CPU `c`, doing `kind`; its end comes back as a CpuStep.
    #[inline(always)]
    pub(crate) fn step(&mut self, c: usize, ns: u64, kind: SliceKind) {
        let now = self.now;
        let cpu = &mut self.cpus[c];
        mark_cpu(cpu, now, &mut self.threads, &mut self.jobs, self.measuring);
        let new_kind = cpu.acct.kind() != kind;
        if new_kind {
            settle_cpu(cpu, &mut self.threads, &mut self.jobs, self.measuring);
            cpu.acct.begin_slice(kind);
        }
        let epoch = cpu.start_step(now, ns);
        // The tracer sees the slice start before the step is queued (nothing it reads
        // differs).
        if new_kind {
            self.slice_starts(c, kind);
        }
        self.q.push(
            now + ns,
            Event::CpuStep {
                cpu: CpuId::new(c),
                epoch,
            },
        );
    }

    /// Cancels the step in progress, returning the time it had left. Its event leaves
    /// the queue (a far one stays, stale by its epoch).
    fn cancel_step(&mut self, c: usize) -> u64 {
        let Some((epoch, end)) = self.cpus[c].cancel_step() else {
            return 0;
        };
        let ev = Event::CpuStep {
            cpu: CpuId::new(c),
            epoch,
        };
        self.q.cancel(end, ev);
        end - self.now
    }

    #[inline(always)]
    pub(crate) fn step_done(&mut self, c: usize) {
        match self.cpus[c].mode() {
            Mode::HardIrq => self.irq_step(c),
            Mode::IdleExit => {
                self.cpus[c].enter_mode(Mode::HardIrq);
                let entry = self.costs.irq_entry;
                self.step(c, entry, SliceKind::HardIrq);
            }
            Mode::SoftIrq => self.soft_step_done(c),
            Mode::Switch => {
                self.cpus[c].enter_mode(Mode::Thread);
                if self.irr_pending(c) {
                    self.take_interrupt(c);
                } else if let Some(t) = self.cpus[c].rq.current() {
                    self.run_thread(c, t.ix());
                }
            }
            Mode::Thread => {
                let Some(t) = self.cpus[c].rq.current() else {
                    return;
                };
                self.threads[t.ix()].step_ended();
                self.advance_thread(c, t.ix());
            }
            Mode::Idle => {}
        }
    }

    // ---------------------------------------------------------------- local APIC

    #[inline]
    pub(crate) fn irr_pending(&self, c: usize) -> bool {
        self.cpus[c].apic.any_pending()
    }

    /// An interrupt message reaches CPU `c` with IDT vector `vec`.
    pub(crate) fn notify(&mut self, c: usize, vec: u16) {
        // An offline CPU takes nothing (model/irq_move.rs).
        if self.moves.is_some() && self.offline_notify(c, vec) {
            return;
        }
        if vec == RESCHEDULE_VECTOR {
            self.cpus[c].apic.ipi_arrived();
        }
        let cpu = &mut self.cpus[c];
        if !cpu.apic.accept(vec) {
            // Already pending in the IRR: the two messages become one interrupt.
            if let Some(v) = cpu.apic.vector_at(vec) {
                self.vectors[v.ix()].count_merged();
            }
            return;
        }
        self.interrupt_if_enabled(c);
    }

    /// Takes a pending interrupt at once if the CPU has interrupts enabled.
    fn interrupt_if_enabled(&mut self, c: usize) {
        match self.cpus[c].mode() {
            Mode::Idle => self.take_interrupt(c),
            Mode::Thread => {
                // The interrupted thread keeps what its step had left.
                let left = self.cancel_step(c);
                if let Some(t) = self.cpus[c].rq.current() {
                    self.threads[t.ix()].interrupted(left);
                }
                self.take_interrupt(c);
            }
            // Hardirq: interrupts are off. Softirq: taken at the next step boundary.
            // Switch / IdleExit: taken when they end.
            _ => {}
        }
    }

    /// Enters the highest-priority pending vector.
    pub(crate) fn take_interrupt(&mut self, c: usize) {
        let cpu = &mut self.cpus[c];
        let Some(idt) = cpu.apic.take_highest() else {
            return;
        };
        let was_idle = cpu.mode() == Mode::Idle;
        cpu.irq = IrqFrame::new(idt);
        let measuring = self.measuring;
        if measuring {
            cpu.acct.count_hardirq();
        }
        if self.policy.flood_detection {
            cpu.moderation.flood_mut().irq_enter(self.now);
        }
        match idt {
            LOCAL_TIMER_VECTOR if measuring => {
                cpu.acct.count_tick(self.now - cpu.apic.tick_due());
            }
            LOCAL_TIMER_VECTOR => {}
            idt if cpu.apic.path().is_notification(idt as u8) => {
                if measuring {
                    cpu.acct.count_pmn();
                }
                let h = cpu.apic.path().begin(idt as u8);
                cpu.irq.begin_notification(h);
                self.obs.irq_counted(self.now, c, None);
            }
            _ => {}
        }
        let exit = if was_idle { self.idle_exit_ns(c) } else { 0 };
        let cpu = &mut self.cpus[c];
        if exit > 0 {
            cpu.enter_mode(Mode::IdleExit);
            self.step(c, exit, SliceKind::Idle);
        } else {
            cpu.enter_mode(Mode::HardIrq);
            let ns = self.costs.irq_entry;
            self.step(c, ns, SliceKind::HardIrq);
        }
    }

    // ---------------------------------------------------------------- hardirq

    #[inline]
    fn hard(&mut self, c: usize, phase: IrqPhase, ns: u64) {
        self.cpus[c].irq.enter(phase);
        self.step(c, ns, SliceKind::HardIrq);
    }

    /// The hardirq step in progress ended: the handler's next step, by phase.
    fn irq_step(&mut self, c: usize) {
        if self.preempt_notification(c) {
            return;
        }
        let phase = self.cpus[c].irq.phase();
        match phase {
            IrqPhase::Entry => self.irq_entered(c),
            IrqPhase::Tick => {
                self.tick_work(c);
                self.eoi_and_exit(c);
            }
            IrqPhase::Hrtimer => {
                let woken = self.cpus[c].take_hrtimer_wakes();
                for &t in &woken {
                    self.wake_thread(t.ix(), Some(c));
                }
                self.cpus[c].woke_hrtimer_wakes(woken);
                self.eoi_and_exit(c);
            }
            IrqPhase::Reap => {
                let v = self.cpus[c].irq.running_vector();
                let q = self.vectors[v].queue().ix();
                // NVMe: nvme_poll_cq keeps polling; the batch completes after the doorbell.
                let batched = self.queues[q].complete_ns().is_some();
                if batched || !self.complete_reaped(c, IrqPhase::Reap) {
                    self.reap_more(c);
                }
            }
            IrqPhase::Wakeups => match self.cpus[c].irq.after_wakeups() {
                IrqPhase::Reap => self.reap_more(c),
                IrqPhase::Complete => self.batch_done(c),
                IrqPhase::VirtioDrain => self.virtio_drain(c),
                _ => self.vector_done(c),
            },
            IrqPhase::Complete => {
                if !self.complete_reaped(c, IrqPhase::Complete) {
                    self.batch_done(c);
                }
            }
            IrqPhase::Doorbell => {
                let v = self.cpus[c].irq.running_vector();
                let q = self.vectors[v].queue().ix();
                self.queues[q].unlock_cq();
                self.ring_cq_doorbell(q);
                self.vector_done(c);
            }
            IrqPhase::Primary => self.primary_handler_returned(c),
            IrqPhase::PirRound | IrqPhase::SelfIpi => self.notification_step(c),
            IrqPhase::Mask => self.vector_done(c),
            IrqPhase::Rerun => {
                let v = self.cpus[c].irq.running_vector();
                self.run_vector_handler(c, v);
            }
            IrqPhase::Exit => self.irq_exit(c),
            IrqPhase::VirtioDrain => self.virtio_drained(c),
            IrqPhase::IbEq => {
                let v = self.cpus[c].irq.running_vector();
                if let Some(id) = self.vectors[v].iop()
                    && self.cpus[c].soft.irq_poll_mut().sched(id).unwrap_or(false)
                {
                    self.cpus[c].soft.raise(SoftirqVec::IrqPoll);
                }
                self.vector_done(c);
            }
        }
    }

    /// Interrupt entry is over: the IDT vector's handler runs (the timer, hrtimer,
    /// reschedule and posted-notification sysvecs, or common_interrupt's device vector).
    fn irq_entered(&mut self, c: usize) {
        let idt = self.cpus[c].irq.idt();
        match idt {
            LOCAL_TIMER_VECTOR => self.hard(c, IrqPhase::Tick, self.costs.tick),
            HRTIMER_VECTOR => self.hard(c, IrqPhase::Hrtimer, self.costs.hrtimer),
            RESCHEDULE_VECTOR => {
                // scheduler_ipi(): the wake-up was queued by the sender.
                self.cpus[c].rq.set_need_resched();
                self.eoi_and_exit(c);
            }
            idt if self.cpus[c].apic.path().is_notification(idt as u8) => self.notification_step(c),
            _ => match self.cpus[c].apic.vector_at(idt) {
                Some(v) => self.start_vector(c, v.ix()),
                None => self.eoi_and_exit(c),
            },
        }
    }

    /// A threaded vector's primary handler checked its CQ: with entries pending it
    /// returns IRQ_WAKE_THREAD (__irq_wake_thread sets RUNTHREAD and wakes the thread);
    /// irq_default_primary_handler returns it always (kernel/irq/manage.c).
    fn primary_handler_returned(&mut self, c: usize) {
        let v = self.cpus[c].irq.running_vector();
        let q = self.vectors[v].queue().ix();
        let mut woke = false;
        let pending = self.queues[q].cqe_pending();
        // nvme_irq_check's answer comes from core's handler (a rescue thread's check is
        // flood detection's own).
        let wake = match self.cpus[c].irq.nvme_mut() {
            Some(h) => h.next(pending) == Some(HandlerStep::WakeThread),
            None => pending,
        };
        if self.vectors[v].default_primary() || wake {
            self.vectors[v].set_runthread();
            if let Some(t) = self.vectors[v].thread()
                && self.threads[t.ix()].state() == TState::Blocked
            {
                self.wake_thread(t.ix(), Some(c));
                woke = true;
            }
        }
        if woke {
            self.cpus[c].irq.wake_then(IrqPhase::Primary);
            self.hard(c, IrqPhase::Wakeups, self.costs.wakeup);
        } else {
            self.vector_done(c);
        }
    }

    /// A device vector's handler starts on CPU `c`.
    #[inline(always)]
    fn start_vector(&mut self, c: usize, v: usize) {
        // kernel/irq/chip.c handle_edge_irq: on a disabled IRQ (irq_poll or GSIM owns it),
        // or one whose handler runs elsewhere, the handler does not run and the interrupt
        // is not counted: the vector is masked (mask_ack_irq) and IRQS_PENDING makes
        // enable_irq resend it, or the running handler go round again.
        if let Edge::Pend { mask } = self.vectors[v].edge() {
            // The MSI-X vector control write and its read-back (none when masked already:
            // mask_irq returns early).
            let ns = if mask { self.costs.irq_mask } else { 0 };
            self.hard(c, IrqPhase::Mask, ns);
            return;
        }
        if self.measuring {
            self.vectors[v].count_handled(c);
        }
        self.obs.irq_counted(self.now, c, Some(v));
        self.run_vector_handler(c, v);
    }

    /// handle_edge_irq's loop: an interrupt pended while the handler ran (on another CPU,
    /// or a resend replayed there) runs it again, unmasking the chip first when `unmask`.
    pub(crate) fn rerun_vector_handler(&mut self, c: usize, unmask: bool) {
        if unmask {
            self.hard(c, IrqPhase::Rerun, self.costs.irq_unmask);
        } else {
            let v = self.cpus[c].irq.running_vector();
            self.run_vector_handler(c, v);
        }
    }

    /// Vector `v`'s handler runs on CPU `c` (handle_irq_event).
    #[inline(always)]
    fn run_vector_handler(&mut self, c: usize, v: usize) {
        self.cpus[c].irq.start_handler(VectorId::new(v));
        // --flood-detection: a flooded CPU sends a rescue-thread vector's work to its thread.
        let rescue = self.policy.flood_detection
            && self.policy.handler != HandlerStyle::Threaded
            && self.vectors[v].thread().is_some()
            && self.cpus[c].moderation.flood_mut().placement(true)
                == HandlerPlacement::RescueThread;
        if let Some(eq) = self.vectors[v].ib_eq_ns() {
            // mlx5_eq_comp_int: the EQE names the CQ, whose comp handler
            // (ib_cq_completion_softirq) schedules its irq_poll; eq_update_ci arms the EQ.
            self.obs.handler(self.now, c, v, 0);
            self.hard(c, IrqPhase::IbEq, eq);
            return;
        }
        match self.policy.handler {
            _ if self.vectors[v].default_primary() => {
                // irq_default_primary_handler: its few instructions are part of the
                // entry's vector dispatch (irq_entry_ns).
                self.obs.handler(self.now, c, v, 0);
                self.hard(c, IrqPhase::Primary, 0);
            }
            _ if rescue => {
                self.obs.handler(self.now, c, v, 0);
                self.hard(c, IrqPhase::Primary, self.costs.poll_check);
            }
            HandlerStyle::Threaded => {
                // nvme_irq_check: only nvme_cqe_pending(), then IRQ_WAKE_THREAD.
                let h = NvmeIrqHandler::new(self.policy.handler);
                self.cpus[c].irq.run_nvme(h, None);
                self.obs.handler(self.now, c, v, 0);
                self.hard(c, IrqPhase::Primary, self.costs.poll_check);
            }
            style => {
                let q = self.vectors[v].queue().ix();
                if self.costs.has_virtio && self.queues[q].is_virtio() {
                    self.virtblk_done(c, v);
                    return;
                }
                // nvme_irq (or Sagi's budgeted one): its first step reaps.
                let mut h = NvmeIrqHandler::new(style);
                let pending = self.queues[q].cqe_pending();
                let budget = match h.next(pending) {
                    Some(HandlerStep::Reap { budget }) => budget,
                    _ => u32::MAX,
                };
                self.cpus[c].irq.run_nvme(h, Some(budget));
                self.queues[q].lock_cq();
                self.reap_more(c);
            }
        }
    }

    /// The NVMe handler's next step after its reap or its batch (core's step machine,
    /// given what the CQ head shows now): Complete when a batch of reaped requests is to
    /// complete, DisableAndPoll when Sagi's handler hands the queue to irq_poll.
    fn nvme_next(&mut self, c: usize, q: usize) -> Option<HandlerStep> {
        let pending = self.queues[q].cqe_pending();
        self.cpus[c].irq.nvme_mut()?.next(pending)
    }

    /// nvme_irq returns: the tracer, the moderator and GSIM see it, then (Sagi's patch)
    /// entries that arrived meanwhile go to irq_poll. The batch was completed already.
    fn nvme_handler_returns(&mut self, c: usize, v: usize, reaped: u32) {
        self.handler_returned(c, v, reaped);
        let q = self.vectors[v].queue().ix();
        if self.nvme_next(c, q) == Some(HandlerStep::DisableAndPoll) {
            self.irq_poll_sched(c, v);
        }
    }

    /// nvme_poll_cq in the hardirq handler: reap what is visible, in steps, until the
    /// phase tag says nothing is pending (or the irq_poll budget is spent).
    fn reap_more(&mut self, c: usize) {
        let v = self.cpus[c].irq.running_vector();
        let q = self.vectors[v].queue().ix();
        let reaped = self.cpus[c].irq.reaped();
        let budget_left = self.cpus[c].irq.budget_left();
        if budget_left > 0 && self.queues[q].cqe_pending() {
            let mut list = self.cpus[c].take_reaping();
            let n = self.poll_queue(c, q, budget_left, &mut list);
            self.cpus[c].restore_reaping(list);
            self.cpus[c].irq.add_reaped(n);
            let ns = self.handler_work_ns(q, n);
            self.hard(c, IrqPhase::Reap, ns);
            return;
        }
        // The reap is over: core says whether a batch completes (nothing reaped: the
        // handler returns IRQ_NONE).
        let batch_step = self.nvme_next(c, q) == Some(HandlerStep::CompleteBatch);
        let batch = batch_step && self.queues[q].complete_ns().is_some();
        if !batch {
            // Without nvme_pci_complete_batch (before v5.19) each request completed as
            // it was reaped: the handler returns now.
            self.nvme_handler_returns(c, v, reaped);
        }
        if !self.queues[q].has_doorbell() {
            // idxd: the handler walks the completion records; no head doorbell exists.
            self.queues[q].unlock_cq();
            self.vector_done(c);
        } else if let Some(per) = self.queues[q].complete_ns()
            && reaped > 0
        {
            // nvme_irq: one doorbell for everything nvme_poll_cq found, then
            // nvme_pci_complete_batch; the device sees the doorbell while the CPU completes.
            self.queues[q].unlock_cq();
            self.ring_cq_doorbell_in(q, self.costs.cq_doorbell);
            let n = self.cpus[c].reaping_len() as u64;
            self.hard(c, IrqPhase::Complete, self.costs.cq_doorbell + n * per);
        } else if reaped > 0 && !self.in_notification(c) && !self.vectors[v].is_pending() {
            // The doorbell write, apic_eoi and irq_exit run back to back: one step, with
            // the doorbell leaving the CPU first (no interrupt pended meanwhile to rerun).
            self.queues[q].unlock_cq();
            self.ring_cq_doorbell_in(q, self.costs.cq_doorbell);
            self.end_vector_handler(c);
            let ns = self.costs.cq_doorbell + self.costs.eoi + self.costs.irq_exit;
            self.hard(c, IrqPhase::Exit, ns);
        } else if reaped > 0 {
            self.hard(c, IrqPhase::Doorbell, self.costs.cq_doorbell);
        } else {
            self.queues[q].unlock_cq();
            self.vector_done(c);
        }
    }

    /// Completes the requests the running handler reaped. If that woke threads, starts
    /// the waker's Wakeups step, which continues at `then`, and returns true.
    #[inline(always)]
    fn complete_reaped(&mut self, c: usize, then: IrqPhase) -> bool {
        let v = self.cpus[c].irq.running_vector();
        let mut list = self.cpus[c].take_reaping();
        let woke = self.complete_list(c, v, &mut list);
        self.cpus[c].restore_reaping(list);
        if woke == 0 {
            return false;
        }
        self.cpus[c].irq.wake_then(then);
        self.hard(c, IrqPhase::Wakeups, woke * self.costs.wakeup);
        true
    }

    /// What runs when a vector's handler has returned: the tracer, the moderator's sample
    /// (bytes counted by the completions) and GSIM's accounting.
    fn handler_returned(&mut self, c: usize, v: usize, reaped: u32) {
        self.obs.handler(self.now, c, v, reaped);
        self.moderate(v, reaped);
        self.gsim_hook(c, v);
    }

    /// nvme_pci_complete_batch is over: nvme_irq returns.
    #[inline(always)]
    fn batch_done(&mut self, c: usize) {
        let v = self.cpus[c].irq.running_vector();
        let reaped = self.cpus[c].irq.reaped();
        self.nvme_handler_returns(c, v, reaped);
        self.vector_done(c);
    }

    /// Sagi Grimberg's 2019 nvme irq_poll patch: after reaping at most the budget and
    /// completing the batch, `if (nvme_cqe_pending(nvmeq)) { disable_irq_nosync(irq);
    /// irq_poll_sched(&nvmeq->iop); }`: entries that arrived meanwhile go to IRQ_POLL.
    fn irq_poll_if_pending(&mut self, c: usize, v: usize) {
        let q = self.vectors[v].queue().ix();
        if self.queues[q].cqe_pending() {
            self.irq_poll_sched(c, v);
        }
    }

    /// disable_irq_nosync() and irq_poll_sched() on vector `v`'s instance.
    fn irq_poll_sched(&mut self, c: usize, v: usize) {
        let Some(id) = self.vectors[v].iop() else {
            return;
        };
        self.vectors[v].disable_nosync();
        if self.cpus[c].soft.irq_poll_mut().sched(id).unwrap_or(false) {
            self.cpus[c].soft.raise(SoftirqVec::IrqPoll);
        }
    }

    /// apic_eoi() then irq_exit(): one step, nothing happens in between.
    fn eoi_and_exit(&mut self, c: usize) {
        let ns = self.costs.eoi + self.costs.irq_exit;
        self.hard(c, IrqPhase::Exit, ns);
    }

    /// Whether CPU `c`'s interrupt in progress is its delivery path's posted notification
    /// (the demux dispatches the vectors; a device vector's own handler is over at EOI).
    fn in_notification(&self, c: usize) -> bool {
        let cpu = &self.cpus[c];
        cpu.apic.path().is_notification(cpu.irq.idt() as u8)
    }

    fn vector_done(&mut self, c: usize) {
        if self.end_vector_handler(c) {
            return;
        }
        if self.in_notification(c) {
            self.notification_step(c);
        } else {
            self.eoi_and_exit(c);
        }
    }

    /// Tells a tracer how many PIR bits CPU `c` has pending (free without one).
    pub(crate) fn report_pir_pending(&mut self, c: usize) {
        if self.obs.wants_counters() {
            let bits = self.cpus[c].apic.pir_pending();
            self.obs
                .counter(self.now, "pir_pending", c, f64::from(bits));
        }
    }

    /// The posted notification handler's next step (irqlab-core's NotificationHandler, the
    /// steps the runtime carries out): a handle_pending_pir round is charged, a vector's
    /// handler runs (or, Attempt #3, is sent as a self-IPI), interrupts going on or off
    /// cost nothing, and the one apic_eoi() ends the notification.
    fn notification_step(&mut self, c: usize) {
        let cpu = &mut self.cpus[c];
        let step = match cpu.irq.notification_mut() {
            Some(h) => h.next(cpu.apic.path()),
            None => Some(Step::Eoi),
        };
        match step {
            Some(Step::Round(snap)) => {
                let missed = cpu.apic.harvest_pir(snap.words());
                // arch/x86/kernel/irq.c handle_pending_pir: the IOMMU's atomic update
                // evicts the line from this CPU; an untouched line is read from L1.
                let cost = if missed {
                    self.costs.pir_round
                } else {
                    self.costs.pir_round_clean
                };
                self.report_pir_pending(c);
                self.hard(c, IrqPhase::PirRound, cost);
            }
            Some(Step::Dispatch(x)) => match cpu.apic.vector_at(u16::from(x)) {
                Some(v) => self.start_vector(c, v.ix()),
                None => self.notification_step(c),
            },
            Some(Step::SelfIpi(x)) => match cpu.apic.vector_at(u16::from(x)) {
                Some(_) => self.send_self_ipi(c, x),
                None => self.notification_step(c),
            },
            // Attempt #2's local_irq_enable()/disable(): preempt_notification takes
            // higher-class vectors between the steps.
            Some(Step::IrqsOn) | Some(Step::IrqsOff) => self.notification_step(c),
            // One apic_eoi() for the whole notification.
            Some(Step::Eoi) | None => self.eoi_and_exit(c),
        }
    }

    /// The talk's Attempt #3 (irqlab_core::delivery::self_ipi): apic->send_IPI_self(x)
    /// instead of the handler call. The x2APIC SELF_IPI write is one WRMSR, charged as the
    /// EOI's; the local APIC sets the IRR bit at once (an IRR bit already set merges the
    /// two) and the vector is taken as an interrupt of its own after the notification's EOI.
    fn send_self_ipi(&mut self, c: usize, x: u8) {
        self.notify(c, u16::from(x));
        self.hard(c, IrqPhase::SelfIpi, self.costs.eoi);
    }

    /// The talk's Attempt #2 (irqlab_core::delivery::preemptable): the demux runs after
    /// local_irq_enable(), so at the end of any of its steps but the EOI a pending vector
    /// of a higher priority class than the notification's (the timer, IPIs) is taken; the
    /// notification vector stays in service, so a second notification waits in the IRR.
    fn preempt_notification(&mut self, c: usize) -> bool {
        let cpu = &mut self.cpus[c];
        let Some(p) = cpu.apic.path().posted() else {
            return false;
        };
        let nv = p.mode().nv;
        if !p.mode().preemptable
            || cpu.irq.idt() != u16::from(nv)
            || cpu.irq.phase() == IrqPhase::Exit
            || cpu.has_preempted()
            || cpu
                .apic
                .highest()
                .is_none_or(|v| priority_class(v) <= priority_class(nv))
        {
            return false;
        }
        cpu.preempt_frame();
        self.take_interrupt(c);
        true
    }

    fn irq_exit(&mut self, c: usize) {
        if self.policy.flood_detection {
            self.cpus[c].moderation.flood_mut().irq_exit(self.now);
        }
        if self.cpus[c].resume_preempted() {
            // Back into the preempted demux: a nested irq_exit runs no softirqs
            // (in_interrupt(), kernel/softirq.c); the step that had ended goes on.
            self.irq_step(c);
            return;
        }
        if self.irr_pending(c) {
            self.take_interrupt(c);
            return;
        }
        if let Some(ns) = self.cpus[c].soft.interrupted() {
            self.cpus[c].enter_mode(Mode::SoftIrq);
            self.step(c, ns.max(1), SliceKind::SoftIrq);
            return;
        }
        // A ksoftirqd invocation in progress owns the softirqs (in_interrupt is false in
        // the thread, but irq_exit_should_run sees the invocation and declines).
        if self.cpus[c].soft.pending_mut().irq_exit_should_run() {
            let j = self.jiffies();
            self.cpus[c]
                .soft
                .pending_mut()
                .begin(j, SoftirqContext::IrqExit);
            self.cpus[c].soft.start_inline();
            self.cpus[c].enter_mode(Mode::SoftIrq);
            let ns = self.costs.softirq;
            self.step(c, ns.max(1), SliceKind::SoftIrq);
            return;
        }
        self.resume(c);
    }

    // ---------------------------------------------------------------- softirq

    #[inline]
    fn jiffies(&self) -> u64 {
        jiffies(self.now, self.costs.hz)
    }

    fn soft_step_done(&mut self, c: usize) {
        match self.soft_next(c) {
            Some(ns) => {
                self.cpus[c].soft.inline_step(ns);
                if self.irr_pending(c) {
                    self.take_interrupt(c);
                } else {
                    self.step(c, ns, SliceKind::SoftIrq);
                }
            }
            None => {
                self.cpus[c].soft.end_inline();
                if self.policy.flood_detection {
                    // irq_exit stores last_irq_end after invoke_softirq.
                    self.cpus[c].moderation.flood_mut().irq_exit(self.now);
                }
                if self.irr_pending(c) {
                    self.take_interrupt(c);
                } else {
                    self.resume(c);
                }
            }
        }
    }

    /// Finishes the softirq step that just ended and returns the next one's length, or
    /// None when handle_softirqs is over (after waking ksoftirqd if a limit was hit).
    pub(crate) fn soft_next(&mut self, c: usize) -> Option<u64> {
        match self.cpus[c].soft.phase() {
            SoftPhase::Poll { vector, work } => {
                let mut list = self.cpus[c].soft.take_reaping();
                let woke = self.complete_list(c, vector.ix(), &mut list);
                self.cpus[c].soft.restore_reaping(list);
                if woke > 0 {
                    self.cpus[c].soft.enter(SoftPhase::Wakeups { vector, work });
                    return Some(woke * self.costs.wakeup);
                }
                let unmask = self.finish_poll(c, vector.ix(), work);
                self.cpus[c].soft.enter(SoftPhase::Begin);
                if unmask > 0 {
                    return Some(unmask);
                }
            }
            SoftPhase::Wakeups { vector, work } => {
                let unmask = self.finish_poll(c, vector.ix(), work);
                self.cpus[c].soft.enter(SoftPhase::Begin);
                if unmask > 0 {
                    return Some(unmask);
                }
            }
            SoftPhase::Block => {
                if let Some(ns) = self.block_softirq_done(c) {
                    return Some(ns);
                }
            }
            SoftPhase::Resend { vector, reaped } => {
                let mut list = self.cpus[c].soft.take_reaping();
                let woke = self.complete_list(c, vector.ix(), &mut list);
                self.cpus[c].soft.restore_reaping(list);
                if woke > 0 {
                    self.cpus[c]
                        .soft
                        .enter(SoftPhase::ResendWakeups { vector, reaped });
                    return Some(woke * self.costs.wakeup);
                }
                if let Some(ns) = self.resend_done(c, vector, reaped) {
                    return Some(ns);
                }
            }
            SoftPhase::ResendWakeups { vector, reaped } => {
                if let Some(ns) = self.resend_done(c, vector, reaped) {
                    return Some(ns);
                }
            }
            SoftPhase::ResendMasked => {
                if let Some(ns) = self.resend_next(c) {
                    return Some(ns);
                }
            }
            SoftPhase::Begin | SoftPhase::BlockWakeups => {}
        }
        self.cpus[c].soft.enter(SoftPhase::Begin);
        loop {
            let j = self.jiffies();
            let cpu = &mut self.cpus[c];
            // Inside the IRQ_POLL action: irq_poll_softirq's loop (Sagi's variant stops on
            // need_resched, the kernel's on the budget and the jiffy).
            let resched = cpu.rq.softirq_should_yield();
            if let Ok(Some((id, weight))) = cpu.soft.irq_poll_mut().next_poll_checked(j, resched) {
                let v = cpu.soft.poller_vector(id);
                return Some(self.irq_poll_call(c, v, weight));
            }
            let cpu = &mut self.cpus[c];
            if let Ok((rearm, _, _)) = cpu.soft.irq_poll_mut().finish()
                && rearm
            {
                cpu.soft.raise(SoftirqVec::IrqPoll);
            }
            let need_resched = cpu.rq.softirq_should_yield();
            match cpu.soft.pending_mut().next(j, need_resched) {
                SoftirqStep::Run(SoftirqVec::IrqPoll) => {
                    let _ = cpu.soft.irq_poll_mut().start_softirq(j);
                }
                SoftirqStep::Run(SoftirqVec::Block) => return Some(self.block_softirq(c)),
                SoftirqStep::Run(SoftirqVec::Tasklet) => match self.resend.action(c) {
                    TaskletAction::NotHere => {}
                    TaskletAction::Locked => {
                        // Back on this CPU's list, TASKLET_SOFTIRQ raised again: the
                        // softirq restarts (and in ten passes wakes ksoftirqd).
                        self.cpus[c].soft.raise(SoftirqVec::Tasklet);
                        return Some(self.costs.softirq.max(1));
                    }
                    TaskletAction::Run => {
                        if let Some(ns) = self.resend_next(c) {
                            return Some(ns);
                        }
                    }
                },
                SoftirqStep::Run(_) => {}
                SoftirqStep::Done => return None,
                SoftirqStep::WakeKsoftirqd => {
                    self.wakeup_softirqd(c);
                    return None;
                }
            }
        }
    }

    /// One irq_poll poll call of vector `v` (the driver's poll function, up to `weight`
    /// CQEs): the CQEs it reaps go to the CPU's softirq list. Returns its CPU time.
    fn irq_poll_call(&mut self, c: usize, v: VectorId, weight: u32) -> u64 {
        let q = self.vectors[v.ix()].queue().ix();
        let mut list = self.cpus[c].soft.take_reaping();
        let n = self.poll_queue(c, q, weight, &mut list);
        self.cpus[c].soft.restore_reaping(list);
        self.cpus[c]
            .soft
            .enter(SoftPhase::Poll { vector: v, work: n });
        let has_db = self.queues[q].has_doorbell();
        let ib = self.vectors[v.ix()].ib_eq_ns().is_some();
        // ib_poll_handler re-arms the CQ whenever it did less than its budget; the other
        // pollers ring the head doorbell for what they reaped.
        let db = if has_db && (if ib { n < weight } else { n > 0 }) {
            self.costs.cq_doorbell
        } else {
            0
        };
        if db > 0 && self.queues[q].complete_ns().is_some() {
            // nvme_process_cq rings the doorbell before the requests complete.
            let scan = self.costs.irq_poll_call + u64::from(n) * self.queues[q].cqe_ns();
            self.ring_cq_doorbell_in(q, scan + db);
        }
        let work = if !self.queues[q].is_rdma() {
            u64::from(n) * self.queues[q].reap_ns()
        } else {
            self.handler_work_ns(q, n)
        };
        (self.costs.irq_poll_call + work + db).max(1)
    }

    /// wakeup_softirqd: the softirq limits were hit; only a sleeping ksoftirqd is woken
    /// (and counted).
    fn wakeup_softirqd(&mut self, c: usize) {
        let t = self.cpus[c].soft.ksoftirqd();
        if self.threads[t.ix()].state() == TState::Blocked {
            if self.measuring {
                self.cpus[c].acct.count_ksoftirqd_wakeup();
            }
            self.wake_thread(t.ix(), Some(c));
        }
    }

    /// The end of one irq_poll poll call: ring the doorbell for what it reaped, and if it
    /// did less than its weight, irq_poll_complete() and enable_irq(). Returns the CPU time
    /// of unmasking the vector, when it had been masked.
    fn finish_poll(&mut self, c: usize, v: usize, work: u32) -> u64 {
        let q = self.vectors[v].queue().ix();
        let weight = self.vectors[v]
            .iop()
            .and_then(|id| self.cpus[c].soft.irq_poll().weight(id))
            .unwrap_or(1);
        let completed = work < weight;
        if self.vectors[v].ib_eq_ns().is_some() {
            // ib_poll_handler: irq_poll_complete, then ib_req_notify_cq(IB_CQ_NEXT_COMP |
            // IB_CQ_REPORT_MISSED_EVENTS) arms the CQ: entries already past the consumer
            // index raise the next event at once (mlx5_cq_arm).
            if completed {
                self.ring_cq_doorbell(q);
            }
        } else if work > 0 && self.queues[q].complete_ns().is_none() {
            // NVMe rang it when the poll began (soft_next); idxd rings nothing.
            self.ring_cq_doorbell(q);
        }
        self.moderate(v, work);
        let Some(id) = self.vectors[v].iop() else {
            return 0;
        };
        let _ = self.cpus[c]
            .soft
            .irq_poll_mut()
            .poll_done(id, work, completed);
        if !completed || self.vectors[v].ib_eq_ns().is_some() {
            return 0;
        }
        if self.enable_vector(c, v) {
            return self.costs.irq_unmask;
        }
        0
    }

    /// resend_irqs, the resend tasklet running on CPU `c`: the next vector it replays,
    /// whichever CPU it targets, runs its flow handler (handle_edge_irq) with interrupts
    /// off. Returns the step's CPU time, or None when the bitmap is empty.
    fn resend_next(&mut self, c: usize) -> Option<u64> {
        let v = self.resend.replay_next()?;
        if let Edge::Pend { mask } = self.vectors[v].edge() {
            // irq_poll owns it again, or its handler runs on its CPU (and goes round again
            // for this one): mask_ack_irq and IRQS_PENDING, as in hardirq.
            self.cpus[c].soft.enter(SoftPhase::ResendMasked);
            let ns = if mask { self.costs.irq_mask } else { 0 };
            return Some(ns.max(1));
        }
        if self.measuring {
            self.vectors[v].count_handled(c);
        }
        Some(self.replay_handler(c, v))
    }

    /// The replayed interrupt's nvme_irq on CPU `c`: returns the step's CPU time.
    fn replay_handler(&mut self, c: usize, v: usize) -> u64 {
        let q = self.vectors[v].queue().ix();
        // nvme_irq: reap (up to Sagi's budget), the head doorbell, then the completions.
        let budget = match NvmeIrqHandler::new(self.policy.handler).next(true) {
            Some(HandlerStep::Reap { budget }) => budget,
            _ => u32::MAX,
        };
        let mut list = self.cpus[c].soft.take_reaping();
        let n = self.poll_queue(c, q, budget, &mut list);
        self.cpus[c].soft.restore_reaping(list);
        let mut ns = self.handler_work_ns(q, n);
        if n > 0 && self.queues[q].has_doorbell() {
            self.ring_cq_doorbell_in(q, ns + self.costs.cq_doorbell);
            ns += self.costs.cq_doorbell;
        }
        ns += u64::from(n) * self.queues[q].complete_ns().unwrap_or(0);
        self.cpus[c].soft.enter(SoftPhase::Resend {
            vector: VectorId::new(v),
            reaped: n,
        });
        ns.max(1)
    }

    /// The replayed nvme_irq returns: with entries still pending it hands the queue to
    /// irq_poll again (IRQ_POLL raised: the softirq restarts for it). Replayed on another
    /// CPU than its vector's, the kernel would poll it there; the model's irq_poll
    /// instances live on their vector's CPU, so it leaves the queue enabled, to the
    /// messages of what is pending.
    /// Returns the tasklet's next step: the handler again when handle_edge_irq's loop
    /// runs it again, else the next replay; None when nothing is left to replay.
    fn resend_done(&mut self, c: usize, v: VectorId, reaped: u32) -> Option<u64> {
        self.handler_returned(c, v.ix(), reaped);
        if reaped > 0 && self.vectors[v.ix()].cpu().ix() == c {
            self.irq_poll_if_pending(c, v.ix());
        }
        match self.handler_done(v.ix()) {
            AfterHandler::Done => self.resend_next(c),
            AfterHandler::Again { unmask } => {
                let unmask_ns = if unmask { self.costs.irq_unmask } else { 0 };
                Some(unmask_ns + self.replay_handler(c, v.ix()))
            }
        }
    }

    // ---------------------------------------------------------------- reaping

    /// nvme_poll_cq on queue `q` by CPU `c` with a budget: pops visible CQEs (phase tags),
    /// frees their tags (waking a job asleep for one), and appends the I/Os to `out`.
    /// Returns how many.
    pub(crate) fn poll_queue(
        &mut self,
        c: usize,
        q: usize,
        budget: u32,
        out: &mut Vec<IoId>,
    ) -> u32 {
        let n = self.queues[q].poll_cq(budget, out);
        if n > 0 && self.queues[q].has_tag_waiters() {
            // blk_mq_put_tag → sbitmap_queue_clear wakes the tag's waiters.
            let waiters = self.queues[q].take_tag_waiters();
            for t in waiters {
                self.wake_thread(t.ix(), Some(c));
            }
        }
        n
    }

    /// Completes the reaped I/Os in `list` (blk_mq_end_request, event post, wake-up) on
    /// CPU `c`, counting them on vector `v`. Returns how many wake-ups it made.
    #[inline(always)]
    pub(crate) fn complete_list(&mut self, c: usize, v: usize, list: &mut Vec<IoId>) -> u64 {
        if self.measuring {
            self.vectors[v].count_completions(list.len() as u64);
        }
        if self.vectors[v].has_moderator() {
            let bytes: u64 = list
                .iter()
                .map(|&io| u64::from(self.ios[io.ix()].bytes()))
                .sum();
            self.vectors[v].count_bytes(bytes);
        }
        let q = self.vectors[v].queue().ix();
        if self.queues[q].is_target() {
            // nvmet-rdma: each received command is answered, nothing completes here.
            for &io in list.iter() {
                self.target_respond(io);
            }
            list.clear();
            return 0;
        }
        let mut woke = 0;
        for &io in list.iter() {
            if self.complete_io(io, c) {
                woke += 1;
            }
        }
        list.clear();
        woke
    }

    /// The CQ head doorbell MMIO write leaves the CPU; the device sees it after the flight.
    pub(crate) fn ring_cq_doorbell(&mut self, q: usize) {
        self.ring_cq_doorbell_in(q, 0);
    }

    /// The CQ head doorbell leaves the CPU `cpu_ns` from now (the work before it in the
    /// step that rings it); the device sees it `mmio_flight_ns` later.
    fn ring_cq_doorbell_in(&mut self, q: usize, cpu_ns: u64) {
        if !self.queues[q].has_doorbell() {
            return;
        }
        let at = self.now + cpu_ns + self.costs.mmio_flight;
        self.q.push(
            at,
            Event::CqDoorbell {
                queue: QueueId::new(q),
            },
        );
    }

    // ---------------------------------------------------------------- tick

    pub(crate) fn tick(&mut self, c: usize) {
        if !self.draining {
            let next = self.now + self.costs.tick_period;
            self.q.push(next, Event::Tick { cpu: CpuId::new(c) });
        }
        // NOHZ idle: an idle CPU's tick is stopped.
        if self.cpus[c].mode() == Mode::Idle {
            return;
        }
        // The tick hrtimer's expiry stays at the first missed period until its handler
        // runs (hrtimer_forward is called there), so lateness counts from that tick.
        self.cpus[c].apic.tick_fired(self.now);
        self.notify(c, LOCAL_TIMER_VECTOR);
    }

    pub(crate) fn thread_timer(&mut self, t: usize, epoch: u32) {
        let th = &self.threads[t];
        if !th.timer_wakes(epoch) {
            return;
        }
        let c = th.cpu().ix();
        self.cpus[c].hrtimer_expired(ThreadId::new(t));
        self.notify(c, HRTIMER_VECTOR);
    }

    /// GSIM's hook in handle_irq_event: after the handler, maybe disable the IRQ until the
    /// CPU's moderation timer fires.
    fn gsim_hook(&mut self, c: usize, v: usize) {
        if self.gsim.is_none() {
            return;
        }
        self.account(c);
        let hardirq_total = self.cpus[c].acct.hardirq_total();
        let (Some(global), Some(g)) = (self.gsim.as_mut(), self.cpus[c].moderation.gsim_mut())
        else {
            return;
        };
        let now = self.now;
        let before = g.timer_deadline();
        let disable = g.hook(global, now, hardirq_total, v as u32);
        let after = g.timer_deadline();
        if disable {
            self.vectors[v].disable_nosync();
        }
        if after != before
            && let Some(at) = after
        {
            self.arm_gsim_timer(c, at);
        }
    }

    fn arm_gsim_timer(&mut self, c: usize, at: u64) {
        let epoch = self.cpus[c].moderation.arm_gsim_timer();
        self.q.push(
            at.max(self.now),
            Event::GsimTimer {
                cpu: CpuId::new(c),
                epoch,
            },
        );
    }

    /// GSIM's hrtimer: re-enable the listed IRQs, replaying those that arrived meanwhile.
    /// (Its own few hundred ns of hardirq time are not charged.)
    pub(crate) fn gsim_timer(&mut self, c: usize, epoch: u32) {
        if !self.cpus[c].moderation.gsim_timer_current(epoch) {
            return;
        }
        let now = self.now;
        let Some(g) = self.cpus[c].moderation.gsim_mut() else {
            return;
        };
        match g.timer_expired(now) {
            GsimExpiry::Enable(released) => {
                for r in released {
                    // (The timer's hardirq time, unmasks included, is not charged.)
                    self.enable_vector(c, r.irq as usize);
                }
            }
            GsimExpiry::RunHandlers { rearm_at, .. } => self.arm_gsim_timer(c, rearm_at),
        }
    }

    /// A spinning poller: look at the queue after one poll iteration if a CQE is there;
    /// otherwise burn sys time until one is posted (the device pokes the spinners).
    pub(crate) fn spin_check(&mut self, c: usize, t: usize) {
        let (found, kind) = match self.threads[t].kind() {
            ThreadKind::Job(j) => self.job_spin(j.ix()),
            _ => (true, SliceKind::Sys),
        };
        if found {
            let ns = self.costs.poll_check;
            self.step(c, ns, kind);
        } else {
            self.cancel_step(c);
            self.set_kind(c, kind);
        }
    }

    /// A CQE was posted on queue `q`: spinning pollers notice it one poll later.
    pub(crate) fn poke_spinners(&mut self, q: usize) {
        for i in 0..self.queues[q].spinners().len() {
            let t = self.queues[q].spinners()[i].ix();
            self.poke_thread(t);
        }
    }

    /// Thread `t`, if it is spinning on its CPU right now, finds work one poll later.
    pub(crate) fn poke_thread(&mut self, t: usize) {
        let th = &self.threads[t];
        let c = th.cpu().ix();
        if th.spinning()
            && th.state() == TState::Running
            && self.cpus[c].rq.current() == Some(ThreadId::new(t))
            && self.cpus[c].mode() == Mode::Thread
            && !self.cpus[c].is_stepping()
        {
            let ns = self.costs.poll_check;
            let kind = match th.kind() {
                ThreadKind::Job(j) => self.job_spin(j.ix()).1,
                _ => SliceKind::Sys,
            };
            self.step(c, ns, kind);
        }
    }

    // ---------------------------------------------------------------- kernel threads

    /// run_ksoftirqd: handle_softirqs(true) while work is pending, then sleep.
    pub(crate) fn ksoftirqd_advance(&mut self, c: usize) -> ThreadStep {
        let cpu = &mut self.cpus[c];
        let in_invocation = cpu.soft.in_ksoftirqd();
        if in_invocation {
            if let Some(ns) = self.soft_next(c) {
                return ThreadStep::Run {
                    ns,
                    kind: SliceKind::Ksoftirqd,
                };
            }
            // The invocation ended; cond_resched() before looking again.
            if self.cpus[c].soft.pending_mut().ksoftirqd_should_run() {
                return ThreadStep::Yield;
            }
            return ThreadStep::Block;
        }
        if cpu.soft.pending_mut().ksoftirqd_should_run() {
            let j = self.jiffies();
            let cpu = &mut self.cpus[c];
            cpu.soft.pending_mut().begin(j, SoftirqContext::Ksoftirqd);
            cpu.soft.enter(SoftPhase::Begin);
            return ThreadStep::Run {
                ns: self.costs.softirq.max(1),
                kind: SliceKind::Ksoftirqd,
            };
        }
        ThreadStep::Block
    }

    /// A kworker runs the moderation work items queued on its CPU, one at a time: the work
    /// function (ib_cq_rdma_dim_work → modify_cq, irq-am's program work, net_dim's) builds
    /// the device command and rings its doorbell, then sleeps in wait_for_completion until
    /// the device's command-completion interrupt wakes it (the firmware's
    /// `moderation_program_ns`; mlx5's command EQ interrupt is taken on the kworker's CPU,
    /// as an interrupt whose handler wakes one thread); then the device runs the level.
    pub(crate) fn kworker_advance(&mut self, c: usize) -> ThreadStep {
        match self.cpus[c].wq.advance() {
            WorkStep::Sleep => ThreadStep::Block,
            // The handler's try_to_wake_up of this kworker (charged here: the same CPU),
            // then the command's mailbox and doorbell write.
            WorkStep::Post => ThreadStep::Run {
                ns: self.costs.wakeup + self.costs.sq_doorbell,
                kind: SliceKind::Sys,
            },
            WorkStep::Wait => ThreadStep::Sleep {
                ns: self.costs.moderation_program.max(1),
            },
            WorkStep::Program(v) => {
                if let Some(v) = v {
                    self.moderator_program(v.ix());
                }
                self.kworker_advance(c)
            }
        }
    }

    /// irq_thread: while RUNTHREAD is set, run the thread function, then sleep: nvme_irq
    /// (poll every pending CQE, ring the CQ doorbell once, complete the batch) or
    /// idxd_wq_thread (drivers/dma/idxd/irq.c: complete every record found done).
    pub(crate) fn irq_thread_advance(&mut self, c: usize, t: usize, v: usize) -> ThreadStep {
        let q = self.vectors[v].queue().ix();
        let inline = self.queues[q].complete_ns().is_none();
        if (self.threads[t].completing() || inline) && self.threads[t].reaping_len() > 0 {
            self.threads[t].set_completing(false);
            let mut list = self.threads[t].take_reaping();
            let woke = self.complete_list(c, v, &mut list);
            self.threads[t].put_reaping(list);
            if woke > 0 {
                return ThreadStep::Run {
                    ns: woke * self.costs.wakeup,
                    kind: SliceKind::IrqThread,
                };
            }
        }
        if self.vectors[v].take_runthread() {
            // irq_thread(): test_and_clear IRQTF_RUNTHREAD, then irq_thread_fn.
            return ThreadStep::Run {
                ns: self.costs.irq_thread,
                kind: SliceKind::IrqThread,
            };
        }
        if self.queues[q].cqe_pending() {
            let mut list = self.threads[t].take_reaping();
            let n = self.poll_queue(c, q, u32::MAX, &mut list);
            self.threads[t].put_reaping(list);
            self.threads[t].polled(n);
            return ThreadStep::Run {
                ns: u64::from(n) * self.queues[q].cqe_ns(),
                kind: SliceKind::IrqThread,
            };
        }
        // idxd's thread has completed its records already and rings no doorbell.
        if self.threads[t].take_polled() > 0 && (self.queues[q].has_doorbell() || !inline) {
            self.ring_cq_doorbell(q);
            // nvme_pci_complete_batch runs after the doorbell.
            self.threads[t].set_completing(true);
            let n = self.threads[t].reaping_len() as u64;
            return ThreadStep::Run {
                ns: self.costs.cq_doorbell + n * self.queues[q].complete_ns().unwrap_or(0),
                kind: SliceKind::IrqThread,
            };
        }
        ThreadStep::Block
    }
}

/// `mark` on one CPU: a change of owner charges what the previous one owes first.
#[inline(always)]
fn mark_cpu(cpu: &mut Cpu, now: u64, threads: &mut [Thread], jobs: &mut [Job], measuring: bool) {
    let current = cpu.rq.current();
    if cpu.acct.owner_changed(current) {
        // The step that just ended was the previous owner's.
        cpu.acct.mark(now);
        settle_cpu(cpu, threads, jobs, measuring);
        let job = match current.map(|t| threads[t.ix()].kind()) {
            Some(ThreadKind::Job(j)) => Some(j),
            _ => None,
        };
        cpu.acct.owe_to(current, job);
    }
    cpu.acct.mark(now);
}

/// `settle` on one CPU, with the threads and jobs it charges.
#[inline(always)]
fn settle_cpu(cpu: &mut Cpu, threads: &mut [Thread], jobs: &mut [Job], measuring: bool) {
    // The scheduler's clock runs from boot, the statistics from the window's start.
    let Some(owed) = cpu.acct.settle(measuring) else {
        return;
    };
    if !thread_time(owed.kind) {
        return;
    }
    if let Some(t) = owed.thread {
        threads[t.ix()].charge(owed.ns);
    }
    if !measuring {
        return;
    }
    if let Some(j) = owed.job {
        jobs[j.ix()].charge(owed.kind, owed.ns);
    }
}
