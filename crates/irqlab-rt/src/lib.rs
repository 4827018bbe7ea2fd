//! The real-thread runtime: emulated NVMe controllers and CPU threads on this host, with
//! real wake-ups, driving the mechanisms of irqlab-core with the monotonic clock.
//!
//! Entry point: [`run`] takes parsed fio jobs, a core [`irqlab_core::Policy`] and an
//! [`RtConfig`], and returns the same [`irqlab_report::RunReport`] the simulator fills,
//! or an [`RtError`] saying why it refused or failed.

// Public for the stress test (tests/stress.rs drives shared descriptors, queue plans and
// wake-ups directly), the benchmark example (pin) and the command (topology's controller
// names). The rest is reached through the re-exports below.
pub mod pin;
pub mod shared;
pub mod topology;
pub mod wake;

mod clock;
mod config;
mod cpu;
mod cpu_time;
mod ctrl;
mod error;
mod events;
mod file_media;
mod fio_options;
mod irq;
mod irq_thread;
mod job;
mod ksoftirqd;
mod kworker;
mod live;
mod media;
mod report;
mod run;
mod sched;
mod softirq;
mod trace;
mod usage;
mod wake_audit;

pub use config::{RtConfig, check_policy};
pub use error::RtError;
pub use irqlab_core::StopFlag;
pub use live::{LiveCounters, LiveSnapshot};
pub use media::{Media, MediaModel};
pub use run::{run, run_observed};
pub use trace::DEFAULT_EVENT_LIMIT as TRACE_EVENT_LIMIT;
