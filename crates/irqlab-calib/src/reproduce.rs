//! Published against simulated: every selected scenario through the simulator in
//! parallel, one table row per published figure.

use crate::CalibError;
use crate::runner::{par_map, run};
use crate::scenario::Scenario;
use crate::table::Row;
use irqlab_sim::Budget;

/// The scenarios `names` select (every one when empty), in file order: an experiment
/// ("C1"), a file stem or a path.
pub fn select(all: Vec<Scenario>, names: &[String]) -> Result<Vec<Scenario>, CalibError> {
    if names.is_empty() {
        return Ok(all);
    }
    for n in names {
        if !all.iter().any(|s| s.matches(n)) {
            let mut experiments: Vec<String> = all.iter().map(|s| s.experiment.clone()).collect();
            experiments.dedup();
            return Err(CalibError::UnknownScenario {
                name: n.clone(),
                experiments,
            });
        }
    }
    Ok(all
        .into_iter()
        .filter(|s| names.iter().any(|n| s.matches(n)))
        .collect())
}

/// Runs `scenarios` on `threads` workers, each within `budget`, and returns the table
/// rows, in scenario order, and the error of every scenario that could not run (its rows
/// are left out). `done` is called as each scenario finishes.
pub fn reproduce(
    scenarios: &[Scenario],
    seed: u64,
    budget: Budget,
    threads: usize,
    done: &(dyn Fn() + Sync),
) -> (Vec<Row>, Vec<CalibError>) {
    let results = par_map(scenarios, threads, done, |s| run(s, None, seed, budget));
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
                        miss: t.miss,
                    });
                }
            }
            Err(e) => failed.push(e),
        }
    }
    (rows, failed)
}

/// The figures off by more than `limit` percent (or not computed), as
/// "EXPERIMENT ROW METRIC (+12.3%)", except those whose miss is a documented
/// contradiction (two published sources disagree about the same rig): a model
/// limitation counts (`reproduce --check`).
pub fn off_by_more(rows: &[Row], limit: f64) -> Vec<String> {
    rows.iter()
        .filter(|r| r.off_by_more(limit) && !r.contradicted())
        .map(|r| {
            format!(
                "{} {} {} ({:+.1}%)",
                r.experiment,
                r.row,
                r.metric,
                r.error_pct()
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::load_dir;
    use crate::table;
    use std::path::PathBuf;

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
        let (rows, failed) = reproduce(&scenarios, 1, Budget::DEFAULT, 2, &|| {});
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
        let (again, _) = reproduce(&scenarios, 1, Budget::DEFAULT, 1, &|| {});
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
        let e = select(all, &["C9".into()]).unwrap_err().to_string();
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
        let (rows, failed) = reproduce(&scenarios, 1, Budget::DEFAULT, 2, &|| {});
        assert!(rows.is_empty());
        assert_eq!(failed.len(), 2);
        assert!(failed[0].to_string().contains("nvme9n1"), "{}", failed[0]);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn scenarios_run_within_the_budget_given() {
        let dir = scratch("budget");
        let scenarios = load_dir(&dir).unwrap();
        let tight = Budget {
            max_memory_bytes: 1 << 20,
            ..Budget::DEFAULT
        };
        let (rows, failed) = reproduce(&scenarios, 1, tight, 2, &|| {});
        assert!(rows.is_empty());
        assert_eq!(failed.len(), 2);
        assert!(
            failed[0].to_string().contains("over the budget of 1 MiB"),
            "{}",
            failed[0]
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
