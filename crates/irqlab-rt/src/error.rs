//! Why a run was refused or failed.

use irqlab_core::delivery::EventError;
use std::fmt;

/// Why the runtime refused or failed a run. Each message names the option, file or
/// thread at fault.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RtError {
    /// The policy, the runtime's settings or the job file ask for what it cannot run.
    Refused(String),
    /// The queues and vectors cannot be laid out on the CPU threads.
    Topology(String),
    /// `--media`: the model's values, or a file that cannot be opened, created or read.
    Media(String),
    /// An `--event` no kernel would carry out, or one naming what the run does not have.
    Event(String),
    /// No I/O completed for `secs` seconds: the run was stopped.
    Stalled { secs: u64 },
    /// A thread of the run panicked.
    Panicked(&'static str),
    /// These live counters already watched a run.
    LiveReused,
    /// A thread could not be pinned to its host CPU (the run goes on unpinned).
    Pin(String),
}

impl fmt::Display for RtError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RtError::Refused(m)
            | RtError::Topology(m)
            | RtError::Media(m)
            | RtError::Event(m)
            | RtError::Pin(m) => f.write_str(m),
            RtError::Stalled { secs } => write!(
                f,
                "no I/O completed for {secs} s: the run was stopped (a lost wake-up or a stuck controller)"
            ),
            RtError::Panicked(what) => write!(f, "a {what} thread panicked"),
            RtError::LiveReused => {
                f.write_str("these live counters already watched a run: use one per run")
            }
        }
    }
}

impl std::error::Error for RtError {}

impl From<EventError> for RtError {
    fn from(e: EventError) -> Self {
        RtError::Event(e.to_string())
    }
}
