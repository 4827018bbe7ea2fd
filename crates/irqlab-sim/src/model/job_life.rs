//! One fio job clone's record (a thread_data's I/O loop part): what it is made with
//! (build.rs for a job of the file, fio_build.rs for a helper), where its loop is, what it
//! has in flight and its statistics over the window, which the end of ramp_time clears.

use super::fio_job::FioJob;
use super::ids::{DeviceId, IoId, QueueId, ThreadId};
use irqlab_fio::IoEngine;
use irqlab_report::Latency;
use std::collections::VecDeque;

/// Where a fio job thread is in its loop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum JobPhase {
    Start,
    Usr {
        k: u32,
    },
    Submit {
        k: u32,
    },
    /// Reaping the CQ right after a submission (reap_after_submit).
    SubmitReap,
    ReapCall,
    /// Blocked waiting for `waiting_for` events.
    Wait,
    Collect {
        n: u32,
    },
    /// Spinning or reaping in a polled wait.
    Poll,
    PollReap,
    HybridSleep,
    /// Asleep in blk_mq_get_tag with `k` I/Os of its batch still to submit.
    TagWait {
        k: u32,
    },
    /// thinktime_spin: burning CPU, then sleeping `sleep_ns`.
    ThinkSpin {
        sleep_ns: u64,
    },
    /// Sleeping on an hrtimer for the rate clock or thinktime; starts over on waking.
    Pause,
    /// A phase of what fio does besides submitting and reaping (model/fio_ctl.rs).
    Fio(super::fio_ctl::FioPhase),
    /// A virtio notify's exit inside the submit call (model/virtio.rs).
    Kick,
    Done,
}

/// Per-direction statistics of a job.
#[derive(Clone, Debug, Default)]
pub(crate) struct DirStats {
    ios: u64,
    bytes: u64,
    /// slat, clat, lat; allocated at the first I/O of the direction.
    lat: Option<Box<[Latency; 3]>>,
}

impl DirStats {
    /// I/Os completed in the direction.
    pub fn ios(&self) -> u64 {
        self.ios
    }

    /// The direction's report over `runtime_ns` (its latency histograms move into it).
    pub fn report(&mut self, runtime_ns: u64) -> irqlab_report::DirReport {
        let [slat, clat, lat] = match self.lat.take() {
            Some(b) => *b,
            None => [Latency::new(), Latency::new(), Latency::new()],
        };
        irqlab_report::DirReport {
            total_ios: self.ios,
            io_bytes: self.bytes,
            runtime_ns,
            slat,
            clat,
            lat,
            ..irqlab_report::DirReport::default()
        }
    }

    #[inline(always)]
    pub fn record(&mut self, bytes: u64, slat: u64, clat: u64, lat: u64) {
        let l = self.count(bytes);
        l[0].record(slat);
        l[1].record_clat(clat);
        l[2].record(lat);
    }

    /// `record` without a slat sample: fio's disable_slat (SQPOLL rings).
    #[inline(always)]
    pub fn record_without_slat(&mut self, bytes: u64, clat: u64, lat: u64) {
        let l = self.count(bytes);
        l[1].record_clat(clat);
        l[2].record(lat);
    }

    /// One I/O of `bytes` done: its histograms (slat, clat, lat) for the samples.
    #[inline(always)]
    fn count(&mut self, bytes: u64) -> &mut [Latency; 3] {
        self.ios += 1;
        self.bytes += bytes;
        self.lat
            .get_or_insert_with(|| Box::new([Latency::new(), Latency::new(), Latency::new()]))
    }
}

pub(crate) struct Job {
    name: String,
    /// What its section and clone made it (build.rs): some of it changes as it runs
    /// (its ramp's end and end time, polling handed to an SQPOLL thread).
    shape: JobShape,
    thread: ThreadId,
    engine: irqlab_fio::IoEngine,
    /// Queues the job's files map to from its CPU (round robin per I/O).
    queues: Vec<QueueId>,
    /// The devices its files name, in order (a moved job's queues are remapped).
    devices: Vec<DeviceId>,
    next_file: usize,
    issued: u64,
    /// Submitted and not yet reaped by the job.
    outstanding: u32,
    /// Completed by the kernel, waiting for the job's reap call.
    ready: VecDeque<IoId>,
    waiting_for: u32,
    phase: JobPhase,
    batch_start: u64,
    /// io_uring hybrid IOPOLL's ring state (used when `hybrid`).
    hybrid_poll: irqlab_core::hybrid::HybridPoll,
    last_submit: u64,
    finished_at: u64,
    // statistics over the window
    read: DirStats,
    write: DirStats,
    usr: u64,
    sys: u64,
    ctx: u64,
    /// Times its thread moved to another CPU (perf's migrations; fio has no field).
    migrations: u64,
    depth_level: [u64; 7],
    /// fio's job state beyond the queue (model/fio_job.rs).
    fio: Box<super::fio_job::FioJob>,
}

/// What a job is made of by its section and clone (build.rs new_job): its reporting
/// group and options, its costs, depth and batch sizes, polling, and its time bounds.
pub(crate) struct JobShape {
    pub groupid: u32,
    pub options: Vec<(String, String)>,
    /// The device's submitter costs, replacing the engine's (DSA), and fio's user-space
    /// work per I/O (0 with a device submitter).
    pub submitter: Option<crate::platform::SyscallCosts>,
    pub usr_io: u64,
    pub iodepth: u32,
    pub batch_submit: u32,
    pub complete_min: u32,
    pub complete_max: u32,
    pub polled: bool,
    pub hybrid: bool,
    pub ramp_end: u64,
    pub end: Option<u64>,
    pub io_limit: Option<u64>,
}

impl Default for JobShape {
    /// A job that has issued nothing: iodepth 1, batches of one, no limit and no end,
    /// not polling, in no reporting group but 0.
    fn default() -> Self {
        JobShape {
            groupid: 0,
            options: Vec::new(),
            submitter: None,
            usr_io: 0,
            iodepth: 1,
            batch_submit: 1,
            complete_min: 1,
            complete_max: 1,
            polled: false,
            hybrid: false,
            ramp_end: 0,
            end: None,
            io_limit: None,
        }
    }
}

impl Job {
    /// A job that has issued nothing, of `shape` (build.rs makes the file's jobs from
    /// their section and clone).
    pub(crate) fn of_file(
        name: String,
        thread: ThreadId,
        engine: IoEngine,
        queues: Vec<QueueId>,
        devices: Vec<DeviceId>,
        fio: FioJob,
        shape: JobShape,
    ) -> Job {
        Job {
            name,
            ready: VecDeque::with_capacity(shape.iodepth.min(4096) as usize),
            shape,
            thread,
            engine,
            queues,
            devices,
            next_file: 0,
            issued: 0,
            outstanding: 0,
            waiting_for: 0,
            phase: JobPhase::Start,
            batch_start: 0,
            hybrid_poll: irqlab_core::hybrid::HybridPoll::new(),
            last_submit: 0,
            finished_at: 0,
            read: DirStats::default(),
            write: DirStats::default(),
            usr: 0,
            sys: 0,
            ctx: 0,
            migrations: 0,
            depth_level: [0; 7],
            fio: Box::new(fio),
        }
    }

    /// A helper thread of job `parent` (an offload worker, a SQPOLL thread; fio_build.rs),
    /// in its group, polling as it does, starting in `phase`.
    pub(crate) fn helper(
        parent: &Job,
        name: String,
        thread: ThreadId,
        queues: Vec<QueueId>,
        fio: FioJob,
        phase: JobPhase,
    ) -> Job {
        let shape = JobShape {
            groupid: parent.shape.groupid,
            polled: parent.shape.polled,
            hybrid: parent.shape.hybrid,
            ..JobShape::default()
        };
        let engine = parent.engine;
        let devices = parent.devices.clone();
        Job {
            phase,
            ..Job::of_file(name, thread, engine, queues, devices, fio, shape)
        }
    }

    /// Its statistics start from zero at `now` (libfio.c reset_all_stats): at the end of
    /// its own ramp_time, or when the machine's window opens.
    pub(crate) fn reset_window(&mut self, now: u64) {
        self.read = DirStats::default();
        self.write = DirStats::default();
        self.usr = 0;
        self.sys = 0;
        self.ctx = 0;
        self.migrations = 0;
        self.depth_level = [0; 7];
        self.fio.reset_window(now);
    }

    #[inline]
    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    #[inline]
    pub(crate) fn groupid(&self) -> u32 {
        self.shape.groupid
    }

    #[inline]
    pub(crate) fn options(&self) -> &[(String, String)] {
        &self.shape.options
    }

    #[inline]
    pub(crate) fn thread(&self) -> ThreadId {
        self.thread
    }

    #[inline]
    pub(crate) fn engine(&self) -> IoEngine {
        self.engine
    }

    /// The device's submitter costs, replacing the engine's (DSA).
    #[inline]
    pub(crate) fn submitter(&self) -> Option<&crate::platform::SyscallCosts> {
        self.shape.submitter.as_ref()
    }

    /// fio's user-space work per I/O (0 with a device submitter), ns.
    #[inline]
    pub(crate) fn usr_io(&self) -> u64 {
        self.shape.usr_io
    }

    /// Queues the job's files map to from its CPU (round robin per I/O).
    #[inline]
    pub(crate) fn queues(&self) -> &[QueueId] {
        &self.queues
    }

    /// The devices its files name, in order.
    #[inline]
    pub(crate) fn devices(&self) -> &[DeviceId] {
        &self.devices
    }

    #[inline]
    pub(crate) fn iodepth(&self) -> u32 {
        self.shape.iodepth
    }

    #[inline]
    pub(crate) fn batch_submit(&self) -> u32 {
        self.shape.batch_submit
    }

    #[inline]
    pub(crate) fn complete_min(&self) -> u32 {
        self.shape.complete_min
    }

    #[inline]
    pub(crate) fn complete_max(&self) -> u32 {
        self.shape.complete_max
    }

    #[inline]
    pub(crate) fn polled(&self) -> bool {
        self.shape.polled
    }

    #[inline]
    pub(crate) fn hybrid(&self) -> bool {
        self.shape.hybrid
    }

    /// When its ramp_time ends and its statistics count, ns.
    #[inline]
    pub(crate) fn ramp_end(&self) -> u64 {
        self.shape.ramp_end
    }

    /// When its runtime ends (None: no time bound, or not started).
    #[inline]
    pub(crate) fn end(&self) -> Option<u64> {
        self.shape.end
    }

    #[inline]
    pub(crate) fn io_limit(&self) -> Option<u64> {
        self.shape.io_limit
    }

    #[inline]
    pub(crate) fn issued(&self) -> u64 {
        self.issued
    }

    /// Submitted and not yet reaped by the job.
    #[inline]
    pub(crate) fn outstanding(&self) -> u32 {
        self.outstanding
    }

    #[inline]
    pub(crate) fn waiting_for(&self) -> u32 {
        self.waiting_for
    }

    #[inline]
    pub(crate) fn phase(&self) -> JobPhase {
        self.phase
    }

    /// When the batch being submitted started (fio's io_u start time), ns.
    #[inline]
    pub(crate) fn batch_start(&self) -> u64 {
        self.batch_start
    }

    #[inline]
    pub(crate) fn finished_at(&self) -> u64 {
        self.finished_at
    }

    #[inline]
    pub(crate) fn usr(&self) -> u64 {
        self.usr
    }

    #[inline]
    pub(crate) fn sys(&self) -> u64 {
        self.sys
    }

    #[inline]
    pub(crate) fn ctx(&self) -> u64 {
        self.ctx
    }

    /// Times its thread moved to another CPU (perf's migrations; fio has no field).
    #[inline]
    pub(crate) fn migrations(&self) -> u64 {
        self.migrations
    }

    /// io_u_mark_depth's buckets over the window.
    #[inline]
    pub(crate) fn depth_level(&self) -> [u64; 7] {
        self.depth_level
    }

    /// fio's job state beyond the queue (model/fio_job.rs).
    #[inline]
    pub(crate) fn fio(&self) -> &FioJob {
        &self.fio
    }

    #[inline]
    pub(crate) fn fio_mut(&mut self) -> &mut FioJob {
        &mut self.fio
    }

    /// Completions waiting for its reap call.
    #[inline]
    pub(crate) fn ready_len(&self) -> usize {
        self.ready.len()
    }

    /// Enough completions are ready for the reap call it waits in.
    #[inline]
    pub(crate) fn enough_ready(&self) -> bool {
        self.ready.len() as u32 >= self.waiting_for
    }

    /// Its loop goes on to `phase`.
    #[inline]
    pub(crate) fn enter_phase(&mut self, phase: JobPhase) {
        self.phase = phase;
    }

    /// Its reap call waits for `n` events (io_getevents' min_nr, io_uring's min_complete).
    #[inline]
    pub(crate) fn wait_for(&mut self, n: u32) {
        self.waiting_for = n;
    }

    /// The kernel completed `io`: it waits in the job's completion ring for a reap call.
    #[inline]
    pub(crate) fn io_completed(&mut self, io: IoId) {
        self.ready.push_back(io);
    }

    /// A reap call copies out the oldest completion.
    #[inline]
    pub(crate) fn reap_ready(&mut self) -> Option<IoId> {
        self.ready.pop_front()
    }

    /// Every completion waiting, taken out (a SQPOLL thread's, for its ring's owner).
    pub(crate) fn take_ready(&mut self) -> Vec<IoId> {
        self.ready.drain(..).collect()
    }

    /// Completions another thread's task_work put in its ring (sqpoll.rs).
    pub(crate) fn completions_posted(&mut self, done: Vec<IoId>) {
        self.ready.extend(done);
    }

    /// It starts a batch whose I/Os carry start time `at`.
    #[inline]
    pub(crate) fn start_batch(&mut self, at: u64) {
        self.batch_start = at;
    }

    /// It submitted `k` I/Os at `now` (fio's io_issues counts them). Returns the depth
    /// reached.
    #[inline]
    pub(crate) fn submitted(&mut self, k: u32, now: u64) -> u32 {
        self.outstanding += k;
        self.issued += u64::from(k);
        self.fio.io_issued(k);
        self.last_submit = now;
        self.outstanding
    }

    /// cpuio: a burn cycle counts as an issue.
    #[inline]
    pub(crate) fn issued_cycle(&mut self) {
        self.issued += 1;
    }

    /// It reaped `n` of its I/Os.
    #[inline]
    pub(crate) fn reaped(&mut self, n: u32) {
        self.outstanding -= n;
    }

    /// io_u_mark_depth: `k` I/Os committed at depth `depth`, in the window.
    #[inline]
    pub(crate) fn mark_depth(&mut self, depth: u32, k: u32) {
        self.depth_level[super::fio_job::depth_bucket(depth)] += u64::from(k);
    }

    /// The queue of its next I/O, `ahead` I/Os after the next (round robin over its files).
    #[inline]
    pub(crate) fn queue_ahead(&self, ahead: usize) -> QueueId {
        self.queues[(self.next_file + ahead) % self.queues.len()]
    }

    /// Its next I/O went to the next file's queue: returns the queue of the one after.
    #[inline]
    pub(crate) fn next_file(&mut self) -> QueueId {
        self.next_file = (self.next_file + 1) % self.queues.len();
        self.queues[self.next_file]
    }

    /// One completed I/O of direction `ddir` in its statistics (stat.c add_*_sample),
    /// with the batch's log time `elapsed`.
    #[inline(always)]
    pub(crate) fn record_io(
        &mut self,
        elapsed: u64,
        ddir: usize,
        bytes: u64,
        (slat, clat, lat): (u64, u64, u64),
    ) {
        let no_slat = self.fio.ctl().disable_slat();
        let dir = match ddir {
            0 => &mut self.read,
            1 => &mut self.write,
            _ => self.fio.ctl_mut().trim_stats_mut(),
        };
        if no_slat {
            dir.record_without_slat(bytes, clat, lat);
        } else {
            dir.record(bytes, slat, clat, lat);
        }
        self.fio.completed(elapsed, ddir, bytes, slat, clat, lat);
    }

    /// Its thread was switched out.
    #[inline]
    pub(crate) fn context_switched(&mut self) {
        self.ctx += 1;
    }

    /// `dt` ns of its thread's time of `kind` (usr or sys; other kinds are not a job's).
    #[inline(always)]
    pub(crate) fn charge(&mut self, kind: crate::observer::SliceKind, dt: u64) {
        match kind {
            crate::observer::SliceKind::Usr => self.usr += dt,
            crate::observer::SliceKind::Sys => self.sys += dt,
            _ => {}
        }
    }

    /// Its thread moved to another CPU, where its files map to `queues`; `counted` in
    /// the window.
    pub(crate) fn migrated(&mut self, queues: Vec<QueueId>, counted: bool) {
        self.queues = queues;
        if counted {
            self.migrations += 1;
        }
    }

    /// It starts at `now` (backend.c thread_main): its ramp_time and runtime run from here.
    pub(crate) fn start(&mut self, now: u64, window_start: u64) {
        self.fio.start(now, window_start);
        self.shape.ramp_end = self.fio.measure_from();
        self.shape.end = self.fio.total_ns().map(|t| now + t);
    }

    /// Its statistics count from `at` (a latency target's final run, reset_all_stats).
    pub(crate) fn measure_from(&mut self, at: u64) {
        self.shape.ramp_end = at;
    }

    /// It exited at `now`.
    pub(crate) fn finished(&mut self, now: u64) {
        self.finished_at = now;
    }

    /// io_uring hybrid IOPOLL: when to wake from its sleep of half the fastest
    /// completion since its last submission, if it sleeps.
    #[inline]
    pub(crate) fn hybrid_sleep_until(&mut self, now: u64, hrtimer: u64) -> Option<u64> {
        self.hybrid_poll.sleep_until(now, self.last_submit, hrtimer)
    }

    /// It starts waiting for completions (the hybrid ring's sleep is taken once a wait).
    #[inline]
    pub(crate) fn start_wait(&mut self) {
        self.hybrid_poll.start_wait();
    }

    /// A completion it polled took `rt` ns (the hybrid ring's fastest).
    #[inline]
    pub(crate) fn observe_completion(&mut self, rt: u64) {
        self.hybrid_poll.observe(rt);
    }

    /// Its ring's SQPOLL thread polls the device's queues: it spins on its CQ ring
    /// instead, and sleeps no hybrid sleep.
    pub(crate) fn hand_polling_to_sqpoll(&mut self) {
        self.shape.polled = false;
        self.shape.hybrid = false;
    }

    /// A SQPOLL thread polls without hybrid sleeps.
    pub(crate) fn poll_without_sleep(&mut self) {
        self.shape.hybrid = false;
    }

    /// wait_for: it starts when its waitees have exited, not with its wave. Returns
    /// whether it was going to start with its wave.
    pub(crate) fn hold_for_waitees(&mut self) -> bool {
        if !self.fio.defer_start() {
            return false;
        }
        self.shape.end = None;
        true
    }

    /// The report's view of its window: its read and write statistics and fio's state,
    /// which the report takes its histograms and logs out of.
    pub(crate) fn window_stats_mut(&mut self) -> (&mut DirStats, &mut DirStats, &mut FioJob) {
        (&mut self.read, &mut self.write, &mut self.fio)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::observer::SliceKind;

    fn job(queues: usize) -> Job {
        job_of(
            "[j]\nfilename=/dev/nvme0n1\nrw=randread\niodepth=4\n",
            queues,
        )
    }

    fn job_of(text: &str, queues: usize) -> Job {
        let specs = irqlab_fio::parse_str(text, std::path::Path::new("t.fio")).expect("job file");
        let fio = FioJob::new(&specs[0], 1, 0, None, 1);
        let queues = (0..queues).map(QueueId::new).collect();
        Job::of_file(
            "j".into(),
            ThreadId::new(0),
            IoEngine::Libaio,
            queues,
            vec![DeviceId::new(0)],
            fio,
            JobShape::default(),
        )
    }

    #[test]
    fn what_it_submits_is_outstanding_until_reaped() {
        let mut j = job(1);
        assert_eq!(j.submitted(3, 100), 3);
        assert_eq!(j.submitted(1, 200), 4, "the depth reached");
        assert_eq!((j.issued(), j.fio().issues()), (4, 4));
        j.reaped(3);
        assert_eq!(j.outstanding(), 1);
        assert_eq!(j.issued(), 4, "reaping does not undo an issue");
    }

    #[test]
    fn a_reap_call_is_satisfied_by_enough_completions_in_order() {
        let mut j = job(1);
        j.wait_for(2);
        j.io_completed(IoId::new(7));
        assert!(!j.enough_ready());
        j.io_completed(IoId::new(5));
        assert!(j.enough_ready());
        assert_eq!(
            j.reap_ready(),
            Some(IoId::new(7)),
            "the oldest completion first"
        );
        assert_eq!(j.take_ready(), vec![IoId::new(5)]);
        assert_eq!((j.ready_len(), j.reap_ready()), (0, None));
    }

    #[test]
    fn files_are_taken_round_robin() {
        let mut j = job(3);
        assert_eq!(j.queue_ahead(0), QueueId::new(0));
        assert_eq!(j.queue_ahead(4), QueueId::new(1));
        let next: Vec<QueueId> = (0..4).map(|_| j.next_file()).collect();
        assert_eq!(next, [1, 2, 0, 1].map(QueueId::new));
    }

    #[test]
    fn disable_slat_records_clat_and_lat_only() {
        let mut plain = job(1);
        plain.record_io(0, 0, 4096, (10, 20, 30));
        let lat = plain.read.lat.as_ref().expect("samples");
        assert_eq!([lat[0].count(), lat[1].count(), lat[2].count()], [1, 1, 1]);
        // engines/io_uring.c: a SQPOLL ring sets disable_slat.
        let text = "[j]\nfilename=/dev/nvme0n1\nrw=randread\nioengine=io_uring\nsqthread_poll=1\n";
        let mut j = job_of(text, 1);
        assert!(j.fio().ctl().disable_slat());
        j.record_io(0, 0, 4096, (10, 20, 30));
        j.record_io(0, 0, 4096, (10, 20, 30));
        let lat = j.read.lat.as_ref().expect("samples");
        assert_eq!((j.read.ios, j.read.bytes), (2, 8192));
        assert_eq!([lat[0].count(), lat[1].count(), lat[2].count()], [0, 2, 2]);
        assert_eq!(j.write.ios, 0);
    }

    #[test]
    fn the_window_reset_clears_its_statistics() {
        let mut j = job(1);
        j.charge(SliceKind::Usr, 5);
        j.charge(SliceKind::Sys, 7);
        j.charge(SliceKind::HardIrq, 11);
        j.context_switched();
        j.migrated(vec![QueueId::new(2)], true);
        j.migrated(vec![QueueId::new(3)], false);
        j.submitted(2, 0);
        j.mark_depth(2, 2);
        assert_eq!((j.usr(), j.sys(), j.ctx(), j.migrations()), (5, 7, 1, 1));
        assert_eq!(j.queues(), [QueueId::new(3)]);
        j.reset_window(100);
        assert_eq!((j.usr(), j.sys(), j.ctx(), j.migrations()), (0, 0, 0, 0));
        assert_eq!(j.depth_level(), [0; 7]);
        assert_eq!(j.outstanding(), 2, "I/Os in flight outlive the window");
    }
}
