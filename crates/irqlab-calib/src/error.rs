//! Why a scenario, a targets file or a calibration was refused or could not run.

use irqlab_inputs::InputError;
use irqlab_sim::SimError;
use std::fmt;
use std::path::{Path, PathBuf};

/// Why a scenario, targets file, measurement or calibration failed.
#[derive(Clone, Debug, PartialEq)]
pub enum CalibError {
    /// A job, platform, policy or topology input.
    Input(InputError),
    /// The simulation of a scenario failed.
    Sim(SimError),
    /// Something about one file (scenario, targets file, fio JSON, snapshot): the file,
    /// then what is wrong.
    At { path: PathBuf, message: String },
    /// A scenario or targets file that does not parse: `FILE:LINE: KEY: what is wrong`.
    Syntax(String),
    /// A fio JSON result or /proc/interrupts snapshot that cannot be read as one.
    Measured(String),
    /// A metric name that is not one of [`crate::metrics::ALL`].
    UnknownMetric(String),
    /// A `--param KEY=LO..HI` (or `KEY`) that cannot be fitted.
    Param { spec: String, why: String },
    /// Fewer evaluations than Nelder-Mead's first simplex (one more than the parameters).
    TooFewEvals { max_evals: usize, params: usize },
    /// No targets were given.
    NothingToFit,
    /// A scenario name that selects nothing.
    UnknownScenario {
        name: String,
        experiments: Vec<String>,
    },
    /// A scenario directory with no scenario files.
    NoScenarios(PathBuf),
    /// An evaluation task that is not valid JSON of an [`crate::EvalTask`].
    Task(String),
    /// The fitted platform could not be written as TOML.
    Encode(String),
    /// A fitted parameter that cross-validation cannot refit (no range, a pin that
    /// names no figure).
    Refit { param: String, why: String },
}

impl CalibError {
    /// A TOML error in `text` (the contents of `path`), as `FILE:LINE: KEY: what`.
    pub fn toml(text: &str, path: &Path, e: &toml::de::Error) -> CalibError {
        CalibError::Syntax(irqlab_sim::toml_input::describe(
            text,
            &path.display().to_string(),
            e,
        ))
    }

    /// This error, said about `path`.
    pub fn at(path: impl Into<PathBuf>, e: impl fmt::Display) -> CalibError {
        CalibError::At {
            path: path.into(),
            message: e.to_string(),
        }
    }
}

impl fmt::Display for CalibError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CalibError::Input(e) => write!(f, "{e}"),
            CalibError::Sim(e) => write!(f, "{e}"),
            CalibError::At { path, message } => write!(f, "{}: {message}", path.display()),
            CalibError::Syntax(m) | CalibError::Measured(m) => f.write_str(m),
            CalibError::UnknownMetric(m) => {
                let names: Vec<&str> = crate::metrics::ALL.iter().map(|m| m.name()).collect();
                write!(f, "unknown metric '{m}'; known: {}", names.join(", "))
            }
            CalibError::Refit { param, why } => write!(
                f,
                "{param}: {why}; `irqlab platform --check` lists what a fitted value needs"
            ),
            CalibError::Param { spec, why } => write!(
                f,
                "--param '{spec}': {why}; expected KEY=LO..HI, e.g. uncore.stack_rtt_ns=50..400, or KEY with a range in the platform's ledger"
            ),
            CalibError::TooFewEvals { max_evals, params } => write!(
                f,
                "--max-evals {max_evals}: fitting {params} parameter(s) needs at least {} evaluations (the first simplex)",
                params + 1
            ),
            CalibError::NothingToFit => {
                f.write_str("nothing to fit: give --targets FILE or --scenario NAME")
            }
            CalibError::UnknownScenario { name, experiments } => write!(
                f,
                "'{name}' names no scenario; experiments: {}; or give a scenario file stem",
                experiments.join(", ")
            ),
            CalibError::NoScenarios(d) => write!(f, "{}: no scenario files (*.toml)", d.display()),
            CalibError::Task(m) => write!(f, "not an evaluation task: {m}"),
            CalibError::Encode(m) => write!(f, "cannot encode the fitted platform: {m}"),
        }
    }
}

impl std::error::Error for CalibError {}

impl From<InputError> for CalibError {
    fn from(e: InputError) -> Self {
        CalibError::Input(e)
    }
}

impl From<SimError> for CalibError {
    fn from(e: SimError) -> Self {
        CalibError::Sim(e)
    }
}
