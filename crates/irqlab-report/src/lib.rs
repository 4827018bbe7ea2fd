//! Run results shared by both engines, and every format they are written in.

mod model;

pub use model::{
    CpuReport, DirReport, Engine, HostMeasures, JobReport, Latency, RunReport, VectorReport,
};
