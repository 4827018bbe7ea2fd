//! `irqlab run`: simulate a fio job file on a platform and print what fio,
//! /proc/interrupts and perf would have shown.

use crate::output::{OutputArgs, emit};
use crate::policy_args::PolicyArgs;
use clap::Args;
use irqlab_sim::{Platform, SimOptions, StopFlag};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

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
    #[command(flatten)]
    pub budget: crate::budget_args::BudgetArgs,
}

/// --irqtop intervals a run may print (each a table of its vectors).
const MAX_IRQTOP_INTERVALS: u64 = 100_000;

/// How a run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunEnd {
    Complete,
    /// Ctrl-C stopped it; the report so far was printed.
    Interrupted,
}

/// SIGINT sets the returned flag, which the simulator checks between event batches; a
/// second SIGINT ends the process at once (exit 130), as an impatient user expects.
fn stop_on_ctrl_c() -> Result<StopFlag, String> {
    use signal_hook::consts::SIGINT;
    let flag = Arc::new(AtomicBool::new(false));
    signal_hook::flag::register_conditional_shutdown(SIGINT, 130, Arc::clone(&flag))
        .and_then(|_| signal_hook::flag::register(SIGINT, Arc::clone(&flag)))
        .map_err(|e| format!("cannot handle Ctrl-C: {e}"))?;
    Ok(StopFlag::new(flag))
}

pub fn main(args: RunArgs) -> Result<RunEnd, String> {
    let jobs = irqlab_fio::parse_file(&args.job).map_err(|e| e.to_string())?;
    let path = resolve_platform(&args.platform)?;
    let platform = Platform::load(&path, &args.sets).map_err(|e| e.to_string())?;
    // Topology knobs, shared with scenario files (calib::topology).
    let topology = args.topology.topology();
    let sets = topology.platform_sets(&platform);
    let platform = platform.with_overrides(&sets).map_err(|e| e.to_string())?;
    let jobs = topology.apply_jobs(&jobs, &platform)?;
    // The output is bounded too: an --irqtop interval far shorter than the run would
    // print gigabytes.
    if let Some(iv) = args.observe.irqtop
        && let Ok(est) = irqlab_sim::estimate(&jobs, &platform, &args.policy.policy())
        && est.simulated_ns / iv.max(1) > MAX_IRQTOP_INTERVALS
    {
        return Err(format!(
            "--irqtop {} s over a run of up to {:.3} s would print {} intervals; expected an interval of at least {} s",
            iv as f64 / 1e9,
            est.simulated_ns as f64 / 1e9,
            est.simulated_ns / iv.max(1),
            (est.simulated_ns / MAX_IRQTOP_INTERVALS) as f64 / 1e9
        ));
    }
    // irqtop lines go to stderr when stdout carries the JSON report.
    let mut irqtop_out: Box<dyn std::io::Write> =
        if args.output.format == crate::output::OutputFormat::Normal {
            Box::new(std::io::stdout())
        } else {
            Box::new(std::io::stderr())
        };
    let opts = args
        .seed
        .map_or_else(SimOptions::default, SimOptions::overriding)
        .with_budget(args.budget.budget())
        .stopped_by(stop_on_ctrl_c()?);
    let report = crate::irqtop::simulate_with_observers(
        &jobs,
        &platform,
        &args.policy.policy(),
        &opts,
        &args.observe,
        &mut irqtop_out,
    )?;
    crate::output::write_logs(&report, &args.log_dir)?;
    emit(&report, &args.output)?;
    if report.flag(irqlab_report::EXTRA_INTERRUPTED) {
        eprintln!(
            "irqlab: interrupted (Ctrl-C) at {:.3} ms of simulated time: the report covers the run up to then",
            report.end_ns as f64 / 1e6
        );
        return Ok(RunEnd::Interrupted);
    }
    if report.flag(irqlab_report::EXTRA_CUT_SHORT) {
        eprintln!(
            "irqlab: the run reached the 600 s limit of simulated time with work still going: the report covers the run up to then"
        );
    }
    Ok(RunEnd::Complete)
}

/// A path that exists is used as is; a bare name is platforms/NAME.toml in the current
/// directory or in a directory above the executable (the repository of a cargo build).
pub(crate) fn resolve_platform(arg: &str) -> Result<PathBuf, String> {
    let direct = PathBuf::from(arg);
    let is_bare = !arg.contains('/') && !arg.contains('\\') && !arg.ends_with(".toml");
    // A path that exists is the user's choice, whatever it is: the loader says if it is
    // not a regular file.
    if direct.is_file() || (!is_bare && direct.exists()) {
        return Ok(direct);
    }
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
