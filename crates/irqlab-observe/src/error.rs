//! Why an observed run could not be watched or written out.

use irqlab_plot::PlotError;
use irqlab_sim::SimError;
use std::fmt;
use std::path::PathBuf;

/// Why an observed run failed, or an observer option was refused.
#[derive(Clone, Debug, PartialEq)]
pub enum ObserveError {
    /// A trace file could not be created.
    Create {
        path: PathBuf,
        what: &'static str,
        message: String,
    },
    /// A trace file could not be written.
    File {
        path: PathBuf,
        what: &'static str,
        message: String,
    },
    /// irqtop lines could not be printed.
    Print(String),
    /// The timeline picture could not be drawn or written (the error names the file).
    Plot(PlotError),
    /// `--timeline` names neither a .png nor a .svg file.
    TimelineName(PathBuf),
    /// An option's value, e.g. a window or an interval.
    Option(String),
    /// The simulation itself failed.
    Sim(SimError),
    /// The `--timeline-compare` run failed.
    Compare(SimError),
    /// The real-thread runtime refused or failed the run.
    Runtime(irqlab_rt::RtError),
    /// The runtime's monitor thread panicked.
    MonitorPanicked,
}

impl fmt::Display for ObserveError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ObserveError::Create {
                path,
                what,
                message,
            } => write!(f, "{}: cannot create the {what}: {message}", path.display()),
            ObserveError::File {
                path,
                what,
                message,
            } => write!(f, "{}: cannot write the {what}: {message}", path.display()),
            ObserveError::Plot(e) => write!(f, "{e}"),
            ObserveError::Print(m) => write!(f, "cannot print irqtop lines: {m}"),
            ObserveError::TimelineName(p) => write!(
                f,
                "{}: the --timeline file name must end in .png or .svg",
                p.display()
            ),
            ObserveError::Option(m) => f.write_str(m),
            ObserveError::Sim(e) => write!(f, "{e}"),
            ObserveError::Compare(e) => write!(f, "--timeline-compare: {e}"),
            ObserveError::Runtime(e) => write!(f, "{e}"),
            ObserveError::MonitorPanicked => f.write_str("the monitor thread panicked"),
        }
    }
}

impl std::error::Error for ObserveError {}

impl From<SimError> for ObserveError {
    fn from(e: SimError) -> Self {
        ObserveError::Sim(e)
    }
}
