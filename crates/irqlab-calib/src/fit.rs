//! A calibration: named platform parameters within bounds, fitted with Nelder–Mead to
//! target values. Each objective evaluation simulates every target scenario once under a
//! candidate platform; those simulations are [`EvalTask`]s, self-contained (job and
//! platform text inside, JSON on the wire) so an [`Evaluator`] can run a whole batch of
//! them at once, on threads here ([`Threads`]) or elsewhere (the Python package's Dask
//! engine). Where a task runs does not change its result.

use crate::CalibError;
use crate::metrics::Metric;
use crate::nelder_mead::{self, Options};
use crate::patch::patch_text;
use crate::runner::{par_map, workers};
use crate::scenario::{Scenario, load_dir};
use crate::table::Row;
use crate::targets::TargetSet;
use irqlab_inputs::{Topology, disks_used, find_dir, parse_policy, resolve_platform};
use irqlab_sim::ledger::Resolved;
use irqlab_sim::{Budget, Platform, SimOptions};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// What to fit, as the command line or the Python package says it.
#[derive(Clone, Debug, PartialEq)]
pub struct FitSpec {
    /// The platform file (or bare name) to fit; its other parameters stay as they are.
    pub platform: String,
    /// `KEY=LO..HI`, any key `--set` accepts that holds a number; `KEY` alone takes the
    /// range the platform's ledger gives it.
    pub params: Vec<String>,
    /// Targets files.
    pub targets: Vec<PathBuf>,
    /// Experiments or scenarios whose published figures are targets too.
    pub scenarios: Vec<String>,
    /// Where `scenarios` are looked up.
    pub scenarios_dir: PathBuf,
    /// Objective evaluations allowed.
    pub max_evals: usize,
    /// Seed of the model's streams in every evaluation.
    pub seed: u64,
    /// The resource budget of every simulation.
    pub budget: Budget,
}

/// A parameter being fitted.
#[derive(Clone, Debug, PartialEq)]
pub struct Param {
    pub key: String,
    pub lo: f64,
    pub hi: f64,
    /// The platform stores an integer here: candidate values are rounded.
    pub integer: bool,
    pub start: f64,
}

/// One scenario simulated under one candidate platform: everything needed to run it,
/// and the metrics wanted back, in order.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct EvalTask {
    /// The scenario file, for messages.
    pub scenario: String,
    /// The job file's path, for messages.
    pub job_name: String,
    pub job_text: String,
    pub platform_text: String,
    /// The platform file's path, for messages.
    pub platform_origin: String,
    /// The candidate's `--set` overrides of the platform.
    pub sets: Vec<String>,
    /// `irqlab run` policy options.
    pub policy: String,
    pub disks: Option<usize>,
    pub jobs_per_disk: Option<u32>,
    pub vectors_per_cpu: Option<usize>,
    pub seed: u64,
    pub metrics: Vec<String>,
    /// Absent from tasks written before it existed: the default budget.
    #[serde(default)]
    pub budget: Budget,
}

impl EvalTask {
    /// Scenario `s` (its job file's text `job_text`) on the self-contained platform
    /// `platform_text` (from `platform_origin`) with `sets`, asking for `metrics`.
    #[allow(clippy::too_many_arguments)]
    pub fn of_scenario(
        s: &Scenario,
        job_text: &str,
        platform_text: &str,
        platform_origin: &str,
        sets: Vec<String>,
        metrics: Vec<String>,
        seed: u64,
        budget: Budget,
    ) -> EvalTask {
        EvalTask {
            scenario: s.path.display().to_string(),
            job_name: s.job.display().to_string(),
            job_text: job_text.to_string(),
            platform_text: platform_text.to_string(),
            platform_origin: platform_origin.to_string(),
            sets,
            policy: s.policy_text.clone(),
            disks: s.topology.disks,
            jobs_per_disk: s.topology.jobs_per_disk,
            vectors_per_cpu: s.topology.vectors_per_cpu,
            seed,
            metrics,
            budget,
        }
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    pub fn from_json(text: &str) -> Result<EvalTask, CalibError> {
        serde_json::from_str(text).map_err(|e| CalibError::Task(e.to_string()))
    }

    /// Simulates the scenario and returns the wanted metrics.
    pub fn run(&self) -> Result<Vec<f64>, CalibError> {
        let at = |e: &dyn std::fmt::Display| CalibError::at(&self.scenario, e);
        let metrics: Vec<Metric> = self
            .metrics
            .iter()
            .map(|m| m.parse())
            .collect::<Result<_, _>>()?;
        let base = Platform::from_toml(&self.platform_text, &self.platform_origin, &[])
            .and_then(|p| p.with_overrides(&self.sets))
            .map_err(|e| at(&e))?;
        let topology = Topology {
            disks: self.disks,
            jobs_per_disk: self.jobs_per_disk,
            vectors_per_cpu: self.vectors_per_cpu,
        };
        let platform = base
            .clone()
            .with_overrides(&topology.platform_sets(&base))
            .map_err(|e| at(&e))?;
        let jobs =
            irqlab_fio::parse_str(&self.job_text, Path::new(&self.job_name)).map_err(|e| at(&e))?;
        let jobs = topology.apply_jobs(&jobs, &platform).map_err(|e| at(&e))?;
        let policy = parse_policy(&self.policy).map_err(|e| at(&e))?;
        let opts = SimOptions::with_seed(self.seed).with_budget(self.budget);
        let report = irqlab_sim::simulate(&jobs, &platform, &policy, &opts).map_err(|e| at(&e))?;
        let disks = disks_used(&jobs);
        Ok(metrics.iter().map(|m| m.of(&report, disks)).collect())
    }
}

/// Runs batches of tasks; `None` where a task failed (it costs the objective as much as
/// being off by 1000%).
pub trait Evaluator {
    fn evaluate(&mut self, tasks: &[EvalTask]) -> Vec<Option<Vec<f64>>>;
}

/// Tasks on this many threads of this process.
#[derive(Clone, Copy, Debug)]
pub struct Threads(pub usize);

impl Evaluator for Threads {
    fn evaluate(&mut self, tasks: &[EvalTask]) -> Vec<Option<Vec<f64>>> {
        par_map(tasks, self.0.max(1), &|| {}, |t| t.run().ok())
    }
}

/// What a calibration found.
#[derive(Clone, Debug, PartialEq)]
pub struct Fitted {
    pub params: Vec<Param>,
    /// The fitted values as `--set` strings, one per parameter.
    pub sets: Vec<String>,
    pub evals: usize,
    pub objective: f64,
    /// Target, measured (`published`) and simulated value under the fitted platform.
    pub rows: Vec<Row>,
    /// The fitted platform file: the original text with the fitted values patched in
    /// (comments kept), under a header saying how it was fitted.
    pub platform_text: String,
}

/// A calibration ready to run.
#[derive(Clone, Debug)]
pub struct Fit {
    path: PathBuf,
    text: String,
    base: Platform,
    /// The resolved platform as a self-contained file: what every task carries.
    flat: String,
    params: Vec<Param>,
    set: TargetSet,
    /// Job file path and text of each scenario of `set`.
    jobs: Vec<(String, String)>,
    /// Metrics wanted from each scenario, in order.
    wanted: Vec<Vec<Metric>>,
    seed: u64,
    budget: Budget,
    max_evals: usize,
}

impl Fit {
    /// Loads the platform, parses the parameters and reads every target and scenario.
    pub fn new(spec: &FitSpec) -> Result<Fit, CalibError> {
        let path = resolve_platform(&spec.platform)?;
        let text = irqlab_fio::input::read_text(&path, irqlab_fio::input::MAX_INPUT_BYTES)
            .map_err(|e| CalibError::at(&path, e))?;
        let resolved =
            irqlab_sim::ledger::load(&path, &[]).map_err(irqlab_inputs::InputError::from)?;
        resolved
            .warnings
            .iter()
            .for_each(|w| irqlab_sim::ledger::warn_once(w));
        let base = resolved.platform.clone();
        let flat = base.to_toml().map_err(irqlab_inputs::InputError::from)?;
        let params: Vec<Param> = spec
            .params
            .iter()
            .map(|s| parse_param(s, &resolved))
            .collect::<Result<_, _>>()?;
        if let Some((i, p)) = params
            .iter()
            .enumerate()
            .find(|(i, p)| params[..*i].iter().any(|q| q.key == p.key))
        {
            let first = params.iter().position(|q| q.key == p.key).unwrap_or(0);
            return Err(CalibError::Param {
                spec: spec.params[i].clone(),
                why: format!(
                    "{} is already fitted by --param '{}'; each key is fitted once",
                    p.key, spec.params[first]
                ),
            });
        }
        // Nelder-Mead's first simplex is one point more than there are parameters.
        let simplex = params.len() + 1;
        if spec.max_evals < simplex {
            return Err(CalibError::TooFewEvals {
                max_evals: spec.max_evals,
                params: params.len(),
            });
        }
        let mut set = TargetSet::default();
        for f in &spec.targets {
            set.add_file(f)?;
        }
        if !spec.scenarios.is_empty() {
            let dir = find_dir(&spec.scenarios_dir)?;
            for s in crate::select(load_dir(&dir)?, &spec.scenarios)? {
                set.add_published(&s);
            }
        }
        if set.targets.is_empty() {
            return Err(CalibError::NothingToFit);
        }
        let mut jobs = Vec::new();
        for s in &set.scenarios {
            let job_text = irqlab_fio::input::read_text(&s.job, irqlab_fio::input::MAX_INPUT_BYTES)
                .map_err(|e| CalibError::at(&s.job, e))?;
            jobs.push((s.job.display().to_string(), job_text));
        }
        let mut wanted: Vec<Vec<Metric>> = vec![Vec::new(); set.scenarios.len()];
        for t in &set.targets {
            if !wanted[t.scenario].contains(&t.metric) {
                wanted[t.scenario].push(t.metric);
            }
        }
        Ok(Fit {
            path,
            text,
            base,
            flat,
            params,
            set,
            jobs,
            wanted,
            seed: spec.seed,
            budget: spec.budget,
            max_evals: spec.max_evals,
        })
    }

    pub fn params(&self) -> &[Param] {
        &self.params
    }

    /// Objective evaluations the fit may make (at least the first simplex: checked when
    /// the fit is made).
    pub fn max_evals(&self) -> usize {
        self.max_evals
    }

    /// Scenarios simulated per evaluation.
    pub fn scenarios(&self) -> usize {
        self.set.scenarios.len()
    }

    /// A sensible thread count for [`Threads`]: one per scenario, up to the cores.
    pub fn default_threads(&self) -> usize {
        workers(self.set.scenarios.len())
    }

    /// The tasks of candidate `x`: one per scenario, or None when the platform refuses
    /// the candidate values.
    pub fn tasks(&self, x: &[f64]) -> Option<Vec<EvalTask>> {
        let sets = sets_for(&self.params, x);
        self.base.clone().with_overrides(&sets).ok()?;
        Some(
            self.set
                .scenarios
                .iter()
                .enumerate()
                .map(|(i, s)| {
                    EvalTask::of_scenario(
                        s,
                        &self.jobs[i].1,
                        &self.flat,
                        &self.path.display().to_string(),
                        sets.clone(),
                        self.wanted[i].iter().map(|m| m.to_string()).collect(),
                        self.seed,
                        self.budget,
                    )
                })
                .collect(),
        )
    }

    /// The simulated value of every target from one candidate's task results.
    fn simulated(&self, results: &[Option<Vec<f64>>]) -> Vec<Option<f64>> {
        self.set
            .targets
            .iter()
            .map(|t| {
                let k = self.wanted[t.scenario]
                    .iter()
                    .position(|m| *m == t.metric)?;
                results.get(t.scenario)?.as_ref()?.get(k).copied()
            })
            .collect()
    }

    /// Weighted sum of squared relative residuals; a failed run costs as much as being
    /// off by 1000%.
    pub fn objective(&self, results: &[Option<Vec<f64>>]) -> f64 {
        self.set
            .targets
            .iter()
            .zip(self.simulated(results))
            .map(|(t, s)| {
                let r = s.map_or(10.0, |v| (v - t.value) / t.value);
                t.weight * r * r
            })
            .sum()
    }

    /// The objective at each of `points`, their tasks run as one batch.
    fn evaluate(&self, points: &[Vec<f64>], eval: &mut dyn Evaluator) -> Vec<f64> {
        let per_point: Vec<Option<Vec<EvalTask>>> = points.iter().map(|x| self.tasks(x)).collect();
        let all: Vec<EvalTask> = per_point.iter().flatten().flatten().cloned().collect();
        let mut results = eval.evaluate(&all).into_iter();
        per_point
            .iter()
            .map(|tasks| match tasks {
                None => f64::INFINITY,
                Some(ts) => {
                    let r: Vec<Option<Vec<f64>>> = results.by_ref().take(ts.len()).collect();
                    self.objective(&r)
                }
            })
            .collect()
    }

    /// Runs the fit; `evaluated(n)` is called after every batch of `n` evaluations.
    pub fn run(
        &self,
        eval: &mut dyn Evaluator,
        evaluated: &mut dyn FnMut(usize),
    ) -> Result<Fitted, CalibError> {
        let lo: Vec<f64> = self.params.iter().map(|p| p.lo).collect();
        let hi: Vec<f64> = self.params.iter().map(|p| p.hi).collect();
        let x0: Vec<f64> = self.params.iter().map(|p| p.start).collect();
        let opts = Options {
            max_evals: self.max_evals(),
            ..Options::default()
        };
        let mut f = |xs: &[Vec<f64>]| -> Vec<f64> {
            let v = self.evaluate(xs, eval);
            evaluated(xs.len());
            v
        };
        let best = nelder_mead::minimize(&mut f, &x0, &lo, &hi, &opts);
        self.finish(&best.x, best.evals, best.f, eval)
    }

    /// The residuals and the fitted platform file at `x`.
    fn finish(
        &self,
        x: &[f64],
        evals: usize,
        objective: f64,
        eval: &mut dyn Evaluator,
    ) -> Result<Fitted, CalibError> {
        let sets = sets_for(&self.params, x);
        let fitted = self
            .base
            .clone()
            .with_overrides(&sets)
            .map_err(irqlab_inputs::InputError::from)?;
        let tasks = self.tasks(x).unwrap_or_default();
        let results = eval.evaluate(&tasks);
        // A scenario that cannot be simulated even at the best values leaves its targets
        // unfitted: an error naming why (run here to get it), not a fit with NaN rows.
        if let Some(failed) = tasks.iter().zip(&results).find(|(_, r)| r.is_none()) {
            let why = failed.0.run().err().map_or_else(
                || "the evaluator returned no result".to_string(),
                |e| e.to_string(),
            );
            return Err(CalibError::at(
                &self.path,
                format!(
                    "no fit: a target scenario cannot be simulated at the best values found ({}): {why}",
                    sets.join(" ")
                ),
            ));
        }
        let rows = self
            .set
            .targets
            .iter()
            .zip(self.simulated(&results))
            .map(|(t, s)| {
                let sc = &self.set.scenarios[t.scenario];
                Row {
                    experiment: sc.name.clone(),
                    row: sc.row.clone(),
                    metric: t.metric.to_string(),
                    published: t.value,
                    simulated: s.unwrap_or(f64::NAN),
                    source: String::new(),
                    miss: None,
                }
            })
            .collect();
        let pairs: Vec<(String, String)> = sets
            .iter()
            .filter_map(|s| {
                s.split_once('=')
                    .map(|(k, v)| (k.to_string(), v.to_string()))
            })
            .collect();
        let mut header = format!(
            "# Fitted by `irqlab calibrate` from {} ({evals} evaluations, objective {objective:.4e}):\n",
            self.path.display(),
        );
        for s in &sets {
            header.push_str(&format!("#   {s}\n"));
        }
        let body = match patch_text(&self.text, &pairs) {
            Some(t) => t,
            None => {
                toml::to_string_pretty(&fitted).map_err(|e| CalibError::Encode(e.to_string()))?
            }
        };
        Ok(Fitted {
            params: self.params.clone(),
            sets,
            evals,
            objective,
            rows,
            platform_text: format!("{header}{body}"),
        })
    }
}

/// The value at a dotted key of the platform, as TOML.
fn value_at(tree: &toml::Value, key: &str) -> Option<toml::Value> {
    let mut node = tree;
    for part in key.split('.') {
        node = match node {
            toml::Value::Table(t) => t.get(part)?,
            toml::Value::Array(a) => a.get(part.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
    Some(node.clone())
}

/// Parses `KEY=LO..HI`, or `KEY` alone for the range the platform's ledger gives it,
/// against the resolved platform `r` (the key must hold a number). Bounds that reach
/// outside the ledger's range are warned about.
pub fn parse_param(spec: &str, r: &Resolved) -> Result<Param, CalibError> {
    let platform = &r.platform;
    let bad = |why: &str| CalibError::Param {
        spec: spec.to_string(),
        why: why.to_string(),
    };
    // The platform's own override check names the key; its message speaks of --set.
    let unknown_key = |e: irqlab_sim::PlatformError| {
        let msg = e.to_string();
        let why = msg
            .strip_prefix("--set '")
            .and_then(|rest| rest.split_once("': "))
            .map_or(msg.as_str(), |(_, why)| why);
        bad(why)
    };
    let (key, bounds) = match spec.split_once('=') {
        Some((k, b)) => (k.trim(), Some(b)),
        None => (spec.trim(), None),
    };
    let entry = r.ledger.get(key);
    let ledger_range = entry.and_then(|e| e.range_of_value(r.mhz));
    let (lo, hi) = match bounds {
        Some(range) => {
            let (lo, hi) = range
                .split_once("..")
                .ok_or_else(|| bad("no '..' in the bounds"))?;
            let lo: f64 = lo.trim().parse().map_err(|_| bad("LO is not a number"))?;
            let hi: f64 = hi.trim().parse().map_err(|_| bad("HI is not a number"))?;
            if let Some(lr) = ledger_range
                && (lo < lr.lo || hi > lr.hi)
            {
                irqlab_sim::ledger::warn_once(&format!(
                    "--param {spec}: the bounds reach outside the plausible range {}..{} of {key} ({})",
                    lr.lo,
                    lr.hi,
                    entry.map(|e| e.location()).unwrap_or_default()
                ));
            }
            (lo, hi)
        }
        None => match ledger_range {
            Some(lr) => (lr.lo, lr.hi),
            None if entry.is_some() => {
                return Err(bad(&format!(
                    "{key} has no range in the platform's ledger ({}); give {key}=LO..HI",
                    entry.map(|e| e.location()).unwrap_or_default()
                )));
            }
            None => {
                // Let the override check say what is wrong with the key.
                platform
                    .clone()
                    .with_overrides(&[format!("{key}=0")])
                    .map_err(unknown_key)?;
                return Err(bad(&format!(
                    "{key} has no range in the platform's ledger; give {key}=LO..HI"
                )));
            }
        },
    };
    if !lo.is_finite() {
        return Err(bad("LO is not a finite number"));
    }
    if !hi.is_finite() {
        return Err(bad("HI is not a finite number"));
    }
    if lo >= hi {
        return Err(bad("LO must be below HI"));
    }
    let key = key.trim().to_string();
    // Validate the key with the platform's own --set, which names the known keys.
    platform
        .clone()
        .with_overrides(&[format!("{key}={}", lo.round() as i64)])
        .or_else(|_| platform.clone().with_overrides(&[format!("{key}={lo}")]))
        .map_err(unknown_key)?;
    let tree = toml::Value::try_from(platform).map_err(|e| bad(&e.to_string()))?;
    let (integer, start) = match value_at(&tree, &key) {
        Some(toml::Value::Integer(i)) => (true, i as f64),
        Some(toml::Value::Float(f)) => (false, f),
        _ => return Err(bad("the key does not hold a number")),
    };
    Ok(Param {
        key,
        lo,
        hi,
        integer,
        start: start.clamp(lo, hi),
    })
}

/// `--set` strings for a candidate point.
pub fn sets_for(params: &[Param], x: &[f64]) -> Vec<String> {
    params
        .iter()
        .zip(x)
        .map(|(p, v)| {
            if p.integer {
                format!("{}={}", p.key, v.round() as i64)
            } else {
                format!("{}={v:.6}", p.key)
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const EXAMPLE: &str = include_str!("../../../platforms/example.toml");

    #[test]
    fn params_know_their_type_and_start() {
        let p = irqlab_sim::ledger::from_text(EXAMPLE, "example", None, &[]).unwrap();
        let a = parse_param("uncore.stack_rtt_ns=10..400", &p).unwrap();
        assert!(a.integer && a.start == 65.0);
        let b = parse_param("devices.0.max_iops=5e5..2e6", &p).unwrap();
        assert!(!b.integer);
        let e = parse_param("iommu.nope=1..2", &p).unwrap_err().to_string();
        assert!(
            e.starts_with("--param 'iommu.nope=1..2': unknown key 'nope'"),
            "{e}"
        );
        assert!(!e.contains("--set"), "{e}");
        assert!(parse_param("uncore.stack_rtt_ns=5..1", &p).is_err());
        assert_eq!(
            sets_for(&[a], &[123.6]),
            vec!["uncore.stack_rtt_ns=124".to_string()]
        );
    }

    #[test]
    fn a_key_alone_takes_the_ledgers_range() {
        let spr = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../platforms/spr-gen5.toml");
        let r = irqlab_sim::ledger::load(&spr, &[]).unwrap();
        let d = parse_param("uncore.ubox_ns", &r).unwrap();
        assert_eq!((d.lo, d.hi, d.start), (120.0, 200.0, 150.0));
        // A range written in cycles, in ns at the platform's 3.8 GHz.
        let t = parse_param("cpu.tick_ns", &r).unwrap();
        assert_eq!((t.lo, t.hi), (5000.0, 15000.0));
        let e = parse_param("iommu.dma_translate_ns", &r)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("no range in the platform's ledger") && e.contains("spr-gen5.toml:"),
            "{e}"
        );
        let e = parse_param("iommu.nope", &r).unwrap_err().to_string();
        assert!(e.contains("unknown key 'nope'"), "{e}");
    }

    /// Tasks through JSON, one call per batch, as a remote engine sees them.
    struct OverTheWire {
        batches: Vec<usize>,
    }

    impl Evaluator for OverTheWire {
        fn evaluate(&mut self, tasks: &[EvalTask]) -> Vec<Option<Vec<f64>>> {
            self.batches.push(tasks.len());
            tasks
                .iter()
                .map(|t| EvalTask::from_json(&t.to_json()).unwrap().run().ok())
                .collect()
        }
    }

    /// A cheap scenario and a targets file asking for its IOPS.
    fn scratch() -> PathBuf {
        let dir = std::env::temp_dir().join(format!("irqlab-fit-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("job.fio"),
            "[j]\nioengine=libaio\nrw=randread\nbs=4k\niodepth=8\nfilename=/dev/nvme0n1\n\
             cpus_allowed=0\ntime_based\nruntime=1ms\n",
        )
        .unwrap();
        let platform = concat!(env!("CARGO_MANIFEST_DIR"), "/../../platforms/example.toml");
        std::fs::write(
            dir.join("s.toml"),
            format!(
                "experiment = \"E\"\nrow = \"r\"\njob = \"job.fio\"\nplatform = \"{platform}\"\n\
                 policy = \"--delivery posted\"\n"
            ),
        )
        .unwrap();
        std::fs::write(
            dir.join("t.toml"),
            "[[target]]\nscenario = \"s.toml\"\nmetric = \"iops\"\nvalue = 250000\n",
        )
        .unwrap();
        dir
    }

    #[test]
    fn a_fit_gives_the_same_result_here_and_over_the_wire() {
        let dir = scratch();
        let spec = FitSpec {
            platform: concat!(env!("CARGO_MANIFEST_DIR"), "/../../platforms/example.toml").into(),
            params: vec!["cpu.irq_entry_ns=100..900".into()],
            targets: vec![dir.join("t.toml")],
            scenarios: vec![],
            scenarios_dir: "scenarios".into(),
            max_evals: 8,
            seed: 1,
            budget: Budget::DEFAULT,
        };
        let fit = Fit::new(&spec).unwrap();
        let mut counted = 0;
        let here = fit.run(&mut Threads(2), &mut |n| counted += n).unwrap();
        let mut wire = OverTheWire { batches: vec![] };
        let there = fit.run(&mut wire, &mut |_| {}).unwrap();
        assert_eq!(here, there);
        assert_eq!(counted, here.evals);
        // The first simplex (start and one step) is one batch; the residuals one more.
        assert_eq!(wire.batches[0], 2, "{:?}", wire.batches);
        assert!(here.rows[0].simulated > 0.0, "{:?}", here.rows);
        assert!(
            here.platform_text
                .starts_with("# Fitted by `irqlab calibrate`")
        );
        assert!(
            here.platform_text
                .contains(&format!("#   {}", here.sets[0]))
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
