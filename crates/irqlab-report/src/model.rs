//! What a run produced, whichever engine ran it. The simulator and the real-thread runtime
//! both fill a [`RunReport`]; every output format is written from it alone.

use crate::io_stat::IoStat;
use crate::plat;

/// Which engine produced a report.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Engine {
    /// The discrete-event model (`irqlab run`): times are virtual.
    Simulated,
    /// Real threads on this host (`irqlab rt`): times are measured.
    RealThreads,
}

/// A latency distribution in ns: exact min, max, mean and standard deviation, fio's
/// latency histogram (json+ bins and percentiles as fio computes them) and fio's
/// io_u_mark_latency counts (exact, for latency_ns/us/ms).
#[derive(Clone, Debug)]
pub struct Latency {
    /// Counts per fio bucket, grown to the highest bucket used.
    plat: Vec<u64>,
    count: u64,
    sum: u128,
    sum_sq: u128,
    min: u64,
    max: u64,
    /// io_u.c io_u_mark_lat_nsec/usec/msec: 10 ns buckets, 10 µs, 12 ms.
    marks: [u64; 32],
}

impl Default for Latency {
    fn default() -> Self {
        Self::new()
    }
}

/// io_u.c io_u_mark_lat_*: the upper bounds of the buckets of one unit (the last is 1000).
const LAT_UPPER: [u16; 9] = [2, 4, 10, 20, 50, 100, 250, 500, 750];

/// The bucket of each value 0..1000 of a unit (the number of bounds at or below it),
/// as a table: one load per completion.
static LAT_BUCKET: [u8; 1000] = {
    const UPPER: [u16; 9] = LAT_UPPER;
    let mut t = [0u8; 1000];
    let (mut v, mut b) = (0, 0);
    while v < 1000 {
        if b < UPPER.len() && v == UPPER[b] as usize {
            b += 1;
        }
        t[v] = b as u8;
        v += 1;
    }
    t
};

impl Latency {
    pub fn new() -> Self {
        Latency {
            plat: Vec::new(),
            count: 0,
            sum: 0,
            sum_sq: 0,
            min: u64::MAX,
            max: 0,
            marks: [0; 32],
        }
    }

    /// Records one sample in ns (stat.c add_lat_sample / add_slat_sample).
    #[inline]
    pub fn record(&mut self, ns: u64) {
        let i = plat::val_to_idx(ns);
        match self.plat.get_mut(i) {
            Some(n) => *n += 1,
            None => {
                self.plat.resize(i + 1, 0);
                self.plat[i] = 1;
            }
        }
        self.count += 1;
        self.sum += u128::from(ns);
        self.sum_sq += u128::from(ns) * u128::from(ns);
        self.min = self.min.min(ns);
        self.max = self.max.max(ns);
    }

    /// Records a completion latency: fio also counts those, and only those, in its
    /// latency_ns/us/ms buckets (io_u.c account_io_completion calls io_u_mark_latency
    /// beside add_clat_sample).
    #[inline]
    pub fn record_clat(&mut self, ns: u64) {
        self.record(ns);
        let m = if ns < 1_000 {
            usize::from(LAT_BUCKET[ns as usize])
        } else if ns < 1_000_000 {
            10 + usize::from(LAT_BUCKET[(ns / 1_000) as usize])
        } else {
            20 + match ns / 1_000_000 {
                ms @ 0..1000 => usize::from(LAT_BUCKET[ms as usize]),
                1000..2000 => 10,
                _ => 11,
            }
        };
        self.marks[m] += 1;
    }

    /// Adds every sample of `other` (group_reporting, per-CPU totals).
    pub fn merge(&mut self, other: &Latency) {
        if other.plat.len() > self.plat.len() {
            self.plat.resize(other.plat.len(), 0);
        }
        for (a, b) in self.plat.iter_mut().zip(&other.plat) {
            *a += b;
        }
        self.count += other.count;
        self.sum += other.sum;
        self.sum_sq += other.sum_sq;
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
        for (a, b) in self.marks.iter_mut().zip(other.marks) {
            *a += b;
        }
    }

    pub fn count(&self) -> u64 {
        self.count
    }

    pub fn min(&self) -> u64 {
        if self.count == 0 { 0 } else { self.min }
    }

    pub fn max(&self) -> u64 {
        self.max
    }

    pub fn mean(&self) -> f64 {
        if self.count == 0 {
            0.0
        } else {
            self.sum as f64 / self.count as f64
        }
    }

    pub fn stddev(&self) -> f64 {
        let n = self.count;
        if n < 2 {
            return 0.0;
        }
        let mean = self.mean();
        let var = (self.sum_sq as f64 / n as f64 - mean * mean).max(0.0);
        // fio reports the sample standard deviation (stat.c calc_lat: S / (n - 1)).
        (var * n as f64 / (n - 1) as f64).sqrt()
    }

    /// The value at percentile `p` (0..=100) as fio computes it, 0 when empty.
    pub fn percentile(&self, p: f64) -> u64 {
        self.percentiles(&[p]).first().copied().unwrap_or(0)
    }

    /// stat.c calc_clat_percentiles for an ascending list; empty when there are no
    /// samples.
    pub fn percentiles(&self, list: &[f64]) -> Vec<u64> {
        plat::percentiles(&self.plat, self.count, list)
    }

    /// json+ bins: (bucket middle in ns, count) of every non-empty bucket, ascending.
    pub fn bins(&self) -> impl Iterator<Item = (u64, u64)> + '_ {
        self.plat
            .iter()
            .enumerate()
            .filter(|(_, c)| **c > 0)
            .map(|(i, &c)| (plat::idx_to_val(i), c))
    }

    /// io_u_mark_latency counts: 10 ns buckets, then 10 µs, then 12 ms.
    pub fn marks(&self) -> &[u64; 32] {
        &self.marks
    }
}

/// One direction (read or write) of one job.
#[derive(Clone, Debug, Default)]
pub struct DirReport {
    /// I/Os completed in the measured window.
    pub total_ios: u64,
    pub io_bytes: u64,
    /// The measured window in ns (fio's `runtime`, excluding ramp time).
    pub runtime_ns: u64,
    /// Submission latency: from the job deciding to issue to the device seeing it.
    pub slat: Latency,
    /// Completion latency: from submission to the job seeing the completion.
    pub clat: Latency,
    /// Total latency: slat + clat per I/O.
    pub lat: Latency,
    /// Bandwidth samples in KiB/s (fio's bw_stat: one per bwavgtime interval, or one
    /// per I/O with a per-I/O bandwidth log).
    pub bw_samples: IoStat,
    /// IOPS samples (fio's iops_stat).
    pub iops_samples: IoStat,
}

impl DirReport {
    /// fio's `runtime[ddir]`: the window in whole ms, rounded up from whole µs as
    /// backend.c update_runtime does.
    pub fn runtime_ms(&self) -> u64 {
        crate::fio_stats::ns_to_ms(self.runtime_ns)
    }

    /// stat.c: bytes/s as fio prints them, `1000 * io_bytes / runtime_ms`.
    pub fn fio_bw_bytes(&self) -> u64 {
        match self.runtime_ms() {
            0 => 0,
            ms => (u128::from(self.io_bytes) * 1000 / u128::from(ms)) as u64,
        }
    }

    /// stat.c: IOPS as fio prints them, `1000 * total_ios / runtime_ms`.
    pub fn fio_iops(&self) -> f64 {
        match self.runtime_ms() {
            0 => 0.0,
            ms => 1000.0 * self.total_ios as f64 / ms as f64,
        }
    }

    /// IOPS over the exact window in ns.
    pub fn iops(&self) -> f64 {
        if self.runtime_ns == 0 {
            0.0
        } else {
            self.total_ios as f64 * 1e9 / self.runtime_ns as f64
        }
    }

    /// Bytes per second.
    pub fn bw_bytes(&self) -> f64 {
        if self.runtime_ns == 0 {
            0.0
        } else {
            self.io_bytes as f64 * 1e9 / self.runtime_ns as f64
        }
    }
}

/// One fio job clone, or a reporting group of them (group_reporting).
#[derive(Clone, Debug, Default)]
pub struct JobReport {
    pub name: String,
    pub groupid: u32,
    /// Clones summed into this report (fio's ts->members, the `jobs=` of the header).
    pub members: u32,
    /// fio's 1-based thread_number of the (first) clone.
    pub thread_number: u32,
    /// This job asked for group_reporting.
    pub group_reporting: bool,
    /// `description`: fio's JSON `desc`.
    pub description: Option<String>,
    /// fio's "job options": the job section's own options as written, string values.
    pub options: Vec<(String, String)>,
    pub read: DirReport,
    pub write: DirReport,
    /// CPU time of the job's threads in user and kernel mode, ns, over the window.
    pub usr_ns: u64,
    pub sys_ns: u64,
    /// Voluntary plus involuntary context switches of the job's threads.
    pub ctx: u64,
    /// Times the job's threads moved to another CPU, when the scheduler may move them
    /// (a job without cpus_allowed in the simulator); fio reports none, so it is
    /// printed under `x-irqlab` only.
    pub migrations: Option<u64>,
    /// The job's measured window in ns (summed over the clones of a group, as fio's
    /// total_run_time).
    pub runtime_ns: u64,
    /// Histogram of I/Os in flight at submit time, fio's iodepth_level buckets.
    pub iodepth_level: [u64; 7],
    /// I/Os per submit call and completions per reap call (io_u.c io_u_mark_submit and
    /// io_u_mark_complete buckets 0, 1-4, 5-8, 9-16, 17-32, 33-64, >64) and the calls.
    pub iodepth_submit: [u64; 7],
    pub iodepth_complete: [u64; 7],
    pub submit_calls: u64,
    pub complete_calls: u64,
    /// When the job started, on the report's clock (see [`RunReport::end_ns`]).
    pub job_start_ns: u64,
    /// fio's latency_qd: the job's iodepth (no latency_target is modelled).
    pub latency_depth: u32,
    /// `clat_percentiles` (fio's default 1).
    pub clat_percentiles: bool,
    /// fio log files of this clone (write_lat_log, write_bw_log, write_iops_log).
    pub logs: Vec<crate::fio_log::IoLog>,
    /// Trims (rw=trim, randtrim, trimwrite), as reads and writes.
    pub trim: DirReport,
    /// The error the job ended with (fio's td_verror): its errno and fio's message.
    pub error: Option<JobError>,
    /// `latency_target` and its window and percentile (`latency_depth` is the depth
    /// found).
    pub latency_target: Option<LatencyTargetReport>,
    /// Steady-state detection's measurements and verdict.
    pub steadystate: Option<SteadyStateReport>,
    /// The job does no I/O by design (ioengine=cpuio): no I/O is not a starvation.
    pub no_io: bool,
    /// Zone resets of a zonemode=zbd job (fio's JSON "zone_resets").
    pub zone_resets: Option<u64>,
}

/// An error a job ended with (stat.c: the JSON "error", the `err=` of the text).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct JobError {
    /// errno: 5 (EIO) for a missed minimum rate, 110 (ETIMEDOUT) for a latency limit.
    pub code: i32,
    /// The function fio names (td_verror's func: `check_min_rate`, `max latency
    /// exceeded`).
    pub func: String,
    /// fio's message, as its log_err prints it.
    pub msg: String,
}

impl JobError {
    /// fio's td->verror without the source location of fio's own code:
    /// `func=check_min_rate, error=Input/output error`.
    pub fn verror(&self) -> String {
        let what = match self.code {
            5 => "Input/output error".to_string(),
            110 => "Connection timed out".to_string(),
            n => format!("error {n}"),
        };
        format!("func={}, error={what}", self.func)
    }
}

/// A job's latency target (stat.c show_thread_status: latency_target, _window,
/// _percentile).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct LatencyTargetReport {
    pub target_ns: u64,
    pub window_us: u64,
    pub percentile: f64,
}

/// fio's steadystate section (stat.c show_thread_status_json, show_ss_normal).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SteadyStateReport {
    /// The criterion as written back (`iops_slope:0.010000%`).
    pub criterion_name: String,
    pub duration_s: u64,
    pub attained: bool,
    /// The last criterion value, and whether it is a percentage.
    pub criterion: f64,
    pub pct: bool,
    /// `iops`, `bw` or `lat`; `slope_criterion`: the slope, else the mean deviation.
    pub metric: &'static str,
    pub slope_criterion: bool,
    pub max_deviation: f64,
    pub slope: f64,
    /// The window's measurements, oldest first.
    pub bw: Vec<u64>,
    pub iops: Vec<u64>,
    pub lat_ns: Option<Vec<u64>>,
    pub bw_mean: u64,
    pub iops_mean: u64,
    pub lat_mean: u64,
}

impl JobReport {
    /// The error number fio's JSON shows (0: none).
    pub fn error_code(&self) -> i32 {
        self.error.as_ref().map_or(0, |e| e.code)
    }

    pub fn usr_cpu_pct(&self) -> f64 {
        pct(self.usr_ns, self.runtime_ns)
    }

    pub fn sys_cpu_pct(&self) -> f64 {
        pct(self.sys_ns, self.runtime_ns)
    }
}

/// Where one CPU's time went over the measured window, and what interrupted it.
#[derive(Clone, Debug, Default)]
pub struct CpuReport {
    pub cpu: usize,
    pub usr_ns: u64,
    pub sys_ns: u64,
    pub hardirq_ns: u64,
    /// Softirq run at irq_exit.
    pub softirq_ns: u64,
    /// Softirq run by ksoftirqd (a thread, counted separately so hand-overs are visible).
    pub ksoftirqd_ns: u64,
    /// Threaded interrupt handlers.
    pub irq_thread_ns: u64,
    pub idle_ns: u64,
    pub ctx_switches: u64,
    /// Hardware interrupt entries on this CPU (every vector, PMN included).
    pub hardirqs: u64,
    /// Posted MSI notifications (the PMN row of /proc/interrupts).
    pub pmn: u64,
    /// Local timer interrupts (the LOC row).
    pub timer_ticks: u64,
    /// Times softirq work was handed to ksoftirqd.
    pub ksoftirqd_wakeups: u64,
    /// How late each tick ran because interrupts were off, ns.
    pub tick_lateness: Latency,
}

/// One device interrupt vector (an MSI-X entry): a /proc/interrupts row.
#[derive(Clone, Debug, Default)]
pub struct VectorReport {
    /// The kernel's name for it, e.g. "nvme0q3" (the action name in /proc/interrupts).
    pub name: String,
    /// The interrupt-remapping chip under the device's MSI-X chip: [`CHIP_REMAPPED`],
    /// [`CHIP_POSTED`], or [`CHIP_POLLED`] for a polled queue (which has no interrupt).
    pub chip: String,
    /// The device's PCI address (see [`pci_address`]), part of the MSI-X chip's name.
    pub device: String,
    /// The MSI-X table entry (the hwirq column): the queue number for NVMe.
    pub hwirq: u32,
    /// Messages the device raised (MSI writes reaching the root port).
    pub messages: u64,
    /// Handler invocations per CPU, the /proc/interrupts counts.
    pub per_cpu: Vec<u64>,
    /// Messages the device withheld by coalescing (feature 08h, calibrated interrupts).
    pub device_coalesced: u64,
    /// Completions reaped by this vector's handler.
    pub completions: u64,
    /// The adaptive moderator's course on this vector, when one ran.
    pub moderation: Option<ModerationReport>,
}

/// An adaptive moderator's course on one vector (lib/dim net_dim or rdma_dim, irq-am),
/// over the whole run, ramp_time included: the moderator lives as long as its queue.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ModerationReport {
    /// The moderator's name ("net_dim", "rdma_dim", "irq_am").
    pub moderator: String,
    /// The level (profile index) the device ran when the run ended.
    pub final_level: usize,
    /// Levels programmed into the device (work items that ran).
    pub programs: u64,
    /// Time the device spent at each level, ns, indexed by level: the time between the
    /// moderator's events, booked to the level the device ran.
    pub level_ns: Vec<u64>,
    /// The same over time: `course[i][level]` is the time at `level` in the run's
    /// interval [i, i+1) × `course_ns` (irqlab-core's `Moderator::level_course`).
    pub course_ns: u64,
    pub course: Vec<Vec<u64>>,
}

impl From<&irqlab_core::moderator::Moderator> for ModerationReport {
    /// A moderator's course as either engine reports it.
    fn from(m: &irqlab_core::moderator::Moderator) -> ModerationReport {
        let (course_ns, course) = m.level_course();
        ModerationReport {
            moderator: m.kind().to_string(),
            final_level: m.applied_level(),
            programs: m.counters().programs,
            level_ns: m.level_ns(),
            course_ns,
            course: course.to_vec(),
        }
    }
}

impl ModerationReport {
    /// The share of the histogram's time spent at `level`, in percent.
    pub fn level_pct(&self, level: usize) -> f64 {
        let total: u64 = self.level_ns.iter().sum();
        pct(self.level_ns.get(level).copied().unwrap_or(0), total)
    }
}

/// drivers/iommu/intel/irq_remapping.c: intel_ir_chip and intel_ir_chip_post_msi.
pub const CHIP_REMAPPED: &str = "INTEL-IR";
pub const CHIP_POSTED: &str = "INTEL-IR-POST";
/// A guest's vector that the hypervisor injects (virtio): no remapping domain under the
/// device's MSI-X chip.
pub const CHIP_INJECTED: &str = "PCI-MSIX";
/// A poll queue: completions without an interrupt.
pub const CHIP_POLLED: &str = "POLLED";

/// The PCI address irqlab gives device `index` (0-based): one device per bus from bus 1,
/// as NVMe drives behind their own root ports appear.
pub fn pci_address(index: usize) -> String {
    format!("0000:{:02x}:00.0", index + 1)
}

impl VectorReport {
    pub fn handled(&self) -> u64 {
        self.per_cpu.iter().sum()
    }

    /// The chip column of /proc/interrupts: kernel/irq/msi.c names a device's MSI-X
    /// domain "%s%s-%s" (the remapping parent's "IR-" prefix, "PCI-MSIX", the device),
    /// whether the parent chip posts or remaps.
    pub fn proc_chip(&self) -> String {
        if self.chip == CHIP_INJECTED {
            format!("PCI-MSIX-{}", self.device)
        } else {
            format!("IR-PCI-MSIX-{}", self.device)
        }
    }
}

/// Host-side measurements that only the real-thread runtime has.
#[derive(Clone, Debug, Default)]
pub struct HostMeasures {
    pub wall_ns: u64,
    /// Wake-ups issued to blocked threads (futex/eventfd writes that found a sleeper).
    pub wakeups: u64,
    pub voluntary_ctx: u64,
    pub involuntary_ctx: u64,
    /// Process user and system CPU time from getrusage, ns.
    pub usr_ns: u64,
    pub sys_ns: u64,
    /// Per CPU (as [`RunReport::cpus`]): time in the measured window when the CPU had
    /// work but the host ran something else. The CPU's other columns leave it out, so
    /// a row and its stolen time add up to the window.
    pub cpu_stolen_ns: Vec<u64>,
}

/// One device as fio's disk_util shows it (from /proc/diskstats on a real machine, from
/// the model's device queue in a simulation).
#[derive(Clone, Debug, Default)]
pub struct DiskUtil {
    pub name: String,
    pub ios: [u64; 2],
    pub sectors: [u64; 2],
    /// Time requests spent from submission to completion, ms, per direction.
    pub ticks_ms: [u64; 2],
    /// Sum over time of requests in flight, ms (diskstats time_in_queue).
    pub in_queue_ms: u64,
    /// Time with at least one request in flight, ms (diskstats io_ticks).
    pub busy_ms: u64,
    /// The window the counts cover, ms.
    pub window_ms: u64,
}

impl DiskUtil {
    /// diskutil.c: busy time over the window, capped at 100%.
    pub fn util_pct(&self) -> f64 {
        if self.window_ms == 0 {
            0.0
        } else {
            (100.0 * self.busy_ms as f64 / self.window_ms as f64).min(100.0)
        }
    }
}

/// Everything one run produced.
#[derive(Clone, Debug)]
pub struct RunReport {
    pub engine: Engine,
    /// The platform name (simulator) or host description (runtime).
    pub platform: String,
    /// The policy choices in force, as key=value pairs, in a stable order.
    pub policy: Vec<(String, String)>,
    pub seed: u64,
    /// The measured window in ns (after ramp time).
    pub duration_ns: u64,
    /// When the run ended: simulated ns since the start of the run for
    /// [`Engine::Simulated`], ns since the Unix epoch for [`Engine::RealThreads`]. Job
    /// start times use the same clock.
    pub end_ns: u64,
    /// fio's "global options": what the `[global]` sections set.
    pub global_options: Vec<(String, String)>,
    pub jobs: Vec<JobReport>,
    /// fio's disk_util, one per device (empty when the engine has none).
    pub disks: Vec<DiskUtil>,
    pub cpus: Vec<CpuReport>,
    pub vectors: Vec<VectorReport>,
    pub measured: Option<HostMeasures>,
    /// Engine-specific counters worth showing, in a stable order (events processed, ...).
    pub extra: Vec<(String, f64)>,
    /// What the run was made of that the job file does not say, as (kind, text): where
    /// its files went, what `$ncpus` stood for, jobs capped by `--max-runtime`. Shown
    /// under the policy line and in `x-irqlab.notes`.
    pub notes: Vec<(String, String)>,
}

impl RunReport {
    pub fn total_ios(&self) -> u64 {
        self.jobs
            .iter()
            .map(|j| j.read.total_ios + j.write.total_ios)
            .sum()
    }

    /// Device vector handler invocations, all CPUs (excludes PMN and timer).
    pub fn vector_interrupts(&self) -> u64 {
        self.vectors.iter().map(VectorReport::handled).sum()
    }

    /// CPU notifications: PMN in posted mode plus vectors delivered directly.
    pub fn notifications(&self) -> u64 {
        let pmn: u64 = self.cpus.iter().map(|c| c.pmn).sum();
        let direct: u64 = self
            .vectors
            .iter()
            .filter(|v| v.chip != CHIP_POSTED)
            .map(VectorReport::handled)
            .sum();
        pmn + direct
    }

    /// Whether an [`RunReport::extra`] flag (e.g. [`crate::EXTRA_INTERRUPTED`]) is set.
    pub fn flag(&self, key: &str) -> bool {
        self.extra.iter().any(|(k, v)| k == key && *v != 0.0)
    }

    /// Vectors dispatched per notification: 1 in remapped mode, more when posted
    /// delivery coalesces.
    pub fn coalescing_ratio(&self) -> f64 {
        ratio(self.vector_interrupts(), self.notifications())
    }

    /// Completed I/Os per CPU notification.
    pub fn ios_per_notification(&self) -> f64 {
        ratio(self.total_ios(), self.notifications())
    }
}

/// `part` as a percentage of `whole` (0 when `whole` is 0).
pub(crate) fn pct(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        part as f64 * 100.0 / whole as f64
    }
}

fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 { 0.0 } else { a as f64 / b as f64 }
}

#[cfg(test)]
mod tests {
    use super::{LAT_BUCKET, LAT_UPPER, Latency};

    #[test]
    fn the_bucket_table_counts_the_bounds_at_or_below() {
        for v in 0..1000u16 {
            let below = LAT_UPPER.iter().filter(|&&up| v >= up).count();
            assert_eq!(usize::from(LAT_BUCKET[usize::from(v)]), below, "value {v}");
        }
    }

    #[test]
    fn marks_follow_io_u_mark_latency() {
        let mut l = Latency::new();
        for ns in [
            1,
            3,
            999,
            1_500,
            9_000,
            300_000,
            1_900_000,
            1_500_000_000,
            3_000_000_000,
        ] {
            l.record_clat(ns);
        }
        let m = l.marks();
        assert_eq!((m[0], m[1], m[9]), (1, 1, 1), "1, 3 and 999 ns");
        assert_eq!((m[10], m[12], m[17]), (1, 1, 1), "1.5, 9 and 300 us");
        assert_eq!((m[20], m[30], m[31]), (1, 1, 1), "1.9 ms, 1.5 s, 3 s");
        assert_eq!(m.iter().sum::<u64>(), 9);
        // Submission and total latencies are not marked (fio marks clat only).
        let mut slat = Latency::new();
        slat.record(5);
        assert_eq!(slat.marks().iter().sum::<u64>(), 0);
    }

    #[test]
    fn min_and_max_are_exact_and_merge() {
        let mut a = Latency::new();
        a.record(686_817_999);
        assert_eq!((a.min(), a.max()), (686_817_999, 686_817_999));
        let mut b = Latency::new();
        b.record(3);
        b.record(1_000_000_001);
        a.merge(&b);
        assert_eq!((a.min(), a.max(), a.count()), (3, 1_000_000_001, 3));
        assert_eq!((Latency::new().min(), Latency::new().max()), (0, 0));
    }
}
