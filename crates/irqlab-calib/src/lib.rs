//! Calibration: scenarios of published experiments, the metrics compared with them, a
//! parallel runner, and a derivative-free fit of platform parameters to measured values.
//! `irqlab reproduce`, `irqlab calibrate` and the Python package are thin layers over it.

pub mod crossval;
pub mod crossval_table;
mod error;
pub mod explain;
pub mod fit;
pub mod measured;
pub mod metrics;
pub mod nelder_mead;
pub mod patch;
pub mod provenance;
pub mod reproduce;
pub mod runner;
pub mod scenario;
pub mod table;
pub mod targets;

pub use error::CalibError;
pub use fit::{EvalTask, Evaluator, Fit, FitSpec, Fitted, Param, Threads};
pub use metrics::Metric;
pub use reproduce::{reproduce, select};
pub use scenario::{Scenario, load_dir};
pub use table::Row;
pub use targets::TargetSet;
