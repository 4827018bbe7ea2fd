//! The interrupt path of a CPU thread: entry (flood detector's irq_enter), then the
//! local APIC's pending vectors highest first (core's `SharedIrr`): the timer tick, or
//! the handler core's `DeliveryPath` gives for the vector (the posted demux of the
//! policy's notification mode, or one device vector), whose steps this thread executes.
//! A device vector goes through its descriptor (core's `IrqDesc`: handle_edge_irq's
//! pend-and-mask, the rerun) to the queue's handler (core's `NvmeIrqHandler`), then
//! GSIM's hook; irq_exit runs pending softirqs inline under core's restart rules, the
//! flood detector's irq_exit, and the wake-ups asked for in hardirq context.

use crate::clock::now_ns;
use crate::cpu::CpuThread;
use crate::shared::{Reaped, bump};
use crate::softirq::SoftirqContextOps;
use crate::trace::Event;
use irqlab_core::HandlerStyle;
use irqlab_core::delivery::Step;
use irqlab_core::gsim::GsimExpiry;
use irqlab_core::irq::Edge;
use irqlab_core::irq::vectors::LOCAL_TIMER_VECTOR;
use irqlab_core::nvme::{HandlerStep, IrqReturn, NvmeIrqHandler};
use irqlab_core::softirq::SoftirqContext;
use irqlab_report::observe::SliceKind;

/// Wake-ups of this CPU's kernel threads asked for in interrupt context; they take
/// effect when it is left (a wake-up from hardirq sets need_resched, the switch
/// happens at irq_exit).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Pending {
    pub irq_thread: bool,
    pub kworker: bool,
    pub ksoftirqd: bool,
}

impl Pending {
    fn any(&self) -> bool {
        self.irq_thread || self.kworker || self.ksoftirqd
    }
}

/// The CPU's periodic tick (CONFIG_HZ), stopped while the CPU is idle (NOHZ): its IRR
/// bit is raised at interrupt-enabled points once a period has passed.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Tick {
    pub(crate) period_ns: u64,
    /// The next period boundary.
    next_ns: u64,
    /// The period the pending tick stands for: its hrtimer's expiry stays at the first
    /// missed period until the handler runs (hrtimer_forward is called there).
    due_ns: Option<u64>,
}

impl Tick {
    pub(crate) fn new(hz: u32, now: u64) -> Tick {
        let period_ns = 1_000_000_000 / u64::from(hz.max(1));
        Tick {
            period_ns,
            next_ns: (now / period_ns + 1) * period_ns,
            due_ns: None,
        }
    }

    /// Leaving idle (tick_nohz_idle_exit): the tick restarts at the next boundary.
    pub(crate) fn restart(&mut self, now: u64) {
        self.next_ns = (now / self.period_ns + 1) * self.period_ns;
    }
}

/// The poll side of a softirq run at irq_exit, on the CPU thread itself.
struct AtIrqExit<'a> {
    cpu: &'a mut CpuThread,
    /// The interrupt came out of idle: a job it made runnable sets need_resched.
    from_idle: bool,
}

impl SoftirqContextOps for AtIrqExit<'_> {
    fn need_resched(&mut self) -> bool {
        self.cpu.pending.any() || (self.from_idle && self.cpu.jobs.iter().any(|j| j.ready()))
    }

    fn poll(&mut self, queue: usize, weight: u32) -> u32 {
        let (n, bytes) = self.cpu.reap(queue, weight);
        self.cpu.res.vec_completions[queue] += u64::from(n);
        self.cpu.moderate(queue, now_ns(), n, bytes);
        n
    }

    fn reenable(&mut self, queue: usize) {
        self.cpu.enable(queue);
    }

    fn deferred(&mut self, _queue: usize) {
        // This thread sees its own timer list before it halts.
    }
}

impl CpuThread {
    /// The interrupt path for what is pending in the IRR; `from_idle` when it woke a
    /// halted CPU.
    pub(crate) fn interrupt(&mut self, from_idle: bool) {
        let t = now_ns();
        self.irq_start_ns = t;
        if let Some(f) = self.flood.as_mut() {
            f.irq_enter(t);
        }
        self.set_kind(t, SliceKind::HardIrq);
        let mut took = false;
        loop {
            self.raise_tick(now_ns());
            // After each EOI the APIC delivers the highest vector still pending.
            let Some(v) = self.shared.irr.take_highest() else {
                break;
            };
            took = true;
            self.take_vector(v);
        }
        if !took {
            self.res.spurious += 1;
        }
        let t1 = now_ns();
        self.res.hardirq_ns += t1 - t;
        self.irq_exit(from_idle, t1);
    }

    /// Raises the tick's IRR bit when a period has passed (an online CPU only).
    pub(crate) fn raise_tick(&mut self, now: u64) {
        if now < self.tick.next_ns || !self.shared.is_online() {
            return;
        }
        if !self.shared.irr.is_set(LOCAL_TIMER_VECTOR) {
            self.tick.due_ns = Some(self.tick.next_ns);
        }
        self.shared.irr.set(LOCAL_TIMER_VECTOR);
        self.tick.restart(now);
    }

    /// The local timer's handler: the LOC row, and how late it ran.
    fn tick_handler(&mut self) {
        self.res.timer_ticks += 1;
        if let Some(due) = self.tick.due_ns.take() {
            self.res.tick_lateness.record(now_ns().saturating_sub(due));
        }
    }

    /// The CPU enters IDT vector `idt`: the timer, or the handler its delivery path runs
    /// for it, step by step. While that handler runs with interrupts enabled (the
    /// preemptable notification), vectors of a higher priority class come in between its
    /// steps.
    fn take_vector(&mut self, idt: u8) {
        self.res.hardirqs += 1;
        if idt == LOCAL_TIMER_VECTOR {
            self.tick_handler();
            return;
        }
        let shared = self.shared.clone();
        let Some(path) = &shared.path else {
            self.res.spurious += 1;
            return;
        };
        let mut h = path.begin(idt);
        if !h.counts_pmn() {
            self.res.device_irqs += 1;
        }
        if h.counts_pmn() {
            // sysvec_posted_msi_notification: inc_irq_stat(posted_msi_notification_count).
            bump(&shared.live.pmn, 1);
        }
        while let Some(step) = h.next(path) {
            match step {
                Step::Round(_) | Step::IrqsOn | Step::IrqsOff | Step::Eoi => {}
                Step::Dispatch(v) => self.vector_irq(v),
                Step::SelfIpi(v) => {
                    shared.irr.set(v);
                    self.res.self_ipis += 1;
                }
            }
            if h.irqs_enabled() {
                self.raise_tick(now_ns());
                while let Some(v) = shared.irr.take_preempting(idt) {
                    self.res.preempted += 1;
                    self.take_vector(v);
                }
            }
        }
        if h.counts_pmn() {
            let out = h.outcome();
            if out.vectors == 0 {
                self.res.spurious += 1;
            }
            self.res.posted.record_handler(&out);
        }
    }

    /// irq_exit(): pending softirqs run inline unless ksoftirqd is inside an invocation;
    /// then the wake-ups hardirq context asked for.
    pub(crate) fn irq_exit(&mut self, from_idle: bool, t: u64) {
        if self.soft.irq_exit_should_run() {
            self.set_kind(t, SliceKind::SoftIrq);
            let soft = self.soft.clone();
            let run = soft.handle(
                SoftirqContext::IrqExit,
                &mut AtIrqExit {
                    cpu: self,
                    from_idle,
                },
            );
            self.pending.ksoftirqd |= run.wake_ksoftirqd;
        }
        let end = now_ns();
        if let Some(f) = self.flood.as_mut() {
            // irq_exit stores last_irq_end after invoke_softirq.
            f.irq_exit(end);
        }
        self.set_kind(end, SliceKind::Usr);
        self.flush_wakes();
    }

    /// Issues the wake-ups asked for in interrupt context.
    pub(crate) fn flush_wakes(&mut self) {
        let p = std::mem::take(&mut self.pending);
        if p.irq_thread
            && let Some(i) = &self.irq
        {
            i.wake();
        }
        if p.kworker
            && let Some(m) = &self.moderation
        {
            m.notifier.notify();
        }
        if p.ksoftirqd {
            self.soft.ksoftirqd.notify();
        }
    }

    /// A device vector's interrupt (handle_edge_irq): the handler runs unless the IRQ is
    /// disabled or runs on another CPU, and again while interrupts came in meanwhile.
    fn vector_irq(&mut self, vector: u8) {
        let Some((owner, q)) = self.shared.queue_of(vector) else {
            self.res.spurious += 1;
            return;
        };
        let all = self.all.clone();
        let qs = &all[owner].queues[q];
        if let Edge::Pend { .. } = qs.edge() {
            self.res.held_disabled += 1;
            return;
        }
        bump(&qs.handled_on[self.shared.index], 1);
        if let Some(f) = self.flood.as_mut() {
            // The 2019 patch sends a flooded vector to a rescue thread only if it was
            // requested with IRQF_RESCUE_THREAD, for vectors whose affinity spans several
            // CPUs; each runtime queue serves one CPU thread, so its handler stays here.
            if f.flood_detected() {
                self.res.flooded_interrupts += 1;
            }
            let _ = f.placement(false);
        }
        loop {
            self.handler(owner, q, vector);
            if !qs.handler_done(&all) {
                break;
            }
            self.res.irq_reruns += 1;
        }
    }

    /// The queue's handler, step by step (nvme_irq, Sagi's irq_poll variant, NAPI's
    /// schedule, or nvme_irq_check). `owner` is the CPU thread whose queue it is: another
    /// one when the vector moved here.
    fn handler(&mut self, owner: usize, q: usize, vector: u8) {
        let all = self.all.clone();
        let qs = &all[owner].queues[q];
        let mut h = NvmeIrqHandler::new(self.policy.handler);
        let (mut n, mut bytes) = (0, 0);
        while let Some(step) = h.next(qs.qp.cqe_pending()) {
            match step {
                HandlerStep::Reap { budget } => {
                    let k = self.reap_batch(owner, q, budget);
                    h.reaped(k);
                    n += k;
                }
                HandlerStep::CompleteBatch => bytes += self.complete_batch(owner, q),
                HandlerStep::WakeThread => {
                    if let Some(irq) = &self.irq {
                        irq.mark(vector);
                        self.pending.irq_thread = true;
                    }
                }
                HandlerStep::DisableAndPoll => {
                    qs.disable_nosync();
                    if let Some(id) = self.poll_ids[q] {
                        self.soft.sched(id);
                    }
                }
                HandlerStep::Return(IrqReturn::None)
                    if self.policy.handler == HandlerStyle::Threaded =>
                {
                    self.res.spurious += 1;
                }
                HandlerStep::Return(_) => {}
            }
        }
        match self.policy.handler {
            HandlerStyle::Threaded | HandlerStyle::NapiDefer { .. } => {
                self.trace_handler(owner, q, 0);
            }
            HandlerStyle::Hardirq | HandlerStyle::IrqPoll { .. } => {
                self.handler_returned(owner, q, n, bytes);
            }
        }
    }

    /// nvme_poll_cq on queue `q` of CPU thread `owner` with `budget`, under the CQ lock:
    /// the command ids go to the batch the next step completes.
    fn reap_batch(&mut self, owner: usize, q: usize, budget: u32) -> u32 {
        let all = self.all.clone();
        let qs = &all[owner].queues[q];
        let batch = &mut self.batch;
        qs.lock_cq();
        let n = qs.qp.poll_cq(budget, |cqe| batch.push(cqe.command_id));
        qs.unlock_cq();
        bump(&self.shared.live.completions, u64::from(n));
        n
    }

    /// nvme_pci_complete_batch: this CPU's requests complete to their jobs; another
    /// CPU's go to it (blk_mq_complete_request_remote: the submitter's CPU completes).
    /// Returns the bytes completed here.
    fn complete_batch(&mut self, owner: usize, q: usize) -> u64 {
        if owner == self.shared.index {
            let now = now_ns();
            let mut bytes = 0;
            for cid in std::mem::take(&mut self.batch) {
                bytes += self.complete_cid(q, cid, now);
            }
            return bytes;
        }
        let to = &self.all[owner];
        let _under_way = to.begin_delivery();
        to.inbox.post(Reaped {
            queue: q,
            command_ids: std::mem::take(&mut self.batch),
            at_ns: now_ns(),
        });
        to.notifier.kick();
        0
    }

    /// After a reaping handler: counts, the tracer, the moderator's sample, GSIM's hook
    /// (for this CPU's own queue; another CPU's count and moderate at its inbox).
    fn handler_returned(&mut self, owner: usize, q: usize, n: u32, bytes: u64) {
        self.trace_handler(owner, q, n);
        if owner != self.shared.index {
            return;
        }
        let now = now_ns();
        self.res.vec_completions[q] += u64::from(n);
        self.moderate(q, now, n, bytes);
        self.gsim_hook(q, now);
    }

    fn trace_handler(&mut self, owner: usize, q: usize, cqes: u32) {
        if self.rec.is_on() {
            let ev = Event::Handler {
                cpu: self.shared.index as u32,
                vector: (self.all[owner].vector_base + q) as u32,
                cqes,
            };
            self.rec.record(now_ns(), ev);
        }
    }

    /// enable_irq() on queue `q`'s vector: a held message goes out, a pended interrupt
    /// is resent.
    pub(crate) fn enable(&mut self, q: usize) {
        let r = self.shared.queues[q].enable(&self.all);
        if r.resent {
            self.res.resent += 1;
        }
        if r.pending_bit == Some(true) || r.resent {
            let cpu = self.shared.queues[q].irte.route().cpu;
            let ev = Event::Notification {
                cpu,
                pmn: self.all[cpu as usize].is_posted() && !r.resent,
            };
            self.rec.record(now_ns(), ev);
        }
    }

    /// GSIM's hook after the handler (irq_start_moderation): it may disable the vector
    /// until the CPU's moderation timer fires. The IRQ id is the queue's index here.
    fn gsim_hook(&mut self, q: usize, now: u64) {
        let hardirq_total = self.res.hardirq_ns + now.saturating_sub(self.irq_start_ns);
        let Some(g) = self.gsim.as_mut() else {
            return;
        };
        let mut global = g.global.lock().unwrap_or_else(|e| e.into_inner());
        if g.cpu.hook(&mut global, now, hardirq_total, q as u32) {
            drop(global);
            self.shared.queues[q].disable_nosync();
            self.res.gsim_disables += 1;
        }
    }

    /// GSIM's hrtimer, when due at `now`: re-enable the listed vectors (resending those
    /// that arrived meanwhile), or with timer_rounds run their handlers first. (The
    /// simulator only re-arms its timer for RunHandlers: docs/model.md, phase 2.)
    pub(crate) fn gsim_timer(&mut self, now: u64) {
        let Some(g) = self.gsim.as_mut() else {
            return;
        };
        if g.cpu.timer_deadline().is_none_or(|d| now < d) {
            return;
        }
        let expiry = g.cpu.timer_expired(now);
        self.set_kind(now, SliceKind::HardIrq);
        self.res.hardirqs += 1;
        match expiry {
            GsimExpiry::Enable(released) => {
                for r in released {
                    self.enable(r.irq as usize);
                }
            }
            GsimExpiry::RunHandlers { irqs, .. } => {
                for irq in irqs {
                    let (n, bytes) = self.reap(irq as usize, u32::MAX);
                    self.res.vec_completions[irq as usize] += u64::from(n);
                    self.moderate(irq as usize, now, n, bytes);
                }
            }
        }
        let end = now_ns();
        self.res.hardirq_ns += end - now;
        self.set_kind(end, SliceKind::Usr);
        self.flush_wakes();
    }

    /// NAPI's deferral timers (napi_watchdog) due at `now`: each schedules its poll again;
    /// the hrtimer interrupt's irq_exit runs it.
    pub(crate) fn napi_timers(&mut self, now: u64) {
        if !self.soft.fire_deferred(now) {
            return;
        }
        self.set_kind(now, SliceKind::HardIrq);
        self.res.hardirqs += 1;
        let t = now_ns();
        self.res.hardirq_ns += t - now;
        self.irq_exit(false, t);
    }
}
