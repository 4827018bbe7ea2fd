//! `irqlab reproduce --cross-validate`: leave one experiment out. For each experiment E,
//! the fitted parameters (ledger entries with `source = "fit"`) that a figure of E pins
//! are refitted on their other pins alone (Nelder–Mead within their ledger ranges, the
//! same evaluation tasks as `calibrate`), and E's figures are predicted with the refitted
//! values. A figure whose scenario takes a parameter pinned only by E's own figures is
//! not cross-validated, unless the figure does not move when that parameter goes from
//! one end of its ledger range to the other (by at most [`UNMOVED_PCT`]): then it does
//! not rest on it. A figure whose scenario takes no parameter that E pins is a
//! prediction already (in sample = out of sample).

use crate::CalibError;
use crate::fit::{EvalTask, Evaluator};
use crate::nelder_mead::{self, Options};
use crate::provenance::Pins;
use crate::scenario::Scenario;
use irqlab_sim::Budget;
use irqlab_sim::ledger::{self, Entry, Origin, Resolved, Scalar, SourceKind, cycles_to_ns};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::PathBuf;

/// A figure that moves by at most this much (percent of its in-sample value) when a
/// parameter goes to either end of its ledger range does not rest on that parameter:
/// a C1 posted row does not use the remapped path's stack time, a polled row no
/// interrupt cost. Above the model's run-to-run jitter when a parameter that does not
/// bind moves (a fraction of a percent).
pub const UNMOVED_PCT: f64 = 1.0;

/// What a figure's out-of-sample value is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// No parameter its experiment pins reaches it: the in-sample value is a prediction.
    Predicted,
    /// Predicted after refitting, without its experiment, the parameters it pins.
    Refitted,
    /// It takes a parameter pinned only by its own experiment's figures.
    NotCrossValidated,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Predicted => "predicted",
            Status::Refitted => "refitted",
            Status::NotCrossValidated => "not cross-validated",
        }
    }
}

/// One figure, in sample and out of sample.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CvRow {
    pub experiment: String,
    pub row: String,
    pub metric: String,
    pub published: f64,
    pub in_sample: f64,
    /// None when not cross-validated (or its scenario could not run).
    pub out_of_sample: Option<f64>,
    pub status: Status,
    /// Refitted: the refitted values (`spr-gen5:uncore.pid_ns=88`); not cross-validated:
    /// the parameters pinned only by this experiment.
    pub parameters: Vec<String>,
    /// Parameters pinned only by this experiment that its scenario takes but that do
    /// not move the figure across their range ([`UNMOVED_PCT`]).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub unmoved: Vec<String>,
}

/// One refit: an experiment left out.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Refit {
    pub experiment: String,
    /// `label=value` at the refit's best point.
    pub values: Vec<String>,
    /// The figures of other experiments it was fitted to.
    pub targets: usize,
    pub evals: usize,
}

/// The whole cross-validation.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct CvReport {
    pub rows: Vec<CvRow>,
    pub refits: Vec<Refit>,
}

/// What to cross-validate and how.
#[derive(Clone, Debug)]
pub struct CvSpec {
    /// Where the scenarios were loaded from (pins are paths under it).
    pub scenarios_dir: PathBuf,
    /// The experiments left out, in order (every experiment when empty).
    pub experiments: Vec<String>,
    /// Objective evaluations per refit.
    pub max_evals: usize,
    pub seed: u64,
    pub budget: Budget,
}

/// A published figure: a scenario (index into all scenarios) and a metric.
type Figure = (usize, String);

/// A fitted parameter: one ledger entry and the parts that share it.
struct FitParam {
    /// `spr-gen5:uncore.ubox_ns`, `cpus/golden-cove:cpu.irq_entry_ns`.
    label: String,
    entry: Entry,
    keys: Vec<String>,
    figures: BTreeSet<Figure>,
    /// Bounds and start in the entry's unit (cycles for a cycles entry).
    lo: f64,
    hi: f64,
    start: f64,
    integer: bool,
}

/// Everything the refits need about the scenarios and their platforms.
struct World<'a> {
    all: &'a [Scenario],
    pins: Pins<'a>,
    /// Per scenario: its platform resolved, as a self-contained file, and its job's text.
    resolved: Vec<Resolved>,
    flat: Vec<String>,
    jobs: Vec<String>,
    spec: &'a CvSpec,
}

fn canon(p: &std::path::Path) -> PathBuf {
    std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf())
}

impl<'a> World<'a> {
    fn new(all: &'a [Scenario], spec: &'a CvSpec) -> Result<World<'a>, CalibError> {
        let mut by_platform: HashMap<PathBuf, (Resolved, String)> = HashMap::new();
        let mut resolved = Vec::new();
        let mut flat = Vec::new();
        let mut jobs = Vec::new();
        for s in all {
            let key = canon(&s.platform);
            if !by_platform.contains_key(&key) {
                let r = ledger::load(&s.platform, &[]).map_err(|e| CalibError::at(&s.path, e))?;
                let f = r
                    .platform
                    .to_toml()
                    .map_err(|e| CalibError::at(&s.path, e))?;
                by_platform.insert(key.clone(), (r, f));
            }
            let (r, f) = &by_platform[&key];
            resolved.push(r.clone());
            flat.push(f.clone());
            jobs.push(
                irqlab_fio::input::read_text(&s.job, irqlab_fio::input::MAX_INPUT_BYTES)
                    .map_err(|e| CalibError::at(&s.job, e))?,
            );
        }
        Ok(World {
            all,
            pins: Pins::new(&spec.scenarios_dir, all),
            resolved,
            flat,
            jobs,
            spec,
        })
    }

    fn index_of(&self, s: &Scenario) -> Option<usize> {
        let c = canon(&s.path);
        self.all.iter().position(|x| canon(&x.path) == c)
    }

    /// Every fitted parameter of every platform the scenarios run (a shared table's
    /// once), in scenario and key order.
    fn fit_params(&mut self) -> Result<Vec<FitParam>, CalibError> {
        let mut out: Vec<FitParam> = Vec::new();
        let mut seen: BTreeSet<(PathBuf, String)> = BTreeSet::new();
        for i in 0..self.all.len() {
            let r = self.resolved[i].clone();
            for e in r.ledger.iter() {
                let Some(p) = &e.provenance else { continue };
                if p.source != SourceKind::Fit || e.shared_from.is_some() || e.origin == Origin::Set
                {
                    continue;
                }
                let file = e.file.as_deref().map(canon).unwrap_or_default();
                if !seen.insert((file, e.key.clone())) {
                    continue;
                }
                let label = match &e.origin {
                    Origin::Table { table, name } => format!("{}/{name}:{}", table.dir(), e.key),
                    _ => format!("{}:{}", r.platform.name, e.key),
                };
                let refit_error = |why: String| CalibError::Refit {
                    param: format!("{label} ({})", e.location()),
                    why,
                };
                let range = p.range.ok_or_else(|| {
                    refit_error("a fit without a range to refit it within".into())
                })?;
                let (figs, bad) = self.pins.figures(e);
                if let Some(b) = bad.first() {
                    return Err(refit_error(b.clone()));
                }
                let mut figures = BTreeSet::new();
                for (id, metric) in figs {
                    let s = self
                        .pins
                        .scenario(&id)
                        .ok_or_else(|| refit_error(format!("pin {id}: no such scenario")))?;
                    let k = self
                        .index_of(s)
                        .ok_or_else(|| refit_error(format!("pin {id}: not among the scenarios")))?;
                    figures.insert((k, metric));
                }
                let start = match e.cycles {
                    Some(c) => c as f64,
                    None => e.value.as_f64().unwrap_or(range.lo),
                };
                out.push(FitParam {
                    label,
                    keys: r.ledger.same_part(&e.key),
                    entry: e.clone(),
                    figures,
                    lo: range.lo,
                    hi: range.hi,
                    start,
                    integer: e.cycles.is_some() || matches!(e.value, Scalar::Int(_)),
                });
            }
        }
        Ok(out)
    }

    /// Whether scenario `i` takes parameter `p` (its platform has it from the same file).
    fn uses(&mut self, i: usize, p: &FitParam) -> bool {
        self.pins.uses(&self.all[i], &p.entry)
    }

    /// `--set`s putting parameters `ps` at `x` in scenario `i`'s platform.
    fn sets(&mut self, i: usize, ps: &[&FitParam], x: &[f64]) -> Vec<String> {
        let mut out = Vec::new();
        for (p, &v) in ps.iter().zip(x) {
            if !self.uses(i, p) {
                continue;
            }
            let text = match p.entry.cycles {
                Some(_) => {
                    let mhz = self.resolved[i].mhz.unwrap_or(1000);
                    cycles_to_ns(v.round().max(0.0) as u64, mhz).to_string()
                }
                None if p.integer => (v.round() as i64).to_string(),
                None => format!("{v:.6}"),
            };
            out.extend(p.keys.iter().map(|k| format!("{k}={text}")));
        }
        out
    }

    /// One task per scenario of `figures` (with the metrics wanted of it) at `x`.
    fn tasks(
        &mut self,
        figures: &BTreeMap<usize, Vec<String>>,
        ps: &[&FitParam],
        x: &[f64],
    ) -> Vec<EvalTask> {
        figures
            .iter()
            .map(|(&i, metrics)| {
                let sets = self.sets(i, ps, x);
                EvalTask::of_scenario(
                    &self.all[i],
                    &self.jobs[i],
                    &self.flat[i],
                    &self.all[i].platform.display().to_string(),
                    sets,
                    metrics.clone(),
                    self.spec.seed,
                    self.spec.budget,
                )
            })
            .collect()
    }
}

/// The published value of figure `f`.
fn published(all: &[Scenario], f: &Figure) -> f64 {
    all[f.0]
        .targets
        .iter()
        .find(|t| t.metric.to_string() == f.1)
        .map_or(f64::NAN, |t| t.published)
}

/// Figures grouped by scenario, metrics in order.
fn by_scenario(figs: &BTreeSet<Figure>) -> BTreeMap<usize, Vec<String>> {
    let mut m: BTreeMap<usize, Vec<String>> = BTreeMap::new();
    for (i, metric) in figs {
        m.entry(*i).or_default().push(metric.clone());
    }
    m
}

/// The value of every figure from task results.
fn values(
    groups: &BTreeMap<usize, Vec<String>>,
    results: &[Option<Vec<f64>>],
) -> BTreeMap<Figure, Option<f64>> {
    let mut out = BTreeMap::new();
    for ((i, metrics), r) in groups.iter().zip(results) {
        for (k, m) in metrics.iter().enumerate() {
            out.insert((*i, m.clone()), r.as_ref().and_then(|v| v.get(k).copied()));
        }
    }
    out
}

/// Which (figure, parameter) pairs move: the figure changes by more than
/// [`UNMOVED_PCT`] when the parameter (an index into `alone`) sits at either end of its
/// range, the others at their values. One batch of evaluations: each scenario that
/// takes a parameter, at both ends.
fn moving(
    world: &mut World<'_>,
    eval: &mut dyn Evaluator,
    alone: &[&FitParam],
    taken: &BTreeMap<Figure, Vec<usize>>,
    in_value: &BTreeMap<Figure, f64>,
) -> BTreeSet<(Figure, usize)> {
    // (scenario, parameter) pairs to try, with the metrics wanted of the scenario.
    let mut pairs: BTreeMap<(usize, usize), Vec<String>> = BTreeMap::new();
    for (f, ks) in taken {
        for &k in ks {
            pairs.entry((f.0, k)).or_default().push(f.1.clone());
        }
    }
    let mut tasks = Vec::new();
    let mut order = Vec::new();
    for ((i, k), metrics) in &pairs {
        let groups: BTreeMap<usize, Vec<String>> = [(*i, metrics.clone())].into();
        for end in [alone[*k].lo, alone[*k].hi] {
            tasks.extend(world.tasks(&groups, &[alone[*k]], &[end]));
            order.push((*i, *k, metrics.clone()));
        }
    }
    let results = if tasks.is_empty() {
        Vec::new()
    } else {
        eval.evaluate(&tasks)
    };
    let mut out = BTreeSet::new();
    for ((i, k, metrics), r) in order.into_iter().zip(results) {
        for (m, metric) in metrics.iter().enumerate() {
            let fig = (i, metric.clone());
            let base = in_value.get(&fig).copied().unwrap_or(f64::NAN);
            let v = r.as_ref().and_then(|v| v.get(m).copied());
            let moves = match v {
                Some(v) if base.is_finite() && base != 0.0 => {
                    ((v - base) / base).abs() * 100.0 > UNMOVED_PCT
                }
                // A run that fails, or a zero figure, counts as moved.
                _ => true,
            };
            if moves {
                out.insert((fig, k));
            }
        }
    }
    out
}

/// Leaves each selected experiment out in turn; `evaluated(n)` is called after each
/// batch of `n` evaluations (the in-sample run is one, each sensitivity check one).
pub fn cross_validate(
    all: &[Scenario],
    spec: &CvSpec,
    eval: &mut dyn Evaluator,
    evaluated: &mut dyn FnMut(usize),
) -> Result<CvReport, CalibError> {
    let mut world = World::new(all, spec)?;
    let params = world.fit_params()?;
    let mut experiments: Vec<String> = Vec::new();
    for s in all {
        if !experiments.contains(&s.experiment)
            && (spec.experiments.is_empty()
                || spec
                    .experiments
                    .iter()
                    .any(|e| e.eq_ignore_ascii_case(&s.experiment)))
        {
            experiments.push(s.experiment.clone());
        }
    }
    // In sample: every figure of the experiments left out, as `reproduce` runs it.
    let mine: BTreeSet<Figure> = all
        .iter()
        .enumerate()
        .filter(|(_, s)| experiments.contains(&s.experiment))
        .flat_map(|(i, s)| s.targets.iter().map(move |t| (i, t.metric.to_string())))
        .collect();
    let groups = by_scenario(&mine);
    let tasks = world.tasks(&groups, &[], &[]);
    let in_value: BTreeMap<Figure, f64> = values(&groups, &eval.evaluate(&tasks))
        .into_iter()
        .map(|(f, v)| (f, v.unwrap_or(f64::NAN)))
        .collect();
    evaluated(1);
    let mut rows = Vec::new();
    let mut refits = Vec::new();
    for exp in &experiments {
        let own: BTreeSet<Figure> = in_value
            .keys()
            .filter(|(i, _)| all[*i].experiment == *exp)
            .cloned()
            .collect();
        let pinned: Vec<&FitParam> = params
            .iter()
            .filter(|p| p.figures.iter().any(|f| own.contains(f)))
            .collect();
        let (refit, alone): (Vec<&FitParam>, Vec<&FitParam>) = pinned
            .into_iter()
            .partition(|p| p.figures.iter().any(|f| !own.contains(f)));
        // The parameters pinned only by E that each figure's scenario takes, less those
        // the figure does not move with.
        let taken: BTreeMap<Figure, Vec<usize>> = own
            .iter()
            .map(|f| {
                let ix = (0..alone.len())
                    .filter(|&k| world.uses(f.0, alone[k]))
                    .collect();
                (f.clone(), ix)
            })
            .collect();
        let moved = moving(&mut world, eval, &alone, &taken, &in_value);
        evaluated(1);
        // Each figure's status from the parameters its scenario takes.
        let mut status: BTreeMap<Figure, (Status, Vec<String>, Vec<String>)> = BTreeMap::new();
        for f in &own {
            let (mut lone, mut unmoved) = (Vec::new(), Vec::new());
            for &k in &taken[f] {
                if moved.contains(&(f.clone(), k)) {
                    lone.push(alone[k].label.clone());
                } else {
                    unmoved.push(alone[k].label.clone());
                }
            }
            let st = if !lone.is_empty() {
                Status::NotCrossValidated
            } else if refit.iter().any(|p| world.uses(f.0, p)) {
                Status::Refitted
            } else {
                Status::Predicted
            };
            status.insert(f.clone(), (st, lone, unmoved));
        }
        let need: BTreeSet<Figure> = status
            .iter()
            .filter(|(_, (s, _, _))| *s == Status::Refitted)
            .map(|(f, _)| f.clone())
            .collect();
        let mut predicted: BTreeMap<Figure, Option<f64>> = BTreeMap::new();
        let mut values_text = Vec::new();
        if !need.is_empty() {
            let targets: BTreeSet<Figure> = refit
                .iter()
                .flat_map(|p| p.figures.iter().filter(|f| !own.contains(*f)).cloned())
                .collect();
            let groups = by_scenario(&targets);
            let lo: Vec<f64> = refit.iter().map(|p| p.lo).collect();
            let hi: Vec<f64> = refit.iter().map(|p| p.hi).collect();
            let x0: Vec<f64> = refit.iter().map(|p| p.start).collect();
            let opts = Options {
                max_evals: spec.max_evals.max(refit.len() + 1),
                ..Options::default()
            };
            let mut f = |xs: &[Vec<f64>]| -> Vec<f64> {
                let per: Vec<Vec<EvalTask>> =
                    xs.iter().map(|x| world.tasks(&groups, &refit, x)).collect();
                let flat: Vec<EvalTask> = per.iter().flatten().cloned().collect();
                let mut res = eval.evaluate(&flat).into_iter();
                let out = per
                    .iter()
                    .map(|ts| {
                        let r: Vec<Option<Vec<f64>>> = res.by_ref().take(ts.len()).collect();
                        values(&groups, &r)
                            .iter()
                            .map(|(fig, v)| {
                                let p = published(all, fig);
                                let e = v.map_or(10.0, |v| (v - p) / p);
                                e * e
                            })
                            .sum()
                    })
                    .collect();
                evaluated(xs.len());
                out
            };
            let best = nelder_mead::minimize(&mut f, &x0, &lo, &hi, &opts);
            let groups = by_scenario(&need);
            let tasks = world.tasks(&groups, &refit, &best.x);
            let results = eval.evaluate(&tasks);
            predicted = values(&groups, &results);
            values_text = refit
                .iter()
                .zip(&best.x)
                .map(|(p, v)| {
                    let unit = if p.entry.cycles.is_some() {
                        " cycles"
                    } else {
                        ""
                    };
                    if p.integer {
                        format!("{}={}{unit}", p.label, v.round() as i64)
                    } else {
                        format!("{}={}", p.label, (v * 1e4).round() / 1e4)
                    }
                })
                .collect();
            refits.push(Refit {
                experiment: exp.clone(),
                values: values_text.clone(),
                targets: targets.len(),
                evals: best.evals,
            });
        }
        for (i, s) in all.iter().enumerate() {
            if s.experiment != *exp {
                continue;
            }
            for t in &s.targets {
                let fig = (i, t.metric.to_string());
                let (st, lone, unmoved) = status[&fig].clone();
                let in_v = in_value[&fig];
                let (out, parameters) = match st {
                    Status::Predicted => (Some(in_v), Vec::new()),
                    Status::Refitted => {
                        (predicted.get(&fig).copied().flatten(), values_text.clone())
                    }
                    Status::NotCrossValidated => (None, lone),
                };
                rows.push(CvRow {
                    experiment: exp.clone(),
                    row: s.row.clone(),
                    metric: fig.1.clone(),
                    published: t.published,
                    in_sample: in_v,
                    out_of_sample: out.filter(|v| v.is_finite()),
                    status: st,
                    parameters,
                    unmoved,
                });
            }
        }
    }
    Ok(CvReport { rows, refits })
}
