//! What a run produced, whichever engine ran it. The simulator and the real-thread runtime
//! both fill a [`RunReport`]; every output format is written from it alone.

use hdrhistogram::Histogram;

/// Which engine produced a report.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Engine {
    /// The discrete-event model (`irqlab run`): times are virtual.
    Simulated,
    /// Real threads on this host (`irqlab rt`): times are measured.
    RealThreads,
}

/// A latency distribution in ns, with exact min, max, mean and standard deviation
/// and percentiles from an HDR histogram (3 significant digits).
#[derive(Clone, Debug)]
pub struct Latency {
    hist: Histogram<u64>,
    sum: u128,
    sum_sq: u128,
    /// Exact extremes (the histogram's are bucket bounds, 0.1% off).
    min: u64,
    max: u64,
}

/// The largest sample a [`Latency`] keeps apart: 1000 s covers every completion and
/// tick lateness we report.
const MAX_NS: u64 = 1_000_000_000_000;

impl Default for Latency {
    fn default() -> Self {
        Self::new()
    }
}

impl Latency {
    pub fn new() -> Self {
        // Starts small and grows to the largest value recorded (auto-resize), so a job
        // whose latencies stay under a millisecond never allocates the counts for seconds.
        let mut hist = Histogram::new(3).expect("3 significant digits are valid");
        hist.auto(true);
        Latency {
            hist,
            sum: 0,
            sum_sq: 0,
            min: u64::MAX,
            max: 0,
        }
    }

    /// Records one sample in ns (0 is exact, e.g. a tick that was not late; values above
    /// 1000 s count as 1000 s).
    pub fn record(&mut self, ns: u64) {
        let v = ns.min(MAX_NS);
        // record() grows the counts; saturating_record would clamp to the current range.
        if self.hist.record(v).is_err() {
            self.hist.saturating_record(v);
        }
        self.sum += u128::from(v);
        self.sum_sq += u128::from(v) * u128::from(v);
        self.min = self.min.min(v);
        self.max = self.max.max(v);
    }

    /// Adds every sample of `other` (group_reporting, per-CPU totals).
    pub fn merge(&mut self, other: &Latency) {
        self.hist
            .add(&other.hist)
            .expect("auto-resizing histograms accept every count");
        self.sum += other.sum;
        self.sum_sq += other.sum_sq;
        self.min = self.min.min(other.min);
        self.max = self.max.max(other.max);
    }

    pub fn count(&self) -> u64 {
        self.hist.len()
    }

    pub fn min(&self) -> u64 {
        if self.count() == 0 { 0 } else { self.min }
    }

    pub fn max(&self) -> u64 {
        self.max
    }

    pub fn mean(&self) -> f64 {
        if self.count() == 0 {
            0.0
        } else {
            self.sum as f64 / self.count() as f64
        }
    }

    pub fn stddev(&self) -> f64 {
        let n = self.count();
        if n < 2 {
            return 0.0;
        }
        let mean = self.mean();
        let var = (self.sum_sq as f64 / n as f64 - mean * mean).max(0.0);
        // fio reports the sample standard deviation.
        (var * n as f64 / (n - 1) as f64).sqrt()
    }

    /// The value at percentile `p` (0..=100), 0 when empty.
    pub fn percentile(&self, p: f64) -> u64 {
        if self.count() == 0 {
            0
        } else {
            self.hist.value_at_percentile(p)
        }
    }

    /// The underlying histogram, for json+ bins.
    pub fn histogram(&self) -> &Histogram<u64> {
        &self.hist
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
}

impl DirReport {
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

/// One fio job (or one clone of it when group_reporting is off).
#[derive(Clone, Debug, Default)]
pub struct JobReport {
    pub name: String,
    pub groupid: u32,
    /// fio's "job options": as written, string values.
    pub options: Vec<(String, String)>,
    pub read: DirReport,
    pub write: DirReport,
    /// CPU time of the job's threads in user and kernel mode, ns, over the window.
    pub usr_ns: u64,
    pub sys_ns: u64,
    /// Voluntary plus involuntary context switches of the job's threads.
    pub ctx: u64,
    /// The job's measured window in ns.
    pub runtime_ns: u64,
    /// Histogram of I/Os in flight at submit time, fio's iodepth_level buckets.
    pub iodepth_level: [u64; 7],
}

impl JobReport {
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
    /// The kernel's name for it, e.g. "nvme0q3".
    pub name: String,
    /// The irq_chip column: "IR-PCI-MSIX", "INTEL-IR-POST" or "POLLED".
    pub chip: String,
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
}

impl ModerationReport {
    /// The share of the histogram's time spent at `level`, in percent.
    pub fn level_pct(&self, level: usize) -> f64 {
        let total: u64 = self.level_ns.iter().sum();
        pct(self.level_ns.get(level).copied().unwrap_or(0), total)
    }
}

impl VectorReport {
    pub fn handled(&self) -> u64 {
        self.per_cpu.iter().sum()
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
    pub jobs: Vec<JobReport>,
    pub cpus: Vec<CpuReport>,
    pub vectors: Vec<VectorReport>,
    pub measured: Option<HostMeasures>,
    /// Engine-specific counters worth showing, in a stable order (events processed, ...).
    pub extra: Vec<(String, f64)>,
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
            .filter(|v| v.chip != "INTEL-IR-POST")
            .map(VectorReport::handled)
            .sum();
        pmn + direct
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
    use super::Latency;

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
