//! What fio does around each I/O besides submitting and reaping it, for one job clone:
//! its start (startdelay, stonewall waves), its epoch (reset when ramp_time ends), block
//! sizes and read/write draws from fio's per-job seeds, the rate clock, think time, the
//! bandwidth and IOPS samples (bwavgtime/iopsavgtime) and the log files. The job loop in
//! `job.rs` asks it what to issue; the report reads its counters.

use super::commands::Cmd;
use super::fio_ctl::FlowGroup;
use super::fio_ctl::{FioCtl, Role, TrimMode};
use super::ids::JobId;
use super::zbd::ZoneMap;
use crate::rng::Stream;
use irqlab_fio::seeds::{self, RAND_BS_READ, RAND_BS_WRITE, RAND_MIX, RAND_START_DELAY};
use irqlab_fio::{BlockSizes, JobSpec, RateClock, ThinkTime};
use irqlab_report::IoStat;
use irqlab_report::fio_log::{IoLog, LogKind};
use std::num::NonZeroU64;

/// One I/O the job decided to issue: direction (0 read, 1 write, 2 trim), size and
/// command.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Planned {
    pub ddir: usize,
    pub bytes: u64,
    pub cmd: Cmd,
    /// It completes in fio's own code, with no command (a zoned trim).
    pub local: bool,
}

/// io_u.c __io_u_mark_map: the bucket of a submit or reap call of `n` I/Os.
pub(crate) fn calls_bucket(n: u32) -> usize {
    match n {
        0 => 0,
        1..=4 => 1,
        5..=8 => 2,
        9..=16 => 3,
        17..=32 => 4,
        33..=64 => 5,
        _ => 6,
    }
}

/// io_u.c io_u_mark_depth: the bucket of the depth after a submit (1, 2-3, 4-7, 8-15,
/// 16-31, 32-63, >=64).
pub(crate) fn depth_bucket(depth: u32) -> usize {
    match depth {
        0..=1 => 0,
        2..=3 => 1,
        4..=7 => 2,
        8..=15 => 3,
        16..=31 => 4,
        32..=63 => 5,
        _ => 6,
    }
}

/// stat.c __add_samples for one kind (bandwidth or IOPS): a sample every interval since
/// the epoch when the interval saw completions, or one per I/O (no interval) when a
/// per-I/O log asks for it.
#[derive(Clone, Debug, Default)]
pub(crate) struct Periodic {
    interval_ms: Option<NonZeroU64>,
    next: u64,
    /// Bytes (bandwidth) or I/Os (IOPS) done since the epoch, and at the last sample.
    done: [u64; 2],
    last: [u64; 2],
    stat: [IoStat; 2],
}

impl Periodic {
    fn new(interval_ms: u64) -> Periodic {
        Periodic {
            interval_ms: NonZeroU64::new(interval_ms),
            ..Periodic::default()
        }
    }

    fn restart(&mut self, now: u64) {
        *self = Periodic {
            interval_ms: self.interval_ms,
            // Without an interval nothing is ever due: the completion path's test fails.
            next: self
                .interval_ms
                .map_or(u64::MAX, |m| now + m.get() * 1_000_000),
            ..Periodic::default()
        };
    }

    /// Whether an interval may have ended by `now` (the test per completion).
    #[inline]
    fn due(&self, now: u64) -> bool {
        self.next <= now
    }

    /// The intervals that ended by `now`: `rate(delta, ms)` is the sample of each
    /// direction with work in it (`fixed` is the `bs` column of the log line).
    fn flush(
        &mut self,
        now: u64,
        epoch: u64,
        fixed: [u64; 2],
        mut log: Option<&mut IoLog>,
        rate: impl Fn(u64, NonZeroU64) -> u64,
    ) {
        let Some(ms) = self.interval_ms else { return };
        while self.next <= now {
            let at = (self.next - epoch) / 1_000_000;
            for (d, bs) in fixed.into_iter().enumerate() {
                let delta = self.done[d] - self.last[d];
                if delta == 0 {
                    continue;
                }
                let v = rate(delta, ms);
                self.stat[d].add(v);
                if let Some(l) = log.as_deref_mut() {
                    l.add(at, d, v, bs);
                }
                self.last[d] = self.done[d];
            }
            self.next += ms.get() * 1_000_000;
        }
    }
}

/// Bandwidth in KiB/s and IOPS, as fio samples them.
#[derive(Clone, Debug, Default)]
pub(crate) struct Sampler {
    bw: Periodic,
    iops: Periodic,
}

/// The job's log files (write_lat_log gives lat, clat and slat).
#[derive(Clone, Debug, Default)]
pub(crate) struct Logs {
    lat: Option<[IoLog; 3]>,
    bw: Option<IoLog>,
    iops: Option<IoLog>,
}

impl Logs {
    /// The logs job clone `thread_number` of `spec` writes (write_lat_log,
    /// write_bw_log, write_iops_log; an empty prefix is the job's name).
    fn for_job(spec: &JobSpec, thread_number: u32) -> Logs {
        Logs {
            lat: spec.logs.lat.as_ref().map(|p| {
                let prefix = if p.is_empty() { spec.name.as_str() } else { p };
                [LogKind::Lat, LogKind::Clat, LogKind::Slat].map(|k| {
                    IoLog::new(
                        k,
                        prefix,
                        thread_number,
                        spec.logs.per_job,
                        spec.logs.avg_msec,
                    )
                })
            }),
            bw: spec.logs.bw.as_ref().map(|p| {
                let prefix = if p.is_empty() { spec.name.as_str() } else { p };
                // init.c: with bwavgtime set, the log averages over the shorter of the two.
                let avg = if spec.bw_avg_set {
                    spec.logs.avg_msec.min(spec.bw_avg_ms)
                } else {
                    spec.logs.avg_msec
                };
                IoLog::new(LogKind::Bw, prefix, thread_number, spec.logs.per_job, avg)
            }),
            iops: spec.logs.iops.as_ref().map(|p| {
                let prefix = if p.is_empty() { spec.name.as_str() } else { p };
                let avg = if spec.iops_avg_set {
                    spec.logs.avg_msec.min(spec.iops_avg_ms)
                } else {
                    spec.logs.avg_msec
                };
                IoLog::new(LogKind::Iops, prefix, thread_number, spec.logs.per_job, avg)
            }),
        }
    }
}

/// fio's state of one job clone beyond the queue: private, read through accessors,
/// changed by methods named for what fio does.
pub(crate) struct FioJob {
    /// fio's 1-based thread_number (clones count).
    thread_number: u32,
    /// Stonewall wave: the job starts when every job of earlier waves has exited.
    wave: u32,
    startdelay_ns: u64,
    ramp_ns: u64,
    total_ns: Option<u64>,
    /// When the job started (its thread became runnable).
    started_at: u64,
    started: bool,
    /// When its statistics start: its ramp end, not before the machine's window.
    measure_from: u64,
    /// fio's td->epoch: the start, then the end of ramp_time.
    epoch: u64,
    block_sizes: [BlockSizes; 2],
    unaligned: bool,
    /// min_bs == max_bs per direction, for the `bs` column of periodic samples.
    fixed_bs: [u64; 2],
    bs_rng: [Stream; 2],
    mix_rng: Stream,
    poisson_rng: [Stream; 2],
    read_pct: u8,
    /// A random pattern (zoned writes pick a random zone).
    random: bool,
    rate: Option<RateClock>,
    /// The direction drawn but held back by the rate clock.
    next_ddir: Option<usize>,
    think: Option<ThinkTime>,
    think_last: u64,
    stalling: bool,
    /// Blocks issued and completed since the epoch (thinktime_blocks counts these).
    issues: u64,
    completions: u64,
    issued_bytes: u64,
    byte_limit: Option<u64>,
    batch: Vec<Planned>,
    submit_hist: [u64; 7],
    complete_hist: [u64; 7],
    submit_calls: u64,
    complete_calls: u64,
    samples: Sampler,
    logs: Logs,
    /// What the report needs of the job file.
    description: Option<String>,
    group_reporting: bool,
    clat_percentiles: bool,
    iodepth: u32,
    /// Submission, flow, minimum rates, latency targets, steady state, cpuio, trims,
    /// zones and errors (model/fio_ctl.rs).
    ctl: FioCtl,
}

impl FioJob {
    /// The state of clone `thread_number` of `spec`; `seed_override` replaces randseed
    /// (the command line's --seed), `run_seed` stands in for fio's system random seed.
    pub fn new(
        spec: &JobSpec,
        thread_number: u32,
        wave: u32,
        seed_override: Option<u64>,
        run_seed: u64,
    ) -> FioJob {
        // init.c setup_random_seeds: randseed (default 0x89) when repeatable or set;
        // otherwise fio reads /dev/urandom, and the model takes the run's seed.
        let rand_seed = seed_override.unwrap_or(match spec.randseed {
            Some(s) => s,
            None if spec.randrepeat => seeds::DEFAULT_RANDSEED,
            None => run_seed,
        });
        let s = seeds::rand_seeds(rand_seed, u64::from(thread_number));
        let stream = |i: usize| Stream::new(s[i], i as u64);
        let mut delay_rng = stream(RAND_START_DELAY);
        let (lo, hi) = spec.startdelay_ns;
        // init.c: a startdelay range is drawn once per job from its delay stream.
        let startdelay_ns = if hi > lo {
            lo + delay_rng.below(hi - lo + 1)
        } else {
            lo
        };
        let logs = Logs::for_job(spec, thread_number);
        let ctl = FioCtl::of(spec, &s);
        let fixed_bs = [0, 1].map(|d| {
            let b = &spec.block_sizes[d];
            if b.min() == b.max() { b.min() } else { 0 }
        });
        FioJob {
            thread_number,
            wave,
            startdelay_ns,
            ramp_ns: spec.ramp_time_ns,
            total_ns: spec.total_time_ns(),
            started_at: 0,
            started: false,
            measure_from: 0,
            epoch: 0,
            block_sizes: spec.block_sizes.clone(),
            unaligned: spec.bs_unaligned,
            fixed_bs,
            bs_rng: [stream(RAND_BS_READ), stream(RAND_BS_WRITE)],
            mix_rng: stream(RAND_MIX),
            poisson_rng: [
                stream(seeds::RAND_POISSON_READ),
                stream(seeds::RAND_POISSON_WRITE),
            ],
            read_pct: spec.rw.read_pct(),
            random: spec.rw.is_random(),
            rate: RateClock::new(&spec.rate, &spec.block_sizes),
            next_ddir: None,
            think: spec.thinktime,
            think_last: 0,
            stalling: false,
            issues: 0,
            completions: 0,
            issued_bytes: 0,
            byte_limit: if spec.time_based { None } else { spec.size },
            batch: Vec::new(),
            submit_hist: [0; 7],
            complete_hist: [0; 7],
            submit_calls: 0,
            complete_calls: 0,
            samples: Sampler {
                bw: Periodic::new(spec.bw_avg_ms),
                iops: Periodic::new(spec.iops_avg_ms),
            },
            logs,
            description: spec.description.clone(),
            group_reporting: spec.group_reporting,
            clat_percentiles: spec.clat_percentiles,
            iodepth: spec.effective_iodepth(),
            ctl,
        }
    }

    /// The job starts at `now`: its epoch, ramp end and the machine window give when
    /// its statistics start.
    pub fn start(&mut self, now: u64, window_start: u64) {
        self.started = true;
        self.started_at = now;
        self.epoch = now;
        self.ctl.started(now);
        self.measure_from = (now + self.ramp_ns).max(window_start);
        self.samples.restart(now);
    }

    /// libfio.c reset_all_stats at the end of ramp_time: a new epoch, the rate clock and
    /// every counter from zero.
    pub fn reset_window(&mut self, now: u64) {
        self.epoch = now;
        if let Some(r) = &mut self.rate {
            r.reset();
        }
        self.ctl.reset_window(now);
        self.issues = 0;
        self.completions = 0;
        self.think_last = 0;
        self.submit_hist = [0; 7];
        self.complete_hist = [0; 7];
        self.submit_calls = 0;
        self.complete_calls = 0;
        self.samples.restart(now);
    }

    /// A helper thread's state (an offload worker, a SQPOLL thread) of job clone
    /// `thread_number` in `wave`: no logs, and none of the job's own mechanisms.
    pub fn helper(spec: &JobSpec, thread_number: u32, wave: u32, role: Role) -> FioJob {
        let mut fio = FioJob::new(spec, thread_number, wave, None, 0);
        fio.logs = Logs::default();
        fio.ctl = FioCtl::helper(role, spec);
        fio
    }

    pub fn thread_number(&self) -> u32 {
        self.thread_number
    }

    /// Its stonewall wave.
    pub fn wave(&self) -> u32 {
        self.wave
    }

    pub fn startdelay_ns(&self) -> u64 {
        self.startdelay_ns
    }

    /// ramp_time plus runtime, when the job is time-bound.
    pub fn total_ns(&self) -> Option<u64> {
        self.total_ns
    }

    pub fn started(&self) -> bool {
        self.started
    }

    pub fn started_at(&self) -> u64 {
        self.started_at
    }

    /// When its statistics start.
    pub fn measure_from(&self) -> u64 {
        self.measure_from
    }

    /// fio's td->epoch.
    pub fn epoch(&self) -> u64 {
        self.epoch
    }

    /// A random pattern.
    pub fn random(&self) -> bool {
        self.random
    }

    /// Blocks issued since the epoch (io_issues).
    #[cfg(test)]
    pub fn issues(&self) -> u64 {
        self.issues
    }

    /// wait_for: it does not start with its wave but when its waitees have exited.
    /// Returns whether it was going to start with its wave.
    pub fn defer_start(&mut self) -> bool {
        std::mem::replace(&mut self.started, false)
    }

    /// The I/Os planned and not yet submitted (fio's io_us queued for the engine).
    pub fn batch(&self) -> &[Planned] {
        &self.batch
    }

    /// A new batch begins: the last one's I/Os are all out.
    pub fn clear_batch(&mut self) {
        self.batch.clear();
    }

    /// `p` joins the batch.
    pub fn queue_io(&mut self, p: Planned) {
        self.batch.push(p);
    }

    /// The first `n` I/Os of the batch went out; the rest wait for a tag.
    pub fn batch_sent(&mut self, n: usize) {
        self.batch.drain(..n);
    }

    /// fio_ioring_commit: the batch goes into its SQPOLL ring (fio began it at `start`,
    /// committed `now`). Returns whether the ring's thread sleeps, and the thread.
    pub fn commit_to_ring(&mut self, start: u64, now: u64) -> (bool, JobId) {
        let ring = self.ctl.ring_mut().expect("a SQPOLL ring");
        let wake = ring.commit(&self.batch, start, now);
        (wake, ring.thread().expect("the ring's SQ thread"))
    }

    /// backend.c: io_issues counts `k` I/Os submitted.
    pub fn io_issued(&mut self, k: u32) {
        self.issues += u64::from(k);
    }

    /// io_u.c io_u_mark_submit: a submit call of `k` I/Os, in the window.
    pub fn io_u_mark_submit(&mut self, k: u32) {
        self.submit_hist[calls_bucket(k)] += 1;
        self.submit_calls += 1;
    }

    /// io_u.c io_u_mark_complete: a reap call that returned `n` I/Os, in the window.
    pub fn io_u_mark_complete(&mut self, n: u32) {
        self.complete_hist[calls_bucket(n)] += 1;
        self.complete_calls += 1;
    }

    /// One of its I/Os was reaped (thinktime_blocks counts completions).
    pub fn io_reaped(&mut self) {
        self.completions += 1;
    }

    /// The submit and complete call histograms and counts (io_u_submit, io_u_complete).
    pub fn call_stats(&self) -> ([u64; 7], [u64; 7], u64, u64) {
        (
            self.submit_hist,
            self.complete_hist,
            self.submit_calls,
            self.complete_calls,
        )
    }

    /// Direction `d`'s bandwidth and IOPS samples.
    pub fn rate_samples(&self, d: usize) -> (IoStat, IoStat) {
        (self.samples.bw.stat[d], self.samples.iops.stat[d])
    }

    pub fn description(&self) -> Option<&str> {
        self.description.as_deref()
    }

    pub fn group_reporting(&self) -> bool {
        self.group_reporting
    }

    pub fn clat_percentiles(&self) -> bool {
        self.clat_percentiles
    }

    pub fn iodepth(&self) -> u32 {
        self.iodepth
    }

    /// Its submission, flow, rate, latency, zone and error state.
    pub fn ctl(&self) -> &FioCtl {
        &self.ctl
    }

    pub fn ctl_mut(&mut self) -> &mut FioCtl {
        &mut self.ctl
    }

    /// fio's min_bs of direction `d` (0 read, 1 write).
    pub fn min_bs(&self, d: usize) -> u64 {
        self.block_sizes[d].min()
    }

    /// Whether the job has reached its byte budget (`size`).
    pub fn bytes_done(&self) -> bool {
        self.byte_limit.is_some_and(|l| self.issued_bytes >= l)
    }

    /// io_u.c get_rw_ddir with rate_ddir, then get_next_buflen: the next I/O, or the
    /// absolute time (ns) the rate clock holds it until.
    #[inline(always)]
    pub fn next_io(&mut self, now: u64) -> Result<Planned, u64> {
        if self.ctl.trim_mode() != TrimMode::None {
            return Ok(self.next_trim());
        }
        let d0 = match (self.next_ddir.take(), self.read_pct) {
            (Some(d), _) => d,
            // A pure read or write job's draw could only give its direction, and the mix
            // stream serves nothing else: skipping it changes no later value.
            (None, 100) => 0,
            (None, 0) => 1,
            (None, pct) => usize::from(self.mix_rng.below(100) >= u64::from(pct)),
        };
        let ddir = match &self.rate {
            None => d0,
            Some(r) => {
                let now_us = now.saturating_sub(self.epoch) / 1_000;
                let mixed = self.read_pct > 0 && self.read_pct < 100;
                match r.choose(d0, mixed, now_us) {
                    Ok(d) => d,
                    Err((until_us, _)) => {
                        self.next_ddir = Some(d0);
                        return Err(self.epoch + until_us * 1_000);
                    }
                }
            }
        };
        let bytes = match &self.block_sizes[ddir] {
            // get_next_buflen returns min_bs without a draw; this direction's bs stream
            // is never drawn then.
            BlockSizes::Fixed(b) => *b,
            sizes => sizes.pick(self.bs_rng[ddir].below(1 << 32) as u32, self.unaligned),
        };
        if let Some(rate) = &mut self.rate {
            // (0, 1]: -ln of it is finite.
            let u = 1.0 - self.poisson_rng[ddir].uniform();
            rate.issued(ddir, bytes, u);
        }
        self.issued_bytes += bytes;
        let cmd = if ddir == 0 {
            Cmd::Read
        } else {
            self.ctl.write_cmd()
        };
        Ok(Planned {
            ddir,
            bytes,
            cmd,
            local: false,
        })
    }

    /// rw=trim, randtrim, trimwrite: the next trim (num_range ranges of the trim block
    /// size, io_u.c fill_multi_range_io_u), or trimwrite's write of the block it just
    /// trimmed (no rate clock: a trim rate is refused).
    fn next_trim(&mut self) -> Planned {
        let p = self.ctl.next_trim(self.unaligned);
        self.issued_bytes += p.bytes;
        p
    }

    /// backend.c handle_thinktime's test: enough blocks since the last stall.
    pub fn think_due(&mut self) -> bool {
        let Some(t) = self.think else { return false };
        if !self.stalling {
            let b = if t.on_issue {
                self.issues
            } else {
                self.completions
            };
            if b >= self.think_last + t.blocks {
                self.stalling = true;
                self.think_last = b;
            }
        }
        self.stalling
    }

    /// handle_thinktime after the quiesce: the stall ends, its think time is taken.
    pub fn thinktime(&mut self) -> Option<ThinkTime> {
        self.stalling = false;
        self.think
    }

    /// ms since the epoch, as fio's mtime_since_now(&td->epoch).
    pub fn elapsed_ms(&self, now: u64) -> u64 {
        now.saturating_sub(self.epoch) / 1_000_000
    }

    /// A reap call collects completions at `now`, in the window: the periodic samples
    /// due by then are taken first, once for the batch. Returns the log time (ms since
    /// the job's epoch) of its entries, for `completed`.
    #[inline(always)]
    pub fn completing(&mut self, now: u64) -> u64 {
        self.flush_samples(now);
        self.elapsed_ms(now)
    }

    /// One completion of `bytes` in direction `d` with its latencies, in the window, of
    /// the batch `completing` began (`elapsed`: its log time). (The slat entry is written
    /// at completion with the other two; fio writes it when the I/O is issued.)
    #[inline(always)]
    pub fn completed(
        &mut self,
        elapsed: u64,
        d: usize,
        bytes: u64,
        slat: u64,
        clat: u64,
        lat: u64,
    ) {
        if d > 1 {
            // Trims have no samples or log lines here (fio's logs have them, ddir 2).
            return;
        }
        if let Some([l, c, s]) = &mut self.logs.lat {
            l.add(elapsed, d, lat, bytes);
            c.add(elapsed, d, clat, bytes);
            s.add(elapsed, d, slat, bytes);
        }
        let sm = &mut self.samples;
        sm.bw.done[d] += bytes;
        sm.iops.done[d] += 1;
        // stat.c add_bw_sample / add_iops_sample, with per-I/O logs only.
        if sm.bw.interval_ms.is_none() {
            let rate = (bytes * 1_000_000).checked_div(clat).unwrap_or(0);
            sm.bw.stat[d].add(rate);
            if let Some(log) = &mut self.logs.bw {
                log.add(elapsed, d, rate, bytes);
            }
        }
        if sm.iops.interval_ms.is_none() {
            sm.iops.stat[d].add(1);
            if let Some(log) = &mut self.logs.iops {
                log.add(elapsed, d, 1, bytes);
            }
        }
    }

    /// The periodic samples whose interval ended by `now` (KiB/s and I/Os per second).
    #[inline]
    pub fn flush_samples(&mut self, now: u64) {
        if self.samples.bw.due(now) || self.samples.iops.due(now) {
            self.flush_due_samples(now);
        }
    }

    #[inline(never)]
    fn flush_due_samples(&mut self, now: u64) {
        let (epoch, fixed) = (self.epoch, self.fixed_bs);
        self.samples
            .bw
            .flush(now, epoch, fixed, self.logs.bw.as_mut(), |delta, ms| {
                delta * 1000 / ms / 1024
            });
        self.samples
            .iops
            .flush(now, epoch, fixed, self.logs.iops.as_mut(), |delta, ms| {
                delta * 1000 / ms
            });
    }

    /// The job exited at `now`: the intervals that ended, then stat.c finalize_logs.
    pub fn finish(&mut self, now: u64) {
        self.flush_samples(now);
        let elapsed = self.elapsed_ms(now);
        if let Some(logs) = &mut self.logs.lat {
            logs.iter_mut().for_each(|l| l.finish(elapsed));
        }
        for l in [&mut self.logs.bw, &mut self.logs.iops]
            .into_iter()
            .flatten()
        {
            l.finish(elapsed);
        }
    }

    /// Every log of the job, in fio's order (lat, clat, slat, bw, iops).
    pub fn take_logs(&mut self) -> Vec<IoLog> {
        let mut out = Vec::new();
        if let Some(l) = self.logs.lat.take() {
            out.extend(l);
        }
        out.extend(self.logs.bw.take());
        out.extend(self.logs.iops.take());
        out
    }
}

impl Sampler {
    fn restart(&mut self, now: u64) {
        self.bw.restart(now);
        self.iops.restart(now);
    }
}

/// fio's disk_util of one device, from the model's requests: diskstats ios, sectors,
/// ticks (request lifetimes), time_in_queue and io_ticks (busy time).
#[derive(Clone, Debug, Default)]
pub(crate) struct DiskAcct {
    used: bool,
    inflight: u64,
    last: u64,
    busy_ns: u64,
    in_queue_ns: u128,
    ios: [u64; 2],
    bytes: [u64; 2],
    ticks_ns: [u64; 2],
}

impl DiskAcct {
    /// A device's counters; `used`: a job of the run uses it (fio reports it).
    pub fn new(used: bool) -> DiskAcct {
        DiskAcct {
            used,
            ..DiskAcct::default()
        }
    }

    pub fn used(&self) -> bool {
        self.used
    }

    /// Reads and writes completed in the window.
    pub fn ios(&self) -> [u64; 2] {
        self.ios
    }

    pub fn bytes(&self) -> [u64; 2] {
        self.bytes
    }

    /// The requests' lifetimes (diskstats ticks).
    pub fn ticks_ns(&self) -> [u64; 2] {
        self.ticks_ns
    }

    /// The requests in flight integrated over time (time_in_queue).
    pub fn in_queue_ns(&self) -> u128 {
        self.in_queue_ns
    }

    /// Time with a request in flight (io_ticks).
    pub fn busy_ns(&self) -> u64 {
        self.busy_ns
    }

    /// Charges the time since the last change (only inside the measured window).
    fn accrue(&mut self, now: u64, measuring: bool) {
        if measuring && self.inflight > 0 {
            let dt = now - self.last;
            self.busy_ns += dt;
            self.in_queue_ns += u128::from(dt) * u128::from(self.inflight);
        }
        self.last = now;
    }

    pub fn submit(&mut self, now: u64, measuring: bool) {
        self.accrue(now, measuring);
        self.inflight += 1;
    }

    /// blk_mq_end_request: one request of `bytes` done after `life` ns.
    pub fn complete(&mut self, now: u64, measuring: bool, d: usize, bytes: u64, life: u64) {
        self.accrue(now, measuring);
        self.inflight = self.inflight.saturating_sub(1);
        if measuring {
            self.ios[d] += 1;
            self.bytes[d] += bytes;
            self.ticks_ns[d] += life;
        }
    }

    /// A request that diskstats counts apart (a discard) ends: busy time and the
    /// requests in flight change, the read and write counts do not.
    pub fn complete_other(&mut self, now: u64, measuring: bool) {
        self.accrue(now, measuring);
        self.inflight = self.inflight.saturating_sub(1);
    }

    /// The window opens at `now`: counts restart, requests in flight stay.
    pub fn open(&mut self, now: u64) {
        *self = DiskAcct {
            used: self.used,
            inflight: self.inflight,
            last: now,
            ..DiskAcct::default()
        };
    }

    pub fn close(&mut self, now: u64) {
        self.accrue(now, true);
    }
}

/// Jobs run in stonewall waves; the run also keeps the disks and the global options.
#[derive(Default)]
pub(crate) struct FioRun {
    /// The jobs of each wave, in job order.
    waves: Vec<Vec<JobId>>,
    wave_left: Vec<usize>,
    current_wave: usize,
    disks: Vec<DiskAcct>,
    global_options: Vec<(String, String)>,
    /// Flow groups by flow id (flow.c).
    flows: Vec<FlowGroup>,
    /// The steady-state check interval, when a job detects steady state.
    ss_interval_ms: Option<u64>,
    /// Each device's emulated zones, when zoned jobs write it (model/zbd.rs).
    zone_maps: Vec<Option<ZoneMap>>,
}

impl FioRun {
    /// A run of `waves` (none started) over `disks`, with the job file's global options.
    pub fn new(
        waves: Vec<Vec<JobId>>,
        disks: Vec<DiskAcct>,
        global_options: Vec<(String, String)>,
    ) -> FioRun {
        FioRun {
            wave_left: waves.iter().map(Vec::len).collect(),
            waves,
            current_wave: 0,
            disks,
            global_options,
            ..FioRun::default()
        }
    }

    /// Whether jobs act on each other beyond the machine they share (flows, exitall,
    /// wait_for, steady state of a group, helper threads on other CPUs): such a run
    /// does not split into parts.
    pub fn couples_jobs(&self, jobs: &[super::state::Job]) -> bool {
        !self.flows.is_empty()
            || self.ss_interval_ms.is_some()
            || jobs.iter().any(|j| {
                let c = j.fio().ctl();
                c.role() != Role::Main
                    || c.exit().exitall
                    || c.exit().on_error
                    || !c.wait_for().is_empty()
                    || c.cpuio().is_some_and(|x| x.exit_on_io_done)
            })
    }

    /// How many stonewall waves the run has.
    pub fn wave_count(&self) -> usize {
        self.waves.len()
    }

    /// The wave running now.
    pub fn current_wave(&self) -> usize {
        self.current_wave
    }

    /// The jobs of wave `w`.
    pub fn wave(&self, w: usize) -> &[JobId] {
        &self.waves[w]
    }

    /// A job of wave `w` is out: returns the waves that begin now (every job of the
    /// waves before them has exited).
    pub fn leave_wave(&mut self, w: usize) -> std::ops::Range<usize> {
        self.wave_left[w] -= 1;
        let from = self.current_wave + 1;
        while self.current_wave < self.waves.len() && self.wave_left[self.current_wave] == 0 {
            self.current_wave += 1;
        }
        from..(self.current_wave + 1).min(self.waves.len())
    }

    /// Device `d`'s disk counters.
    pub fn disk_mut(&mut self, d: usize) -> &mut DiskAcct {
        &mut self.disks[d]
    }

    pub fn disks(&self) -> &[DiskAcct] {
        &self.disks
    }

    pub fn disks_mut(&mut self) -> &mut [DiskAcct] {
        &mut self.disks
    }

    pub fn global_options(&self) -> &[(String, String)] {
        &self.global_options
    }

    /// flow.c flow_init_job: job `j` joins flow `id` with `weight`; returns its group.
    pub fn join_flow(&mut self, id: u32, j: JobId, weight: u32) -> usize {
        let g = match self.flows.iter().position(|g| g.id() == id) {
            Some(g) => g,
            None => {
                self.flows.push(FlowGroup::new(id));
                self.flows.len() - 1
            }
        };
        self.flows[g].join(j, weight);
        g
    }

    /// Flow group `g`.
    pub fn flow(&self, g: usize) -> &FlowGroup {
        &self.flows[g]
    }

    pub fn flow_mut(&mut self, g: usize) -> &mut FlowGroup {
        &mut self.flows[g]
    }

    /// The steady-state check interval, when a job detects steady state.
    pub fn ss_interval_ms(&self) -> Option<u64> {
        self.ss_interval_ms
    }

    pub fn set_ss_interval_ms(&mut self, ms: Option<u64>) {
        self.ss_interval_ms = ms;
    }

    /// Each device's emulated zones (zoned jobs' devices only).
    pub fn set_zone_maps(&mut self, maps: Vec<Option<ZoneMap>>) {
        self.zone_maps = maps;
    }

    /// Device `d`'s emulated zones, if zoned jobs write it.
    pub fn zone_map_mut(&mut self, d: usize) -> Option<&mut ZoneMap> {
        self.zone_maps.get_mut(d).and_then(Option::as_mut)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_follow_io_u_c() {
        let depth: Vec<usize> = [1, 2, 3, 4, 7, 8, 16, 31, 32, 63, 64]
            .map(depth_bucket)
            .into();
        assert_eq!(depth, [0, 1, 1, 2, 2, 3, 4, 4, 5, 5, 6]);
        let calls: Vec<usize> = [0, 1, 4, 5, 8, 9, 16, 17, 33, 64, 65]
            .map(calls_bucket)
            .into();
        assert_eq!(calls, [0, 1, 1, 2, 2, 3, 3, 4, 5, 5, 6]);
    }

    #[test]
    fn disks_count_busy_time_and_queue_area() {
        let mut d = DiskAcct::new(true);
        d.open(0);
        d.submit(0, true);
        d.submit(10, true);
        d.complete(30, true, 0, 4096, 30);
        d.complete(40, true, 1, 8192, 30);
        d.submit(100, true);
        d.close(120);
        assert_eq!(d.busy_ns, 40 + 20);
        assert_eq!(d.in_queue_ns, 10 + 2 * 20 + 10 + 20);
        assert_eq!((d.ios, d.bytes), ([1, 1], [4096, 8192]));
    }
}
