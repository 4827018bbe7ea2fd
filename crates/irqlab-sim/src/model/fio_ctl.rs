//! The state of what a fio job does besides its I/O pattern, and the arithmetic of each
//! mechanism as fio does it: the job's role (a job, an offload worker of one, the SQPOLL
//! thread of its ring), flow control (flow.c), the minimum-rate check (backend.c
//! __check_min_rate), the latency-target depth search (io_u.c lat_target_*), zones
//! (zbd.c) and errors. The loop that uses them is in job.rs and its siblings
//! (offload.rs, sqpoll.rs, flow.rs, run_control.rs, steadystate.rs, cpuio.rs, zbd.rs).

use super::commands::Cmd;
use super::fio_job::Planned;
use super::ids::{IoId, JobId};
use crate::rng::Stream;
use irqlab_fio::{LatencyTarget, RateMin};
use std::collections::VecDeque;

/// A phase of the job loop beyond submitting and reaping.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum FioPhase {
    /// Offload: the job hands the I/O it prepared to a worker (rate-submit.c).
    Handoff,
    /// Offload: every io_u is out with the workers (or the job is flushing them): it
    /// sleeps on free_cond until a worker puts one back.
    FreeWait,
    /// An offload worker with nothing queued sleeps on its condition variable.
    Idle,
    /// SQPOLL: the I/Os are in the SQ ring; io_uring_enter(SQ_WAKEUP) only if the
    /// thread sleeps (engines/io_uring.c fio_ioring_commit).
    RingCommit {
        k: u32,
    },
    /// SQPOLL: getevents never enters the kernel; the job spins on the CQ ring.
    RingSpin,
    /// The SQPOLL thread's loop (io_uring/sqpoll.c io_sq_thread).
    SqLoop,
    /// The SQPOLL thread submitted `k` SQEs of the ring (io_submit_sqes).
    SqSubmit {
        k: u32,
    },
    /// The SQPOLL thread ran the task_work of completions and posted their CQEs.
    SqTaskWork,
    /// The SQPOLL thread reaped its polled queues (io_do_iopoll).
    SqReap,
    /// The SQPOLL thread's virtio notify exit after its submission (model/virtio.rs).
    SqKick,
    /// Flow control holds the job: it spins in fio's loop until the flow lets it on.
    FlowSpin,
    /// A synchronous command (a trim through an ioctl, engines' do_io_u_trim) is in
    /// the kernel: the job blocks until it completes.
    SyncSubmit,
    SyncIssue,
    /// The synchronous command's virtio notify exit (model/virtio.rs).
    SyncKick,
    SyncWait,
    SyncReap,
    /// cpuio burnt a cycle; it sleeps the rest of its load period.
    Burn,
}

/// What a job of the model is to fio.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Role {
    /// A job of the file.
    Main,
    /// One of an offloading job's `iodepth` submit workers (rate-submit.c): it submits
    /// and waits for one I/O at a time with its own engine context; its I/O statistics
    /// are its job's (sum_thread_stats), its CPU time is its own.
    Worker { parent: JobId },
    /// The SQPOLL kernel thread of a job's ring: it submits the ring's SQEs, runs the
    /// task_work of their completions (or polls for them with IOPOLL) and spins while
    /// it has work, up to `sq_thread_idle` after the last.
    SqThread { owner: JobId },
}

/// io_uring/sqpoll.c: sq_thread_idle defaults to HZ jiffies (one second) when the ring's
/// setup gives none, as fio's does.
pub(crate) const SQ_THREAD_IDLE_NS: u64 = 1_000_000_000;

/// One SQE in a SQPOLL ring: the I/O, when fio began it (lat's start) and when it was
/// committed to the ring (fio_ioring_queued sets the issue time then).
#[derive(Clone, Copy, Debug)]
pub(crate) struct RingEntry {
    pub planned: Planned,
    pub start: u64,
    pub committed: u64,
}

/// An offloading job's workers and fio's choice among them (workqueue.c
/// get_submit_worker: the first idle one from `next_free`, else the one with the
/// oldest work).
#[derive(Clone, Debug, Default)]
pub(crate) struct Offload {
    workers: Vec<JobId>,
    next_free: usize,
    seq: u64,
}

impl Offload {
    /// The job's submit workers, none picked yet.
    pub fn new(workers: Vec<JobId>) -> Offload {
        Offload {
            workers,
            next_free: 0,
            seq: 0,
        }
    }

    /// workqueue.c get_submit_worker: the first idle worker from `next_free`, else the
    /// one with the oldest work; `state` gives a worker's (idle, sequence of its work).
    /// Returns its index, for `submit_to`.
    pub fn get_submit_worker(&self, state: impl Fn(JobId) -> (bool, u64)) -> usize {
        let n = self.workers.len();
        let start = self.next_free;
        let idle = (0..n)
            .map(|i| (start + i) % n)
            .find(|&i| state(self.workers[i]).0);
        idle.unwrap_or_else(|| {
            (0..n)
                .min_by_key(|&i| state(self.workers[i]).1)
                .unwrap_or(0)
        })
    }

    /// Worker `pick` (get_submit_worker's answer) takes the work: the search for an
    /// idle one starts after it next time.
    pub fn submit_to(&mut self, pick: usize) -> JobId {
        if pick == self.next_free {
            self.next_free = (pick + 1) % self.workers.len();
        }
        self.workers[pick]
    }

    /// workqueue_enqueue's sequence number of the next work item.
    pub fn next_seq(&mut self) -> u64 {
        self.seq += 1;
        self.seq
    }
}

/// An offload worker's queue of I/Os handed to it, with when fio began each.
#[derive(Clone, Debug, Default)]
pub(crate) struct WorkerQueue {
    inbox: VecDeque<(Planned, u64)>,
    seq: u64,
    busy: bool,
}

impl WorkerQueue {
    /// workqueue_enqueue: the I/O `p` fio began at `start`, work item `seq`.
    pub fn enqueue(&mut self, p: Planned, start: u64, seq: u64) {
        self.inbox.push_back((p, start));
        self.seq = seq;
        self.busy = true;
    }

    /// The worker's next I/O; with none it goes idle.
    pub fn next_work(&mut self) -> Option<(Planned, u64)> {
        let w = self.inbox.pop_front();
        if w.is_none() {
            self.busy = false;
        }
        w
    }

    /// Whether it has no work (get_submit_worker picks an idle one first).
    pub fn idle(&self) -> bool {
        !self.busy
    }

    /// The sequence number of its latest work item.
    pub fn seq(&self) -> u64 {
        self.seq
    }
}

/// A SQPOLL ring (the owner's side) and its thread's state.
#[derive(Clone, Debug, Default)]
pub(crate) struct SqRing {
    thread: Option<JobId>,
    pending: VecDeque<RingEntry>,
    /// IORING_SQ_NEED_WAKEUP: the thread went to sleep after sq_thread_idle.
    need_wakeup: bool,
    /// The thread's last work, for its idle timeout.
    last_work: u64,
    timer_epoch: u32,
    /// The ring polls (IOPOLL): the thread reaps the completions itself.
    iopoll: bool,
}

impl SqRing {
    /// io_uring_setup with IORING_SETUP_SQPOLL: the ring of SQ thread `thread`.
    pub fn new(thread: JobId, iopoll: bool) -> SqRing {
        SqRing {
            thread: Some(thread),
            iopoll,
            ..SqRing::default()
        }
    }

    pub fn thread(&self) -> Option<JobId> {
        self.thread
    }

    /// The SQEs in the ring that the thread has not submitted.
    pub fn pending(&self) -> u32 {
        self.pending.len() as u32
    }

    pub fn iopoll(&self) -> bool {
        self.iopoll
    }

    pub fn last_work(&self) -> u64 {
        self.last_work
    }

    pub fn timer_epoch(&self) -> u32 {
        self.timer_epoch
    }

    /// fio_ioring_commit: the batch's SQEs go into the ring (fio began them at `start`,
    /// committed `now`). Returns whether the thread sleeps (IORING_SQ_NEED_WAKEUP), the
    /// flag then cleared by the wake-up.
    pub fn commit(&mut self, batch: &[Planned], start: u64, now: u64) -> bool {
        for &planned in batch {
            self.pending.push_back(RingEntry {
                planned,
                start,
                committed: now,
            });
        }
        std::mem::replace(&mut self.need_wakeup, false)
    }

    /// io_submit_sqes takes the oldest SQE.
    pub fn pop_sqe(&mut self) -> Option<RingEntry> {
        self.pending.pop_front()
    }

    /// Idle past sq_thread_idle: the thread sets IORING_SQ_NEED_WAKEUP and sleeps.
    pub fn thread_sleeps(&mut self) {
        self.need_wakeup = true;
    }

    /// A new idle timer for the thread: its epoch (older timers are stale).
    pub fn arm_idle_timer(&mut self) -> u32 {
        self.timer_epoch = self.timer_epoch.wrapping_add(1);
        self.timer_epoch
    }

    /// The thread did work at `now`.
    pub fn worked(&mut self, now: u64) {
        self.last_work = now;
    }
}

/// A job's place in a flow (flow.c): its group, weight and its own counter.
#[derive(Clone, Copy, Debug)]
pub(crate) struct FlowMember {
    group: usize,
    weight: u32,
    counter: u64,
    sleep_ns: u64,
}

impl FlowMember {
    /// flow.c flow_init_job: a member of group `group` with `weight`, `sleep_ns` of
    /// flow_sleep.
    pub fn new(group: usize, weight: u32, sleep_ns: u64) -> FlowMember {
        FlowMember {
            group,
            weight,
            counter: 0,
            sleep_ns,
        }
    }

    pub fn group(&self) -> usize {
        self.group
    }

    pub fn sleep_ns(&self) -> u64 {
        self.sleep_ns
    }
}

/// flow.c struct fio_flow: the jobs of one flow id.
#[derive(Clone, Debug)]
pub(crate) struct FlowGroup {
    id: u32,
    /// Issued I/Os of the group, starting at 1 (flow_get).
    counter: u64,
    total_weight: u64,
    /// Jobs of the group (to poke those spinning when the counter moves).
    members: Vec<JobId>,
}

impl FlowGroup {
    /// flow.c flow_get: a new flow, its counter at 1.
    pub fn new(id: u32) -> FlowGroup {
        FlowGroup {
            id,
            counter: 1,
            total_weight: 0,
            members: Vec::new(),
        }
    }

    pub fn id(&self) -> u32 {
        self.id
    }

    pub fn members(&self) -> &[JobId] {
        &self.members
    }

    /// flow_init_job: job `j` joins with `weight`.
    pub fn join(&mut self, j: JobId, weight: u32) {
        self.total_weight += u64::from(weight);
        self.members.push(j);
    }

    /// A member issued an I/O (flow_threshold_exceeded's counters move).
    pub fn issued(&mut self) {
        self.counter += 1;
    }

    /// flow_exit_job: member `m` leaves, its I/Os and weight with it.
    pub fn leave(&mut self, m: &FlowMember) {
        self.counter -= m.counter;
        self.total_weight -= u64::from(m.weight);
    }
}

/// flow.c flow_threshold_exceeded's test: the job's share of the group's I/Os is above
/// its share of the weight.
pub(crate) fn flow_exceeded(m: &FlowMember, g: &FlowGroup) -> bool {
    let counter_ratio = m.counter as f64 / g.counter as f64;
    let weight_ratio = f64::from(m.weight) / g.total_weight as f64;
    counter_ratio > weight_ratio
}

/// backend.c __check_min_rate's memory of the last check, per direction.
#[derive(Clone, Debug)]
pub(crate) struct RateMinCheck {
    cfg: RateMin,
    last_bytes: [u64; 3],
    last_blocks: [u64; 3],
    last_at: [u64; 3],
}

/// What a failed minimum-rate check says (fio's log_err line).
pub(crate) struct RateShort {
    pub msg: String,
}

impl RateMinCheck {
    pub fn new(cfg: RateMin) -> RateMinCheck {
        RateMinCheck {
            cfg,
            last_bytes: [0; 3],
            last_blocks: [0; 3],
            last_at: [0; 3],
        }
    }

    /// libfio.c reset_all_stats clears the counters the check compares.
    pub fn reset(&mut self) {
        *self = RateMinCheck::new(self.cfg);
    }

    /// backend.c check_min_rate at `now`, `since_start` ns after the job's start (its
    /// epoch), with the bytes and blocks the job completed per direction: a direction
    /// that did work and fell below its minimum over the last rate_cycle fails.
    pub fn check(
        &mut self,
        name: &str,
        now: u64,
        since_start: u64,
        bytes: [u64; 3],
        blocks: [u64; 3],
    ) -> Option<RateShort> {
        for d in 0..3 {
            if bytes[d] == 0 {
                continue;
            }
            let (min_bytes, min_iops) = (self.cfg.bytes_per_sec[d], self.cfg.iops[d]);
            if min_bytes == 0 && min_iops == 0 {
                continue;
            }
            // "allow a 2 second settle period in the beginning"
            if since_start / 1_000_000 < 2000 {
                continue;
            }
            if self.last_bytes[d] > 0 || self.last_blocks[d] > 0 {
                let spent = (now - self.last_at[d]) / 1_000_000;
                if spent < self.cfg.cycle_ms || spent == 0 {
                    continue;
                }
                if min_bytes > 0 {
                    let rate = (bytes[d] - self.last_bytes[d]) * 1000 / spent;
                    if rate < min_bytes {
                        return Some(RateShort {
                            msg: format!("{name}: rate_min={min_bytes}B/s not met, got {rate}B/s"),
                        });
                    }
                } else {
                    let iops = (blocks[d] - self.last_blocks[d]) * 1000 / spent;
                    if iops < min_iops {
                        return Some(RateShort {
                            msg: format!(
                                "{name}: rate_iops_min={min_iops} not met, got {iops} IOPS"
                            ),
                        });
                    }
                }
            }
            self.last_bytes[d] = bytes[d];
            self.last_blocks[d] = blocks[d];
            self.last_at[d] = now;
        }
        None
    }
}

/// What the latency-target search decided after a window or a slow I/O.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum LatStep {
    /// Nothing changes.
    Keep,
    /// The depth changed; quiesce the I/O in flight first (__lat_target_failed).
    Quiesce,
    /// The depth found: quiesce, reset the statistics and run one more window at it.
    FinalRun,
    /// The final window is over: the job is done.
    Done,
    /// Depth 1 is still too slow with a 100% percentile: lat_fatal (ETIMEDOUT).
    Fatal,
}

/// io_u.c's latency-target state of a job.
#[derive(Clone, Debug)]
pub(crate) struct LatSearch {
    cfg: LatencyTarget,
    iodepth: u32,
    /// latency_qd, its bounds and the success streak at the top.
    qd: u32,
    qd_low: u32,
    qd_high: u32,
    stable: u32,
    /// The window's start (latency_ts), the I/Os done then, and the slow ones since.
    window_start: u64,
    ios_at_start: u64,
    failed: u64,
    end_run: bool,
}

impl LatSearch {
    /// lat_target_init: depth 1, searching up to iodepth.
    pub fn new(cfg: LatencyTarget, iodepth: u32) -> LatSearch {
        LatSearch {
            cfg,
            iodepth,
            qd: 1,
            qd_low: 1,
            qd_high: iodepth,
            stable: 0,
            window_start: 0,
            ios_at_start: 0,
            failed: 0,
            end_run: false,
        }
    }

    /// latency_qd: the depth the search is at.
    pub fn qd(&self) -> u32 {
        self.qd
    }

    pub fn cfg(&self) -> &LatencyTarget {
        &self.cfg
    }

    /// lat_target_reset (libfio.c reset_all_stats): a new search unless this is the
    /// final run; `ios` is the job's completed I/Os now.
    pub fn reset(&mut self, now: u64, ios: u64) {
        if !self.end_run {
            *self = LatSearch::new(self.cfg, self.iodepth);
        }
        self.new_cycle(now, ios);
    }

    /// lat_new_cycle.
    pub fn new_cycle(&mut self, now: u64, ios: u64) {
        self.window_start = now;
        self.ios_at_start = ios;
        self.failed = 0;
    }

    /// An I/O took `lat_ns` (io_u.c account_io_completion): over the target it fails
    /// the depth at once with a 100% percentile, else it counts against the window.
    pub fn io_done(&mut self, lat_ns: u64, now: u64, ios: u64) -> LatStep {
        if lat_ns <= self.cfg.target_ns {
            return LatStep::Keep;
        }
        if self.cfg.percentile == 100.0 {
            return self.failed_depth(now, ios);
        }
        self.failed += 1;
        LatStep::Keep
    }

    /// __lat_target_failed: halve towards the lower bound; at depth 1, give up.
    fn failed_depth(&mut self, now: u64, ios: u64) -> LatStep {
        if self.qd == 1 {
            return LatStep::Fatal;
        }
        self.qd_high = self.qd;
        if self.qd == self.qd_low {
            self.qd_low -= 1;
        }
        self.qd = (self.qd + self.qd_low) / 2;
        self.stable = 0;
        self.new_cycle(now, ios);
        LatStep::Quiesce
    }

    /// lat_target_check at the top of fio's loop: when a window is over, the share of
    /// I/Os within the target raises or lowers the depth.
    pub fn check(&mut self, now: u64, ios: u64) -> LatStep {
        if now - self.window_start < self.cfg.window_ns {
            return LatStep::Keep;
        }
        let n = ios - self.ios_at_start;
        // fio divides by the window's I/Os; a window without one is 0/0 (NaN), which
        // no percentile reaches.
        let success = if n == 0 {
            f64::NAN
        } else {
            (n - self.failed.min(n)) as f64 / n as f64 * 100.0
        };
        if success >= self.cfg.percentile {
            self.success(now, ios)
        } else {
            match self.failed_depth(now, ios) {
                LatStep::Fatal => LatStep::Keep,
                s => s,
            }
        }
    }

    /// lat_target_success: raise the depth (double until a failure, then bisect); the
    /// same depth twice is the answer.
    fn success(&mut self, now: u64, ios: u64) -> LatStep {
        let qd = self.qd;
        self.qd_low = self.qd;
        if self.qd + 1 == self.qd_high {
            self.stable += 1;
            if self.stable >= 3 {
                self.qd_high += 1;
                self.stable = 0;
            }
        }
        if self.qd_high != self.iodepth {
            self.qd = (self.qd + self.qd_high) / 2;
        } else {
            self.qd *= 2;
        }
        self.qd = self.qd.min(self.iodepth);
        let mut step = LatStep::Keep;
        if !self.cfg.run && self.qd == qd {
            if self.end_run {
                step = LatStep::Done;
            } else {
                self.end_run = true;
                step = LatStep::FinalRun;
            }
        }
        self.new_cycle(now, ios);
        step
    }
}

/// An error a job ended with, as fio's td_verror records it (the JSON "error").
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct JobError {
    /// errno: EIO (5) for a missed minimum rate, ETIMEDOUT (110) for a latency limit.
    pub code: i32,
    /// What fio's log_err line says.
    pub msg: String,
}

pub(crate) const EIO: i32 = 5;
pub(crate) const ETIMEDOUT: i32 = 110;

/// What a job does after its I/O in flight completes (io_u_quiesce callers).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum AfterQuiesce {
    /// flow_threshold_exceeded with flow_sleep: sleep that long.
    FlowSleep(u64),
    /// zbd_adjust_block: reset this zone of this device, then issue the held write.
    ZoneReset { device: usize, zone: usize },
    /// The latency target changed the depth, or starts its final run.
    LatTarget { final_run: bool },
}

/// A synchronous command in the kernel for an engine that trims through an ioctl.
#[derive(Clone, Copy, Debug, Default)]
struct SyncCmd {
    io: Option<IoId>,
    done: bool,
}

/// The rest of a job's fio state for these mechanisms (FioJob::ctl): private, read
/// through accessors, changed by methods named for what fio does.
pub(crate) struct FioCtl {
    role: Role,
    offload: Option<Offload>,
    worker: Option<WorkerQueue>,
    ring: Option<SqRing>,
    exit: irqlab_fio::ExitRule,
    flow: Option<FlowMember>,
    rate_min: Option<RateMinCheck>,
    lat: Option<LatSearch>,
    max_latency_ns: Option<u64>,
    ss: Option<super::steadystate::SsState>,
    cpuio: Option<irqlab_fio::CpuIo>,
    /// ns of one cpuio burn cycle (cpuchunks, or the platform's qsort pass).
    cpuio_cycle_ns: u64,
    /// wait_for: the jobs that must exit before this one starts.
    wait_for: Vec<JobId>,
    zones: Option<super::zbd::JobZones>,
    /// io_uring_cmd's write_mode mix and its stream (FIO_RAND_WMODE_OFF).
    write_mix: Vec<(Cmd, u32)>,
    wmode_rng: Option<Stream>,
    /// Trims: their sizes, ranges per command, and trimwrite's pending write.
    trim_sizes: irqlab_fio::BlockSizes,
    trim_rng: Stream,
    num_range: u32,
    trim_mode: TrimMode,
    /// Where trimwrite is: the write of the last trimmed block is due.
    trimwrite_write: Option<u64>,
    /// A trim goes through a synchronous ioctl (libaio, posixaio: do_io_u_trim).
    sync_trims: bool,
    sync_cmd: SyncCmd,
    /// A planned I/O held back while the job quiesces (a zone reset before it).
    held: Option<Planned>,
    quiesce: Option<AfterQuiesce>,
    /// fio's td->terminate (exitall, steady state, a latency target's end).
    terminated: bool,
    error: Option<JobError>,
    /// Completed I/Os and bytes per direction since the epoch (td->io_blocks,
    /// io_bytes), and the clat sum and count (for steady state's lat).
    done_ios: [u64; 3],
    done_bytes: [u64; 3],
    clat_sum: f64,
    clat_n: u64,
    /// Trims: their statistics over the window, as reads' and writes' in Job.
    trim: super::state::DirStats,
    /// SQPOLL rings disable slat (engines/io_uring.c: td->o.disable_slat = 1).
    disable_slat: bool,
}

/// Which of a job's I/Os are trims.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TrimMode {
    None,
    /// rw=trim / randtrim.
    All,
    /// rw=trimwrite / randtrimwrite: each block trimmed, then written.
    ThenWrite,
}

/// fio.h FIO_RAND_BS2_OFF, FIO_RAND_ZONE_OFF, FIO_RAND_WMODE_OFF: the seeds of the trim
/// block sizes, the zone choice and io_uring_cmd's write_mode draw.
const RAND_BS_TRIM: usize = 2;
const RAND_ZONE: usize = 16;
const RAND_WMODE: usize = 23;

impl FioCtl {
    /// The state of a job of `spec` whose streams are seeded by `seeds` (init.c
    /// setup_random_seeds); its role, offload workers, SQPOLL thread, flow and
    /// wait_for are set when the machine is built (fio_build.rs).
    pub fn of(spec: &irqlab_fio::JobSpec, seeds: &[u64]) -> FioCtl {
        use irqlab_fio::{IoEngine, RwMode};
        let stream = |i: usize| Stream::new(seeds[i], i as u64);
        let trim_mode = match spec.rw {
            RwMode::Trim | RwMode::RandTrim => TrimMode::All,
            RwMode::TrimWrite | RwMode::RandTrimWrite => TrimMode::ThenWrite,
            _ => TrimMode::None,
        };
        let zones = spec
            .controls
            .zbd
            .map(|_| super::zbd::JobZones::new(stream(RAND_ZONE)));
        FioCtl {
            role: Role::Main,
            offload: None,
            worker: None,
            ring: None,
            exit: spec.controls.exit,
            flow: None,
            rate_min: spec
                .controls
                .rate_min
                .is_set()
                .then(|| RateMinCheck::new(spec.controls.rate_min)),
            lat: spec
                .controls
                .latency_target
                .map(|t| LatSearch::new(t, spec.effective_iodepth())),
            max_latency_ns: spec.controls.max_latency_ns,
            ss: spec
                .controls
                .steadystate
                .map(super::steadystate::SsState::new),
            cpuio: spec.controls.cpuio,
            cpuio_cycle_ns: spec.controls.cpuio.map_or(0, |c| c.chunk_ns),
            wait_for: Vec::new(),
            zones,
            write_mix: spec
                .controls
                .write_mix
                .iter()
                .map(|&(w, p)| (Cmd::of_write(w), p))
                .collect(),
            wmode_rng: (spec.controls.write_mix.len() > 1).then(|| stream(RAND_WMODE)),
            trim_sizes: spec.trim_sizes.clone(),
            trim_rng: stream(RAND_BS_TRIM),
            num_range: spec.controls.num_range,
            trim_mode,
            trimwrite_write: None,
            sync_trims: matches!(spec.ioengine, IoEngine::Libaio | IoEngine::PosixAio),
            sync_cmd: SyncCmd::default(),
            held: None,
            quiesce: None,
            terminated: false,
            error: None,
            done_ios: [0; 3],
            done_bytes: [0; 3],
            clat_sum: 0.0,
            clat_n: 0,
            trim: super::state::DirStats::default(),
            disable_slat: spec.controls.sqpoll.is_some(),
        }
    }

    /// libfio.c reset_all_stats at the end of ramp_time (or a latency target's final
    /// run): the counters from zero, a new latency window, steady state's clock.
    pub fn reset_window(&mut self, now: u64) {
        self.done_ios = [0; 3];
        self.done_bytes = [0; 3];
        self.clat_sum = 0.0;
        self.clat_n = 0;
        self.trim = super::state::DirStats::default();
        if let Some(r) = &mut self.rate_min {
            r.reset();
        }
        if let Some(l) = &mut self.lat {
            l.reset(now, 0);
        }
        if let Some(ss) = &mut self.ss {
            ss.restart_clock(now);
        }
    }

    /// The command of the next write: io_uring_cmd's write_mode mix (rand_between(0,
    /// 99) against the running sum of percentages), else a plain write.
    pub fn write_cmd(&mut self) -> Cmd {
        let Some(rng) = &mut self.wmode_rng else {
            return self.write_mix.first().map_or(Cmd::Write, |w| w.0);
        };
        let r = rng.below(100) as u32;
        let mut sum = 0;
        for &(c, p) in &self.write_mix {
            sum += p;
            if r < sum {
                return c;
            }
        }
        Cmd::Write
    }

    /// An I/O of this job completed and was reaped: fio's td->io_blocks and io_bytes,
    /// and clat_stat's sum.
    pub fn count_done(&mut self, ddir: usize, bytes: u64, clat: u64) {
        self.done_ios[ddir] += 1;
        self.done_bytes[ddir] += bytes;
        self.clat_sum += clat as f64;
        self.clat_n += 1;
    }

    /// A helper's state: its role, with none of the job's own mechanisms.
    pub fn helper(role: Role, s: &irqlab_fio::JobSpec) -> FioCtl {
        let mut ctl = FioCtl::of(s, &[0; irqlab_fio::seeds::RAND_NR_OFFS]);
        ctl.role = role;
        ctl.rate_min = None;
        ctl.lat = None;
        ctl.max_latency_ns = None;
        ctl.ss = None;
        ctl.zones = None;
        ctl.cpuio = None;
        ctl.exit = irqlab_fio::ExitRule::default();
        ctl.disable_slat = false;
        if s.ioengine == irqlab_fio::IoEngine::Null {
            ctl.sync_trims = false;
        }
        ctl
    }

    /// fio's loop stops for this job: terminated (exitall, steady state, a latency
    /// target's final run over) or in error.
    pub fn stops(&self) -> bool {
        self.terminated || self.error.is_some()
    }

    pub fn role(&self) -> Role {
        self.role
    }

    pub fn exit(&self) -> &irqlab_fio::ExitRule {
        &self.exit
    }

    // ---- offload (rate-submit.c) and SQPOLL rings

    /// io_submit_mode=offload: the job's workers (fio_build.rs).
    pub fn offload_to(&mut self, workers: Vec<JobId>) {
        self.offload = Some(Offload::new(workers));
    }

    pub fn offload(&self) -> Option<&Offload> {
        self.offload.as_ref()
    }

    pub fn offload_mut(&mut self) -> Option<&mut Offload> {
        self.offload.as_mut()
    }

    /// The job is an offload worker: its queue of handed I/Os.
    pub fn make_worker(&mut self) {
        self.worker = Some(WorkerQueue::default());
    }

    pub fn worker(&self) -> Option<&WorkerQueue> {
        self.worker.as_ref()
    }

    pub fn worker_mut(&mut self) -> Option<&mut WorkerQueue> {
        self.worker.as_mut()
    }

    /// io_uring_setup with IORING_SETUP_SQPOLL: the ring its thread `thread` serves.
    pub fn setup_sqpoll(&mut self, thread: JobId, iopoll: bool) {
        self.ring = Some(SqRing::new(thread, iopoll));
    }

    pub fn ring(&self) -> Option<&SqRing> {
        self.ring.as_ref()
    }

    pub fn ring_mut(&mut self) -> Option<&mut SqRing> {
        self.ring.as_mut()
    }

    /// The helper threads of the job (offload workers, the SQPOLL thread).
    pub fn helpers(&self) -> impl Iterator<Item = JobId> + '_ {
        let workers = self.offload.iter().flat_map(|o| o.workers.iter().copied());
        workers.chain(self.ring.as_ref().and_then(|r| r.thread))
    }

    // ---- flow (flow.c), wait_for, cpuio, zones, steady state

    /// flow_init_job: its place in a flow.
    pub fn join_flow(&mut self, m: FlowMember) {
        self.flow = Some(m);
    }

    pub fn flow(&self) -> Option<&FlowMember> {
        self.flow.as_ref()
    }

    /// A fresh I/O passed flow control: its counter moves. Returns its group.
    pub fn flow_issued(&mut self) -> Option<usize> {
        let m = self.flow.as_mut()?;
        m.counter += 1;
        Some(m.group)
    }

    /// flow_exit_job: the job leaves its flow.
    pub fn leave_flow(&mut self) -> Option<FlowMember> {
        self.flow.take()
    }

    pub fn wait_for(&self) -> &[JobId] {
        &self.wait_for
    }

    /// wait_for: the jobs that must exit before this one starts.
    pub fn set_wait_for(&mut self, jobs: Vec<JobId>) {
        self.wait_for = jobs;
    }

    pub fn cpuio(&self) -> Option<irqlab_fio::CpuIo> {
        self.cpuio
    }

    /// ns of one cpuio burn cycle.
    pub fn cpuio_cycle_ns(&self) -> u64 {
        self.cpuio_cycle_ns
    }

    /// cpumode=qsort: a cycle is one pass of fio's sort, `ns` on this platform.
    pub fn set_qsort_cycle(&mut self, ns: u64) {
        self.cpuio_cycle_ns = ns;
    }

    pub fn zones(&self) -> Option<&super::zbd::JobZones> {
        self.zones.as_ref()
    }

    pub fn zones_mut(&mut self) -> Option<&mut super::zbd::JobZones> {
        self.zones.as_mut()
    }

    pub fn ss(&self) -> Option<&super::steadystate::SsState> {
        self.ss.as_ref()
    }

    pub fn ss_mut(&mut self) -> Option<&mut super::steadystate::SsState> {
        self.ss.as_mut()
    }

    /// The job starts at `now`: steady state's clock with it.
    pub fn started(&mut self, now: u64) {
        if let Some(ss) = &mut self.ss {
            ss.restart_clock(now);
        }
    }

    /// What steady state reads of the job: td->io_blocks and io_bytes summed over the
    /// directions, and clat_stat's sum and count.
    pub fn ss_inputs(&self) -> (u64, u64, f64, u64) {
        (
            self.done_ios.iter().sum(),
            self.done_bytes.iter().sum(),
            self.clat_sum,
            self.clat_n,
        )
    }

    // ---- trims, held I/Os, quiesce

    pub fn trim_mode(&self) -> TrimMode {
        self.trim_mode
    }

    /// The next trim command: trimwrite's write of the block it just trimmed, else
    /// num_range ranges of the trim block size (io_u.c fill_multi_range_io_u).
    pub fn next_trim(&mut self, unaligned: bool) -> Planned {
        use irqlab_fio::BlockSizes;
        if let Some(bytes) = self.trimwrite_write.take() {
            return Planned {
                ddir: 1,
                bytes,
                cmd: Cmd::Write,
                local: false,
            };
        }
        let ranges = self.num_range.max(1);
        let mut bytes = 0;
        for _ in 0..ranges {
            bytes += match &self.trim_sizes {
                BlockSizes::Fixed(b) => *b,
                sizes => sizes.pick(self.trim_rng.below(1 << 32) as u32, unaligned),
            };
        }
        if self.trim_mode == TrimMode::ThenWrite {
            self.trimwrite_write = Some(bytes);
        }
        Planned {
            ddir: 2,
            bytes,
            cmd: Cmd::Trim {
                ranges: ranges.min(u32::from(u16::MAX)) as u16,
            },
            local: false,
        }
    }

    /// Trims go through a synchronous ioctl (libaio, posixaio: do_io_u_trim).
    pub fn sync_trims(&self) -> bool {
        self.sync_trims
    }

    /// Whether `p` is a trim that goes through the synchronous ioctl.
    pub fn is_sync_trim(&self, p: &Planned) -> bool {
        self.sync_trims && p.ddir == 2 && !p.local
    }

    /// The synchronous command's I/O, while it is in the kernel.
    pub fn sync_io(&self) -> Option<IoId> {
        self.sync_cmd.io
    }

    /// Whether the synchronous command completed.
    pub fn sync_done(&self) -> bool {
        self.sync_cmd.done
    }

    /// The ioctl issues its command (not yet known as `io`).
    pub fn sync_issue(&mut self) {
        self.sync_cmd.done = false;
    }

    /// The ioctl's command is `io`.
    pub fn sync_queued(&mut self, io: IoId) {
        self.sync_cmd.io = Some(io);
    }

    /// The ioctl's command completed.
    pub fn sync_completed(&mut self) {
        self.sync_cmd.done = true;
    }

    /// The ioctl returns: its command, accounted by the caller.
    pub fn sync_returned(&mut self) -> Option<IoId> {
        let io = self.sync_cmd.io.take()?;
        self.sync_cmd.done = false;
        Some(io)
    }

    /// Whether an I/O is held back while the job quiesces.
    pub fn holds(&self) -> bool {
        self.held.is_some()
    }

    /// `p` waits for a quiesce (a zone reset before it, or a synchronous trim).
    pub fn hold(&mut self, p: Planned) {
        self.held = Some(p);
    }

    pub fn take_held(&mut self) -> Option<Planned> {
        self.held.take()
    }

    /// What the job does once its I/O in flight completed, if it quiesces.
    pub fn quiesce(&self) -> Option<AfterQuiesce> {
        self.quiesce
    }

    /// io_u_quiesce, then `then`.
    pub fn quiesce_then(&mut self, then: AfterQuiesce) {
        self.quiesce = Some(then);
    }

    /// The quiesce is over.
    pub fn quiesced(&mut self) {
        self.quiesce = None;
    }

    // ---- termination, errors and the checks on completions

    /// fio's td->terminate.
    pub fn terminated(&self) -> bool {
        self.terminated
    }

    /// fio_terminate_threads (or td->done).
    pub fn terminate(&mut self) {
        self.terminated = true;
    }

    pub fn error(&self) -> Option<&JobError> {
        self.error.as_ref()
    }

    /// Whether completions need account_io_completion's checks.
    #[inline(always)]
    pub fn checks_completions(&self) -> bool {
        self.lat.is_some()
            || self.max_latency_ns.is_some()
            || self.ss.is_some()
            || self.rate_min.is_some()
    }

    /// account_io_completion's checks at `now`: max_latency and the latency target on
    /// the I/O's total latency (lat), and the counters the minimum-rate and steady-state
    /// checks read.
    pub fn account_io_completion(
        &mut self,
        ddir: usize,
        bytes: u64,
        clat: u64,
        lat: u64,
        now: u64,
    ) {
        self.count_done(ddir, bytes, clat);
        if let Some(max) = self.max_latency_ns
            && lat > max
            && self.error.is_none()
        {
            self.error = Some(JobError {
                code: ETIMEDOUT,
                msg: format!("fio: latency of {lat} nsec exceeds specified max ({max} nsec)"),
            });
        }
        let ios: u64 = self.done_ios.iter().sum();
        let Some(l) = &mut self.lat else {
            return;
        };
        match l.io_done(lat, now, ios) {
            LatStep::Quiesce => self.quiesce = Some(AfterQuiesce::LatTarget { final_run: false }),
            LatStep::Fatal => {
                let target = l.cfg.target_ns;
                if self.error.is_none() {
                    self.error = Some(JobError {
                        code: ETIMEDOUT,
                        msg: format!(
                            "fio: latency of {lat} nsec exceeds specified max ({target} nsec)"
                        ),
                    });
                }
            }
            _ => {}
        }
    }

    /// Whether fio's loop checks the minimum rate or the latency target.
    pub fn checks_in_loop(&self) -> bool {
        self.rate_min.is_some() || self.lat.is_some()
    }

    /// backend.c check_min_rate at `now`, `since_start` after the epoch: None when met,
    /// else the job is in error (EIO) and the answer is whether exitall or
    /// exitall_on_error end the others at once.
    pub fn check_min_rate(&mut self, name: &str, now: u64, since_start: u64) -> Option<bool> {
        let (bytes, blocks) = (self.done_bytes, self.done_ios);
        let r = self.rate_min.as_mut()?;
        if !bytes.iter().any(|&b| b > 0) {
            return None;
        }
        let short = r.check(name, now, since_start, bytes, blocks)?;
        self.error = Some(JobError {
            code: EIO,
            msg: short.msg,
        });
        Some(self.exit.exitall || self.exit.on_error)
    }

    /// lat_target_check at the top of fio's loop: a depth change or the final run
    /// quiesces first; the end of the final run terminates the job (td->done).
    pub fn lat_target_check(&mut self, now: u64) {
        let ios: u64 = self.done_ios.iter().sum();
        let Some(l) = &mut self.lat else { return };
        match l.check(now, ios) {
            LatStep::Quiesce => self.quiesce = Some(AfterQuiesce::LatTarget { final_run: false }),
            LatStep::FinalRun => self.quiesce = Some(AfterQuiesce::LatTarget { final_run: true }),
            LatStep::Done => self.terminated = true,
            LatStep::Keep | LatStep::Fatal => {}
        }
    }

    /// lat_new_cycle after the quiesce.
    pub fn lat_new_cycle(&mut self, now: u64) {
        let ios: u64 = self.done_ios.iter().sum();
        if let Some(l) = &mut self.lat {
            l.new_cycle(now, ios);
        }
    }

    /// The latency target's search, if the job has one.
    pub fn lat(&self) -> Option<&LatSearch> {
        self.lat.as_ref()
    }

    // ---- statistics

    /// Trims' statistics over the window.
    pub fn trim_stats(&self) -> &super::state::DirStats {
        &self.trim
    }

    pub fn trim_stats_mut(&mut self) -> &mut super::state::DirStats {
        &mut self.trim
    }

    /// SQPOLL rings disable slat (engines/io_uring.c: td->o.disable_slat = 1).
    pub fn disable_slat(&self) -> bool {
        self.disable_slat
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(pct: f64) -> LatencyTarget {
        LatencyTarget {
            target_ns: 100,
            window_ns: 10,
            percentile: pct,
            run: false,
        }
    }

    #[test]
    fn the_latency_search_doubles_bisects_and_settles_as_io_u_c_does() {
        let mut l = LatSearch::new(target(90.0), 64);
        // Windows that succeed double the depth: 1, 2, 4, 8, 16, 32, 64.
        let mut now = 0;
        let mut ios = 0;
        let mut window = |l: &mut LatSearch, slow: u64| {
            now += 10;
            for i in 0..100 {
                l.io_done(if i < slow { 200 } else { 50 }, now, ios);
                ios += 1;
            }
            l.check(now, ios)
        };
        for want in [2, 4, 8, 16] {
            assert_eq!(window(&mut l, 0), LatStep::Keep);
            assert_eq!(l.qd, want);
        }
        // 16 fails (20% slow): half way down to the last good depth, 8 -> 12.
        assert_eq!(window(&mut l, 20), LatStep::Quiesce);
        assert_eq!(l.qd, 12);
        // 12 succeeds: bisect towards the failed 16: 14, then 15, then 15 again.
        assert_eq!(window(&mut l, 0), LatStep::Keep);
        assert_eq!(l.qd, 14);
        assert_eq!(window(&mut l, 0), LatStep::Keep);
        assert_eq!(l.qd, 15);
        assert_eq!(window(&mut l, 0), LatStep::FinalRun, "the same depth twice");
        assert_eq!(l.qd, 15);
        assert_eq!(window(&mut l, 0), LatStep::Done);
        // At depth 1 a 100% target that an I/O misses is fatal (lat_fatal).
        let mut strict = LatSearch::new(target(100.0), 8);
        assert_eq!(strict.io_done(500, 1, 1), LatStep::Fatal);
    }

    #[test]
    fn the_minimum_rate_waits_two_seconds_then_compares_each_cycle() {
        let cfg = RateMin {
            bytes_per_sec: [1000, 0, 0],
            iops: [0; 3],
            cycle_ms: 1000,
        };
        let mut r = RateMinCheck::new(cfg);
        let s = 1_000_000_000u64;
        assert!(
            r.check("j", s, s, [500, 0, 0], [1, 0, 0]).is_none(),
            "settling"
        );
        assert!(
            r.check("j", 2 * s, 2 * s, [4000, 0, 0], [8, 0, 0])
                .is_none(),
            "first look"
        );
        assert!(
            r.check("j", 2 * s + s / 2, 2 * s + s / 2, [4000, 0, 0], [8, 0, 0])
                .is_none(),
            "within the cycle"
        );
        let short = r
            .check("j", 3 * s, 3 * s, [4500, 0, 0], [9, 0, 0])
            .expect("500 B in a second");
        assert_eq!(short.msg, "j: rate_min=1000B/s not met, got 500B/s");
    }

    #[test]
    fn flow_holds_a_job_ahead_of_its_weight() {
        let g = FlowGroup {
            id: 0,
            counter: 1,
            total_weight: 4,
            members: Vec::new(),
        };
        let m = |counter| FlowMember {
            group: 0,
            weight: 1,
            counter,
            sleep_ns: 0,
        };
        // flow.c: the counter starts at 1; 0/1 is below 1/4.
        assert!(!flow_exceeded(&m(0), &g));
        let g10 = FlowGroup {
            counter: 10,
            ..g.clone()
        };
        assert!(!flow_exceeded(&m(2), &g10), "2/10 <= 1/4");
        assert!(flow_exceeded(&m(3), &g10), "3/10 > 1/4");
    }
}
