//! `irqlab run`: simulate a fio job file on a platform and print what fio,
//! /proc/interrupts and perf would have shown.

use crate::RunEnd;
use crate::output::{OutputArgs, OutputFormat, emit, write_logs};
use clap::Args;
use irqlab_inputs::{
    BudgetArgs, EventArgs, Inputs, JobSource, PolicyArgs, ShapeArgs, TopologyArgs,
};
use irqlab_observe::{ObserveArgs, simulate_with_observers};
use irqlab_sim::SimOptions;
use std::path::PathBuf;

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
    pub topology: TopologyArgs,
    #[command(flatten)]
    pub shape: ShapeArgs,
    #[command(flatten)]
    pub events: EventArgs,
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
    pub observe: ObserveArgs,
    #[command(flatten)]
    pub budget: BudgetArgs,
}

/// --irqtop intervals a run may print (each a table of its vectors).
const MAX_IRQTOP_INTERVALS: u64 = 100_000;

pub fn main(args: RunArgs) -> Result<RunEnd, Box<dyn std::error::Error>> {
    args.output.discard_on_error(run(&args))
}

fn run(args: &RunArgs) -> Result<RunEnd, Box<dyn std::error::Error>> {
    let policy = args.policy.checked_policy()?;
    irqlab_inputs::policy::event_contradictions(&args.policy, &args.events)?;
    let inputs = Inputs::prepare(
        &JobSource::Path(args.job.clone()),
        &args.platform,
        &args.sets,
        &args.topology.topology(),
        &args.shape.shape(),
    )?;
    args.output.create()?;
    // The output is bounded too: an --irqtop interval far shorter than the run would
    // print gigabytes.
    if let Some(iv) = args.observe.irqtop
        && let Ok(est) = irqlab_sim::estimate(&inputs.jobs, &inputs.platform, &policy)
        && est.simulated_ns / iv.max(1) > MAX_IRQTOP_INTERVALS
    {
        return Err(format!(
            "--irqtop {} s over a run of up to {:.3} s would print {} intervals; expected an interval of at least {} s",
            iv as f64 / 1e9,
            est.simulated_ns as f64 / 1e9,
            est.simulated_ns / iv.max(1),
            (est.simulated_ns / MAX_IRQTOP_INTERVALS) as f64 / 1e9
        )
        .into());
    }
    // irqtop lines go to stderr when stdout carries the JSON report.
    let mut irqtop_out: Box<dyn std::io::Write> = if args.output.format == OutputFormat::Normal {
        Box::new(crate::stdout::Stdout)
    } else {
        Box::new(std::io::stderr())
    };
    let files: Vec<&std::path::Path> = [
        &args.output.output,
        &args.observe.trace,
        &args.observe.timeline,
    ]
    .into_iter()
    .flatten()
    .map(PathBuf::as_path)
    .collect();
    let stop = crate::signals::Stop::install(&files)?;
    let opts = args
        .seed
        .map_or_else(SimOptions::default, SimOptions::overriding)
        .with_budget(args.budget.budget())
        .stopped_by(stop.flag())
        .with_events(args.events.events.clone());
    let mut report = simulate_with_observers(
        &inputs.jobs,
        &inputs.platform,
        &policy,
        &opts,
        &args.observe,
        &mut irqtop_out,
    )?;
    report.notes.extend(inputs.notes);
    let interrupted = report.flag(irqlab_report::EXTRA_INTERRUPTED);
    let sig = stop.signal().unwrap_or(signal_hook::consts::SIGINT);
    if interrupted && sig != signal_hook::consts::SIGINT {
        report.notes.push((
            irqlab_report::text::NOTE_STOPPED_BY.into(),
            crate::signals::name(sig).into(),
        ));
    }
    write_logs(&report, &args.log_dir)?;
    emit(&report, &args.output)?;
    crate::signals::files_done();
    if interrupted {
        eprintln!(
            "irqlab: interrupted ({}) at {:.3} ms of simulated time: the report covers the run up to then",
            crate::signals::name(sig),
            report.end_ns as f64 / 1e6
        );
        return Ok(RunEnd::Interrupted(sig));
    }
    if report.flag(irqlab_report::EXTRA_CUT_SHORT) {
        // The bound is each job's own runtime when it has one, not always the 600 s limit.
        eprintln!(
            "irqlab: the run reached its time limit at {:.3} s of simulated time with work still going (each job's runtime, or the 600 s limit for one bounded by size, loops or number_ios, plus 1 s to finish the I/O in flight): the report covers the run up to then",
            report.end_ns as f64 / 1e9
        );
    }
    Ok(RunEnd::Complete)
}
