//! manifest.json: what a capture directory holds and how it was made: the schema, the
//! host, the date, what was read from where, the target and the fio runs with their
//! arguments and files.

use crate::host::Host;
use crate::probe::Sources;
use serde::{Deserialize, Serialize};

/// The schema this crate writes; a reader refuses other major versions.
pub const SCHEMA: &str = "irqlab-capture/1";

/// What fio ran on.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Target {
    pub path: String,
    /// `file` or `device`.
    pub kind: String,
    pub size_bytes: u64,
    /// The block device under it (/sys/block name), when one could be found.
    pub device: Option<String>,
    /// irqlab created it (and removes it afterwards).
    pub created: bool,
}

/// The fio that ran the battery.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct FioTool {
    pub path: String,
    pub version: String,
}

/// One run of the battery.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunEntry {
    pub name: String,
    /// What it measures, in words.
    pub what: String,
    /// fio's command line (run in the capture directory).
    pub args: Vec<String>,
    /// The job file, NAME.fio.
    pub job_file: String,
    pub json: String,
    pub irq_before: String,
    pub irq_after: String,
    /// The device whose vectors count for the run.
    pub device: Option<String>,
    /// /proc/loadavg just before and just after: whether other work shared the CPUs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub loadavg: Vec<String>,
    /// Why the run has no usable result (fio failed, Ctrl-C), if so.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    pub schema: String,
    /// The program that wrote it (`irqlab 0.1.0`).
    pub tool: String,
    /// When, RFC 3339, UTC.
    pub date: String,
    pub host: Host,
    /// What was read from where (path patterns), and what was not readable.
    pub sources: Sources,
    /// /proc/interrupts at rest, a file of the directory.
    pub interrupts_at_rest: Option<String>,
    pub quick: bool,
    pub target: Option<Target>,
    pub fio: Option<FioTool>,
    pub runs: Vec<RunEntry>,
    /// Anything the user should know about how the capture went.
    #[serde(default)]
    pub notes: Vec<String>,
}
