//! `irqlab reproduce`: simulate every published experiment in scenarios/ and print
//! published against simulated, with the error of each figure; with --cross-validate,
//! leave each experiment out of the fits it pins and predict it (irqlab-calib does the
//! work).

use crate::CmdResult;
use clap::{Args, ValueEnum};
use irqlab_calib::crossval::{CvSpec, cross_validate};
use irqlab_calib::reproduce::off_by_more;
use irqlab_calib::runner::workers;
use irqlab_calib::{Threads, crossval_table, load_dir, reproduce, select, table};
use irqlab_inputs::{BudgetArgs, find_dir};
use irqlab_observe::Progress;
use std::path::PathBuf;

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// An aligned table for people.
    Table,
    Csv,
    Json,
}

#[derive(Debug, Args)]
pub struct ReproduceArgs {
    /// Experiments (e.g. C1), scenario names (file stems) or files to run; all if none.
    pub names: Vec<String>,
    /// The scenario directory, searched recursively for *.toml; a relative path is looked
    /// up in the current directory, then above the irqlab executable.
    #[arg(long, default_value = "scenarios")]
    pub scenarios: PathBuf,
    #[arg(long, value_enum, default_value = "table")]
    pub format: Format,
    /// Exit non-zero when any figure is off by more than PERCENT.
    #[arg(long, value_name = "PERCENT")]
    pub check: Option<f64>,
    /// Seed of every run.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Worker threads (default: every core; never more than there are scenarios).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub threads: Option<u32>,
    /// Write the table to this file instead of standard output.
    #[arg(long)]
    pub output: Option<PathBuf>,
    /// Leave each experiment out (the NAMES given, or all): refit the fitted parameters
    /// its figures pin on their other figures (Nelder–Mead within the ledger's ranges),
    /// predict its figures, and print in-sample and out-of-sample side by side.
    #[arg(long, conflicts_with = "check")]
    pub cross_validate: bool,
    /// With --cross-validate: objective evaluations allowed per refit.
    #[arg(long, default_value_t = 40, requires = "cross_validate", value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub max_evals: u32,
    #[command(flatten)]
    pub budget: BudgetArgs,
}

/// `--cross-validate`: the leave-one-experiment-out table.
fn cross_validated(args: &ReproduceArgs) -> CmdResult {
    let dir = find_dir(&args.scenarios)?;
    let all = load_dir(&dir)?;
    // The names are experiments; selecting checks that each names one.
    let left_out = select(all.clone(), &args.names)?;
    let mut experiments: Vec<String> = Vec::new();
    for s in &left_out {
        if !experiments.contains(&s.experiment) {
            experiments.push(s.experiment.clone());
        }
    }
    let spec = CvSpec {
        scenarios_dir: dir,
        experiments,
        max_evals: args.max_evals as usize,
        seed: args.seed,
        budget: args.budget.budget(),
    };
    let threads = args
        .threads
        .map_or_else(|| workers(all.len()), |n| n as usize)
        .max(1);
    let progress = Progress::new(
        1 + spec.experiments.len() as u64 * u64::from(args.max_evals),
        "cross-validate",
    );
    let report = cross_validate(&all, &spec, &mut Threads(threads), &mut |n| {
        progress.inc(n as u64)
    });
    progress.finish();
    let report = report?;
    let text = match args.format {
        Format::Table => crossval_table::text(&report),
        Format::Csv => crossval_table::csv(&report),
        Format::Json => {
            let mut s = serde_json::to_string_pretty(&crossval_table::json(&report))
                .map_err(|e| format!("cannot encode the table: {e}"))?;
            s.push('\n');
            s
        }
    };
    match &args.output {
        None => print!("{text}"),
        Some(p) => {
            std::fs::write(p, &text).map_err(|e| format!("{}: cannot write: {e}", p.display()))?
        }
    }
    Ok(())
}

pub fn main(args: ReproduceArgs) -> CmdResult {
    if args.cross_validate {
        return cross_validated(&args);
    }
    if let Some(p) = args.check
        && !(p.is_finite() && p >= 0.0)
    {
        return Err(format!("--check {p}: give a non-negative percentage").into());
    }
    let dir = find_dir(&args.scenarios)?;
    let scenarios = select(load_dir(&dir)?, &args.names)?;
    let threads = args
        .threads
        .map_or_else(|| workers(scenarios.len()), |n| n as usize)
        .min(scenarios.len())
        .max(1);
    let progress = Progress::new(scenarios.len() as u64, "reproduce");
    let budget = args.budget.budget();
    let (rows, failed) = reproduce(&scenarios, args.seed, budget, threads, &|| progress.inc(1));
    progress.finish();
    for e in &failed {
        eprintln!("irqlab: reproduce: {e}");
    }
    let text = match args.format {
        Format::Table => format!(
            "{}\n{}",
            table::text(&rows),
            table::summary(&rows, args.check.unwrap_or(10.0))
        ),
        Format::Csv => table::csv(&rows),
        Format::Json => {
            let mut s = serde_json::to_string_pretty(&table::json(&rows))
                .map_err(|e| format!("cannot encode the table: {e}"))?;
            s.push('\n');
            s
        }
    };
    match &args.output {
        None => crate::stdout::write(&text)?,
        Some(p) => {
            std::fs::write(p, &text).map_err(|e| format!("{}: cannot write: {e}", p.display()))?
        }
    }
    if !failed.is_empty() {
        return Err(format!(
            "{} of {} scenarios could not run",
            failed.len(),
            scenarios.len()
        )
        .into());
    }
    if let Some(limit) = args.check {
        let bad = off_by_more(&rows, limit);
        if !bad.is_empty() {
            return Err(format!(
                "--check {limit}%: {} of {} figures are off by more than {limit}%: {}",
                bad.len(),
                rows.len(),
                bad.join("; ")
            )
            .into());
        }
    }
    Ok(())
}
