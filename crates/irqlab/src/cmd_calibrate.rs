//! `irqlab calibrate`: fit chosen platform parameters, within bounds, to measured values
//! with a derivative-free optimiser (Nelder–Mead), then write the fitted platform file
//! and the residuals. This is how a user makes the model match their own machine. The
//! fit is irqlab-calib's; its evaluations run on threads here (the Python package can
//! run them on a Dask cluster: `irqlab.calibrate(..., cluster=...)`).

use crate::CmdResult;
use clap::Args;
use irqlab_calib::{Fit, FitSpec, Threads, table};
use irqlab_inputs::BudgetArgs;
use irqlab_observe::Progress;
use std::path::PathBuf;

#[derive(Debug, Args)]
pub struct CalibrateArgs {
    /// The platform file to fit (its other parameters stay as they are).
    #[arg(long)]
    pub platform: PathBuf,
    /// A parameter to fit and its bounds, e.g. --param uncore.stack_rtt_ns=50..400
    /// (repeatable; any key `--set` accepts). A key alone (--param uncore.ubox_ns)
    /// takes the range the platform's ledger gives it.
    #[arg(long = "param", value_name = "KEY=LO..HI", required = true)]
    pub params: Vec<String>,
    /// A targets file: scenario, metric and measured value (or a fio JSON result and two
    /// /proc/interrupts snapshots). Repeatable.
    #[arg(long = "targets", value_name = "FILE")]
    pub targets: Vec<PathBuf>,
    /// Fit to the published figures of these experiments or scenarios (e.g. C4).
    #[arg(long = "scenario", value_name = "NAME")]
    pub scenario: Vec<String>,
    /// Where --scenario names are looked up.
    #[arg(long, default_value = "scenarios")]
    pub scenarios: PathBuf,
    /// Where to write the fitted platform file.
    #[arg(long, default_value = "fitted.toml")]
    pub out: PathBuf,
    /// Objective evaluations (each simulates every target scenario once); at least the
    /// first simplex, one more than the number of parameters.
    #[arg(long, default_value_t = 60, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub max_evals: u32,
    /// Seed of the model's random streams in every evaluation (jobs seed from their own
    /// randseed), so each evaluation sees the same draws.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Scenarios simulated at once (default: one per scenario, up to the cores).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub threads: Option<u32>,
    #[command(flatten)]
    pub budget: BudgetArgs,
}

/// The targets file, for `irqlab calibrate --help`.
pub const TARGETS_HELP: &str = r#"Targets file (--targets FILE), TOML; paths are relative to the file:

  [[target]]
  scenario = "../scenarios/c4/interrupt-1-job.toml"  # job, platform and policy to simulate
  metric = "iops"          # iops, iops_per_disk, interrupts_per_sec, notifications_per_sec,
                           # cpu_busy_pct, clat_mean_us or ios_per_interrupt
  value = 131200           # measured; omitted: the scenario's published value
  weight = 1.0             # optional, default 1

  [[target]]
  scenario = "my-randread.toml"   # any scenario file; it needs no [[target]] itself
  fio_json = "fio.json"           # iops and clat_mean_us from fio --output-format=json
  interrupts_before = "irq.0"     # interrupts_per_sec and notifications_per_sec from
  interrupts_after = "irq.1"      # two /proc/interrupts snapshots around the run
  irq_match = "nvme"              # numbered rows counted (default: all of them)

Example:
  irqlab calibrate --platform platforms/p5800x-qd1.toml --param cpu.irq_entry_ns=100..600 \
      --targets my-targets.toml --out fitted.toml"#;

pub fn main(args: CalibrateArgs) -> CmdResult {
    let fit = Fit::new(&FitSpec {
        platform: args.platform.to_string_lossy().into_owned(),
        params: args.params.clone(),
        targets: args.targets.clone(),
        scenarios: args.scenario.clone(),
        scenarios_dir: args.scenarios.clone(),
        max_evals: args.max_evals as usize,
        seed: args.seed,
        budget: args.budget.budget(),
    })?;
    let threads = args
        .threads
        .map_or_else(|| fit.default_threads(), |n| n as usize)
        .max(1);
    let progress = Progress::new(fit.max_evals() as u64, "calibrate");
    let fitted = fit.run(&mut Threads(threads), &mut |n| progress.inc(n as u64));
    progress.finish();
    let fitted = fitted?;
    std::fs::write(&args.out, &fitted.platform_text).map_err(|e| {
        let why = irqlab_fio::input::io_reason(&e);
        format!("{}: cannot write: {why}", args.out.display())
    })?;
    let mut out = format!("fitted parameters ({} evaluations):\n", fitted.evals);
    for (p, s) in fitted.params.iter().zip(&fitted.sets) {
        out.push_str(&format!(
            "  {s}    (bounds {}..{}, start {})\n",
            p.lo, p.hi, p.start
        ));
    }
    out.push_str("\nresiduals:\n");
    out.push_str(&table::text(&fitted.rows));
    out.push_str(&format!("\nwrote {}\n", args.out.display()));
    crate::stdout::write(&out)?;
    Ok(())
}
