//! A CPU's time accounting, charged lazily: the CPU's time up to `from` is charged;
//! [from, mark) is owed to the slice's kind and to the thread (and job) that owned the CPU;
//! the time since `mark` (the last step boundary) is not owed yet. Hardirq time since
//! boot (CPUTIME_IRQ) is kept apart for GSIM, and the window's buckets and counters in
//! `CpuStats`. Charging the thread and the job is the caller's (model/cpu.rs).

use crate::model::ids::{JobId, ThreadId};
use crate::observer::SliceKind;
use irqlab_report::{CpuReport, Latency};

pub(crate) struct Accounting {
    /// What the CPU does since the last change of kind.
    kind: SliceKind,
    from: u64,
    mark: u64,
    owed_to: Option<ThreadId>,
    /// The job `owed_to` runs (its usr and sys).
    owed_job: Option<JobId>,
    /// Hardirq time since boot (CPUTIME_IRQ), for GSIM's hardirq_percent.
    hardirq_total: u64,
    stats: CpuStats,
}

/// Time owed, to be charged to a thread and its job.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Owed {
    pub ns: u64,
    pub kind: SliceKind,
    pub thread: Option<ThreadId>,
    pub job: Option<JobId>,
}

impl Default for Accounting {
    fn default() -> Self {
        Accounting {
            kind: SliceKind::Idle,
            from: 0,
            mark: 0,
            owed_to: None,
            owed_job: None,
            hardirq_total: 0,
            stats: CpuStats::default(),
        }
    }
}

impl Accounting {
    #[inline(always)]
    pub fn kind(&self) -> SliceKind {
        self.kind
    }

    /// A slice of another kind starts (after `settle`).
    #[inline(always)]
    pub fn begin_slice(&mut self, kind: SliceKind) {
        self.kind = kind;
    }

    /// Whether the time owed belongs to another owner than `current`.
    #[inline(always)]
    pub fn owner_changed(&self, current: Option<ThreadId>) -> bool {
        self.owed_to != current
    }

    /// From now on the time is owed to `thread` (running `job`).
    #[inline(always)]
    pub fn owe_to(&mut self, thread: Option<ThreadId>, job: Option<JobId>) {
        self.owed_to = thread;
        self.owed_job = job;
    }

    /// A step boundary at `now`: the time up to it is owed.
    #[inline(always)]
    pub fn mark(&mut self, now: u64) {
        self.mark = now;
    }

    /// When the CPU's time was last charged (its kind has not changed since).
    pub fn charged_until(&self) -> u64 {
        self.from
    }

    /// Charges what is owed to the CPU: hardirq time since boot, and the window's bucket
    /// while `measuring`. Returns it for the thread and job, when there is any.
    #[inline(always)]
    pub fn settle(&mut self, measuring: bool) -> Option<Owed> {
        let ns = self.mark - self.from;
        self.from = self.mark;
        if self.kind == SliceKind::HardIrq {
            self.hardirq_total += ns;
        }
        if ns == 0 {
            return None;
        }
        if measuring {
            self.stats.time[self.kind as usize] += ns;
        }
        Some(Owed {
            ns,
            kind: self.kind,
            thread: self.owed_to,
            job: self.owed_job,
        })
    }

    /// Hardirq time since boot, as charged so far.
    pub fn hardirq_total(&self) -> u64 {
        self.hardirq_total
    }

    // ------------------------------------------------------------------------ counters

    /// ramp_time is over: the window's statistics start from zero.
    pub fn open_window(&mut self) {
        self.stats = CpuStats::default();
    }

    /// The window's time buckets and counters as CPU `cpu`'s report row (its tick
    /// lateness moves into the report).
    pub fn cpu_report(&mut self, cpu: usize) -> CpuReport {
        let s = &mut self.stats;
        CpuReport {
            cpu,
            usr_ns: s.ns(SliceKind::Usr),
            sys_ns: s.ns(SliceKind::Sys),
            hardirq_ns: s.ns(SliceKind::HardIrq),
            softirq_ns: s.ns(SliceKind::SoftIrq),
            ksoftirqd_ns: s.ns(SliceKind::Ksoftirqd),
            irq_thread_ns: s.ns(SliceKind::IrqThread),
            idle_ns: s.ns(SliceKind::Idle),
            ctx_switches: s.ctx_switches,
            hardirqs: s.hardirqs,
            pmn: s.pmn,
            timer_ticks: s.ticks,
            ksoftirqd_wakeups: s.ksoftirqd_wakeups,
            tick_lateness: s.tick_lateness.take().map_or_else(Latency::new, |b| *b),
        }
    }

    #[inline]
    pub fn count_ctx_switch(&mut self) {
        self.stats.ctx_switches += 1;
    }

    #[inline]
    pub fn count_hardirq(&mut self) {
        self.stats.hardirqs += 1;
    }

    #[inline]
    pub fn count_pmn(&mut self) {
        self.stats.pmn += 1;
    }

    pub fn count_ksoftirqd_wakeup(&mut self) {
        self.stats.ksoftirqd_wakeups += 1;
    }

    /// A timer tick taken `late` ns after it was due.
    pub fn count_tick(&mut self, late: u64) {
        self.stats.ticks += 1;
        self.stats
            .tick_lateness
            .get_or_insert_with(|| Box::new(Latency::new()))
            .record(late);
    }
}

/// Time accounting buckets of one CPU, ns, and its counters.
#[derive(Clone, Debug, Default)]
struct CpuStats {
    /// ns per kind of slice, indexed by `SliceKind as usize` (`CpuStats::ns`).
    time: [u64; SLICE_KINDS],
    ctx_switches: u64,
    hardirqs: u64,
    pmn: u64,
    ticks: u64,
    ksoftirqd_wakeups: u64,
    /// Allocated at the first tick: an HDR histogram is a few hundred KiB.
    tick_lateness: Option<Box<Latency>>,
}

/// The kinds of slice (`SliceKind`'s variants).
const SLICE_KINDS: usize = 7;

impl CpuStats {
    /// Time spent doing `kind`, ns.
    fn ns(&self, kind: SliceKind) -> u64 {
        self.time[kind as usize]
    }
}
