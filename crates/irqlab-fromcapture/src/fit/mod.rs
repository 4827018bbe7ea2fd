//! The fit: the device's interrupt rule from its I/Os per interrupt (rule.rs), the costs
//! the runs can pin with their starts (params.rs), solved against the runs' figures
//! (solve.rs), each run simulated as an evaluation task of the calibration machinery
//! (ctx.rs). A cost is pinned by the figures it is fitted for that move when it does
//! (-20% / +25% at the fit); one that moves none is not fitted, and says so.

mod ctx;
mod params;
mod problem;
mod rule;
mod solve;

pub use ctx::Ctx;
pub use problem::Param;
pub use rule::Decided;

use crate::FromCaptureError;
use crate::doc::Doc;
use crate::runs::FitRun;
use irqlab_calib::Metric;
use problem::Problem;

/// One figure of one run.
#[derive(Clone, Debug, PartialEq)]
pub struct Figure {
    pub run: String,
    pub metric: Metric,
    pub measured: f64,
    pub simulated: f64,
}

impl Figure {
    pub fn error_pct(&self) -> f64 {
        irqlab_calib::metrics::error_pct(self.simulated, self.measured)
    }
}

/// A cost the fit moved.
#[derive(Clone, Debug, PartialEq)]
pub struct FittedCost {
    pub param: Param,
    pub value: f64,
    /// The figures that move with it, RUN:METRIC.
    pub pins: Vec<(String, Metric)>,
    /// Its pinning figures at the fit.
    pub residuals: Vec<Figure>,
    /// "lower" or "upper" when it ended at a bound of its range.
    pub at_bound: Option<&'static str>,
    /// "at most" or "at least" when its figures move one way only: the runs bound it,
    /// and its value is where the fit ended within that bound.
    pub bound: Option<&'static str>,
}

/// A cost the runs could not pin.
#[derive(Clone, Debug, PartialEq)]
pub struct Unpinned {
    pub param: Param,
    pub why: String,
    /// The value kept when it is not the table's: at least what a run shows, and which.
    pub floor: Option<(f64, String)>,
}

/// Everything the fit found.
#[derive(Clone, Debug, PartialEq)]
pub struct Outcome {
    pub fitted: Vec<FittedCost>,
    /// Costs the runs could not pin: key, why, and the value kept with the run that
    /// shows it is at least that (None: the table's value).
    pub unpinned: Vec<Unpinned>,
    pub decided: Vec<Decided>,
    /// Every `--set` of the fitted platform (fitted values and decisions).
    pub sets: Vec<String>,
    /// The figures of the runs used, at the fit.
    pub in_sample: Vec<Figure>,
    pub evals: usize,
    pub objective: f64,
}

const ALL: [Metric; 4] = [
    Metric::Iops,
    Metric::ClatMeanUs,
    Metric::IosPerInterrupt,
    Metric::JobCpuPct,
];

/// Fits the costs of `doc` (with `groups` device groups) that `runs` pin; `remapping`:
/// a bare-metal host with interrupt remapping in use.
pub fn fit(
    doc: &Doc,
    kinds: &[irqlab_capture::DeviceKind],
    disks: usize,
    remapping: bool,
    runs: &[&FitRun],
    max_evals: usize,
    ctx: &mut Ctx<'_>,
) -> Result<Outcome, FromCaptureError> {
    // What every run gives at the tables' values: the starts are read off it.
    let base = ctx.simulate(runs, &[], &ALL);
    for (r, b) in runs.iter().zip(&base) {
        if b.is_none() {
            return Err(FromCaptureError::Run {
                run: r.name.clone(),
                why: format!(
                    "it cannot be simulated on the platform: {}",
                    ctx.why(r, &[])
                ),
            });
        }
    }
    let base_of = |r: &FitRun, m: Metric| -> f64 {
        let i = runs.iter().position(|x| x.name == r.name).unwrap_or(0);
        let k = ALL.iter().position(|x| *x == m).unwrap_or(0);
        base[i].as_ref().map_or(0.0, |v| v[k])
    };
    let group = |k: irqlab_capture::DeviceKind| -> Vec<usize> {
        (0..kinds.len()).filter(|g| kinds[*g] == k).collect()
    };
    let (nvme, virtio) = (
        group(irqlab_capture::DeviceKind::Nvme),
        group(irqlab_capture::DeviceKind::VirtioBlk),
    );
    let irq_deep: Vec<&FitRun> = runs
        .iter()
        .filter(|_| !nvme.is_empty())
        .filter(|r| r.outstanding() >= 8 && r.value(Metric::IosPerInterrupt).is_some())
        .copied()
        .collect();
    let mut decided = Vec::new();
    let mut fixed = Vec::new();
    let mut aggregation = None;
    if !irq_deep.is_empty() {
        let b: Vec<Option<f64>> = irq_deep
            .iter()
            .map(|r| Some(base_of(r, Metric::IosPerInterrupt)))
            .collect();
        let r = rule::decide(&nvme, &irq_deep, &b, ctx);
        decided.push(r.decided);
        fixed = r.fixed;
        aggregation = r.aggregation;
    }
    let (params, _cpu, derived) = params::choose(&params::Inputs {
        doc,
        nvme: &nvme,
        virtio: &virtio,
        disks,
        runs,
        base: &base_of,
        remapping,
        aggregation,
    });
    let mut params = params;
    // Each cost searched within a factor of ten of its start (read off the runs).
    for p in &mut params {
        p.lo = p.lo.max(p.start / 10.0);
        p.hi = p.hi.min(p.start * 10.0).max(p.lo * 1.01);
        if p.integer {
            p.lo = p.lo.floor().max(1.0);
            p.hi = p.hi.ceil();
        }
    }
    let figures: Vec<(usize, Metric, f64)> = runs
        .iter()
        .enumerate()
        .flat_map(|(i, r)| {
            // fio's CPU time is reported, not fitted: the model's job accounting leaves
            // out what a guest's exits and a sync engine's kernel time put there.
            r.measured
                .iter()
                .filter(|(m, _)| *m != Metric::JobCpuPct)
                .map(move |(m, v)| (i, *m, *v))
        })
        .collect();
    let mut metrics: Vec<Metric> = figures.iter().map(|f| f.1).collect();
    metrics.sort_by_key(|x| x.name());
    metrics.dedup();
    let problem = Problem {
        runs,
        figures,
        derived,
        metrics,
        fixed,
        params,
    };
    let (x, objective) = solve::solve(&problem, ctx, max_evals);
    let reported: Vec<usize> = (0..problem.figures.len()).collect();
    let at = problem
        .values(ctx, &x, &reported)
        .ok_or_else(|| FromCaptureError::Run {
            run: runs
                .iter()
                .map(|r| r.name.as_str())
                .collect::<Vec<_>>()
                .join(", "),
            why: "a run cannot be simulated at the fitted values".into(),
        })?;
    let figure = |i: usize, v: f64| {
        let (r, m, meas) = problem.figures[i];
        Figure {
            run: runs[r].name.clone(),
            metric: m,
            measured: meas,
            simulated: v,
        }
    };
    let in_sample: Vec<Figure> = at.iter().enumerate().map(|(i, v)| figure(i, *v)).collect();
    let mut fitted = Vec::new();
    let mut unpinned = Vec::new();
    let mut xs = x.clone();
    for (k, p) in problem.params.iter().enumerate() {
        let mine = problem.index(&p.for_figures);
        // Which figures move when it is lowered, and when it is raised: a figure that
        // moves one way only bounds it (a ceiling the run does not reach).
        let mut moved = [vec![false; reported.len()], vec![false; reported.len()]];
        for (way, factor) in [0.8, 1.25].into_iter().enumerate() {
            let y_k = (x[k] * factor).clamp(p.lo.min(x[k]), p.hi.max(x[k]) * 1.25);
            let mut y = x.clone();
            y[k] = y_k;
            let wide = Param {
                lo: p.lo.min(y_k),
                hi: p.hi.max(y_k),
                ..p.clone()
            };
            let mut params2 = problem.params.clone();
            params2[k] = wide;
            let probe = Problem {
                runs,
                figures: problem.figures.clone(),
                derived: Vec::new(),
                metrics: problem.metrics.clone(),
                fixed: problem.fixed.clone(),
                params: params2,
            };
            if let Some(v) = probe.values(ctx, &y, &mine) {
                for (j, i) in mine.iter().enumerate() {
                    if (at[*i] - v[j]).abs() > 0.005 * at[*i].abs().max(1e-9) {
                        moved[way][*i] = true;
                    }
                }
            }
        }
        let both: Vec<usize> = mine
            .iter()
            .copied()
            .filter(|i| moved[0][*i] && moved[1][*i])
            .collect();
        let down: Vec<usize> = mine.iter().copied().filter(|i| moved[0][*i]).collect();
        let up: Vec<usize> = mine.iter().copied().filter(|i| moved[1][*i]).collect();
        // Moved one way only: the runs bound it. A ceiling that only lowering moves keeps
        // the least the runs show; any other bound keeps where the fit ended, said so.
        let (pins, bound) = if !both.is_empty() {
            (both, None)
        } else if !up.is_empty() {
            (up, Some("at most"))
        } else if !down.is_empty() && p.floor.is_none() {
            (down, Some("at least"))
        } else {
            (Vec::new(), None)
        };
        if pins.is_empty() {
            let floor = p.floor.clone().filter(|(f, _)| *f > p.before);
            let kept = floor.as_ref().map_or(p.before, |(f, _)| *f);
            unpinned.push(Unpinned {
                param: p.clone(),
                why: format!(
                    "{}: none of the figures it is fitted for ({}) moves both ways with it at the fit (the model reaches them by another limit, or they only bound it), so it keeps {}",
                    p.what,
                    p.for_figures
                        .iter()
                        .map(|(r, m)| format!("{r}:{m}"))
                        .collect::<Vec<_>>()
                        .join(", "),
                    match &floor {
                        Some((f, why)) => format!("{f}, the least the runs show ({why})"),
                        None => format!("{} from before the fit", p.before),
                    }
                ),
                floor,
            });
            xs[k] = kept;
            continue;
        }
        // Within 0.5% of a bound, relative to the value (the ranges span decades).
        let near = |b: f64| (x[k] - b).abs() <= 0.005 * b.abs().max(x[k].abs()).max(1e-9);
        let at_bound = if near(p.lo) {
            Some("lower")
        } else if near(p.hi) {
            Some("upper")
        } else {
            None
        };
        fitted.push(FittedCost {
            bound,
            param: p.clone(),
            value: if p.integer { x[k].round() } else { x[k] },
            pins: pins
                .iter()
                .map(|i| {
                    (
                        runs[problem.figures[*i].0].name.clone(),
                        problem.figures[*i].1,
                    )
                })
                .collect(),
            residuals: pins.iter().map(|i| figure(*i, at[*i])).collect(),
            at_bound,
        });
    }
    // The figures as the platform written gives them (an unpinned cost moved).
    let in_sample = if unpinned.is_empty() {
        in_sample
    } else {
        let wide: Vec<Param> = problem
            .params
            .iter()
            .zip(&xs)
            .map(|(p, v)| Param {
                lo: p.lo.min(*v),
                hi: p.hi.max(*v),
                ..p.clone()
            })
            .collect();
        let p2 = Problem {
            runs,
            figures: problem.figures.clone(),
            derived: Vec::new(),
            metrics: problem.metrics.clone(),
            fixed: problem.fixed.clone(),
            params: wide,
        };
        match p2.values(ctx, &xs, &reported) {
            Some(v) => v.iter().enumerate().map(|(i, v)| figure(i, *v)).collect(),
            None => in_sample,
        }
    };
    // An unpinned cost keeps its value before the fit: written outside the search box.
    let mut sets = problem.fixed.clone();
    for (p, v) in problem.params.iter().zip(&xs) {
        let keep = Param {
            lo: p.lo.min(*v),
            hi: p.hi.max(*v),
            ..p.clone()
        };
        sets.extend(keep.sets(*v));
    }
    Ok(Outcome {
        fitted,
        unpinned,
        decided,
        sets,
        in_sample,
        evals: ctx.evals,
        objective,
    })
}
