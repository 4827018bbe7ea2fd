//! A resolved fio job: every option irqlab models, with fio's defaults applied.
//!
//! Both engines read jobs only through this type, so a job file means the same thing to
//! `irqlab run` and `irqlab rt`.

use std::path::PathBuf;

/// fio's `ioengine=`: how the job submits and reaps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IoEngine {
    /// io_submit / io_getevents (fio's `libaio`).
    Libaio,
    /// io_uring_enter with SQ and CQ rings (fio's `io_uring`).
    IoUring,
    /// preadv2 / pwritev2, one synchronous I/O per call; `hipri` sets RWF_HIPRI.
    Pvsync2,
    /// pread / pwrite, one synchronous I/O per call (fio's default `psync`).
    Psync,
}

impl IoEngine {
    /// Synchronous engines keep one I/O in flight whatever `iodepth` says (fio HOWTO).
    pub fn is_sync(self) -> bool {
        matches!(self, IoEngine::Pvsync2 | IoEngine::Psync)
    }

    pub fn name(self) -> &'static str {
        match self {
            IoEngine::Libaio => "libaio",
            IoEngine::IoUring => "io_uring",
            IoEngine::Pvsync2 => "pvsync2",
            IoEngine::Psync => "psync",
        }
    }
}

/// fio's `rw=`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RwMode {
    Read,
    Write,
    RandRead,
    RandWrite,
    /// `rw=randrw` with `rwmixread` percent reads.
    RandRw {
        read_pct: u8,
    },
    /// `rw=rw` / `readwrite` with `rwmixread` percent reads.
    ReadWrite {
        read_pct: u8,
    },
}

impl RwMode {
    /// Percentage of I/Os that are reads.
    pub fn read_pct(self) -> u8 {
        match self {
            RwMode::Read | RwMode::RandRead => 100,
            RwMode::Write | RwMode::RandWrite => 0,
            RwMode::RandRw { read_pct } | RwMode::ReadWrite { read_pct } => read_pct,
        }
    }

    pub fn is_random(self) -> bool {
        matches!(
            self,
            RwMode::RandRead | RwMode::RandWrite | RwMode::RandRw { .. }
        )
    }
}

/// fio's `cpus_allowed_policy=`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CpusPolicy {
    /// Every clone of the job may run on the whole set.
    Shared,
    /// Clone k of the job gets CPU k of the set, round robin.
    Split,
}

/// One job after `[global]` sections above it were applied. `numjobs` is not expanded:
/// engines clone the job themselves (see [`JobSpec::clone_cpus`]).
#[derive(Clone, Debug, PartialEq)]
pub struct JobSpec {
    /// The section name (`[randread]` gives "randread").
    pub name: String,
    /// The file and line of the section header, for error messages about this job.
    pub file: PathBuf,
    pub line: usize,
    pub ioengine: IoEngine,
    pub rw: RwMode,
    /// Block size in bytes (`bs=4k` gives 4096).
    pub bs: u64,
    /// I/Os kept in flight; forced to 1 for synchronous engines.
    pub iodepth: u32,
    /// I/Os submitted per submit call (`iodepth_batch_submit`; 0 in the file means iodepth).
    pub iodepth_batch_submit: u32,
    /// Minimum completions reaped per reap call (`iodepth_batch_complete_min`; 0 means
    /// check without waiting).
    pub iodepth_batch_complete_min: u32,
    /// Maximum completions reaped per reap call (fio's default: equal to the minimum, and
    /// at least 1), capped at iodepth.
    pub iodepth_batch_complete_max: u32,
    pub numjobs: u32,
    /// CPUs from `cpus_allowed`, sorted and deduplicated; None means any CPU.
    pub cpus_allowed: Option<Vec<usize>>,
    pub cpus_allowed_policy: CpusPolicy,
    /// Names from `filename=a:b:c`, in order.
    pub filenames: Vec<String>,
    /// `runtime` in ns, if given.
    pub runtime_ns: Option<u64>,
    /// `ramp_time` in ns (0 if not given); no statistics are recorded during it.
    pub ramp_time_ns: u64,
    pub time_based: bool,
    /// Total bytes per job (`size`), if given; with no runtime the job ends after it.
    pub size: Option<u64>,
    /// `number_ios`: stop after this many I/Os, if given.
    pub number_ios: Option<u64>,
    /// `hipri`: polled completions (io_uring IOPOLL, pvsync2 RWF_HIPRI).
    pub hipri: bool,
    pub direct: bool,
    pub group_reporting: bool,
    /// Every option as written (globals first, then the job's own), values as strings,
    /// bare flags with an empty value; fio's JSON "job options" is made from this.
    pub options: Vec<(String, String)>,
}

impl JobSpec {
    /// The CPUs that clone `k` (0-based, k < numjobs) may run on; None means any CPU.
    pub fn clone_cpus(&self, k: u32) -> Option<Vec<usize>> {
        let set = self.cpus_allowed.as_ref()?;
        match self.cpus_allowed_policy {
            CpusPolicy::Shared => Some(set.clone()),
            CpusPolicy::Split => Some(vec![set[k as usize % set.len()]]),
        }
    }

    /// The I/Os really kept in flight: 1 for synchronous engines.
    pub fn effective_iodepth(&self) -> u32 {
        if self.ioengine.is_sync() {
            1
        } else {
            self.iodepth
        }
    }

    /// How long the job runs in ns including ramp time, if bounded by time.
    pub fn total_time_ns(&self) -> Option<u64> {
        self.runtime_ns.map(|r| r + self.ramp_time_ns)
    }
}
