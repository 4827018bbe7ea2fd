//! Output options shared by `irqlab run` and `irqlab rt`: both engines print a
//! [`RunReport`] the same way.

use crate::CmdResult;
use clap::{Args, ValueEnum};
use irqlab_report::RunReport;
use std::path::{Path, PathBuf};

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    /// fio's human-readable report plus an interrupt summary.
    Normal,
    /// fio's JSON schema with an "x-irqlab" section.
    Json,
    /// JSON with clat_ns latency bins (fio's json+).
    #[value(name = "json+")]
    JsonPlus,
}

#[derive(Clone, Debug, Args)]
pub struct OutputArgs {
    /// Report format.
    #[arg(long = "output-format", value_enum, default_value = "normal")]
    pub format: OutputFormat,
    /// Also print the run's /proc/interrupts (with LOC and PMN rows) after the report;
    /// with a JSON format it goes to standard error and into "x-irqlab", so the JSON stays
    /// valid.
    #[arg(long)]
    pub interrupts: bool,
    /// Write the report to this file instead of standard output.
    #[arg(long)]
    pub output: Option<PathBuf>,
}

impl OutputArgs {
    /// Creates `--output FILE` before the run, as fio opens its output first, so a bad
    /// path does not cost a whole run; without one, standard output must be open.
    pub fn create(&self) -> CmdResult {
        match &self.output {
            None => crate::stdout::check_open("report").map_err(Into::into),
            Some(path) => std::fs::File::create(path)
                .map(drop)
                .map_err(|e| cannot_write(path, &e)),
        }
    }

    /// Removes `--output FILE` after a run that wrote no report into it, so no empty
    /// file is left behind.
    fn discard(&self) {
        if let Some(path) = &self.output {
            let _ = std::fs::remove_file(path);
        }
    }

    /// `result`, after removing `--output FILE` when it is an error: a run that fails
    /// writes no report, and its file does not stay behind empty.
    pub fn discard_on_error<T, E>(&self, result: Result<T, E>) -> Result<T, E> {
        if result.is_err() {
            self.discard();
        }
        result
    }
}

/// Writes `report` as the options ask. A JSON report is always one JSON document: the
/// /proc/interrupts table goes to standard error and into `x-irqlab.proc_interrupts`.
pub fn emit(report: &RunReport, args: &OutputArgs) -> CmdResult {
    let table = args
        .interrupts
        .then(|| irqlab_report::proc_interrupts::render(report));
    let text = match args.format {
        OutputFormat::Normal => {
            let mut text = irqlab_report::text::render(report);
            if let Some(t) = &table {
                text.push_str(t);
            }
            text
        }
        OutputFormat::Json | OutputFormat::JsonPlus => {
            let mut value =
                irqlab_report::fio_json::render(report, args.format == OutputFormat::JsonPlus);
            if let Some(t) = &table {
                value["x-irqlab"]["proc_interrupts"] = serde_json::Value::String(t.clone());
                eprint!("{t}");
            }
            let mut s = serde_json::to_string_pretty(&value)
                .map_err(|e| format!("cannot encode the JSON report: {e}"))?;
            s.push('\n');
            s
        }
    };
    match &args.output {
        None => crate::stdout::write(&text).map_err(Into::into),
        Some(path) => std::fs::write(path, text).map_err(|e| cannot_write(path, &e)),
    }
}

/// `--output FILE` could not be created or written, in the OS's words.
fn cannot_write(path: &Path, e: &std::io::Error) -> Box<dyn std::error::Error> {
    let why = irqlab_fio::input::io_reason(e);
    format!("{}: cannot write the report: {why}", path.display()).into()
}

/// Writes every fio log file of `report` under `dir`, as fio writes them in its working
/// directory.
pub fn write_logs(report: &RunReport, dir: &Path) -> CmdResult {
    irqlab_report::fio_log::write_all(report, dir)
        .map(drop)
        .map_err(|(path, e)| format!("{}: cannot write: {e}", path.display()).into())
}
