//! `irqlab reproduce`: simulate every published experiment in scenarios/ and print
//! published against simulated, with the error of each figure.

use crate::calib::runner::{par_map, run, workers};
use crate::calib::scenario::{Scenario, load_dir};
use crate::calib::table::{self, Row};
use crate::progress::Progress;
use clap::{Args, ValueEnum};
use std::path::{Path, PathBuf};

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
}

/// A relative directory in the current directory, else in a directory above the
/// executable (the repository of a cargo build).
pub fn find_dir(p: &Path) -> Result<PathBuf, String> {
    if p.is_dir() || p.is_absolute() {
        return Ok(p.to_path_buf());
    }
    if let Ok(exe) = std::env::current_exe() {
        for dir in exe.ancestors().skip(1) {
            let cand = dir.join(p);
            if cand.is_dir() {
                return Ok(cand);
            }
        }
    }
    Err(format!("{}: no such scenario directory", p.display()))
}

/// The scenarios `names` select (every one when empty), in file order.
pub fn select(all: Vec<Scenario>, names: &[String]) -> Result<Vec<Scenario>, String> {
    if names.is_empty() {
        return Ok(all);
    }
    for n in names {
        if !all.iter().any(|s| s.matches(n)) {
            let mut known: Vec<&str> = all.iter().map(|s| s.experiment.as_str()).collect();
            known.dedup();
            return Err(format!(
                "'{n}' names no scenario; experiments: {}; or give a scenario file stem",
                known.join(", ")
            ));
        }
    }
    Ok(all
        .into_iter()
        .filter(|s| names.iter().any(|n| s.matches(n)))
        .collect())
}

/// Runs `scenarios` in parallel and returns the table rows, in scenario order, and the
/// error of every scenario that could not run (its rows are left out).
pub fn reproduce(
    scenarios: &[Scenario],
    seed: u64,
    threads: usize,
    progress: &Progress,
) -> (Vec<Row>, Vec<String>) {
    let results = par_map(scenarios, threads, progress, |s| run(s, None, seed));
    let mut rows = Vec::new();
    let mut failed = Vec::new();
    for (s, r) in scenarios.iter().zip(results) {
        match r {
            Ok(out) => {
                for (t, v) in s.targets.iter().zip(out.values) {
                    rows.push(Row {
                        experiment: s.experiment.clone(),
                        row: s.row.clone(),
                        metric: t.metric.to_string(),
                        published: t.published,
                        simulated: v,
                        source: t.source.clone().unwrap_or_else(|| s.source.clone()),
                    });
                }
            }
            Err(e) => failed.push(e),
        }
    }
    (rows, failed)
}

pub fn main(args: ReproduceArgs) -> Result<(), String> {
    if let Some(p) = args.check
        && !(p.is_finite() && p >= 0.0)
    {
        return Err(format!("--check {p}: give a non-negative percentage"));
    }
    let dir = find_dir(&args.scenarios)?;
    let scenarios = select(load_dir(&dir)?, &args.names)?;
    let threads = args
        .threads
        .map_or_else(|| workers(scenarios.len()), |n| n as usize)
        .min(scenarios.len())
        .max(1);
    let progress = Progress::new(scenarios.len() as u64, "reproduce");
    let (rows, failed) = reproduce(&scenarios, args.seed, threads, &progress);
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
        None => print!("{text}"),
        Some(p) => {
            std::fs::write(p, &text).map_err(|e| format!("{}: cannot write: {e}", p.display()))?
        }
    }
    if !failed.is_empty() {
        return Err(format!(
            "{} of {} scenarios could not run",
            failed.len(),
            scenarios.len()
        ));
    }
    if let Some(limit) = args.check {
        let bad: Vec<String> = rows
            .iter()
            .filter(|r| r.error_pct().is_nan() || r.error_pct().abs() > limit)
            .map(|r| {
                format!(
                    "{} {} {} ({:+.1}%)",
                    r.experiment,
                    r.row,
                    r.metric,
                    r.error_pct()
                )
            })
            .collect();
        if !bad.is_empty() {
            return Err(format!(
                "--check {limit}%: {} of {} figures are off by more than {limit}%: {}",
                bad.len(),
                rows.len(),
                bad.join("; ")
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::calib::scenario::load_dir;

    /// A scratch directory with a cheap scenario on the example platform.
    fn scratch(name: &str) -> PathBuf {
        let dir =
            std::env::temp_dir().join(format!("irqlab-reproduce-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("e1")).unwrap();
        let platform = concat!(env!("CARGO_MANIFEST_DIR"), "/../../platforms/example.toml");
        std::fs::write(
            dir.join("e1/job.fio"),
            "[j]\nioengine=libaio\nrw=randread\nbs=4k\niodepth=8\nfilename=/dev/nvme0n1\ncpus_allowed=0\ntime_based\nruntime=1ms\nramp_time=200us\n",
        )
        .unwrap();
        for (stem, policy, published) in [
            ("a", "--delivery remapped", 100000.0),
            ("b", "--delivery posted", 50000.0),
        ] {
            std::fs::write(
                dir.join(format!("e1/{stem}.toml")),
                format!(
                    "experiment = \"E1\"\nrow = \"{stem}\"\njob = \"job.fio\"\nplatform = \"{platform}\"\npolicy = \"{policy}\"\n[[target]]\nmetric = \"iops\"\npublished = {published}\n[[target]]\nmetric = \"interrupts_per_sec\"\npublished = {published}\n"
                ),
            )
            .unwrap();
        }
        dir
    }

    #[test]
    fn cheap_scenarios_give_a_row_per_target_with_the_right_error() {
        let dir = scratch("rows");
        let scenarios = load_dir(&dir).unwrap();
        let (rows, failed) = reproduce(&scenarios, 1, 2, &Progress::hidden(2));
        assert!(failed.is_empty(), "{failed:?}");
        assert_eq!(rows.len(), 4);
        assert_eq!(
            (rows[0].row.as_str(), rows[0].metric.as_str()),
            ("a", "iops")
        );
        assert_eq!(
            (rows[3].row.as_str(), rows[3].metric.as_str()),
            ("b", "interrupts_per_sec")
        );
        for r in &rows {
            assert!(r.simulated > 0.0, "{r:?}");
            let want = (r.simulated - r.published) / r.published * 100.0;
            assert!((r.error_pct() - want).abs() < 1e-9);
        }
        // The same seed gives the same table whatever the thread count.
        let (again, _) = reproduce(&scenarios, 1, 1, &Progress::hidden(2));
        assert_eq!(rows, again);
        let text = table::text(&rows);
        assert_eq!(text.lines().count(), 6);
        assert!(
            text.contains(&format!("{:+.1}%", rows[0].error_pct())),
            "{text}"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn selection_by_experiment_and_stem_and_unknown_names() {
        let dir = scratch("select");
        let all = load_dir(&dir).unwrap();
        assert_eq!(select(all.clone(), &["e1".into()]).unwrap().len(), 2);
        assert_eq!(select(all.clone(), &["b".into()]).unwrap().len(), 1);
        let e = select(all, &["C9".into()]).unwrap_err();
        assert!(e.contains("C9") && e.contains("E1"), "{e}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_failing_scenario_is_reported_not_fatal_to_the_others() {
        let dir = scratch("fail");
        std::fs::write(
            dir.join("e1/job.fio"),
            "[j]\nfilename=/dev/nvme9n1\nruntime=1ms\n",
        )
        .unwrap();
        let scenarios = load_dir(&dir).unwrap();
        let (rows, failed) = reproduce(&scenarios, 1, 2, &Progress::hidden(2));
        assert!(rows.is_empty());
        assert_eq!(failed.len(), 2);
        assert!(failed[0].contains("nvme9n1"), "{}", failed[0]);
        let _ = std::fs::remove_dir_all(&dir);
    }
}
