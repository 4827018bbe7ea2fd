//! A resolved fio job: every option irqlab models, with fio's defaults applied.
//!
//! Both engines read jobs only through this type, so a job file means the same thing to
//! `irqlab run` and `irqlab rt`.

use crate::control::{Controls, SubmitMode};
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
    /// POSIX aio_read / aio_write: glibc's helper threads each issue one pread/pwrite,
    /// so iodepth I/Os are in flight, each costing a psync call.
    PosixAio,
    /// fio's `null`: no device; every I/O completes when it is submitted, with no
    /// syscall and no interrupt.
    Null,
    /// fio's `cpuio`: no I/O; the job burns `cpuload` percent of its CPU in user mode
    /// (engines/cpu.c), competing with interrupt work there.
    CpuIo,
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
            IoEngine::PosixAio => "posixaio",
            IoEngine::Null => "null",
            IoEngine::CpuIo => "cpuio",
        }
    }

    /// Whether the engine can poll for its completions: libaio and POSIX aio have no
    /// hipri (RWF_HIPRI reaches the block layer only through preadv2 and io_uring).
    /// Both engines refuse a polled job with [`IoEngine::NO_POLL`].
    pub fn can_poll(self) -> bool {
        !matches!(self, IoEngine::Libaio | IoEngine::PosixAio)
    }

    /// Why a job of an engine that cannot poll is refused polled delivery.
    pub const NO_POLL: &'static str = "cannot poll for completions (no hipri); use ioengine=io_uring or pvsync2, or an interrupt delivery";

    /// Whether I/Os reach a device (fio's null engine completes them itself; cpuio
    /// does none).
    pub fn has_device(self) -> bool {
        !matches!(self, IoEngine::Null | IoEngine::CpuIo)
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
    /// `rw=trim`, `randtrim`: deallocate (NVMe Dataset Management) commands.
    Trim,
    RandTrim,
    /// `rw=trimwrite`, `randtrimwrite`: each block is trimmed, then written.
    TrimWrite,
    RandTrimWrite,
}

impl RwMode {
    /// Percentage of reads among the reads and writes (trims are neither).
    pub fn read_pct(self) -> u8 {
        match self {
            RwMode::Read | RwMode::RandRead => 100,
            RwMode::Write
            | RwMode::RandWrite
            | RwMode::Trim
            | RwMode::RandTrim
            | RwMode::TrimWrite
            | RwMode::RandTrimWrite => 0,
            RwMode::RandRw { read_pct } | RwMode::ReadWrite { read_pct } => read_pct,
        }
    }

    pub fn is_random(self) -> bool {
        matches!(
            self,
            RwMode::RandRead
                | RwMode::RandWrite
                | RwMode::RandRw { .. }
                | RwMode::RandTrim
                | RwMode::RandTrimWrite
        )
    }

    /// Whether the job trims (fio's td_trim).
    pub fn trims(self) -> bool {
        matches!(
            self,
            RwMode::Trim | RwMode::RandTrim | RwMode::TrimWrite | RwMode::RandTrimWrite
        )
    }

    /// Whether the job writes (fio's td_write).
    pub fn writes(self) -> bool {
        self.read_pct() < 100 && !matches!(self, RwMode::Trim | RwMode::RandTrim)
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

/// One option as the job file wrote it: fio's name, the value (empty for a bare flag),
/// where it was written, and whether a `[global]` section set it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobOption {
    pub name: String,
    pub value: String,
    pub file: PathBuf,
    pub line: usize,
    pub global: bool,
}

/// Block sizes of one direction (fio's min_bs/max_bs and bssplit).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BlockSizes {
    /// `bs=4k`.
    Fixed(u64),
    /// `bsrange=4k-64k`: io_u.c get_next_buflen draws `min + max * r` aligned to min.
    Range { min: u64, max: u64 },
    /// `bssplit=4k/10:64k/90`: (size, percent) sorted by percent as options.c does.
    Split(Vec<(u64, u32)>),
}

/// fio's `rate_process=`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum RateProcess {
    #[default]
    Linear,
    Poisson,
}

/// `rate=`/`rate_iops=` (index 0 reads, 1 writes; 0 means no limit) and `rate_process`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct RateLimit {
    pub bytes_per_sec: [u64; 2],
    pub iops: [u64; 2],
    pub process: RateProcess,
}

impl RateLimit {
    pub fn is_set(&self) -> bool {
        self.bytes_per_sec.iter().chain(&self.iops).any(|&v| v > 0)
    }
}

/// `thinktime=` with its spin part and how many blocks between stalls.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ThinkTime {
    pub ns: u64,
    pub spin_ns: u64,
    pub blocks: u64,
    /// `thinktime_blocks_type=issue`: count issued blocks, not completed ones.
    pub on_issue: bool,
}

/// `write_lat_log`/`write_bw_log`/`write_iops_log` prefixes (the job name when bare) and
/// how their samples are averaged.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct LogOptions {
    pub lat: Option<String>,
    pub bw: Option<String>,
    pub iops: Option<String>,
    /// `log_avg_msec` (0: one entry per I/O).
    pub avg_msec: u64,
    /// `per_job_logs` (default 1): file names carry the job number.
    pub per_job: bool,
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
    /// Block size in bytes (`bs=4k` gives 4096): the smallest size of the direction the
    /// job does most (reads unless it only writes).
    pub bs: u64,
    /// Block sizes of reads and writes (`bs=R,W`, `bsrange`, `bssplit`).
    pub block_sizes: [BlockSizes; 2],
    /// `bs_unaligned`: drawn sizes are not rounded to the smallest size.
    pub bs_unaligned: bool,
    /// I/Os kept in flight; forced to 1 for synchronous engines.
    pub iodepth: u32,
    /// I/Os submitted per submit call (`iodepth_batch_submit`; 0 in the file, or more
    /// than iodepth, means iodepth: init.c fixup_options), 1 to iodepth.
    pub iodepth_batch_submit: u32,
    /// Minimum completions reaped per reap call (`iodepth_batch_complete_min`; 0 means
    /// check without waiting), at most iodepth.
    pub iodepth_batch_complete_min: u32,
    /// Maximum completions reaped per reap call (fio's default: equal to the minimum, and
    /// at least 1), capped at iodepth. The engines read these three as resolved here.
    pub iodepth_batch_complete_max: u32,
    pub numjobs: u32,
    /// CPUs from `cpus_allowed`, sorted and deduplicated; None means any CPU.
    pub cpus_allowed: Option<Vec<usize>>,
    pub cpus_allowed_policy: CpusPolicy,
    /// Names from `filename=a:b:c` (with `directory=` in front), in order; without
    /// `filename=`, the names fio makes for clone 0 (`filename_format`, by default
    /// `$jobname.$jobnum.$filenum`, `nrfiles` of them).
    pub filenames: Vec<String>,
    /// The names of clone k (k < numjobs) when they differ from `filenames`: fio names
    /// each clone's files with its own `$jobnum`. Empty when every clone uses
    /// `filenames`.
    pub clone_filenames: Vec<Vec<String>>,
    /// Whether a value used `$ncpus` (the report says what it stood for).
    pub uses_ncpus: bool,
    /// `numa_cpu_nodes` (None: any node); engines refuse nodes their machine lacks.
    pub numa_cpu_nodes: Option<Vec<usize>>,
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
    pub rate: RateLimit,
    pub thinktime: Option<ThinkTime>,
    /// `randseed`, if given (it overrides `randrepeat`, as in fio's init.c).
    pub randseed: Option<u64>,
    /// `randrepeat` (default 1): seeds repeat from run to run.
    pub randrepeat: bool,
    /// `startdelay` in ns; a range `startdelay=1s-2s` gives (low, high).
    pub startdelay_ns: (u64, u64),
    /// `stonewall`: wait for every job above to finish, and start a new reporting group.
    pub stonewall: bool,
    /// `new_group`: start a new reporting group (jobs still run together).
    pub new_group: bool,
    /// `description`, shown as `desc` in JSON.
    pub description: Option<String>,
    pub logs: LogOptions,
    /// `bwavgtime` and `iopsavgtime` in ms (fio's default 500): the bandwidth and IOPS
    /// sample interval.
    pub bw_avg_ms: u64,
    pub iops_avg_ms: u64,
    /// Whether `bwavgtime`/`iopsavgtime` were written (init.c compares them with
    /// log_avg_msec only then).
    pub bw_avg_set: bool,
    pub iops_avg_set: bool,
    /// `clat_percentiles` (default 1).
    pub clat_percentiles: bool,
    /// Block sizes of trims (`bs=R,W,T`, one value for all).
    pub trim_sizes: BlockSizes,
    /// What the job does besides its I/O pattern (submission, exits, flow, minimum
    /// rates, latency targets, steady state, cpuio, zones, write commands), resolved.
    pub controls: Controls,
    /// Every option as written (globals first, then the job's own), values as strings,
    /// bare flags with an empty value; fio's JSON "job options" and "global options" are
    /// made from this.
    pub options: Vec<JobOption>,
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

    /// The files clone `k` uses (fio's `add_file` per clone).
    pub fn files_of_clone(&self, k: u32) -> &[String] {
        match self.clone_filenames.get(k as usize) {
            Some(names) => names,
            None => &self.filenames,
        }
    }

    /// The I/Os really kept in flight: 1 for synchronous engines submitting inline.
    pub fn effective_iodepth(&self) -> u32 {
        if self.ioengine.is_sync() && self.controls.submit_mode == SubmitMode::Inline {
            1
        } else {
            self.iodepth
        }
    }

    /// How long the job runs in ns including ramp time, if bounded by time (u64::MAX
    /// when the sum does not fit: engines refuse such a run rather than wrap).
    pub fn total_time_ns(&self) -> Option<u64> {
        self.runtime_ns.map(|r| r.saturating_add(self.ramp_time_ns))
    }

    /// Where the last of `names` was written for this job (the value fio uses), for an
    /// error about that option; None when the file sets none of them.
    pub fn option_at(&self, names: &[&str]) -> Option<(&std::path::Path, usize)> {
        self.options
            .iter()
            .rev()
            .find(|o| names.contains(&o.name.as_str()))
            .map(|o| (o.file.as_path(), o.line))
    }

    /// The job section's own options (fio's JSON "job options").
    pub fn job_options(&self) -> Vec<(String, String)> {
        self.pairs(false)
    }

    /// The options its `[global]` sections set (fio's JSON "global options").
    pub fn global_options(&self) -> Vec<(String, String)> {
        self.pairs(true)
    }

    fn pairs(&self, global: bool) -> Vec<(String, String)> {
        self.options
            .iter()
            .filter(|o| o.global == global)
            .map(|o| (o.name.clone(), o.value.clone()))
            .collect()
    }

    /// Where an option was last written, for errors about it (None: not written).
    pub fn option(&self, name: &str) -> Option<&JobOption> {
        self.options.iter().rev().find(|o| o.name == name)
    }

    /// Whether the block size of any direction varies from I/O to I/O.
    pub fn variable_bs(&self) -> bool {
        self.block_sizes
            .iter()
            .any(|b| !matches!(b, BlockSizes::Fixed(_)))
    }
}

impl BlockSizes {
    /// fio's min_bs.
    pub fn min(&self) -> u64 {
        match self {
            BlockSizes::Fixed(b) => *b,
            BlockSizes::Range { min, .. } => *min,
            BlockSizes::Split(v) => v.iter().map(|e| e.0).min().unwrap_or(0),
        }
    }

    /// fio's max_bs.
    pub fn max(&self) -> u64 {
        match self {
            BlockSizes::Fixed(b) => *b,
            BlockSizes::Range { max, .. } => *max,
            BlockSizes::Split(v) => v.iter().map(|e| e.0).max().unwrap_or(0),
        }
    }

    /// io_u.c get_next_buflen: the size of the next I/O from one 32-bit draw `r` of the
    /// job's bs stream (fio's default generator is 32 bits wide).
    pub fn pick(&self, r: u32, unaligned: bool) -> u64 {
        const FRAND_MAX: u64 = u32::MAX as u64;
        let (minbs, maxbs) = (self.min(), self.max());
        let mut buflen = match self {
            BlockSizes::Fixed(b) => return *b,
            BlockSizes::Range { min, max } => {
                min + (*max as f64 * (f64::from(r) / (FRAND_MAX as f64 + 1.0))) as u64
            }
            BlockSizes::Split(entries) => {
                let mut perc = 0u64;
                let mut len = 0;
                for &(bs, p) in entries {
                    if p == 0 {
                        continue;
                    }
                    len = bs;
                    perc += u64::from(p);
                    if u64::from(r) / perc <= FRAND_MAX / 100 {
                        break;
                    }
                }
                len
            }
        };
        if !unaligned {
            if minbs.is_power_of_two() {
                buflen &= !(minbs - 1);
            } else {
                buflen -= buflen % minbs;
            }
        }
        buflen.min(maxbs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buflen_follows_get_next_buflen() {
        let r = BlockSizes::Range {
            min: 4096,
            max: 65536,
        };
        assert_eq!(r.pick(0, false), 4096);
        // min + max * r/2^32, aligned down to min, capped at max.
        assert_eq!(r.pick(1 << 31, false), 4096 + 32768);
        assert_eq!(r.pick(u32::MAX, false), 65536);
        assert_eq!(r.pick(100_000, true), 4096 + 1);
        let s = BlockSizes::Split(vec![(4096, 10), (65536, 90)]);
        // r / perc <= max / 100: the first 10% of draws take 4k.
        assert_eq!(s.pick(0, false), 4096);
        assert_eq!(s.pick(u32::MAX / 100 * 10, false), 4096);
        assert_eq!(s.pick(u32::MAX / 100 * 11, false), 65536);
        let n = 100_000u64;
        let small = (0..n)
            .filter(|i| s.pick((i * (u32::MAX as u64 / n)) as u32, false) == 4096)
            .count();
        assert!((9_900..=10_100).contains(&small), "{small}");
        assert_eq!(BlockSizes::Fixed(512).pick(7, false), 512);
    }
}
