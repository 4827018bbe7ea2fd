//! The real-thread runtime: emulated NVMe controllers and CPU threads on this host, with
//! real wake-ups, driving the mechanisms of irqlab-core with the monotonic clock.
//!
//! Entry point: [`run`] takes parsed fio jobs, a core [`irqlab_core::Policy`] and an
//! [`RtConfig`], and returns the same [`irqlab_report::RunReport`] the simulator fills.

pub mod clock;
pub mod config;
pub mod cpu;
pub mod ctrl;
pub mod file_media;
pub mod fio_options;
mod irq;
pub mod irq_thread;
pub mod job;
pub mod ksoftirqd;
pub mod kworker;
pub mod live;
pub mod media;
pub mod pin;
pub mod report;
pub mod run;
pub mod sched;
pub mod shared;
pub mod softirq;
pub mod topology;
pub mod trace;
pub mod usage;
pub mod wake;

pub use config::{RtConfig, check_policy};
pub use live::{LiveCounters, LiveSnapshot};
pub use media::{Media, MediaModel};
pub use run::{run, run_observed};
