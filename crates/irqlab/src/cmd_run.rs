//! `irqlab run`: simulate a fio job file on a platform and print what fio,
//! /proc/interrupts and perf would have shown.

use crate::output::{OutputArgs, emit};
use crate::policy_args::PolicyArgs;
use clap::Args;
use irqlab_sim::{Platform, SimOptions};
use std::path::{Path, PathBuf};

#[derive(Debug, Args)]
pub struct RunArgs {
    /// The fio job file.
    pub job: PathBuf,
    /// Platform file, or a bare name (e.g. "example") for platforms/NAME.toml, looked up in
    /// the current directory and then above the irqlab executable.
    #[arg(long)]
    pub platform: String,
    #[command(flatten)]
    pub policy: PolicyArgs,
    #[command(flatten)]
    pub topology: crate::calib::topology::TopologyArgs,
    /// Override a platform parameter, e.g. --set cpu.irq_entry_ns=300 or
    /// --set devices.0.count=8 (repeatable; applied in order).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub sets: Vec<String>,
    /// Seed of every random stream. Without it the model's own streams use 1 and each
    /// job seeds its draws (block sizes, read/write mix, rate gaps) from its randseed as
    /// fio does; with it, --seed overrides every job's randseed.
    #[arg(long)]
    pub seed: Option<u64>,
    /// Where the fio log files of write_lat_log, write_bw_log and write_iops_log go
    /// (fio writes them in its working directory).
    #[arg(long, value_name = "DIR", default_value = ".")]
    pub log_dir: PathBuf,
    #[command(flatten)]
    pub output: OutputArgs,
    #[command(flatten)]
    pub observe: crate::irqtop::ObserveArgs,
}

pub fn main(args: RunArgs) -> Result<(), String> {
    let jobs = irqlab_fio::parse_file(&args.job).map_err(|e| e.to_string())?;
    let path = resolve_platform(&args.platform)?;
    let platform = Platform::load(&path, &args.sets).map_err(|e| e.to_string())?;
    // Topology knobs, shared with scenario files (calib::topology).
    let topology = args.topology.topology();
    let sets = topology.platform_sets(&platform);
    let platform = platform.with_overrides(&sets).map_err(|e| e.to_string())?;
    let jobs = topology.apply_jobs(&jobs, &platform)?;
    // irqtop lines go to stderr when stdout carries the JSON report.
    let mut irqtop_out: Box<dyn std::io::Write> =
        if args.output.format == crate::output::OutputFormat::Normal {
            Box::new(std::io::stdout())
        } else {
            Box::new(std::io::stderr())
        };
    let report = crate::irqtop::simulate_with_observers(
        &jobs,
        &platform,
        &args.policy.policy(),
        &args
            .seed
            .map_or_else(SimOptions::default, SimOptions::overriding),
        &args.observe,
        &mut irqtop_out,
    )?;
    crate::output::write_logs(&report, &args.log_dir)?;
    emit(&report, &args.output)
}

/// A path that exists is used as is; a bare name is platforms/NAME.toml in the current
/// directory or in a directory above the executable (the repository of a cargo build).
pub(crate) fn resolve_platform(arg: &str) -> Result<PathBuf, String> {
    let direct = PathBuf::from(arg);
    if direct.is_file() {
        return Ok(direct);
    }
    let is_bare = !arg.contains('/') && !arg.contains('\\') && !arg.ends_with(".toml");
    if !is_bare {
        return Err(format!("{arg}: no such platform file"));
    }
    let rel = Path::new("platforms").join(format!("{arg}.toml"));
    let mut tried = vec![rel.clone()];
    if rel.is_file() {
        return Ok(rel);
    }
    if let Ok(exe) = std::env::current_exe() {
        for dir in exe.ancestors().skip(1) {
            let cand = dir.join(&rel);
            if cand.is_file() {
                return Ok(cand);
            }
            tried.push(cand);
        }
    }
    Err(format!(
        "platform '{arg}' not found; tried {}",
        tried
            .iter()
            .map(|p| p.display().to_string())
            .collect::<Vec<_>>()
            .join(", ")
    ))
}
