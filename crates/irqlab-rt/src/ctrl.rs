//! An emulated NVMe controller and the thread that runs one or more of them. Each pass
//! the controller reads CQ head doorbells, applies coalescing a moderator asked for,
//! fetches every visible SQE (round-robin arbitration), serves it on the media, posts
//! completions with phase tags, and carries out what each queue's MSI-X vector (core's
//! `MsixVector`: the device's coalescing, the one-outstanding-message rule, the
//! coalescing timer, feature 09h's Coalescing Disable) decides. The vector's mask and
//! pending bits are the host's to write from other threads, so they stay in `QueueShared`
//! and apply as a message leaves, through the queue's IRTE to whichever CPU it names.

use crate::clock::now_ns;
use crate::file_media::{MediaCmd, UringMedia};
use crate::media::MediaClock;
use crate::shared::{CpuShared, Cpus};
use crate::trace::{Event, Recorder, TraceSpec};
use irqlab_core::Policy;
use irqlab_core::nvme::{Hint, MsiRule, MsixAction, MsixVector, NVME_CMD_READ, Quiet, Sqe};
use std::collections::VecDeque;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering::*};

/// Counters of one queue's vector, device side.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct VectorCounters {
    /// MSI-X messages raised (gate let them through).
    pub messages: u64,
    /// Completions that did not get a message of their own (device coalescing).
    pub coalesced: u64,
    pub completions: u64,
    /// Raises held back because a message was outstanding.
    pub gated: u64,
    /// Raises dropped because the host had already consumed every entry.
    pub stale_raises: u64,
    /// Passes that found the CQ full (the host was slow to ring the head doorbell).
    pub cq_full: u64,
}

/// One queue pair as its controller drives it.
struct CtrlQueue {
    cpu: Arc<CpuShared>,
    /// Index in `cpu.queues`.
    q: usize,
    /// The queue's MSI-X vector; None for a polled queue, which has no interrupt
    /// (pci.c adapter_alloc_cq leaves NVME_CQ_IRQ_ENABLED clear on a poll queue).
    vector: Option<MsixVector>,
    /// CQ head doorbell writes seen so far.
    doorbells_seen: u64,
    /// The coalescing timer the vector asked for: (deadline, epoch).
    timer: Option<(u64, u32)>,
    completions: u64,
    cq_full: u64,
}

impl CtrlQueue {
    fn unacked(&self) -> u32 {
        self.cpu.queues[self.q].qp.cq.unacked()
    }

    /// Carries out what the vector decided.
    fn carry_out(&mut self, action: MsixAction, now: u64, cpus: &Cpus, rec: &mut Recorder) {
        match action {
            MsixAction::SendMsi => self.send(now, cpus, rec),
            // A later arming replaces this one; the vector knows a stale epoch anyway.
            MsixAction::ArmTimer { deadline_ns, epoch } => self.timer = Some((deadline_ns, epoch)),
            MsixAction::Quiet(_) => {}
        }
    }

    /// An MSI-X message goes out (or waits in the pending bit of a masked vector).
    fn send(&mut self, now: u64, cpus: &Cpus, rec: &mut Recorder) {
        let sent = self.cpu.queues[self.q].send_msix(cpus);
        if rec.is_on() {
            let vector = (self.cpu.vector_base + self.q) as u32;
            rec.record(now, Event::Message { vector });
            if let Some((to, true)) = sent {
                let (cpu, pmn) = (to as u32, cpus[to].is_posted());
                rec.record(now, Event::Notification { cpu, pmn });
            }
        }
    }

    fn counters(&self) -> VectorCounters {
        let k = self.vector.as_ref().map(MsixVector::counters);
        let k = k.unwrap_or_default();
        VectorCounters {
            messages: k.messages,
            coalesced: k.coalesced,
            completions: self.completions,
            gated: k.outstanding_raises,
            stale_raises: k.consumed_raises,
            cq_full: self.cq_full,
        }
    }
}

/// What serves a controller's commands.
pub enum Backend {
    /// The timing model; commands in completion order: (done_ns, queue, sqe).
    Model {
        clock: MediaClock,
        inflight: VecDeque<(u64, usize, Sqe)>,
    },
    /// Real I/O on the controller's own io_uring.
    File(Box<UringMedia>),
}

impl Backend {
    pub fn model(clock: MediaClock) -> Backend {
        Backend::Model {
            clock,
            inflight: VecDeque::new(),
        }
    }
}

/// One emulated controller: its media queue and the queue pairs it serves.
pub struct Controller {
    media: Backend,
    queues: Vec<CtrlQueue>,
    /// Every CPU thread: a queue's messages go where its IRTE says.
    cpus: Arc<Cpus>,
    /// Messages and notifications for `--trace`.
    rec: Recorder,
}

impl Controller {
    /// A controller serving queue pairs `(cpu, index in cpu.queues)` of `cpus`.
    pub fn new(
        media: Backend,
        queues: Vec<(Arc<CpuShared>, usize)>,
        cpus: Arc<Cpus>,
        policy: &Policy,
        trace: TraceSpec,
    ) -> Controller {
        let queues = queues
            .into_iter()
            .map(|(cpu, q)| {
                let plan = &cpu.queues[q].plan;
                // Feature 09h: nvme-pci's I/O queue N interrupts on vector N.
                let cfg = policy.coalescing_disable.config(plan.qid);
                let polled = plan.polled;
                CtrlQueue {
                    cpu,
                    q,
                    // NVMe's rule: one message outstanding until the CQ head doorbell.
                    vector: (!polled).then(|| {
                        MsixVector::for_vector(policy.coalescing, cfg, MsiRule::UntilDoorbell)
                    }),
                    doorbells_seen: 0,
                    timer: None,
                    completions: 0,
                    cq_full: 0,
                }
            })
            .collect();
        Controller {
            media,
            queues,
            cpus,
            rec: Recorder::new(trace),
        }
    }

    /// Hands over the trace record (the controller records nothing more after).
    pub fn take_record(&mut self) -> Recorder {
        std::mem::take(&mut self.rec)
    }

    /// One pass at `now_ns`. Returns whether anything happened.
    pub fn pass(&mut self, now_ns: u64) -> bool {
        let mut busy = false;
        for cq in &mut self.queues {
            let writes = cq.cpu.queues[cq.q].qp.cq.doorbell_writes();
            // Count doorbell writes rather than compare head values: the host can consume
            // entries posted during this pass and bring the head back to the value seen.
            if writes != cq.doorbells_seen {
                cq.doorbells_seen = writes;
                busy = true;
                let unacked = cq.unacked();
                if let Some(a) = cq.vector.as_mut().map(|v| v.cq_head_doorbell(unacked)) {
                    cq.carry_out(a, now_ns, &self.cpus, &mut self.rec);
                }
            }
            if let Some(p) = cq.cpu.queues[cq.q].take_coalescing() {
                let unacked = cq.unacked();
                if let Some(a) = cq.vector.as_mut().map(|v| v.program(p, now_ns, unacked)) {
                    cq.carry_out(a, now_ns, &self.cpus, &mut self.rec);
                }
            }
        }
        busy |= self.serve(now_ns);
        while let Some((qi, sqe, status)) = self.peek_done(now_ns) {
            let cq = &mut self.queues[qi];
            if cq.cpu.queues[cq.q]
                .qp
                .complete(sqe.command_id, status, 0)
                .is_err()
            {
                cq.cq_full += 1;
                break;
            }
            self.pop_done();
            busy = true;
            let cq = &mut self.queues[qi];
            cq.completions += 1;
            let (unacked, hint) = (cq.unacked(), Hint::from_sqe_hints(sqe.hints));
            if let Some(a) = cq
                .vector
                .as_mut()
                .map(|v| v.post_completion(now_ns, hint, unacked))
            {
                cq.carry_out(a, now_ns, &self.cpus, &mut self.rec);
            }
        }
        for cq in &mut self.queues {
            if let Some((deadline, epoch)) = cq.timer
                && now_ns >= deadline
            {
                cq.timer = None;
                let unacked = cq.unacked();
                if let Some(a) = cq
                    .vector
                    .as_mut()
                    .map(|v| v.timer_expired(now_ns, epoch, unacked))
                {
                    // The timer fired the vector's coalesced completions.
                    busy |= a != MsixAction::Quiet(Quiet::NothingDue);
                    cq.carry_out(a, now_ns, &self.cpus, &mut self.rec);
                }
            }
        }
        busy
    }

    /// Fetches every visible SQE (round robin over the queues) onto the media and, for
    /// real I/O, submits them and reaps what the kernel finished.
    fn serve(&mut self, now_ns: u64) -> bool {
        let mut busy = false;
        for (qi, cq) in self.queues.iter().enumerate() {
            let qs = &cq.cpu.queues[cq.q];
            while let Some(sqe) = qs.qp.fetch() {
                busy = true;
                match &mut self.media {
                    Backend::Model { clock, inflight } => {
                        inflight.push_back((clock.schedule(now_ns), qi, sqe));
                    }
                    Backend::File(u) => {
                        let (offset, len) = qs.command(sqe.command_id);
                        u.queue(MediaCmd {
                            qi,
                            sqe,
                            offset,
                            len,
                            is_read: sqe.opcode == NVME_CMD_READ,
                        });
                    }
                }
            }
        }
        if let Backend::File(u) = &mut self.media {
            busy |= u.reap() > 0;
            busy |= u.start() > 0;
        }
        busy
    }

    /// The oldest command whose media work is over at `now_ns`: (queue, sqe, status).
    fn peek_done(&self, now_ns: u64) -> Option<(usize, Sqe, u16)> {
        match &self.media {
            Backend::Model { inflight, .. } => match inflight.front() {
                Some(&(done, qi, sqe)) if done <= now_ns => Some((qi, sqe, 0)),
                _ => None,
            },
            Backend::File(u) => u.peek_done().map(|(c, status)| (c.qi, c.sqe, status)),
        }
    }

    fn pop_done(&mut self) {
        match &mut self.media {
            Backend::Model { inflight, .. } => {
                inflight.pop_front();
            }
            Backend::File(u) => u.pop_done(),
        }
    }

    /// The first failed real I/O, if any.
    pub fn media_error(&self) -> Option<String> {
        match &self.media {
            Backend::File(u) => u.error.clone(),
            Backend::Model { .. } => None,
        }
    }

    /// Per-queue counters: ((cpu thread, queue index), counters).
    pub fn counters(&self) -> Vec<((usize, usize), VectorCounters)> {
        self.queues
            .iter()
            .map(|q| ((q.cpu.index, q.q), q.counters()))
            .collect()
    }
}

/// A gap between two passes longer than this means the spinning thread was off its CPU
/// (preempted by the host's scheduler or its hypervisor), not working: a pass on model
/// media takes a few µs.
pub const OFF_CPU_GAP_NS: u64 = 200_000;

/// The loop of a controller thread: passes over its controllers until `stop`. Returns
/// the time it was off its CPU (gaps over [`OFF_CPU_GAP_NS`] between passes).
pub fn run_controllers(ctrls: &mut [Controller], stop: &AtomicBool) -> u64 {
    let mut off_cpu = 0;
    let mut last = now_ns();
    while !stop.load(Relaxed) {
        let now = now_ns();
        if now - last > OFF_CPU_GAP_NS {
            off_cpu += now - last;
        }
        last = now;
        let mut busy = false;
        for c in ctrls.iter_mut() {
            busy |= c.pass(now);
        }
        if !busy {
            std::hint::spin_loop();
        }
    }
    off_cpu
}
