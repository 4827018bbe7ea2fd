//! What a job does besides issuing its I/O pattern, as fio's backend.c and its helpers
//! do it: who submits (io_submit_mode, io_uring's SQPOLL thread), when jobs end each
//! other (exitall, exit_what), flow control between jobs, minimum rates, latency
//! targets, steady-state detection, the cpuio engine, trims, zoned writes and NVMe
//! write commands. The parser fills these in (`control_opts`); the simulator carries
//! them out.

/// The controls of one job after fio's defaults, and what its engine allows
/// (init.c fixup_options, the engines' init): everything a job does besides its I/O
/// pattern. Resolved once per job by the parser; `JobSpec::controls` carries it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Controls {
    /// `io_submit_mode`.
    pub submit_mode: SubmitMode,
    /// `sqthread_poll`, `sqthread_poll_cpu`.
    pub sqpoll: Option<SqPoll>,
    /// `exitall` (process-wide), `exit_what`, `exitall_on_error`.
    pub exit: ExitRule,
    /// `flow_id`, `flow`, `flow_sleep`.
    pub flow: Option<Flow>,
    /// `rate_min`, `rate_iops_min`, `rate_cycle`.
    pub rate_min: RateMin,
    /// `latency_target`, `latency_window`, `latency_percentile`, `latency_run`.
    pub latency_target: Option<LatencyTarget>,
    /// `max_latency` in ns: an I/O slower than this ends the job with ETIMEDOUT.
    pub max_latency_ns: Option<u64>,
    /// `steadystate` and its duration, ramp and interval.
    pub steadystate: Option<SteadyState>,
    /// `steadystate_check_interval` in ms as written or fio's default (fio's helper
    /// thread checks every job at one interval, so it must be the same for all).
    pub ss_interval_ms: u64,
    /// ioengine=cpuio's `cpuload`, `cpuchunks`, `cpumode`, `exit_on_io_done`.
    pub cpuio: Option<CpuIo>,
    /// `wait_for`: the job starts when every job of that name has finished.
    pub wait_for: Option<String>,
    /// `zonemode=zbd` with its zone size, capacity, open-zone limit and reset rules.
    pub zbd: Option<Zbd>,
    /// io_uring_cmd's `write_mode` mix (empty: plain writes).
    pub write_mix: Vec<(WriteCmd, u32)>,
    /// `num_range`: ranges per trim command.
    pub num_range: u32,
}

/// `io_submit_mode`: who submits the job's I/O (rate-submit.c).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum SubmitMode {
    /// The job's thread submits and reaps (fio's default).
    #[default]
    Inline,
    /// The job's thread hands each I/O to one of `iodepth` worker threads, each of which
    /// submits it and waits for it with its own engine context at depth 1.
    Offload,
}

/// `sqthread_poll`: an io_uring ring with IORING_SETUP_SQPOLL, whose kernel thread polls
/// the submission ring; `sqthread_poll_cpu` pins it (IORING_SETUP_SQ_AFF).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SqPoll {
    pub cpu: Option<usize>,
}

/// `exit_what` (options.c TERMINATE_*): whom a job's exit ends when `exitall` is set.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum ExitWhat {
    /// The jobs of the exiting job's reporting group (fio's default).
    #[default]
    Group,
    /// Every job running now; the next stonewall wave still starts.
    Stonewall,
    /// Every job, started or not.
    All,
}

/// `exitall` (fio keeps it process-wide: any section that sets it sets it for every
/// job, options.c str_exitall_cb), `exit_what` and `exitall_on_error`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct ExitRule {
    pub exitall: bool,
    pub what: ExitWhat,
    pub on_error: bool,
}

/// `flow_id`, `flow` and `flow_sleep` (flow.c): jobs of one flow id keep their issued
/// I/Os in the ratio of their weights.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Flow {
    pub id: u32,
    /// `flow`: the job's weight (1 to 1000, FLOW_MAX_WEIGHT).
    pub weight: u32,
    /// `flow_sleep` in ns (0: spin until the flow lets the job go on).
    pub sleep_ns: u64,
}

/// `rate_min` (`ratemin`), `rate_iops_min` and `rate_cycle` (backend.c
/// __check_min_rate): per direction (read, write, trim); 0 is no minimum.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RateMin {
    pub bytes_per_sec: [u64; 3],
    pub iops: [u64; 3],
    /// `rate_cycle` in ms (fio's default 1000).
    pub cycle_ms: u64,
}

impl Default for RateMin {
    fn default() -> Self {
        RateMin {
            bytes_per_sec: [0; 3],
            iops: [0; 3],
            cycle_ms: 1000,
        }
    }
}

impl RateMin {
    pub fn is_set(&self) -> bool {
        self.bytes_per_sec.iter().chain(&self.iops).any(|&v| v > 0)
    }
}

/// `latency_target`, `latency_window`, `latency_percentile` and `latency_run` (io_u.c
/// lat_target_*): the depth search for the highest queue depth whose I/Os meet the
/// target.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct LatencyTarget {
    pub target_ns: u64,
    /// `latency_window` in ns (fio keeps µs).
    pub window_ns: u64,
    /// `latency_percentile` (default 100).
    pub percentile: f64,
    /// `latency_run`: keep searching instead of stopping at the depth found.
    pub run: bool,
}

/// What steady-state detection measures (steadystate.h FIO_SS_*).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SsMetric {
    Iops,
    Bw,
    Lat,
}

/// `steadystate` (`ss`), `steadystate_duration`, `steadystate_ramp_time`,
/// `steadystate_check_interval` (steadystate.c): the job ends when its last
/// `duration / interval` measurements meet the criterion.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SteadyState {
    pub metric: SsMetric,
    /// `_slope`: the criterion is the least-squares slope, else the largest deviation
    /// from the mean.
    pub slope: bool,
    /// The limit is a percentage of the mean.
    pub pct: bool,
    /// The limit: IOPS, bytes/s, ns (lat) or percent.
    pub limit: f64,
    /// `steadystate_duration` in whole seconds (fio divides its µs by 10^6).
    pub duration_s: u64,
    /// `steadystate_ramp_time` in ns.
    pub ramp_ns: u64,
    /// `steadystate_check_interval` in ms (at least 1000, as fio requires).
    pub interval_ms: u64,
}

impl SteadyState {
    /// Measurements in the window (steadystate.c: duration / interval in seconds).
    pub fn intervals(&self) -> usize {
        (self.duration_s / (self.interval_ms / 1000).max(1)) as usize
    }

    /// The criterion as fio's JSON writes it (`iops_slope:0.010000%`).
    pub fn describe(&self) -> String {
        format!(
            "{}{}:{:.6}{}",
            match self.metric {
                SsMetric::Iops => "iops",
                SsMetric::Bw => "bw",
                SsMetric::Lat => "lat",
            },
            if self.slope { "_slope" } else { "" },
            self.limit as f32,
            if self.pct { "%" } else { "" }
        )
    }
}

/// `cpumode` of ioengine=cpuio (engines/cpu.c).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CpuMode {
    /// Spin `cpuchunks` µs per cycle.
    Noop,
    /// Sort 256 Ki integers four times per cycle; the cycle is as long as that takes.
    Qsort,
}

/// ioengine=cpuio: `cpuload` percent of a CPU burnt in cycles of `cpuchunks` µs, each
/// followed by a sleep that keeps the load (cycle × (100 − load) / load).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CpuIo {
    pub load_pct: u32,
    pub chunk_ns: u64,
    pub mode: CpuMode,
    /// `exit_on_io_done`: stop when no job that does I/O is left.
    pub exit_on_io_done: bool,
}

/// An NVMe write command of io_uring_cmd's `write_mode` (engines/io_uring.c
/// wmode_str_to_opcode); fio counts each as a write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WriteCmd {
    Write,
    Zeroes,
    Uncor,
    Verify,
}

impl WriteCmd {
    pub fn name(self) -> &'static str {
        match self {
            WriteCmd::Write => "write",
            WriteCmd::Zeroes => "zeroes",
            WriteCmd::Uncor => "uncor",
            WriteCmd::Verify => "verify",
        }
    }
}

/// `zonemode=zbd` over the platform's conventional namespaces: fio emulates zones of
/// `zonesize` on them (zbd.c init_zone_info), writes go to each zone's write pointer,
/// and a full zone is reset (quiesce, then the write pointer moves back; no command
/// reaches a conventional namespace, zbd.c __zbd_reset_zone).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Zbd {
    pub zone_bytes: u64,
    /// `zonecapacity` (default: the zone size).
    pub capacity: u64,
    /// Zones in the job's range (`size`, in zones, per file); None: the whole device,
    /// whose capacity the platform does not give, so its zones never run out.
    pub zones: Option<u64>,
    /// `max_open_zones` / `job_max_open_zones` (0: no limit).
    pub max_open: u32,
    /// `zone_reset_threshold` and `zone_reset_frequency`.
    pub reset_threshold: f64,
    pub reset_frequency: f64,
}
