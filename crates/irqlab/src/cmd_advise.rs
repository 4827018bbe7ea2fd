//! `irqlab advise JOB --platform P`: which interrupt policy helps this job on this
//! platform; every policy the platform allows simulated in parallel and ranked, with the
//! knob to turn and how sure the answer is (irqlab-advise does the work).

use crate::CmdResult;
use clap::{Args, ValueEnum};
use irqlab_advise::{Constraints, Objective, Request};
use irqlab_inputs::{BudgetArgs, resolve_platform};
use irqlab_observe::Progress;
use std::path::PathBuf;

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum ObjectiveArg {
    /// The most I/Os per second.
    Iops,
    /// The lowest p99 completion latency.
    Latency,
    /// The least CPU time per I/O.
    Cpu,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Format {
    Text,
    Json,
}

#[derive(Debug, Args)]
pub struct AdviseArgs {
    /// The fio job file: your own; files the platform does not name take its devices in
    /// order of first appearance.
    pub job: PathBuf,
    /// Platform name (platforms/NAME.toml) or file, e.g. one from `irqlab platform
    /// --from-capture`.
    #[arg(long)]
    pub platform: String,
    #[arg(long, value_enum, default_value = "iops")]
    pub objective: ObjectiveArg,
    /// Only candidates whose p99 completion latency is at most T (200us, 1.5ms; a bare
    /// number is µs).
    #[arg(long, value_name = "T", value_parser = irqlab_advise::rank::parse_latency_us)]
    pub max_p99: Option<f64>,
    /// Only candidates that keep the platform's CPUs at most PCT% busy (of all of them).
    #[arg(long, value_name = "PCT", value_parser = parse_pct)]
    pub max_cpu: Option<f64>,
    #[arg(long, value_enum, default_value = "text")]
    pub output_format: Format,
    /// Draw p99 latency against IOPS, a point per candidate (.png or .svg).
    #[arg(long, value_name = "FILE")]
    pub chart: Option<PathBuf>,
    /// Candidates simulated at once (default: the cores).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub threads: Option<u32>,
    /// Simulated time per candidate after the ramp (each job runs this long).
    #[arg(long, default_value = "20ms", value_parser = parse_window)]
    pub window: u64,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Map the job's files matching PATTERN onto the platform's DEVICE (repeatable; the
    /// rest take the devices in order of first appearance).
    #[arg(long = "map", value_name = "PATTERN=DEVICE", value_parser = parse_map)]
    pub maps: Vec<irqlab_inputs::MapRule>,
    /// Try only these candidates (comma-separated names as the table shows them, e.g.
    /// posted,polled); the stock kernel is always tried, as the baseline.
    #[arg(long, value_name = "A,B", value_delimiter = ',')]
    pub candidates: Option<Vec<String>>,
    #[command(flatten)]
    pub budget: BudgetArgs,
}

fn parse_map(s: &str) -> Result<irqlab_inputs::MapRule, String> {
    irqlab_inputs::MapRule::parse(s).map_err(|e| e.to_string())
}

fn parse_pct(s: &str) -> Result<f64, String> {
    match s.trim().trim_end_matches('%').parse::<f64>() {
        Ok(v) if v > 0.0 && v <= 100.0 => Ok(v),
        _ => Err(format!(
            "'{s}': expected a percentage above 0 and at most 100"
        )),
    }
}

fn parse_window(s: &str) -> Result<u64, String> {
    let us = irqlab_advise::rank::parse_latency_us(s).map_err(|e| e.to_string())?;
    let ns = (us * 1000.0) as u64;
    if !(100_000..=10_000_000_000).contains(&ns) {
        return Err(format!("'{s}': expected a window from 100us to 10s"));
    }
    Ok(ns)
}

pub fn main(args: AdviseArgs) -> CmdResult {
    let job_text = irqlab_fio::input::read_text(&args.job, irqlab_fio::input::MAX_INPUT_BYTES)
        .map_err(|e| format!("{}: {e}", args.job.display()))?;
    let path = resolve_platform(&args.platform)?;
    let platform = irqlab_sim::ledger::load(&path, &[])?;
    platform
        .warnings
        .iter()
        .for_each(|w| irqlab_sim::ledger::warn_once(w));
    let req = Request {
        job_text,
        job_name: args.job.display().to_string(),
        platform,
        objective: match args.objective {
            ObjectiveArg::Iops => Objective::Iops,
            ObjectiveArg::Latency => Objective::Latency,
            ObjectiveArg::Cpu => Objective::Cpu,
        },
        constraints: Constraints {
            max_p99_us: args.max_p99,
            max_cpu_pct: args.max_cpu,
        },
        window_ns: args.window,
        seed: args.seed,
        threads: args
            .threads
            .map_or_else(|| irqlab_calib::runner::workers(64), |t| t as usize),
        budget: args.budget.budget(),
        only: args.candidates.clone(),
        maps: args.maps.clone(),
    };
    let plan = irqlab_advise::plan(&req)?;
    let progress = Progress::new(plan.candidates.len() as u64, "advise");
    let advice = irqlab_advise::run(&req, plan, &|| progress.inc(1));
    progress.finish();
    let advice = advice?;
    if let Some(c) = &args.chart {
        irqlab_advise::chart(&advice, c)?;
    }
    match args.output_format {
        Format::Text => print!("{}", irqlab_advise::text(&advice)),
        Format::Json => {
            let s = serde_json::to_string_pretty(&irqlab_advise::json(&advice))
                .map_err(|e| format!("cannot encode the advice: {e}"))?;
            println!("{s}");
        }
    }
    Ok(())
}
