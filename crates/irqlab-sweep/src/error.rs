//! Why a sweep was refused or stopped.

use irqlab_inputs::InputError;
use std::fmt;
use std::path::PathBuf;

/// Why a sweep was refused before it ran, or stopped while running.
#[derive(Clone, Debug, PartialEq)]
pub enum SweepError {
    /// The job, platform or base policy.
    Input(InputError),
    /// A `--set KEY=VALUES` that does not make a grid (the message quotes it).
    Grid(String),
    /// One value of a swept key, checked before anything runs.
    Value {
        key: String,
        value: String,
        message: String,
    },
    /// A `--metric` name that is not one of [`crate::metrics::METRICS`].
    UnknownMetric(String),
    /// A `--x` key that cannot be an x axis.
    X(String),
    /// A point whose simulation failed: its key=value list, then why.
    Point { at: String, message: String },
    /// A point no worker ran.
    NotRun(String),
    /// A worker thread panicked.
    WorkerPanicked,
    /// A file or directory could not be written.
    Write { path: PathBuf, message: String },
    /// A portable plan that is not valid JSON of one.
    Portable(String),
    /// A point index outside the grid.
    NoSuchPoint { index: usize, points: usize },
    /// The base policy is one the platform refuses (posted MSI on a guest).
    Refused(irqlab_sim::PolicyRefused),
}

impl fmt::Display for SweepError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SweepError::Input(e) => write!(f, "{e}"),
            SweepError::Refused(e) => write!(f, "{e}"),
            SweepError::Grid(m) | SweepError::X(m) => f.write_str(m),
            SweepError::Value {
                key,
                value,
                message,
            } => write!(f, "--set {key}={value}: {message}"),
            SweepError::UnknownMetric(name) => {
                let names: Vec<&str> = crate::metrics::METRICS.iter().map(|m| m.name).collect();
                write!(
                    f,
                    "unknown metric '{name}'; known metrics: {}",
                    names.join(", ")
                )
            }
            SweepError::Point { at, message } => write!(f, "at {at}: {message}"),
            SweepError::NotRun(at) => write!(f, "at {at}: not run"),
            SweepError::WorkerPanicked => f.write_str("a sweep worker panicked"),
            SweepError::Write { path, message } => {
                write!(f, "{}: cannot write: {message}", path.display())
            }
            SweepError::Portable(m) => write!(f, "not a portable sweep plan: {m}"),
            SweepError::NoSuchPoint { index, points } => {
                write!(f, "point {index} is outside the grid of {points} points")
            }
        }
    }
}

impl std::error::Error for SweepError {}

impl From<InputError> for SweepError {
    fn from(e: InputError) -> Self {
        SweepError::Input(e)
    }
}
