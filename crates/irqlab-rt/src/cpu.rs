//! A CPU thread: it emulates one CPU that receives interrupts and runs the fio job clones
//! placed on it. It runs the jobs until all of them block, then halts (futex wait) until
//! a notification, a completion handed over by its irq thread or ksoftirqd, or one of
//! its timers (GSIM's, hybrid polling's). The interrupt path is in [`crate::irq`].
//! Its kernel threads (ksoftirqd, the irq thread, the kworker) are real threads started
//! here, so they inherit its pinning: they compete for its core as they would for the CPU.

use crate::clock::now_ns;
use crate::cpu_time::{CpuTime, TimeLedger, WindowCpu};
use crate::error::RtError;
use crate::irq::{Pending, Tick};
use crate::irq_thread::{IrqThread, IrqThreadResult};
use crate::job::{Io, JobRun, Port, Step};
use crate::ksoftirqd::{self, KsoftirqdResult};
use crate::kworker::{KworkerResult, Moderation};
use crate::sched;
use crate::shared::{CpuShared, Cpus, bump};
use crate::softirq::SoftirqShared;
use crate::trace::{Recorder, Role, TraceSpec};
use crate::usage::Usage;
use irqlab_core::StopFlag;
use irqlab_core::flood::FloodDetector;
use irqlab_core::gsim::{GsimCpu, GsimGlobal, GsimStats};
use irqlab_core::irq_poll::{IrqPollCounters, IrqPollId};
use irqlab_core::nvme::{NVME_CMD_READ, NVME_CMD_WRITE, NvmePoll, SQE_HINT_BARRIER, Sqe, TagSet};
use irqlab_core::posted::PostedStats;
use irqlab_core::softirq::SoftirqCounters;
use irqlab_core::{HandlerStyle, ModeratorKind, Policy};
use irqlab_report::observe::SliceKind;
use irqlab_report::{Latency, ModerationReport};
use std::sync::atomic::{AtomicBool, Ordering::*};
use std::sync::{Arc, Mutex};

/// The CPU thread's view of its queues while a job commits a batch.
struct SubmitPort<'a> {
    shared: &'a CpuShared,
    tags: &'a mut [TagSet<Io>],
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
            let Some(cid) = self.tags[q].alloc(*io) else {
                *self.overflow += 1;
                continue;
            };
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
                let _ = self.tags[q].complete(cid);
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
    tags: &mut TagSet<Io>,
    jobs: &mut [JobRun],
    unknown: &mut u64,
    cid: u16,
    now: u64,
) -> u64 {
    match tags.complete(cid) {
        Some(io) => {
            jobs[io.slot as usize].complete(io, now);
            u64::from(io.len)
        }
        None => {
            *unknown += 1;
            0
        }
    }
}

/// What one CPU thread and its kernel threads measured.
#[derive(Clone, Debug, Default)]
pub struct CpuResult {
    pub index: usize,
    /// (slot, stats, window start ns, window end ns) of each clone.
    pub clones: Vec<(usize, crate::job::JobStats, u64, u64)>,
    /// getrusage(RUSAGE_THREAD) of the CPU thread over the run.
    pub usage: Usage,
    pub wall_ns: u64,
    /// Clock time in the interrupt path over the run (GSIM's hook reads it).
    pub hardirq_ns: u64,
    /// The CPU's time by kind over the measured window, up to the CPU thread's end.
    pub time: CpuTime,
    /// CPU time (thread CPU clocks) of the CPU thread and its kernel threads in the window.
    pub window_cpu_ns: u64,
    /// Interrupt entries: device vectors, notifications (posted), timers.
    pub hardirqs: u64,
    /// Of those, device vectors (remapped messages, resends, self-IPIs).
    pub device_irqs: u64,
    pub pmn: u64,
    pub posted: PostedStats,
    /// Notifications taken that found nothing pending.
    pub spurious: u64,
    /// Interrupts that found their IRQ disabled (irq_poll, NAPI or GSIM) or its handler
    /// running on another CPU: pended, and resent at enable or run again there.
    pub held_disabled: u64,
    /// Interrupts resent at enable_irq (IRQS_PENDING), and handler runs repeated for an
    /// interrupt that came while it ran elsewhere.
    pub resent: u64,
    pub irq_reruns: u64,
    /// The LOC row: local timer interrupts, and how late each ran after its period.
    pub timer_ticks: u64,
    pub tick_lateness: Latency,
    /// `--notification self-ipi`: vectors the demux sent back to this CPU.
    pub self_ipis: u64,
    /// `--notification preemptable`: interrupts taken inside the demux.
    pub preempted: u64,
    /// Old vectors still pending here when their cleanup ran (__vector_cleanup re-armed).
    pub cleanup_rearms: u64,
    /// Per queue: handler runs on each CPU thread (its /proc/interrupts row).
    pub vec_handled_on: Vec<Vec<u64>>,
    /// Per queue: completions reaped.
    pub vec_completions: Vec<u64>,
    /// Completions reaped by polling (polled jobs and reap-after-submit).
    pub polled_completions: u64,
    pub reaped_after_submit: u64,
    /// kernel/softirq.c and lib/irq_poll.c counters of this CPU.
    pub softirq: SoftirqCounters,
    pub irq_poll: IrqPollCounters,
    /// Futex wakes that found ksoftirqd asleep.
    pub ksoftirqd_wakeups: u64,
    pub ksoftirqd: KsoftirqdResult,
    /// CQEs whose command id carried no request (must stay 0).
    pub unknown_cqes: u64,
    /// I/Os that found no tag or SQ slot (must stay 0).
    pub overflow: u64,
    pub sleeps: u64,
    /// `--handler threaded`: the irq thread and the futex wakes that found it asleep.
    pub irq_thread: IrqThreadResult,
    pub irq_thread_wakeups: u64,
    /// Per queue: the moderator's course; and the kworker that programmed it.
    pub moderation: Vec<Option<ModerationReport>>,
    pub kworker: KworkerResult,
    pub kworker_wakeups: u64,
    /// `--moderator gsim`: this CPU's statistics and vectors it disabled.
    pub gsim: Option<GsimStats>,
    pub gsim_disables: u64,
    /// `--flood-detection`: the average gap between interrupts at the end, and the
    /// vector interrupts taken while the CPU counted as flooded.
    pub flood_avg_interval_ns: Option<u64>,
    pub flooded_interrupts: u64,
    /// `--handler napi-defer`: polls that kept the IRQ masked (napi_defer_hard_irqs).
    pub napi_deferrals: u64,
    /// Hybrid polling: waits that slept, and the time asleep.
    pub hybrid_sleeps: u64,
    pub hybrid_sleep_ns: u64,
    /// The run's stop flag cut a job of this CPU short.
    pub interrupted: bool,
}

/// GSIM's state on this CPU and the global half every CPU shares.
pub(crate) struct Gsim {
    pub(crate) cpu: GsimCpu,
    pub(crate) global: Arc<Mutex<GsimGlobal>>,
}

/// The run's time frame, the same for every CPU thread.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RunClock {
    /// When the threads were released (monotonic ns): from then on the CPU thread has
    /// jobs to run (its jobs count their runtime from when it gets to them).
    pub start: u64,
    /// When the measured window opens: start plus the shortest ramp_time.
    pub window_start: u64,
}

/// Where the CPU thread books its time: its own ledger when it is alone on its CPU, the
/// shared one when kernel threads report there too.
#[derive(Debug)]
enum TimeBook {
    Own(TimeLedger),
    Shared,
}

/// A CPU thread's state.
pub struct CpuThread {
    pub(crate) shared: Arc<CpuShared>,
    /// Every CPU thread of the run (interrupts of this CPU's queues may go to others).
    pub(crate) all: Arc<Cpus>,
    pub(crate) policy: Policy,
    pub(crate) jobs: Vec<JobRun>,
    pub(crate) tags: Vec<TagSet<Io>>,
    /// The command ids the running handler reaped, for its batch completion.
    pub(crate) batch: Vec<u16>,
    pub(crate) tick: Tick,
    pub(crate) soft: Arc<SoftirqShared>,
    pub(crate) poll_ids: Vec<Option<IrqPollId>>,
    pub(crate) moderation: Option<Arc<Moderation>>,
    /// The irq thread of `--handler threaded`.
    pub(crate) irq: Option<Arc<IrqThread>>,
    pub(crate) gsim: Option<Gsim>,
    pub(crate) flood: Option<FloodDetector>,
    /// Wake-ups asked for in interrupt context, issued when it is left.
    pub(crate) pending: Pending,
    /// The current interrupt's entry time (GSIM reads the hardirq time so far).
    pub(crate) irq_start_ns: u64,
    pub(crate) rec: Recorder,
    spec: TraceSpec,
    /// What the CPU thread does now (the trace's slice).
    kind: SliceKind,
    clock: RunClock,
    book: TimeBook,
    cpu_clock: WindowCpu,
    pub(crate) res: CpuResult,
}

/// How often a CPU thread whose jobs have ended, and which still takes another CPU's
/// moved vector, looks whether that CPU's jobs have ended too.
const SERVE_RECHECK_NS: u64 = 1_000_000;

impl CpuThread {
    pub fn new(
        all: Arc<Cpus>,
        index: usize,
        policy: Policy,
        jobs: Vec<JobRun>,
        gsim: Option<Arc<Mutex<GsimGlobal>>>,
        spec: TraceSpec,
        clock: RunClock,
    ) -> Result<Self, RtError> {
        let shared = all[index].clone();
        let tags = shared
            .queues
            .iter()
            .map(|q| TagSet::new(q.plan.q_depth))
            .collect();
        let soft = Arc::new(SoftirqShared::new(
            irqlab_core::softirq::SoftirqConfig::default(),
            policy.irq_poll_until,
        ));
        let mut poll_ids = Vec::new();
        for (i, q) in shared.queues.iter().enumerate() {
            let id = match (
                policy.handler.poll_weight(),
                NvmePoll::for_style(policy.handler),
            ) {
                (Some(weight), Some(poll)) if !q.plan.polled => {
                    Some(soft.add_poll_queue(i, weight, poll)?)
                }
                _ => None,
            };
            poll_ids.push(id);
        }
        let moderation = match policy.moderator {
            ModeratorKind::None | ModeratorKind::Gsim => None,
            kind => Some(Arc::new(Moderation::new(kind, &shared)?)).filter(|m| m.any()),
        };
        let n = shared.queues.len();
        let res = CpuResult {
            index: shared.index,
            vec_completions: vec![0; n],
            ..CpuResult::default()
        };
        let any_irq_queue = shared.queues.iter().any(|q| !q.plan.polled);
        let threaded = policy.handler == HandlerStyle::Threaded && any_irq_queue;
        let gsim = gsim.filter(|_| any_irq_queue).map(|global| {
            let cpu = GsimCpu::new(&global.lock().unwrap_or_else(|e| e.into_inner()), now_ns());
            Gsim { cpu, global }
        });
        let needs_ksoftirqd = poll_ids.iter().any(Option::is_some);
        let ledger = TimeLedger::new(clock.start, clock.window_start);
        let book = if needs_ksoftirqd || threaded || moderation.is_some() {
            *shared.time.lock().unwrap_or_else(|e| e.into_inner()) = ledger;
            TimeBook::Shared
        } else {
            TimeBook::Own(ledger)
        };
        Ok(CpuThread {
            all,
            batch: Vec::new(),
            tick: Tick::new(soft.hz(), clock.start),
            irq: threaded.then(|| Arc::new(IrqThread::default())),
            flood: policy.flood_detection.then(FloodDetector::default),
            shared,
            policy,
            jobs,
            tags,
            soft,
            poll_ids,
            moderation,
            gsim,
            pending: Pending::default(),
            irq_start_ns: 0,
            rec: Recorder::new(spec),
            spec,
            kind: SliceKind::Idle,
            clock,
            book,
            cpu_clock: WindowCpu::new(clock.window_start),
            res,
        })
    }

    /// Runs every job to its end (or until `abort`; `stop` ends the jobs early, with
    /// their I/Os in flight reaped) with the CPU's kernel threads beside it, then returns
    /// what they measured and their trace records.
    pub fn run(mut self, abort: &AtomicBool, stop: &StopFlag) -> (CpuResult, Vec<Recorder>) {
        sched::set_timer_slack_ns(1);
        let spec = self.spec;
        let shared = self.shared.clone();
        let soft = self.soft.clone();
        let irq = self.irq.clone();
        let moderation = self.moderation.clone();
        let needs_ksoftirqd = self.poll_ids.iter().any(Option::is_some);
        let ws = self.clock.window_start;
        let mut records = Vec::new();
        std::thread::scope(|s| {
            let ks = needs_ksoftirqd.then(|| {
                let (soft, all) = (soft.clone(), self.all.clone());
                let index = shared.index;
                s.spawn(move || {
                    let mut rec = Recorder::new(spec);
                    (ksoftirqd::run(&soft, &all, index, &mut rec, ws), rec)
                })
            });
            let it = irq.clone().map(|irq| {
                let cpu = shared.clone();
                s.spawn(move || {
                    let mut rec = Recorder::new(spec);
                    (irq.run(&cpu, &mut rec, ws), rec)
                })
            });
            let kw = moderation.clone().map(|m| {
                let cpu = shared.clone();
                s.spawn(move || {
                    let mut rec = Recorder::new(spec);
                    (m.run_kworker(&cpu, &mut rec, ws), rec)
                })
            });
            self.run_jobs(abort, stop);
            soft.stop();
            if let Some(i) = &irq {
                i.stop();
            }
            if let Some(m) = &moderation {
                m.stop();
            }
            if let Some(Ok((r, rec))) = ks.map(|h| h.join()) {
                self.res.ksoftirqd = r;
                records.push(rec);
            }
            if let Some(Ok((r, rec))) = it.map(|h| h.join()) {
                self.res.irq_thread = r;
                records.push(rec);
            }
            if let Some(Ok((r, rec))) = kw.map(|h| h.join()) {
                self.res.kworker = r;
                records.push(rec);
            }
        });
        self.res.window_cpu_ns += self.res.ksoftirqd.window_cpu_ns
            + self.res.irq_thread.window_cpu_ns
            + self.res.kworker.window_cpu_ns;
        let (softirq, irq_poll) = soft.counters();
        self.res.softirq = softirq;
        self.res.irq_poll = irq_poll;
        self.res.ksoftirqd_wakeups = soft.ksoftirqd.wakeups();
        self.res.napi_deferrals = soft.napi_deferrals();
        if let Some(i) = &irq {
            self.res.irq_thread_wakeups = i.notifier.wakeups();
        }
        if let Some(m) = &moderation {
            self.res.kworker_wakeups = m.notifier.wakeups();
            self.res.moderation = (0..self.shared.queues.len()).map(|q| m.report(q)).collect();
        }
        if let Some(g) = &self.gsim {
            self.res.gsim = Some(g.cpu.stats());
        }
        if let Some(f) = &self.flood {
            self.res.flood_avg_interval_ns = Some(f.avg_interval_ns());
        }
        self.res.hybrid_sleeps = self.jobs.iter().map(JobRun::hybrid_sleeps).sum();
        records.push(std::mem::take(&mut self.rec));
        (self.res, records)
    }

    /// What the CPU thread does from `now` on: its trace slice and its CPU's time,
    /// recorded when it changes.
    pub(crate) fn set_kind(&mut self, now: u64, kind: SliceKind) {
        if self.kind != kind {
            self.kind = kind;
            self.rec.slice(now, self.shared.index, Role::Cpu, kind);
            match &mut self.book {
                TimeBook::Own(l) => l.set(now, Role::Cpu, kind),
                TimeBook::Shared => self.shared.account(now, Role::Cpu, kind),
            }
        }
    }

    /// Runs the jobs until all of them end (or `abort`), taking interrupts and handed-over
    /// completions between steps and halting when no job can move.
    fn run_jobs(&mut self, abort: &AtomicBool, stop: &StopFlag) {
        let u0 = Usage::thread();
        let t0 = now_ns();
        self.set_kind(t0, SliceKind::Usr);
        let n = self.jobs.len();
        let mut finished = vec![false; n];
        let mut ends = vec![0u64; n];
        let any_irq_queue = self.shared.queues.iter().any(|q| !q.plan.polled);
        let mut blocked_polled: Vec<usize> = Vec::new();
        let mut stopping = false;
        while !abort.load(Relaxed) {
            let now = now_ns();
            self.cpu_clock.observe(now);
            if !stopping && stop.is_set() {
                stopping = true;
                self.stop_jobs(now, &finished);
            }
            self.gsim_timer(now);
            self.napi_timers(now);
            self.res.cleanup_rearms += self.shared.run_cleanups();
            // An interrupt-enabled point: take what is pending (a notification, the tick).
            self.raise_tick(now);
            if self.shared.notifier.take() || self.shared.irr.any() {
                self.interrupt(false);
            }
            self.take_inbox();
            let (progress, all_done) =
                self.step_jobs(&mut finished, &mut ends, &mut blocked_polled);
            if all_done {
                self.shared.set_jobs_done();
                // A kernel CPU takes interrupts whether or not it has tasks: while a
                // vector of another CPU's running jobs was moved here, serve it, looking
                // again every SERVE_RECHECK_NS for that CPU's end.
                if !self.shared.serves_running_cpu(&self.all) {
                    break;
                }
                self.halt(abort, Some(now_ns() + SERVE_RECHECK_NS));
                continue;
            }
            if progress {
                continue;
            }
            if !blocked_polled.is_empty() {
                self.wait_polled(abort, &blocked_polled, any_irq_queue);
                continue;
            }
            let deadline = [
                self.gsim.as_ref().and_then(|g| g.cpu.timer_deadline()),
                self.soft.next_deferred(),
            ]
            .into_iter()
            .flatten()
            .min();
            self.halt(abort, deadline);
        }
        self.close_jobs(t0, &u0, &finished, &ends);
    }

    /// The run's stop flag is set: each job not yet finished ends early.
    fn stop_jobs(&mut self, now: u64, finished: &[bool]) {
        for (j, job) in self.jobs.iter_mut().enumerate() {
            self.res.interrupted |= !finished[j] && job.stop(now);
        }
    }

    /// Steps each unfinished job until it blocks or finishes, noting the polled jobs that
    /// blocked. Returns whether any job progressed and whether all are done.
    fn step_jobs(
        &mut self,
        finished: &mut [bool],
        ends: &mut [u64],
        blocked_polled: &mut Vec<usize>,
    ) -> (bool, bool) {
        let n = self.jobs.len();
        let mut progress = false;
        let mut all_done = true;
        blocked_polled.clear();
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
                        if polled {
                            blocked_polled.push(j);
                        }
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
        (progress, all_done)
    }

    /// No job progressed and the polled jobs in `blocked_polled` wait for completions:
    /// the CPU sleeps until their first hybrid-polling timer, or else polls its queues.
    fn wait_polled(&mut self, abort: &AtomicBool, blocked_polled: &[usize], any_irq_queue: bool) {
        // Hybrid polling: when every polling job sleeps, the CPU halts until the
        // first hrtimer (an interrupt of a non-polled queue still wakes it).
        let now = now_ns();
        let mut wake_at = Some(u64::MAX);
        for &j in blocked_polled {
            wake_at = match (wake_at, self.jobs[j].hybrid_sleep(now)) {
                (Some(a), Some(b)) => Some(a.min(b)),
                _ => None,
            };
        }
        if let Some(t) = wake_at {
            let slept = self.halt(abort, Some(t));
            self.res.hybrid_sleep_ns += slept;
            return;
        }
        // nvme_poll: spin on the poll queues (blk_hctx_poll via io_uring IOPOLL).
        self.set_kind(now, SliceKind::Sys);
        self.poll_queues();
        if !any_irq_queue {
            std::hint::spin_loop();
        }
    }

    /// The jobs are over: closes the CPU's time ledger and records what the thread
    /// measured since `t0` (usage since `u0`) and each clone's window.
    fn close_jobs(&mut self, t0: u64, u0: &Usage, finished: &[bool], ends: &[u64]) {
        let end = now_ns();
        self.set_kind(end, SliceKind::Idle);
        self.res.time = match &mut self.book {
            TimeBook::Own(l) => l.close(end),
            TimeBook::Shared => self
                .shared
                .time
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .close(end),
        };
        self.res.window_cpu_ns = self.cpu_clock.finish();
        self.res.wall_ns = end.saturating_sub(t0);
        self.res.usage = Usage::thread().since(u0);
        self.res.sleeps = self.shared.notifier.sleeps();
        self.res.pmn = self.shared.live.pmn.load(Relaxed);
        self.res.vec_handled_on = self.shared.queues.iter().map(|q| q.handled()).collect();
        for (j, job) in self.jobs.iter().enumerate() {
            let start = job.window_start();
            let end = if finished[j] { ends[j] } else { end };
            self.res
                .clones
                .push((j, job.stats.clone(), start, end.max(start)));
        }
    }

    /// The CPU halts until a notification, handed-over completions or `deadline_ns`;
    /// a notification runs the interrupt path at once. Returns the time halted.
    fn halt(&mut self, abort: &AtomicBool, deadline_ns: Option<u64>) -> u64 {
        let t = now_ns();
        self.set_kind(t, SliceKind::Idle);
        let shared = self.shared.clone();
        let soft = self.soft.clone();
        // A NAPI timer armed by ksoftirqd meanwhile moves the wake-up earlier.
        let earlier = move || {
            soft.next_deferred()
                .is_some_and(|d| deadline_ns.is_none_or(|dl| d < dl))
        };
        let woken = shared.notifier.wait_until(
            || abort.load(Relaxed) || shared.inbox.has_work() || earlier(),
            deadline_ns,
        );
        let now = now_ns();
        // tick_nohz_idle_exit: the tick restarts at the next period.
        self.tick.restart(now);
        self.set_kind(now, SliceKind::Usr);
        if woken == crate::wake::Woken::Notified {
            self.interrupt(true);
        }
        now - t
    }

    /// nvme_poll_cq on queue `q` with `budget`: completes each request to its job.
    pub(crate) fn reap(&mut self, q: usize, budget: u32) -> (u32, u64) {
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

    /// blk_mq_end_request for the request of `cid` on queue `q`: frees its tag and
    /// completes it to its job. Returns its bytes (0 and counted in `unknown_cqes` when
    /// the tag carried nothing).
    pub(crate) fn complete_cid(&mut self, q: usize, cid: u16, now: u64) -> u64 {
        complete_cid(
            &mut self.tags[q],
            &mut self.jobs,
            &mut self.res.unknown_cqes,
            cid,
            now,
        )
    }

    /// Completes to their jobs the commands the irq thread and ksoftirqd reaped; each
    /// batch is one handler run or poll call for the moderator.
    fn take_inbox(&mut self) {
        if !self.shared.inbox.has_work() {
            return;
        }
        for batch in self.shared.inbox.take() {
            let q = batch.queue;
            let now = now_ns();
            let mut bytes = 0;
            for &cid in &batch.command_ids {
                bytes += self.complete_cid(q, cid, now);
            }
            let n = batch.command_ids.len() as u32;
            self.res.vec_completions[q] += u64::from(n);
            bump(&self.shared.live.completions, u64::from(n));
            self.moderate(q, batch.at_ns, n, bytes);
        }
        self.flush_wakes();
    }

    /// A moderator sees one interrupt's or poll call's work; a level change is a work
    /// item for the kworker, woken when interrupt context is left.
    pub(crate) fn moderate(&mut self, q: usize, at_ns: u64, n: u32, bytes: u64) {
        if let Some(m) = &self.moderation
            && m.on_event(q, at_ns, n, bytes)
        {
            self.pending.kworker = true;
        }
    }

    /// Ming Lei's 2019 patch: after a batch submission, trylock each CQ of the job and
    /// reap it. A queue irq_poll owns is skipped, as is one the irq thread holds.
    fn reap_after_submit(&mut self, j: usize) {
        for q in 0..self.shared.queues.len() {
            let plan = &self.shared.queues[q].plan;
            if plan.polled || !self.jobs[j].plan.controllers.contains(&plan.controller) {
                continue;
            }
            // irq_poll or NAPI owns a disabled queue (a deferring NAPI has unlisted it).
            if self.poll_ids[q].is_some_and(|id| self.soft.is_scheduled(id))
                || self.shared.queues[q].is_disabled()
            {
                continue;
            }
            if !self.shared.queues[q].try_lock_cq() {
                continue;
            }
            let (n, _) = self.reap(q, u32::MAX);
            self.shared.queues[q].unlock_cq();
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
