//! Why advice could not be given.

use std::fmt;

#[derive(Clone, Debug, PartialEq)]
pub enum AdviseError {
    /// The job file does not parse.
    Job(String),
    /// A candidate's policy options are refused (candidate, why).
    Policy(String, String),
    /// A candidate cannot be simulated (candidate, why).
    Sim(String, String),
    /// The chart could not be drawn.
    Chart(String),
    /// `--candidates` named one that is not a candidate.
    Only(String),
}

impl fmt::Display for AdviseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AdviseError::Job(e) => f.write_str(e),
            AdviseError::Policy(c, e) => write!(f, "candidate {c}: {e}"),
            AdviseError::Sim(c, e) => write!(f, "candidate {c}: {e}"),
            AdviseError::Chart(e) | AdviseError::Only(e) => f.write_str(e),
        }
    }
}

impl std::error::Error for AdviseError {}
