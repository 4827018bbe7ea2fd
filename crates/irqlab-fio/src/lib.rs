//! fio job files as irqlab reads them: sections, `[global]` inheritance, bare flags,
//! `include`, size and time suffixes, and errors that name the file and line.

mod spec;

pub use spec::{CpusPolicy, IoEngine, JobSpec, RwMode};
