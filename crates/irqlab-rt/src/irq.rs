//! The interrupt path of a CPU thread: entry (flood detector's irq_enter), the posted
//! demux loop or the remapped vectors, each vector's handler (nvme_irq, Sagi's irq_poll
//! variant, or the threaded primary handler), GSIM's hook and timer, then irq_exit:
//! pending softirqs inline under core's restart rules, the flood detector's irq_exit,
//! and the wake-ups asked for in hardirq context.

use crate::clock::now_ns;
use crate::cpu::CpuThread;
use crate::shared::bump;
use crate::softirq::SoftirqContextOps;
use crate::trace::Event;
use irqlab_core::HandlerStyle;
use irqlab_core::gsim::GsimExpiry;
use irqlab_core::posted::{MAX_POSTED_MSI_COALESCING_LOOP, handle_notification};
use irqlab_core::remapped::DeliveryPath;
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

    fn unmask(&mut self, queue: usize) {
        self.cpu.unmask(queue);
    }
}

impl CpuThread {
    /// The interrupt path for one notification; `from_idle` when it woke a halted CPU.
    pub(crate) fn interrupt(&mut self, from_idle: bool) {
        let t = now_ns();
        self.irq_start_ns = t;
        if let Some(f) = self.flood.as_mut() {
            f.irq_enter(t);
        }
        self.set_kind(t, SliceKind::HardIrq);
        let shared = self.shared.clone();
        match &shared.path {
            Some(DeliveryPath::Posted(desc)) => {
                // sysvec_posted_msi_notification: inc PMN, demux, clear ON, extra round.
                bump(&self.shared.live.pmn, 1);
                self.res.hardirqs += 1;
                let max_loop = match self.policy.delivery {
                    irqlab_core::Delivery::Posted { max_loop } => max_loop,
                    _ => MAX_POSTED_MSI_COALESCING_LOOP,
                };
                let out = handle_notification(desc, max_loop, |v| self.vector_irq(v));
                if out.vectors == 0 {
                    self.res.spurious += 1;
                }
                self.res.posted.record_handler(&out);
            }
            Some(DeliveryPath::Remapped(_)) => {
                let vectors = shared.irr.take();
                if vectors.is_empty() {
                    self.res.spurious += 1;
                }
                for v in vectors {
                    self.res.hardirqs += 1;
                    self.vector_irq(v);
                }
            }
            None => self.res.spurious += 1,
        }
        let t1 = now_ns();
        self.res.hardirq_ns += t1 - t;
        self.irq_exit(from_idle, t1);
    }

    /// irq_exit(): pending softirqs run inline unless ksoftirqd is inside an invocation;
    /// then the wake-ups hardirq context asked for.
    fn irq_exit(&mut self, from_idle: bool, t: u64) {
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

    /// A device vector's interrupt: the handler runs unless the IRQ is disabled.
    fn vector_irq(&mut self, vector: u8) {
        let Some(q) = self.shared.queue_of(vector) else {
            self.res.spurious += 1;
            return;
        };
        if self.shared.queues[q].hold_if_disabled(&self.shared) {
            self.res.held_disabled += 1;
            return;
        }
        bump(&self.shared.live.handled[q], 1);
        if let Some(f) = self.flood.as_mut() {
            // The 2019 patch sends a flooded vector to a rescue thread only if it was
            // requested with IRQF_RESCUE_THREAD, for vectors whose affinity spans several
            // CPUs; each runtime queue serves one CPU thread, so its handler stays here.
            if f.flood_detected() {
                self.res.flooded_interrupts += 1;
            }
            let _ = f.placement(false);
        }
        self.handler(q, vector);
    }

    /// The vector's handler: nvme_irq, Sagi's irq_poll variant, or nvme_irq_check.
    fn handler(&mut self, q: usize, vector: u8) {
        match self.policy.handler {
            HandlerStyle::IrqPoll { budget, .. } => {
                let (n, bytes) = self.reap(q, budget);
                // More pending than the hardirq budget: mask and let irq_poll finish.
                if self.shared.queues[q].qp.cqe_pending()
                    && let Some(id) = self.poll_ids[q]
                {
                    self.shared.queues[q].mask();
                    self.soft.sched(id);
                }
                self.handler_returned(q, n, bytes);
            }
            HandlerStyle::Threaded => {
                // nvme_irq_check: IRQ_WAKE_THREAD when a CQE is pending, else IRQ_NONE.
                match &self.irq {
                    Some(irq) if self.shared.queues[q].qp.cqe_pending() => {
                        irq.mark(vector);
                        self.pending.irq_thread = true;
                    }
                    _ => self.res.spurious += 1,
                }
                self.trace_handler(q, 0);
            }
            HandlerStyle::Hardirq => {
                let (n, bytes) = self.reap(q, u32::MAX);
                self.handler_returned(q, n, bytes);
            }
        }
    }

    /// After a reaping handler: counts, the tracer, the moderator's sample, GSIM's hook.
    fn handler_returned(&mut self, q: usize, n: u32, bytes: u64) {
        let now = now_ns();
        self.res.vec_completions[q] += u64::from(n);
        self.trace_handler(q, n);
        self.moderate(q, now, n, bytes);
        self.gsim_hook(q, now);
    }

    fn trace_handler(&mut self, q: usize, cqes: u32) {
        if self.rec.is_on() {
            let ev = Event::Handler {
                cpu: self.shared.index as u32,
                vector: (self.shared.vector_base + q) as u32,
                cqes,
            };
            self.rec.record(now_ns(), ev);
        }
    }

    /// enable_irq() on queue `q`'s vector: a held message goes out now.
    pub(crate) fn unmask(&mut self, q: usize) {
        if self.shared.queues[q].unmask(&self.shared) == Some(true) {
            let ev = Event::Notification {
                cpu: self.shared.index as u32,
                pmn: self.shared.is_posted(),
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
            self.shared.queues[q].mask();
            self.res.gsim_disables += 1;
        }
    }

    /// GSIM's hrtimer, when due at `now`: re-enable the listed vectors (replaying those
    /// that arrived meanwhile), or with timer_rounds run their handlers first.
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
                    self.unmask(r.irq as usize);
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
}
