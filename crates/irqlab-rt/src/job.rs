//! One fio job clone on its CPU thread: fio's do_io loop (backend.c) reduced to what
//! decides timing: queue I/Os up to `iodepth`, commit every `iodepth_batch_submit`, and
//! once the queue is full reap at least max(1, `iodepth_batch_complete_min`) and at most
//! `iodepth_batch_complete_max` (wait_for_completions in backend.c).

use irqlab_core::hybrid::HybridPoll;
use irqlab_fio::JobSpec;
use irqlab_report::DirReport;
use rand::{Rng, SeedableRng};
use rand_xoshiro::Xoshiro256PlusPlus;
use std::collections::VecDeque;

/// What a job clone does, resolved from its [`JobSpec`] for this runtime.
#[derive(Clone, Debug)]
pub struct JobPlan {
    /// Index of the job in the job file (the report's job).
    pub job: usize,
    pub iodepth: u32,
    pub batch_submit: u32,
    pub complete_min: u32,
    pub complete_max: u32,
    pub bs: u64,
    pub read_pct: u8,
    pub random: bool,
    /// Completions found by polling the CQ (delivery=polled or hybrid, or `hipri`).
    pub polled: bool,
    /// io_uring hybrid IOPOLL: sleep half the fastest completion before polling.
    pub hybrid: bool,
    /// Emulated controllers of `filename=`, served round robin (file_service_type).
    pub controllers: Vec<usize>,
    /// Bytes the offsets range over.
    pub span: u64,
    /// Stop issuing after this many I/Os.
    pub limit_ios: Option<u64>,
    /// Stop issuing this long after the start (runtime + ramp_time).
    pub limit_ns: Option<u64>,
    pub ramp_ns: u64,
}

impl JobPlan {
    /// Resolves clone `clone` of `spec` (job `job` of the file); `span` is the size of
    /// the emulated namespace or the real file; `polled` and `hybrid` come from the
    /// delivery policy (a `hipri` job polls whatever it is).
    pub fn new(
        job: usize,
        spec: &JobSpec,
        controllers: Vec<usize>,
        span: u64,
        polled: bool,
        hybrid: bool,
    ) -> JobPlan {
        let iodepth = spec.effective_iodepth().max(1);
        let bs = spec.bs.max(1);
        let bytes = spec.size.unwrap_or(span).min(span.max(bs));
        let by_size = (bytes / bs).max(1);
        // fio: time_based jobs loop over `size` until the runtime ends.
        let limit_ios = if spec.time_based && spec.runtime_ns.is_some() {
            spec.number_ios
        } else {
            Some(spec.number_ios.map_or(by_size, |n| n.min(by_size)))
        };
        JobPlan {
            job,
            iodepth,
            // The parser resolved the batch sizes as fio's init.c does (JobSpec's fields).
            batch_submit: spec.iodepth_batch_submit,
            complete_min: spec.iodepth_batch_complete_min,
            complete_max: spec.iodepth_batch_complete_max,
            bs,
            read_pct: spec.rw.read_pct(),
            random: spec.rw.is_random(),
            polled: polled || spec.hipri,
            hybrid,
            controllers,
            span: span.max(bs),
            limit_ios,
            limit_ns: spec.total_time_ns(),
            ramp_ns: spec.ramp_time_ns,
        }
    }
}

/// One I/O from the moment fio queues it until it is reaped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Io {
    /// The job clone on its CPU thread.
    pub slot: u32,
    pub controller: usize,
    pub is_read: bool,
    pub offset: u64,
    pub len: u32,
    pub queued_ns: u64,
    pub submit_ns: u64,
}

/// Where a job's committed I/Os go: the CPU thread's submission queues.
pub trait Port {
    /// Submits `ios` as one batch (one io_submit / io_uring_enter, one SQ doorbell per
    /// queue touched).
    fn commit(&mut self, ios: &[Io], now_ns: u64);
}

/// What one call to [`JobRun::step`] did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// Queued, committed or reaped something: call again.
    Progress,
    /// Committed a batch: the caller may reap the CQ right after (reap-after-submit).
    Committed,
    /// The queue is full and fewer than the needed completions are in: wait.
    Blocked,
    /// Every I/O was issued and reaped.
    Finished,
}

/// Per-direction statistics of a clone over the measured window.
#[derive(Clone, Debug, Default)]
pub struct JobStats {
    pub read: DirReport,
    pub write: DirReport,
    pub iodepth_level: [u64; 7],
}

/// A job clone's state on its CPU thread.
pub struct JobRun {
    pub plan: JobPlan,
    slot: u32,
    rng: Xoshiro256PlusPlus,
    start_ns: u64,
    issued: u64,
    next_offset: u64,
    queued: Vec<Io>,
    /// Committed and not yet reaped (fio's cur_depth minus the queued ones).
    inflight: u32,
    done: VecDeque<(Io, u64)>,
    pub stats: JobStats,
    /// Hybrid polling's ring state, for hybrid jobs.
    hybrid: Option<HybridPoll>,
    /// The job is in a wait (blocked since its last commit or reap).
    waiting: bool,
    last_submit_ns: u64,
    /// The end of the hybrid sleep of this wait, while it lasts.
    sleep_until: Option<u64>,
    /// The run was stopped: issue nothing more, wait for what is in flight.
    stopped: bool,
}

impl JobRun {
    pub fn new(plan: JobPlan, slot: u32, seed: u64, start_ns: u64) -> JobRun {
        JobRun {
            slot,
            rng: Xoshiro256PlusPlus::seed_from_u64(seed),
            start_ns,
            issued: 0,
            next_offset: 0,
            queued: Vec::new(),
            inflight: 0,
            done: VecDeque::new(),
            stats: JobStats::default(),
            hybrid: (plan.hybrid && plan.polled).then(HybridPoll::new),
            waiting: false,
            last_submit_ns: 0,
            sleep_until: None,
            stopped: false,
            plan,
        }
    }

    /// The run is stopped at `now_ns` (Ctrl-C): the job issues nothing more and ends once
    /// its I/Os in flight are reaped, as fio's jobs do on SIGINT. Returns true when this
    /// cut it short (it still had I/Os to issue).
    pub fn stop(&mut self, now_ns: u64) -> bool {
        let cut = !self.issuing_over(now_ns);
        self.stopped = true;
        cut
    }

    /// A blocked hybrid job before it polls at `now_ns`: the deadline of the sleep its
    /// wait takes (the same one until it passes), or None to poll now.
    pub fn hybrid_sleep(&mut self, now_ns: u64) -> Option<u64> {
        let h = self.hybrid.as_mut()?;
        if let Some(t) = self.sleep_until {
            if now_ns < t {
                return Some(t);
            }
            self.sleep_until = None;
            return None;
        }
        // No minimum: any sleep the timer can take is taken, as the kernel's hrtimer does.
        self.sleep_until = h.sleep_until(now_ns, self.last_submit_ns, 0);
        self.sleep_until
    }

    /// Waits that slept (hybrid polling).
    pub fn hybrid_sleeps(&self) -> u64 {
        self.hybrid.map_or(0, |h| h.sleeps())
    }

    fn issuing_over(&self, now_ns: u64) -> bool {
        self.stopped
            || self.plan.limit_ios.is_some_and(|n| self.issued >= n)
            || self
                .plan
                .limit_ns
                .is_some_and(|t| now_ns >= self.start_ns.saturating_add(t))
    }

    fn in_window(&self, now_ns: u64) -> bool {
        now_ns >= self.window_start()
    }

    /// When its measured window opens: its start plus its ramp_time.
    pub fn window_start(&self) -> u64 {
        self.start_ns.saturating_add(self.plan.ramp_ns)
    }

    /// fio's cur_depth: queued plus in flight.
    pub fn depth(&self) -> u32 {
        self.queued.len() as u32 + self.inflight
    }

    /// Whether completions handed to it let a blocked job go on (it is runnable).
    pub fn ready(&self) -> bool {
        self.inflight > 0 && self.done.len() >= self.needed()
    }

    /// The completions the job waits for before it can go on (0 when not blocked).
    pub fn needed(&self) -> usize {
        let min = self.plan.complete_min.min(self.inflight).max(1) as usize;
        if self.inflight == 0 { 0 } else { min }
    }

    /// Runs one step of the job loop at `now_ns`.
    pub fn step(&mut self, now_ns: u64, port: &mut impl Port) -> Step {
        let over = self.issuing_over(now_ns);
        if !over && self.depth() < self.plan.iodepth {
            let io = self.prepare(now_ns);
            self.queued.push(io);
            if self.queued.len() as u32 >= self.plan.batch_submit {
                self.commit(now_ns, port);
                return Step::Committed;
            }
            return Step::Progress;
        }
        // td_io_getevents commits what is queued before it waits.
        if !self.queued.is_empty() {
            self.commit(now_ns, port);
            return Step::Committed;
        }
        if self.inflight == 0 {
            return if over { Step::Finished } else { Step::Progress };
        }
        if self.done.len() >= self.needed() {
            self.reap(now_ns);
            return Step::Progress;
        }
        if !self.waiting {
            self.waiting = true;
            if let Some(h) = self.hybrid.as_mut() {
                h.start_wait();
            }
        }
        Step::Blocked
    }

    fn prepare(&mut self, now_ns: u64) -> Io {
        let p = &self.plan;
        let blocks = (p.span / p.bs).max(1);
        let offset = if p.random {
            (self.rng.next_u64() % blocks) * p.bs
        } else {
            let o = self.next_offset;
            self.next_offset = (o + p.bs) % (blocks * p.bs);
            o
        };
        let is_read = (self.rng.next_u64() % 100) < u64::from(p.read_pct);
        let controller = p.controllers[(self.issued % p.controllers.len() as u64) as usize];
        self.issued += 1;
        Io {
            slot: self.slot,
            controller,
            is_read,
            offset,
            len: p.bs as u32,
            queued_ns: now_ns,
            submit_ns: 0,
        }
    }

    fn commit(&mut self, now_ns: u64, port: &mut impl Port) {
        let in_window = self.in_window(now_ns);
        let base = self.inflight;
        for (k, io) in self.queued.iter_mut().enumerate() {
            io.submit_ns = now_ns;
            if in_window {
                let depth = base + k as u32 + 1;
                let bucket = (32 - (depth.max(1) - 1).leading_zeros()).min(6) as usize;
                self.stats.iodepth_level[bucket] += 1;
                let dir = if io.is_read {
                    &mut self.stats.read
                } else {
                    &mut self.stats.write
                };
                dir.slat.record(now_ns - io.queued_ns);
            }
        }
        port.commit(&self.queued, now_ns);
        self.inflight += self.queued.len() as u32;
        self.queued.clear();
        self.last_submit_ns = now_ns;
        self.waiting = false;
    }

    /// The handler completed `io` (blk_mq_end_request into the aio ring / io_uring CQ).
    pub fn complete(&mut self, io: Io, now_ns: u64) {
        if let Some(h) = self.hybrid.as_mut() {
            h.observe(now_ns.saturating_sub(io.submit_ns));
        }
        self.done.push_back((io, now_ns));
    }

    /// io_getevents: takes up to `complete_max` completions; latency ends here.
    fn reap(&mut self, now_ns: u64) {
        self.waiting = false;
        let n = self.done.len().min(self.plan.complete_max as usize);
        let in_window = self.in_window(now_ns);
        for _ in 0..n {
            let Some((io, _)) = self.done.pop_front() else {
                break;
            };
            self.inflight -= 1;
            if !in_window {
                continue;
            }
            let dir = if io.is_read {
                &mut self.stats.read
            } else {
                &mut self.stats.write
            };
            dir.total_ios += 1;
            dir.io_bytes += u64::from(io.len);
            dir.clat.record_clat(now_ns - io.submit_ns);
            dir.lat.record(now_ns - io.queued_ns);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A port that records batches.
    #[derive(Default)]
    struct Recorder {
        batches: Vec<Vec<Io>>,
    }

    impl Port for Recorder {
        fn commit(&mut self, ios: &[Io], _now: u64) {
            self.batches.push(ios.to_vec());
        }
    }

    fn plan(iodepth: u32, batch: u32, cmin: u32, cmax: u32, ios: u64) -> JobPlan {
        JobPlan {
            job: 0,
            iodepth,
            batch_submit: batch,
            complete_min: cmin,
            complete_max: cmax,
            bs: 4096,
            read_pct: 100,
            random: true,
            polled: false,
            hybrid: false,
            controllers: vec![0],
            span: 1 << 30,
            limit_ios: Some(ios),
            limit_ns: None,
            ramp_ns: 0,
        }
    }

    /// Runs the job to the end, completing every committed I/O whenever it blocks.
    fn drive(job: &mut JobRun, port: &mut Recorder) -> Vec<usize> {
        let mut reaped_per_block = Vec::new();
        let mut t = 1_000;
        loop {
            t += 10;
            match job.step(t, port) {
                Step::Finished => return reaped_per_block,
                Step::Blocked => {
                    let batch: Vec<Io> = port.batches.iter().flatten().copied().collect();
                    port.batches.clear();
                    reaped_per_block.push(batch.len());
                    for io in batch {
                        job.complete(io, t);
                    }
                }
                Step::Progress | Step::Committed => {}
            }
        }
    }

    #[test]
    fn batch_submit_commits_in_batches_and_keeps_depth() {
        let mut port = Recorder::default();
        let mut job = JobRun::new(plan(64, 16, 16, 64, 1000), 0, 1, 0);
        // Fill: 64 queued in 4 commits of 16.
        for _ in 0..64 {
            job.step(5, &mut port);
        }
        assert_eq!(port.batches.len(), 4);
        assert!(port.batches.iter().all(|b| b.len() == 16));
        assert_eq!(job.step(6, &mut port), Step::Blocked);
        // 15 completions are not enough for complete_min=16.
        let first: Vec<Io> = port.batches[0].clone();
        for io in &first[..15] {
            job.complete(*io, 7);
        }
        assert_eq!(job.step(8, &mut port), Step::Blocked);
        job.complete(first[15], 9);
        assert_eq!(job.step(10, &mut port), Step::Progress);
        assert_eq!(job.depth(), 48);
        assert_eq!(job.stats.read.total_ios, 16);
    }

    #[test]
    fn every_issued_io_is_reaped_exactly_once() {
        let mut port = Recorder::default();
        let mut job = JobRun::new(plan(8, 8, 0, 8, 1001), 0, 7, 0);
        drive(&mut job, &mut port);
        assert_eq!(job.stats.read.total_ios, 1001);
        assert_eq!(job.stats.read.io_bytes, 1001 * 4096);
        assert_eq!(job.stats.read.clat.count(), 1001);
        assert_eq!(job.depth(), 0);
    }

    #[test]
    fn queue_depth_one_submits_and_waits_for_each_io() {
        let mut port = Recorder::default();
        let mut job = JobRun::new(plan(1, 1, 0, 1, 50), 0, 3, 0);
        let per_block = drive(&mut job, &mut port);
        assert_eq!(per_block.len(), 50);
        assert!(per_block.iter().all(|&n| n == 1));
        assert_eq!(job.stats.iodepth_level[0], 50);
    }

    #[test]
    fn ramp_time_excludes_early_ios_and_runtime_stops_issuing() {
        let mut p = plan(1, 1, 0, 1, u64::MAX);
        p.limit_ios = None;
        p.limit_ns = Some(10_000);
        p.ramp_ns = 5_000;
        let mut port = Recorder::default();
        let mut job = JobRun::new(p, 0, 3, 1_000);
        let per_block = drive(&mut job, &mut port);
        // One I/O per 20 ns of the fake clock over 10 µs, half of it ramp.
        assert!(per_block.len() > 300, "{}", per_block.len());
        let measured = job.stats.read.total_ios as usize;
        assert!(measured < per_block.len() * 6 / 10 && measured > per_block.len() * 4 / 10);
    }

    #[test]
    fn a_hybrid_job_sleeps_half_its_fastest_completion_once_per_wait() {
        let mut p = plan(1, 1, 0, 1, 10);
        p.polled = true;
        p.hybrid = true;
        let mut port = Recorder::default();
        let mut job = JobRun::new(p, 0, 3, 0);
        assert_eq!(job.step(1_000, &mut port), Step::Committed);
        assert_eq!(job.step(1_100, &mut port), Step::Blocked);
        assert_eq!(job.hybrid_sleep(1_100), None, "no completion time yet");
        let io = port.batches.remove(0)[0];
        job.complete(io, 41_000); // 40 µs after submission
        assert_eq!(job.step(41_100, &mut port), Step::Progress);
        assert_eq!(job.step(50_000, &mut port), Step::Committed);
        assert_eq!(job.step(50_100, &mut port), Step::Blocked);
        assert_eq!(job.hybrid_sleep(50_100), Some(70_000), "submit + 40 µs / 2");
        assert_eq!(job.hybrid_sleep(60_000), Some(70_000), "still asleep");
        assert_eq!(job.hybrid_sleep(70_000), None, "awake: poll");
        assert_eq!(job.hybrid_sleep(70_500), None, "once per wait");
        assert_eq!(job.hybrid_sleeps(), 1);
    }

    #[test]
    fn offsets_stay_in_the_span_and_mixed_rw_follows_the_mix() {
        let mut p = plan(4, 1, 0, 4, 4000);
        p.span = 64 * 4096;
        p.read_pct = 70;
        let mut port = Recorder::default();
        let mut job = JobRun::new(p, 0, 11, 0);
        let mut all = Vec::new();
        let mut t = 0;
        while job.issued < 4000 {
            t += 1;
            if job.step(t, &mut port) == Step::Blocked {
                for io in port.batches.drain(..).flatten() {
                    all.push(io);
                    job.complete(io, t);
                }
            }
        }
        assert!(
            all.iter()
                .all(|io| io.offset < 64 * 4096 && io.offset % 4096 == 0)
        );
        let reads = all.iter().filter(|io| io.is_read).count() as f64 / all.len() as f64;
        assert!((0.65..0.75).contains(&reads), "{reads}");
    }
}
