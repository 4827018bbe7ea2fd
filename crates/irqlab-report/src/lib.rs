//! Run results shared by both engines, and every format they are written in.

mod fio_stats;
mod model;
mod num2str;

pub use model::{
    CpuReport, DirReport, Engine, HostMeasures, JobReport, Latency, ModerationReport, RunReport,
    VectorReport,
};

pub mod fio_json;
pub mod observe;
pub mod proc_interrupts;
pub mod text;
pub mod trace;
