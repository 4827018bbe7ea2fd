//! Sweeps: a grid of policy, job, platform and seed values, each point simulated on its
//! own, and the CSV, table and plots of the metrics. `irqlab sweep` runs the points on
//! threads ([`run_local`]); the Python package runs them as tasks of a Dask cluster with
//! [`Plan::portable`] and [`Plan::run_point`], and writes the same CSV bytes with
//! [`output::csv_header`] and [`output::csv_row`].

mod error;
pub mod fio_dir;
pub mod grid;
pub mod metrics;
pub mod output;
pub mod plan;
pub mod run;

pub use error::SweepError;
pub use grid::{Dim, Grid, KeyKind};
pub use metrics::METRICS;
pub use output::PointResult;
pub use plan::{Plan, SweepSpec};
pub use run::{default_threads, run_local};
