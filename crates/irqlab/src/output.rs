//! Output options shared by `irqlab run` and `irqlab rt`: both engines print a
//! [`RunReport`] the same way.

use clap::{Args, ValueEnum};
use irqlab_report::RunReport;
use std::path::PathBuf;

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
    /// Also print a /proc/interrupts-style table with LOC and PMN rows.
    #[arg(long)]
    pub interrupts: bool,
    /// Write the report to this file instead of standard output.
    #[arg(long)]
    pub output: Option<PathBuf>,
}

/// Writes `report` as the options ask.
pub fn emit(report: &RunReport, args: &OutputArgs) -> Result<(), String> {
    let mut text = match args.format {
        OutputFormat::Normal => irqlab_report::text::render(report),
        OutputFormat::Json | OutputFormat::JsonPlus => {
            let value =
                irqlab_report::fio_json::render(report, args.format == OutputFormat::JsonPlus);
            let mut s = serde_json::to_string_pretty(&value)
                .map_err(|e| format!("cannot encode the JSON report: {e}"))?;
            s.push('\n');
            s
        }
    };
    if args.interrupts {
        text.push_str(&irqlab_report::proc_interrupts::render(report));
    }
    match &args.output {
        None => {
            print!("{text}");
            Ok(())
        }
        Some(path) => std::fs::write(path, text)
            .map_err(|e| format!("{}: cannot write the report: {e}", path.display())),
    }
}
