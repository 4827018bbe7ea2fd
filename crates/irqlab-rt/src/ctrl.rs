//! An emulated NVMe controller and the thread that runs one or more of them. Each pass
//! the controller reads CQ head doorbells (re-arming the vector gate), applies coalescing a
//! moderator asked for, fetches every visible SQE (round-robin arbitration), serves it on
//! the media, posts completions with phase tags, and raises MSI-X messages through the
//! device's coalescing policy and the one-outstanding-message gate.

use crate::clock::now_ns;
use crate::file_media::{MediaCmd, UringMedia};
use crate::media::MediaClock;
use crate::shared::CpuShared;
use crate::trace::{Event, Recorder, TraceSpec};
use irqlab_core::DeviceCoalescing;
use irqlab_core::nvme::{DeviceIrq, Hint, IrqDecision, Sqe, VectorGate};
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
    irq: DeviceIrq,
    gate: VectorGate,
    /// CQ head doorbell writes seen so far.
    doorbells_seen: u64,
    timer: Option<u64>,
    counters: VectorCounters,
}

impl CtrlQueue {
    fn polled(&self) -> bool {
        self.cpu.queues[self.q].plan.polled
    }

    fn apply(&mut self, d: IrqDecision, now: u64, rec: &mut Recorder) {
        match d {
            IrqDecision::Fire(f) => {
                self.timer = None;
                self.counters.coalesced += u64::from(f.coalesced.saturating_sub(1));
                self.raise(now, rec);
            }
            IrqDecision::ArmTimer { deadline_ns } => self.timer = Some(deadline_ns),
            IrqDecision::Hold => {}
        }
    }

    fn raise(&mut self, now: u64, rec: &mut Recorder) {
        if self.polled() {
            return;
        }
        let unacked = self.cpu.queues[self.q].qp.cq.unacked();
        if self.gate.raise(unacked) {
            self.send(now, rec);
        } else if unacked == 0 {
            self.counters.stale_raises += 1;
        } else {
            self.counters.gated += 1;
        }
    }

    /// An MSI-X message goes out (or waits in the pending bit of a masked vector).
    fn send(&mut self, now: u64, rec: &mut Recorder) {
        self.counters.messages += 1;
        let notified = self.cpu.queues[self.q].send_msix(&self.cpu);
        if rec.is_on() {
            let vector = (self.cpu.vector_base + self.q) as u32;
            rec.record(now, Event::Message { vector });
            if notified == Some(true) {
                let (cpu, pmn) = (self.cpu.index as u32, self.cpu.is_posted());
                rec.record(now, Event::Notification { cpu, pmn });
            }
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

/// NVMe I/O opcode read (NVM command set): anything else is served as a write.
const NVME_CMD_READ: u8 = 0x02;

/// One emulated controller: its media queue and the queue pairs it serves.
pub struct Controller {
    pub index: usize,
    media: Backend,
    queues: Vec<CtrlQueue>,
    /// Messages and notifications for `--trace`.
    rec: Recorder,
}

impl Controller {
    /// A controller serving queue pairs `(cpu, index in cpu.queues)`.
    pub fn new(
        index: usize,
        media: Backend,
        queues: Vec<(Arc<CpuShared>, usize)>,
        coalescing: DeviceCoalescing,
        trace: TraceSpec,
    ) -> Controller {
        let queues = queues
            .into_iter()
            .map(|(cpu, q)| CtrlQueue {
                cpu,
                q,
                irq: DeviceIrq::from_policy(coalescing),
                gate: VectorGate::new(),
                doorbells_seen: 0,
                timer: None,
                counters: VectorCounters::default(),
            })
            .collect();
        Controller {
            index,
            media,
            queues,
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
            let (writes, unacked) = {
                let qs = &cq.cpu.queues[cq.q];
                (qs.qp.cq.doorbell_writes(), qs.qp.cq.unacked())
            };
            // Count doorbell writes rather than compare head values: the host can consume
            // entries posted during this pass and bring the head back to the value seen.
            if writes != cq.doorbells_seen {
                cq.doorbells_seen = writes;
                busy = true;
                if cq.gate.on_cq_doorbell(unacked) && !cq.polled() {
                    cq.send(now_ns, &mut self.rec);
                }
            }
            if let Some(p) = cq.cpu.queues[cq.q].take_coalescing() {
                let d = cq.irq.program(p, now_ns);
                cq.apply(d, now_ns, &mut self.rec);
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
                cq.counters.cq_full += 1;
                break;
            }
            self.pop_done();
            busy = true;
            let cq = &mut self.queues[qi];
            cq.counters.completions += 1;
            let d = cq
                .irq
                .on_completion(now_ns, Hint::from_sqe_hints(sqe.hints));
            cq.apply(d, now_ns, &mut self.rec);
        }
        for cq in &mut self.queues {
            if let Some(deadline) = cq.timer
                && now_ns >= deadline
            {
                cq.timer = None;
                if let Some(f) = cq.irq.on_timer(now_ns) {
                    busy = true;
                    cq.apply(IrqDecision::Fire(f), now_ns, &mut self.rec);
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
            .map(|q| ((q.cpu.index, q.q), q.counters))
            .collect()
    }

    /// Commands still on the media.
    pub fn busy(&self) -> bool {
        match &self.media {
            Backend::Model { inflight, .. } => !inflight.is_empty(),
            Backend::File(u) => u.busy(),
        }
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
