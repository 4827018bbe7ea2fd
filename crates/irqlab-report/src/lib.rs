//! Run results shared by both engines, and every format they are written in.

mod fio_stats;
mod group;
mod io_stat;
mod model;
mod moderation_course;
mod num2str;
mod plat;

pub use group::group_reporting;
pub use io_stat::IoStat;
pub use model::{
    CHIP_INJECTED, CHIP_POLLED, CHIP_POSTED, CHIP_REMAPPED, CpuReport, DirReport, DiskUtil, Engine,
    HostMeasures, JobError, JobReport, Latency, LatencyTargetReport, ModerationReport, RunReport,
    SteadyStateReport, VectorReport, pci_address,
};

/// Key of [`RunReport::extra`] set to 1 when the run was stopped before its end (Ctrl-C):
/// its figures cover the run so far, and the text report says so.
pub const EXTRA_INTERRUPTED: &str = "interrupted";
/// Key of [`RunReport::extra`] set to 1 when a run reached its engine's time limit with
/// work still going (the simulator's 600 s bound on a run).
pub const EXTRA_CUT_SHORT: &str = "cut_short";
/// Keys of [`RunReport::extra`] of a run with `--event`s, in both engines: vectors moved
/// (an offline CPU's included), CPUs taken offline, vectors pending on a CPU going
/// offline retriggered at their new CPU, and old vectors __vector_cleanup found still
/// pending (tried again a jiffy later).
pub const EXTRA_IRQ_MIGRATIONS: &str = "irq_migrations";
pub const EXTRA_CPUS_OFFLINED: &str = "cpus_offlined";
pub const EXTRA_OFFLINE_RETRIGGERED: &str = "offline_retriggered";
pub const EXTRA_VECTOR_CLEANUP_REARMS: &str = "vector_cleanup_rearms";

pub mod fio_json;
pub mod fio_log;
pub mod observe;
pub mod proc_interrupts;
pub mod sanity;
pub mod text;
pub mod trace;
