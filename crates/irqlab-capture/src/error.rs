//! Why a capture could not be recorded or read: every message names the file (or the
//! option) and says what was expected there.

use std::fmt;
use std::path::PathBuf;

/// What is wrong with a piece of text, before it is known which file it came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Malformed(pub String);

impl fmt::Display for Malformed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Malformed {}

/// Why recording, reading or benchmarking failed.
#[derive(Clone, Debug, PartialEq)]
pub enum CaptureError {
    /// A file the capture needs is not there.
    Missing { path: PathBuf, expected: String },
    /// A file that could not be read (not a regular file, too large, not UTF-8, the OS's
    /// refusal).
    Read { path: PathBuf, why: String },
    /// A file whose contents are not what was expected.
    Malformed { path: PathBuf, why: String },
    /// A fio result from a run that failed: a job's error code, or no I/O at all.
    FailedRun { path: PathBuf, why: String },
    /// Two /proc/interrupts snapshots of one run that cannot be from one window of one
    /// boot: different boot times, counters that went down, different CPU columns.
    Snapshots {
        before: PathBuf,
        after: PathBuf,
        why: String,
    },
    /// A capture directory with nothing to read, or a layout that is incomplete.
    Layout { dir: PathBuf, why: String },
    /// fio is not installed, or the one named does not run.
    NoFio(String),
    /// A target refused before anything ran (mounted, too small, not a file or device).
    Target { path: PathBuf, why: String },
    /// A fio run that exited with an error: its name, status and the end of its stderr.
    Fio { run: String, why: String },
    /// Something irqlab writes could not be written.
    Write { path: PathBuf, why: String },
    /// Stopped by Ctrl-C (or SIGTERM); the target file irqlab laid out was removed.
    Interrupted,
    /// The host microbenchmark could not run (a CPU it needs, a thread it starts).
    Bench(String),
}

impl CaptureError {
    pub fn malformed(path: impl Into<PathBuf>, why: impl fmt::Display) -> CaptureError {
        CaptureError::Malformed {
            path: path.into(),
            why: why.to_string(),
        }
    }

    pub fn write(path: impl Into<PathBuf>, e: &std::io::Error) -> CaptureError {
        CaptureError::Write {
            path: path.into(),
            why: irqlab_fio::input::io_reason(e),
        }
    }
}

impl fmt::Display for CaptureError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CaptureError::Missing { path, expected } => {
                write!(f, "{}: missing; expected {expected}", path.display())
            }
            CaptureError::Read { path, why } => write!(f, "{}: {why}", path.display()),
            CaptureError::Malformed { path, why } => write!(f, "{}: {why}", path.display()),
            CaptureError::FailedRun { path, why } => {
                write!(f, "{}: a failed fio run: {why}", path.display())
            }
            CaptureError::Snapshots { before, after, why } => write!(
                f,
                "{} and {}: {why}; expected /proc/interrupts just before and just after the run, of one boot",
                before.display(),
                after.display()
            ),
            CaptureError::Layout { dir, why } => write!(f, "{}: {why}", dir.display()),
            CaptureError::NoFio(why) => f.write_str(why),
            CaptureError::Target { path, why } => {
                write!(f, "target {}: {why}", path.display())
            }
            CaptureError::Fio { run, why } => write!(f, "fio run {run}: {why}"),
            CaptureError::Write { path, why } => {
                write!(f, "{}: cannot write: {why}", path.display())
            }
            CaptureError::Interrupted => f.write_str(
                "interrupted: the file laid out for the runs was removed; runs that had finished stay in the capture directory",
            ),
            CaptureError::Bench(why) => write!(f, "hostbench: {why}"),
        }
    }
}

impl std::error::Error for CaptureError {}
