//! `irqlab platform`: what a platform is made of. `--explain P` prints every resolved
//! parameter with its provenance; `--check [P ...]` fails on values without provenance,
//! fits without pins or range, pins that name no figure of a scenario using the value,
//! values outside their range, and fits pinned by a single figure without an independent
//! source (irqlab-calib's explain and provenance modules do the work). `--from-capture
//! DIR` builds a platform for a captured machine (irqlab-fromcapture does the work).

use crate::CmdResult;
use clap::{ArgGroup, Args, ValueEnum};
use irqlab_calib::{explain, load_dir, provenance};
use irqlab_inputs::{find_dir, resolve_platform};
use std::path::PathBuf;

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// Aligned text for people.
    Text,
    Json,
}

#[derive(Debug, Args)]
#[command(group(ArgGroup::new("mode").required(true).args(["explain", "check", "from_capture"])))]
pub struct PlatformArgs {
    /// Print every resolved parameter of platform P (a file or a bare name): value and
    /// unit, where it was set (a shared table, the platform file, --set, a built-in
    /// default), its source, cite and quote, its range and whether it sits at a bound.
    #[arg(long, value_name = "P")]
    pub explain: Option<String>,
    /// Check the provenance of the named platforms and the tables they use (with none
    /// named: every platform in platforms/ and every table beside them); exit non-zero
    /// on any problem.
    #[arg(long, value_name = "P", num_args = 0..)]
    pub check: Option<Vec<String>>,
    /// With --explain: override a parameter first, as `irqlab run --set` does
    /// (repeatable; cpu.ghz rescales the cycles of the shared tables).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub sets: Vec<String>,
    /// Build a platform for the machine captured in DIR (irqlab capture, or a hand
    /// layout): its CPUs, kernel, disks, queues, vectors and their CPUs from the capture,
    /// costs from the shared tables (platforms/cpus/, kernels/, kinds/; the nearest
    /// known when there is no exact one), and the costs its runs pin fitted to them.
    /// The report (tables chosen, each fitted value with its pins and residuals, the
    /// held-out runs' errors) goes to stdout with --out, to stderr without it.
    #[arg(long, value_name = "DIR")]
    pub from_capture: Option<PathBuf>,
    /// With --from-capture: write the platform to FILE (default: standard output).
    #[arg(long, value_name = "FILE", requires = "from_capture")]
    pub out: Option<PathBuf>,
    /// With --from-capture: fit to these runs only (comma-separated names); the others
    /// are held out and predicted (IOPS, mean clat, I/Os per interrupt).
    #[arg(
        long,
        value_name = "A,B",
        value_delimiter = ',',
        requires = "from_capture"
    )]
    pub runs: Option<Vec<String>>,
    /// With --from-capture: objective evaluations the fit may make.
    #[arg(
        long,
        default_value_t = 120,
        value_name = "N",
        requires = "from_capture"
    )]
    pub max_evals: usize,
    /// With --from-capture: where the shared tables are.
    #[arg(long, default_value = "platforms", value_name = "DIR")]
    pub platforms: PathBuf,
    /// Where the scenarios that pins name are (--check).
    #[arg(long, default_value = "scenarios")]
    pub scenarios: PathBuf,
    #[arg(long, value_enum, default_value = "text")]
    pub format: Format,
}

pub fn main(args: PlatformArgs) -> CmdResult {
    if let Some(p) = &args.explain {
        return explain_one(p, &args);
    }
    if let Some(dir) = &args.from_capture {
        return from_capture(dir, &args);
    }
    if !args.sets.is_empty() {
        return Err(
            "--set goes with --explain: --check checks the platform files as written".into(),
        );
    }
    check(args.check.as_deref().unwrap_or_default(), &args)
}

fn explain_one(name: &str, args: &PlatformArgs) -> CmdResult {
    let path = resolve_platform(name)?;
    let r = irqlab_sim::ledger::load(&path, &args.sets)?;
    let rows = explain::explain(&r);
    match args.format {
        Format::Text => print!("{}", explain::text(&r, &rows)),
        Format::Json => {
            let v = serde_json::json!({
                "platform": r.platform.name,
                "file": r.file.display().to_string(),
                "ghz": r.mhz.map(|m| m as f64 / 1000.0),
                "tables": r.tables,
                "parameters": rows,
            });
            let s = serde_json::to_string_pretty(&v)
                .map_err(|e| format!("cannot encode the ledger: {e}"))?;
            println!("{s}");
        }
    }
    Ok(())
}

fn from_capture(dir: &std::path::Path, args: &PlatformArgs) -> CmdResult {
    if !args.sets.is_empty() {
        return Err(
            "--set goes with --explain; --from-capture builds the platform from the capture".into(),
        );
    }
    let capture = irqlab_capture::Capture::open(dir)?;
    let mut opts = irqlab_fromcapture::Options::new(find_dir(&args.platforms)?);
    opts.runs = args.runs.clone();
    opts.max_evals = args.max_evals.max(4);
    let progress =
        irqlab_observe::Progress::new(opts.max_evals as u64 + 20, "platform --from-capture");
    let threads = irqlab_calib::runner::workers(capture.runs.len());
    let built = irqlab_fromcapture::build(
        &capture,
        &opts,
        &mut irqlab_calib::Threads(threads),
        &mut |n| progress.inc(n as u64),
    );
    progress.finish();
    let built = built?;
    let report = irqlab_fromcapture::report(&built);
    match &args.out {
        Some(path) => {
            std::fs::write(path, &built.platform_text)
                .map_err(|e| format!("{}: cannot write the platform: {e}", path.display()))?;
            print!("{report}");
            println!(
                "platform written to {} (irqlab run JOB --platform {})",
                path.display(),
                path.display()
            );
        }
        None => {
            eprint!("{report}");
            print!("{}", built.platform_text);
        }
    }
    Ok(())
}

fn check(names: &[String], args: &PlatformArgs) -> CmdResult {
    let (platforms, tables) = if names.is_empty() {
        let dir = find_dir(&PathBuf::from("platforms"))?;
        let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
            .map_err(|e| format!("{}: cannot list: {e}", dir.display()))?
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.is_file() && p.extension().is_some_and(|x| x == "toml"))
            .collect();
        files.sort();
        (files, irqlab_sim::ledger::table_files(&dir))
    } else {
        let files = names
            .iter()
            .map(|n| resolve_platform(n))
            .collect::<Result<Vec<_>, _>>()?;
        (files, Vec::new())
    };
    let sdir = find_dir(&args.scenarios)?;
    let scenarios = load_dir(&sdir)?;
    let problems = provenance::check(&platforms, &tables, &sdir, &scenarios);
    match args.format {
        Format::Text => print!("{}", provenance::text(&problems, platforms.len())),
        Format::Json => {
            let s = serde_json::to_string_pretty(&problems)
                .map_err(|e| format!("cannot encode the problems: {e}"))?;
            println!("{s}");
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "platform --check: {} problem{} in the provenance of {} platform{}",
            problems.len(),
            if problems.len() == 1 { "" } else { "s" },
            platforms.len(),
            if platforms.len() == 1 { "" } else { "s" }
        )
        .into())
    }
}
