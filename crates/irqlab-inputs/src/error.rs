//! Why the inputs of a run were refused; every message names the file or option.

use irqlab_fio::JobFileError;
use irqlab_sim::PlatformError;
use std::fmt;
use std::path::PathBuf;

/// Why a job, platform, policy option or topology knob was refused.
#[derive(Clone, Debug, PartialEq)]
pub enum InputError {
    /// A file could not be read (`message` is the system's reason).
    Read { path: PathBuf, message: String },
    /// The job file is malformed (FILE:LINE and what was expected).
    Job(JobFileError),
    /// The platform file or a `--set` override is wrong.
    Platform(PlatformError),
    /// A platform given by path does not exist.
    NoPlatformFile(String),
    /// A bare platform name matched no platforms/NAME.toml.
    PlatformNotFound { name: String, tried: Vec<PathBuf> },
    /// A directory (scenarios/) that is not there.
    NoDirectory(PathBuf),
    /// A job given as text or path that is neither a file nor job text.
    NoJob(String),
    /// A policy option's value, e.g. `max_loop: 0 is not in 1..=64`.
    PolicyValue { key: String, message: String },
    /// A key that is not a policy option.
    UnknownPolicyKey(String),
    /// A scenario's `policy = "..."` string.
    Policy { text: String, message: String },
    /// A topology knob the platform or jobs cannot take.
    Topology(String),
    /// A `--map` rule or `--max-runtime` the run cannot take.
    Map(String),
    /// Policy options that contradict each other, with why.
    Contradiction(String),
}

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InputError::Read { path, message } => {
                write!(f, "{}: {message}", path.display())
            }
            InputError::Job(e) => write!(f, "{e}"),
            InputError::Platform(e) => write!(f, "{e}"),
            InputError::NoPlatformFile(p) => write!(f, "{p}: no such platform file"),
            InputError::PlatformNotFound { name, tried } => write!(
                f,
                "platform '{name}' not found; tried {}",
                tried
                    .iter()
                    .map(|p| p.display().to_string())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            InputError::NoDirectory(p) => write!(f, "{}: no such scenario directory", p.display()),
            InputError::NoJob(s) => write!(
                f,
                "'{s}': no such job file (give a path to a fio job file, or the job text itself)"
            ),
            InputError::PolicyValue { key, message } => write!(f, "{key}: {message}"),
            InputError::UnknownPolicyKey(k) => write!(
                f,
                "unknown policy option '{k}'; expected one of {}",
                crate::policy::POLICY_KEYS
                    .iter()
                    .map(|(n, _)| *n)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            InputError::Policy { text, message } => write!(f, "policy \"{text}\": {message}"),
            InputError::Topology(m) | InputError::Map(m) | InputError::Contradiction(m) => {
                f.write_str(m)
            }
        }
    }
}

impl std::error::Error for InputError {}

impl From<JobFileError> for InputError {
    fn from(e: JobFileError) -> Self {
        InputError::Job(e)
    }
}

impl From<PlatformError> for InputError {
    fn from(e: PlatformError) -> Self {
        InputError::Platform(e)
    }
}

/// An option's value that does not parse: the value as given and what was wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ValueError {
    pub value: String,
    pub why: String,
}

impl ValueError {
    pub fn new(value: &str, why: impl Into<String>) -> ValueError {
        ValueError {
            value: value.to_string(),
            why: why.into(),
        }
    }
}

impl fmt::Display for ValueError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "'{}': {}", self.value, self.why)
    }
}

impl std::error::Error for ValueError {}
