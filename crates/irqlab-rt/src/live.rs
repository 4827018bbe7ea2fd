//! Counters of a run readable while it runs: a monitor thread (`irqlab rt --irqtop`, the
//! progress bar) samples them at wall-time intervals. The CPU threads own the counters
//! and bump them with plain relaxed stores; a sample reads them without stopping anyone.

use crate::clock::now_ns;
use crate::shared::CpuShared;
use std::sync::atomic::{AtomicU64, Ordering::*};
use std::sync::{Arc, OnceLock};

/// The counters of one run, shared between [`crate::run`] and whoever watches it. Create
/// one, put it in [`crate::RtConfig::live`], and call [`LiveCounters::snapshot`] from
/// another thread; it reads None until the run's threads start. One per run.
#[derive(Debug, Default)]
pub struct LiveCounters {
    run: OnceLock<LiveRun>,
}

#[derive(Debug)]
struct LiveRun {
    cpus: Vec<Arc<CpuShared>>,
    names: Vec<String>,
    expected_ios: Option<u64>,
    /// Monotonic ns when every thread passed the start barrier; 0 before.
    start_ns: AtomicU64,
    /// When the last CPU thread ended; 0 while the run goes on.
    end_ns: AtomicU64,
}

/// Counts since the start of the run, at `at_ns` of wall time after it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LiveSnapshot {
    pub at_ns: u64,
    /// Handler runs per vector per CPU thread, vectors in the report's order.
    pub vectors: Vec<Vec<u64>>,
    /// Posted MSI notifications per CPU thread.
    pub pmn: Vec<u64>,
    /// Completions reaped so far, every CPU thread together.
    pub completions: u64,
    /// Completions reaped so far by each CPU thread.
    pub cpu_completions: Vec<u64>,
}

/// Two handles are equal when they are the same counters.
impl PartialEq for LiveCounters {
    fn eq(&self, other: &Self) -> bool {
        std::ptr::eq(self, other)
    }
}

impl LiveCounters {
    pub fn new() -> LiveCounters {
        LiveCounters::default()
    }

    /// Called by the run once its topology is built.
    pub(crate) fn attach(
        &self,
        cpus: Vec<Arc<CpuShared>>,
        names: Vec<String>,
        expected_ios: Option<u64>,
    ) -> Result<(), crate::RtError> {
        self.run
            .set(LiveRun {
                cpus,
                names,
                expected_ios,
                start_ns: AtomicU64::new(0),
                end_ns: AtomicU64::new(0),
            })
            .map_err(|_| crate::RtError::LiveReused)
    }

    pub(crate) fn mark_start(&self, t: u64) {
        if let Some(r) = self.run.get() {
            r.start_ns.store(t.max(1), SeqCst);
        }
    }

    pub(crate) fn mark_end(&self, t: u64) {
        if let Some(r) = self.run.get() {
            r.end_ns.store(t.max(1), SeqCst);
        }
    }

    fn started(&self) -> Option<&LiveRun> {
        self.run.get().filter(|r| r.start_ns.load(SeqCst) != 0)
    }

    /// Vector names in the report's order ("nvme0q1"), once the run has its topology.
    pub fn names(&self) -> Option<Vec<String>> {
        self.run.get().map(|r| r.names.clone())
    }

    /// I/Os the run will complete when every job is bounded by I/O count alone.
    pub fn expected_ios(&self) -> Option<u64> {
        self.run.get().and_then(|r| r.expected_ios)
    }

    /// Whether the run's threads have all ended.
    pub fn is_over(&self) -> bool {
        self.run.get().is_some_and(|r| r.end_ns.load(SeqCst) != 0)
    }

    /// The counts now (or at the end of the run, once it is over).
    pub fn snapshot(&self) -> Option<LiveSnapshot> {
        let r = self.started()?;
        let start = r.start_ns.load(SeqCst);
        let end = r.end_ns.load(SeqCst);
        let at = if end != 0 { end } else { now_ns() };
        let ncpus = r.cpus.len();
        let mut vectors = Vec::new();
        for cpu in &r.cpus {
            for q in &cpu.queues {
                let mut row = q.handled();
                row.resize(ncpus, 0);
                vectors.push(row);
            }
        }
        let cpu_completions: Vec<u64> = r
            .cpus
            .iter()
            .map(|c| c.live.completions.load(Relaxed))
            .collect();
        Some(LiveSnapshot {
            at_ns: at.saturating_sub(start),
            vectors,
            pmn: r.cpus.iter().map(|c| c.live.pmn.load(Relaxed)).collect(),
            completions: cpu_completions.iter().sum(),
            cpu_completions,
        })
    }
}
