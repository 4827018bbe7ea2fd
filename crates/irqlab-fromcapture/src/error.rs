//! Why a platform could not be built from a capture: each message says what is missing
//! or wrong and where.

use std::fmt;
use std::path::PathBuf;

#[derive(Clone, Debug, PartialEq)]
pub enum FromCaptureError {
    /// The capture directory itself was refused by the reader.
    Capture(irqlab_capture::CaptureError),
    /// Something the model needs is not in the capture, or the model has no part for what
    /// the capture shows: what it is, and what would make it modellable.
    Unmodelled { what: String, missing: String },
    /// No run of the capture can pin anything: why each was left out.
    NoUsableRun { dir: PathBuf, why: Vec<String> },
    /// `--runs` named a run the capture does not have.
    UnknownRun { name: String, runs: Vec<String> },
    /// A shared table (cpus/, kernels/, kinds/) that is missing or does not parse.
    Table { path: PathBuf, why: String },
    /// The platform assembled from the capture does not load (a bug or a table that
    /// lacks a value the model needs).
    Platform(String),
    /// A run's job could not be rebuilt or simulated.
    Run { run: String, why: String },
    /// The calibration machinery refused the fit.
    Calib(irqlab_calib::CalibError),
    /// A synthetic capture (a simulated machine's runs) could not be written.
    Synthetic { dir: PathBuf, why: String },
}

impl fmt::Display for FromCaptureError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FromCaptureError::Capture(e) => write!(f, "{e}"),
            FromCaptureError::Unmodelled { what, missing } => {
                write!(f, "cannot model {what}: {missing}")
            }
            FromCaptureError::NoUsableRun { dir, why } => write!(
                f,
                "{}: no run of the capture can pin a cost ({}); expected at least one fio run with I/O on a device the model has (irqlab capture runs a battery; a hand layout needs NAME.json with NAME.irq0 and NAME.irq1)",
                dir.display(),
                why.join("; ")
            ),
            FromCaptureError::UnknownRun { name, runs } => write!(
                f,
                "--runs: the capture has no run '{name}'; its runs: {}",
                runs.join(", ")
            ),
            FromCaptureError::Table { path, why } => write!(f, "{}: {why}", path.display()),
            FromCaptureError::Platform(why) => write!(
                f,
                "the platform built from the capture does not load: {why}"
            ),
            FromCaptureError::Run { run, why } => write!(f, "run {run}: {why}"),
            FromCaptureError::Calib(e) => write!(f, "{e}"),
            FromCaptureError::Synthetic { dir, why } => {
                write!(
                    f,
                    "{}: cannot write the synthetic capture: {why}",
                    dir.display()
                )
            }
        }
    }
}

impl std::error::Error for FromCaptureError {}

impl From<irqlab_capture::CaptureError> for FromCaptureError {
    fn from(e: irqlab_capture::CaptureError) -> Self {
        FromCaptureError::Capture(e)
    }
}

impl From<irqlab_calib::CalibError> for FromCaptureError {
    fn from(e: irqlab_calib::CalibError) -> Self {
        FromCaptureError::Calib(e)
    }
}
