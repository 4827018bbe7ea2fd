//! Calibration: scenarios of published experiments, the metrics compared with them, a
//! parallel runner, and a derivative-free fit of platform parameters to measured values.
//! `irqlab reproduce` and `irqlab calibrate` are thin commands over this module.

pub mod measured;
pub mod metrics;
pub mod nelder_mead;
pub mod runner;
pub mod scenario;
pub mod table;
pub mod targets;
pub mod topology;
