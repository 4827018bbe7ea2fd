//! A CPU thread: it emulates one CPU that receives interrupts and runs the fio job clones
//! placed on it. It runs the jobs until all of them block, then halts (futex wait) until
//! a notification; the notification runs the interrupt path: the posted demux loop or the
//! remapped vectors, the NVMe handler of each vector (nvme_irq: reap the CQ, ring the CQ
//! head doorbell once), and at irq_exit the IRQ_POLL softirq. Polled jobs spin on their CQ.

use crate::clock::now_ns;
use crate::irq_thread::{self, IrqThread};
use crate::job::{Io, JobRun, Port, Step};
use crate::shared::{CpuShared, Target, bump};
use crate::usage::Usage;
use irqlab_core::HandlerStyle;
use irqlab_core::irq_poll::{IrqPollCpu, IrqPollId, jiffies};
use irqlab_core::moderator::Moderator;
use irqlab_core::nvme::{SQE_HINT_BARRIER, Sqe};
use irqlab_core::posted::{PostedStats, handle_notification};
use irqlab_core::{ModeratorKind, Policy};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering::*};

/// NVMe I/O opcodes (NVM command set).
const NVME_CMD_WRITE: u8 = 0x01;
const NVME_CMD_READ: u8 = 0x02;
/// irq_poll_softirq stops when the jiffy changes; CONFIG_HZ=1000 is the common build.
const HZ: u32 = 1000;

/// Host-side request table of one queue: command id to the I/O it carries (the tag set).
#[derive(Debug, Default)]
struct Tags {
    slots: Vec<Option<Io>>,
    free: Vec<u16>,
}

impl Tags {
    fn new(q_depth: u32) -> Tags {
        let n = q_depth as usize;
        Tags {
            slots: vec![None; n],
            free: (0..n as u16).rev().collect(),
        }
    }
}

/// The CPU thread's view of its queues while a job commits a batch.
struct SubmitPort<'a> {
    shared: &'a CpuShared,
    tags: &'a mut [Tags],
    polled: bool,
    /// Ran out of tags or SQ slots: a topology bug, reported rather than hidden.
    overflow: &'a mut u64,
}

impl Port for SubmitPort<'_> {
    fn commit(&mut self, ios: &[Io], _now_ns: u64) {
        let mut touched = 0u64;
        for (k, io) in ios.iter().enumerate() {
            let Some(q) = self.shared.queues.iter().position(|qs| {
                qs.plan.controller == io.controller && qs.plan.polled == self.polled
            }) else {
                *self.overflow += 1;
                continue;
            };
            let Some(cid) = self.tags[q].free.pop() else {
                *self.overflow += 1;
                continue;
            };
            self.tags[q].slots[usize::from(cid)] = Some(*io);
            self.shared.queues[q].set_command(cid, io.offset, io.len);
            let sqe = Sqe {
                command_id: cid,
                opcode: if io.is_read {
                    NVME_CMD_READ
                } else {
                    NVME_CMD_WRITE
                },
                // Calibrated interrupts: the last request of a submitted batch.
                hints: if k + 1 == ios.len() {
                    SQE_HINT_BARRIER
                } else {
                    0
                },
                data: io.slot,
            };
            if self.shared.queues[q].qp.submit(sqe, false).is_err() {
                self.tags[q].slots[usize::from(cid)] = None;
                self.tags[q].free.push(cid);
                *self.overflow += 1;
                continue;
            }
            touched |= 1 << (q % 64);
        }
        // bd->last: one SQ doorbell per queue per batch.
        for (q, qs) in self.shared.queues.iter().enumerate() {
            if touched & (1 << (q % 64)) != 0 {
                qs.qp.sq.ring_doorbell();
            }
        }
    }
}

/// blk_mq_end_request for the request of `cid`: frees its tag and completes it to its
/// job. Returns its bytes (0 and counted in `unknown` when the tag carried nothing).
fn complete_cid(
    tags: &mut Tags,
    jobs: &mut [JobRun],
    unknown: &mut u64,
    cid: u16,
    now: u64,
) -> u64 {
    match tags.slots.get_mut(usize::from(cid)).and_then(Option::take) {
        Some(io) => {
            tags.free.push(cid);
            jobs[io.slot as usize].complete(io, now);
            u64::from(io.len)
        }
        None => {
            *unknown += 1;
            0
        }
    }
}

/// What one CPU thread measured.
#[derive(Clone, Debug, Default)]
pub struct CpuResult {
    pub index: usize,
    /// (slot, stats, window start ns, window end ns) of each clone.
    pub clones: Vec<(usize, crate::job::JobStats, u64, u64)>,
    /// getrusage(RUSAGE_THREAD) over the run.
    pub usage: Usage,
    pub wall_ns: u64,
    pub hardirq_ns: u64,
    pub softirq_ns: u64,
    pub idle_ns: u64,
    /// Interrupt entries: device vectors (remapped) or notifications (posted).
    pub hardirqs: u64,
    pub pmn: u64,
    pub posted: PostedStats,
    /// Notifications taken that found nothing pending.
    pub spurious: u64,
    /// Per queue: vector handler calls and completions reaped.
    pub vec_handled: Vec<u64>,
    pub vec_completions: Vec<u64>,
    /// Completions reaped by polling (polled jobs and reap-after-submit).
    pub polled_completions: u64,
    pub reaped_after_submit: u64,
    pub irq_poll_runs: u64,
    pub moderator_programs: u64,
    /// CQEs whose command id carried no request (must stay 0).
    pub unknown_cqes: u64,
    /// I/Os that found no tag or SQ slot (must stay 0).
    pub overflow: u64,
    pub sleeps: u64,
    /// `--handler threaded`: clock time in the irq thread's handler runs, the thread's
    /// getrusage, its handler runs and the futex wakes that found it asleep.
    pub irq_thread_ns: u64,
    pub irq_thread_usage: Usage,
    pub irq_thread_runs: u64,
    pub irq_thread_wakeups: u64,
}

/// A CPU thread's state.
pub struct CpuThread {
    shared: Arc<CpuShared>,
    policy: Policy,
    jobs: Vec<JobRun>,
    tags: Vec<Tags>,
    irq_poll: IrqPollCpu,
    poll_ids: Vec<Option<IrqPollId>>,
    moderators: Vec<Option<Moderator>>,
    /// The irq thread of `--handler threaded`.
    irq: Option<Arc<IrqThread>>,
    res: CpuResult,
}

impl CpuThread {
    pub fn new(shared: Arc<CpuShared>, policy: Policy, jobs: Vec<JobRun>) -> Result<Self, String> {
        let tags = shared
            .queues
            .iter()
            .map(|q| Tags::new(q.plan.q_depth))
            .collect();
        let mut irq_poll = IrqPollCpu::default();
        let mut poll_ids = Vec::new();
        let mut moderators = Vec::new();
        for q in &shared.queues {
            let id = match policy.handler {
                HandlerStyle::IrqPoll { weight, .. } if !q.plan.polled => {
                    Some(irq_poll.init(weight).map_err(|e| e.to_string())?)
                }
                _ => None,
            };
            poll_ids.push(id);
            let m = if q.plan.polled || policy.moderator == ModeratorKind::None {
                None
            } else {
                Moderator::new(policy.moderator, None).map_err(|e| e.to_string())?
            };
            moderators.push(m);
        }
        let n = shared.queues.len();
        let res = CpuResult {
            index: shared.index,
            vec_handled: vec![0; n],
            vec_completions: vec![0; n],
            ..CpuResult::default()
        };
        let threaded = policy.handler == HandlerStyle::Threaded
            && shared.queues.iter().any(|q| !q.plan.polled);
        Ok(CpuThread {
            irq: threaded.then(|| Arc::new(IrqThread::default())),
            shared,
            policy,
            jobs,
            tags,
            irq_poll,
            poll_ids,
            moderators,
            res,
        })
    }

    /// Runs every job to its end (or until `abort`), then returns what it measured.
    pub fn run(mut self, abort: &AtomicBool) -> CpuResult {
        let Some(irq) = self.irq.clone() else {
            self.run_jobs(abort);
            return self.res;
        };
        // The irq thread inherits this thread's CPU affinity, as irq threads follow
        // their interrupt's affinity (irq_thread_check_affinity).
        let usage = std::thread::scope(|s| {
            let h = irq_thread::spawn(s, irq.clone(), self.shared.clone());
            self.run_jobs(abort);
            irq.stop();
            h.join().unwrap_or_default()
        });
        self.res.irq_thread_ns = irq.busy_ns.load(Relaxed);
        self.res.irq_thread_usage = usage;
        self.res.irq_thread_runs = irq.runs.load(Relaxed);
        self.res.irq_thread_wakeups = irq.notifier.wakeups();
        self.res
    }

    fn run_jobs(&mut self, abort: &AtomicBool) {
        let u0 = Usage::thread();
        let t0 = now_ns();
        let n = self.jobs.len();
        let mut finished = vec![false; n];
        let mut ends = vec![0u64; n];
        let any_irq_queue = self.shared.queues.iter().any(|q| !q.plan.polled);
        while !abort.load(Relaxed) {
            // An interrupt-enabled point: take a pending notification.
            if self.shared.notifier.take() {
                self.interrupt();
            }
            if self.irq_poll.softirq_pending() {
                self.softirq();
            }
            self.take_from_irq_thread();
            let mut progress = false;
            let mut polled_blocked = false;
            let mut all_done = true;
            for j in 0..n {
                if finished[j] {
                    continue;
                }
                loop {
                    let polled = self.jobs[j].plan.polled;
                    let mut port = SubmitPort {
                        shared: &self.shared,
                        tags: &mut self.tags,
                        polled,
                        overflow: &mut self.res.overflow,
                    };
                    match self.jobs[j].step(now_ns(), &mut port) {
                        Step::Progress => progress = true,
                        Step::Committed => {
                            progress = true;
                            if self.policy.reap_after_submit && !polled {
                                self.reap_after_submit(j);
                            }
                        }
                        Step::Blocked => {
                            all_done = false;
                            polled_blocked |= polled;
                            break;
                        }
                        Step::Finished => {
                            finished[j] = true;
                            ends[j] = now_ns();
                            break;
                        }
                    }
                }
            }
            if all_done {
                break;
            }
            if progress {
                continue;
            }
            if polled_blocked {
                // nvme_poll: spin on the poll queues (blk_hctx_poll via io_uring IOPOLL).
                self.poll_queues();
                if !any_irq_queue {
                    std::hint::spin_loop();
                }
                continue;
            }
            // A softirq that re-raised itself (budget or time limit spent, its queue still
            // masked) must run before we sleep: its vector sends nothing until it ends, so
            // no notification would come (kernel/softirq.c hands it to ksoftirqd, never idle).
            if self.irq_poll.softirq_pending() {
                continue;
            }
            let t = now_ns();
            let irq = self.irq.clone();
            let woken = self
                .shared
                .notifier
                .wait(|| abort.load(Relaxed) || irq.as_ref().is_some_and(|i| i.has_completions()));
            self.res.idle_ns += now_ns() - t;
            if woken == crate::wake::Woken::Notified {
                self.interrupt();
            }
        }
        self.res.wall_ns = now_ns() - t0;
        self.res.usage = Usage::thread().since(&u0);
        self.res.sleeps = self.shared.notifier.sleeps();
        self.res.pmn = self.shared.live.pmn.load(Relaxed);
        self.res.vec_handled = self.shared.live.handled();
        for (j, job) in self.jobs.iter().enumerate() {
            let start = t0 + job.plan.ramp_ns;
            let end = if finished[j] { ends[j] } else { now_ns() };
            self.res
                .clones
                .push((j, job.stats.clone(), start, end.max(start)));
        }
    }

    /// The interrupt path for one notification.
    fn interrupt(&mut self) {
        let t = now_ns();
        let shared = self.shared.clone();
        match &shared.target {
            Target::Posted(desc) => {
                // sysvec_posted_msi_notification: inc PMN, demux, clear ON, extra round.
                bump(&self.shared.live.pmn, 1);
                self.res.hardirqs += 1;
                let max_loop = match self.policy.delivery {
                    irqlab_core::Delivery::Posted { max_loop } => max_loop,
                    _ => irqlab_core::posted::MAX_POSTED_MSI_COALESCING_LOOP,
                };
                let out = handle_notification(desc, max_loop, |v| self.vector_irq(v));
                if out.vectors == 0 {
                    self.res.spurious += 1;
                }
                self.res.posted.record_handler(&out);
            }
            Target::Remapped { irr, .. } => {
                let vectors = irr.take();
                if vectors.is_empty() {
                    self.res.spurious += 1;
                }
                for v in vectors {
                    self.res.hardirqs += 1;
                    self.vector_irq(v);
                }
            }
            Target::Polled => self.res.spurious += 1,
        }
        self.res.hardirq_ns += now_ns() - t;
        // irq_exit(): pending softirqs run inline.
        if self.irq_poll.softirq_pending() {
            self.softirq();
        }
    }

    /// The device vector's handler: nvme_irq, or Sagi's irq_poll variant.
    fn vector_irq(&mut self, vector: u8) {
        let Some(q) = self.shared.queue_of(vector) else {
            self.res.spurious += 1;
            return;
        };
        bump(&self.shared.live.handled[q], 1);
        let (n, bytes) = match self.policy.handler {
            HandlerStyle::IrqPoll { budget, .. } => {
                let (n, bytes) = self.reap(q, budget);
                // More pending than the hardirq budget: mask and let irq_poll finish.
                if self.shared.queues[q].qp.cqe_pending()
                    && let Some(id) = self.poll_ids[q]
                {
                    self.shared.queues[q].mask();
                    let _ = self.irq_poll.sched(id);
                }
                (n, bytes)
            }
            HandlerStyle::Threaded => {
                // nvme_irq_check: IRQ_WAKE_THREAD when a CQE is pending, else IRQ_NONE.
                match &self.irq {
                    Some(irq) if self.shared.queues[q].qp.cqe_pending() => irq.wake(vector),
                    _ => self.res.spurious += 1,
                }
                return;
            }
            HandlerStyle::Hardirq => self.reap(q, u32::MAX),
        };
        self.res.vec_completions[q] += u64::from(n);
        self.moderate(q, n, bytes);
    }

    /// nvme_poll_cq on queue `q` with `budget`: completes each request to its job.
    fn reap(&mut self, q: usize, budget: u32) -> (u32, u64) {
        let now = now_ns();
        let shared = &self.shared;
        let tags = &mut self.tags[q];
        let jobs = &mut self.jobs;
        let unknown = &mut self.res.unknown_cqes;
        let mut bytes = 0u64;
        let n = shared.queues[q].qp.poll_cq(budget, |cqe| {
            bytes += complete_cid(tags, jobs, unknown, cqe.command_id, now);
        });
        bump(&self.shared.live.completions, u64::from(n));
        (n, bytes)
    }

    /// Completes to their jobs the commands the irq thread reaped; each batch is one
    /// thread handler run for the moderator.
    fn take_from_irq_thread(&mut self) {
        let Some(irq) = self.irq.clone() else {
            return;
        };
        if !irq.has_completions() {
            return;
        }
        for (q, cids) in irq.take_completions() {
            let now = now_ns();
            let mut bytes = 0;
            for &cid in &cids {
                bytes += complete_cid(
                    &mut self.tags[q],
                    &mut self.jobs,
                    &mut self.res.unknown_cqes,
                    cid,
                    now,
                );
            }
            let n = cids.len() as u32;
            self.res.vec_completions[q] += u64::from(n);
            bump(&self.shared.live.completions, u64::from(n));
            self.moderate(q, n, bytes);
        }
    }

    /// A moderator sees each interrupt's work and may program the device's coalescing.
    fn moderate(&mut self, q: usize, n: u32, bytes: u64) {
        let Some(m) = self.moderators[q].as_mut() else {
            return;
        };
        if let Some(req) = m.on_event(now_ns(), n, bytes) {
            self.shared.queues[q].request_coalescing(req.profile.usec, req.profile.count);
            m.ack();
            self.res.moderator_programs += 1;
        }
    }

    /// IRQ_POLL_SOFTIRQ: poll scheduled queues with their weight under the shared budget.
    fn softirq(&mut self) {
        let t = now_ns();
        self.res.irq_poll_runs += 1;
        if self.irq_poll.start_softirq(jiffies(t, HZ)).is_err() {
            return;
        }
        while let Ok(Some((id, weight))) = self.irq_poll.next_poll(jiffies(now_ns(), HZ)) {
            let Some(q) = self.poll_ids.iter().position(|p| *p == Some(id)) else {
                break;
            };
            let (n, bytes) = self.reap(q, weight);
            self.res.vec_completions[q] += u64::from(n);
            let completed = n < weight;
            if self.irq_poll.poll_done(id, n, completed).is_err() {
                break;
            }
            if completed {
                // irq_poll_complete + enable_irq: a message held by the mask goes out now.
                let shared = self.shared.clone();
                shared.queues[q].unmask(&shared);
            }
            self.moderate(q, n, bytes);
        }
        let _ = self.irq_poll.finish();
        self.res.softirq_ns += now_ns() - t;
    }

    /// Ming Lei's 2019 patch: after a batch submission, check the CQ once.
    fn reap_after_submit(&mut self, j: usize) {
        for q in 0..self.shared.queues.len() {
            let plan = &self.shared.queues[q].plan;
            if plan.polled || !self.jobs[j].plan.controllers.contains(&plan.controller) {
                continue;
            }
            // A masked queue belongs to irq_poll (the kernel's trylock would fail).
            if self.poll_ids[q].is_some_and(|id| self.irq_poll.is_scheduled(id)) {
                continue;
            }
            let (n, _) = self.reap(q, u32::MAX);
            self.res.reaped_after_submit += u64::from(n);
        }
    }

    /// nvme_poll on every poll queue of this CPU.
    fn poll_queues(&mut self) {
        for q in 0..self.shared.queues.len() {
            if self.shared.queues[q].plan.polled && self.shared.queues[q].qp.cqe_pending() {
                let (n, _) = self.reap(q, u32::MAX);
                self.res.polled_completions += u64::from(n);
                self.res.vec_completions[q] += u64::from(n);
            }
        }
    }
}
