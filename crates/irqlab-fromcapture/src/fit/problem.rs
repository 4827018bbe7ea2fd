//! The fit's problem: the costs being fitted, the figures they are compared with, and
//! the platform `--set`s a point stands for.

use super::ctx::Ctx;
use crate::runs::FitRun;
use irqlab_calib::Metric;

/// A cost the fit may move: the platform keys it sets (tied: one value for each device
/// group), its bounds and start.
#[derive(Clone, Debug, PartialEq)]
pub struct Param {
    pub keys: Vec<String>,
    pub lo: f64,
    pub hi: f64,
    pub integer: bool,
    pub start: f64,
    /// The value before the fit (the table's or the kind's).
    pub before: f64,
    /// Which part of the model it is, in words.
    pub what: &'static str,
    /// The figures it is solved for first, one cost at a time.
    pub primary: Vec<Q>,
    /// The figures it may be pinned by: its pins are those of them that move with it.
    pub for_figures: Vec<(String, Metric)>,
    /// What the runs show it is at least, when they pin it no further (a device at least
    /// as fast as the fastest run): kept instead of `before` when that is lower.
    pub floor: Option<(f64, String)>,
}

impl Param {
    pub fn key(&self) -> &str {
        &self.keys[0]
    }

    pub fn sets(&self, x: f64) -> Vec<String> {
        let x = x.clamp(self.lo, self.hi);
        self.keys
            .iter()
            .map(|k| {
                if self.integer {
                    format!("{k}={}", x.round() as i64)
                } else {
                    format!("{k}={x:.3}")
                }
            })
            .collect()
    }
}

/// A quantity compared: a metric of a run, or one derived from two metrics that pins a
/// small cost better than either (a few microseconds of a hundred).
#[derive(Clone, Debug, PartialEq)]
pub enum Q {
    M(String, Metric),
    /// A QD1 run's time per I/O outside its completion latency, µs: 1e6 / IOPS - clat.
    Outside(String),
    /// One run's mean completion latency less another's, µs.
    Gap(String, String),
}

/// The runs, their figures, and the `--set`s every point carries (decisions).
pub struct Problem<'a> {
    pub runs: &'a [&'a FitRun],
    /// (run index, metric, measured value): the figures reported.
    pub figures: Vec<(usize, Metric, f64)>,
    /// Derived quantities in the objective too: each with its measured value and the
    /// scale its error is taken against (at least a tenth of the run's time per I/O, so
    /// a quantity of a few tenths of a microsecond that the model cannot reach does not
    /// outweigh every other figure).
    pub derived: Vec<(Q, f64, f64)>,
    pub metrics: Vec<Metric>,
    pub fixed: Vec<String>,
    pub params: Vec<Param>,
}

impl Problem<'_> {
    /// The `--set`s of point `x`.
    pub fn sets(&self, x: &[f64]) -> Vec<String> {
        let mut s = self.fixed.clone();
        for (p, v) in self.params.iter().zip(x) {
            s.extend(p.sets(*v));
        }
        s
    }

    /// The indices of `figs` among the figures.
    pub fn index(&self, figs: &[(String, Metric)]) -> Vec<usize> {
        (0..self.figures.len())
            .filter(|i| {
                let (r, m, _) = &self.figures[*i];
                figs.iter().any(|(n, x)| *n == self.runs[*r].name && x == m)
            })
            .collect()
    }

    /// Every figure and derived quantity: indices past the figures are derived ones.
    pub fn all(&self) -> Vec<usize> {
        (0..self.figures.len() + self.derived.len()).collect()
    }

    /// The indices of quantities `qs` (figures or derived).
    pub fn index_q(&self, qs: &[Q]) -> Vec<usize> {
        let mut out = Vec::new();
        for q in qs {
            let hit = match q {
                Q::M(r, m) => self.index(&[(r.clone(), *m)]).first().copied(),
                d => self
                    .derived
                    .iter()
                    .position(|(x, _, _)| x == d)
                    .map(|i| self.figures.len() + i),
            };
            out.extend(hit);
        }
        out
    }

    fn run_ix(&self, name: &str) -> Option<usize> {
        self.runs.iter().position(|r| r.name == name)
    }

    /// The runs quantity `i` needs.
    fn needs(&self, i: usize) -> Vec<usize> {
        if i < self.figures.len() {
            return vec![self.figures[i].0];
        }
        match &self.derived[i - self.figures.len()].0 {
            Q::M(r, _) | Q::Outside(r) => self.run_ix(r).into_iter().collect(),
            Q::Gap(a, b) => [self.run_ix(a), self.run_ix(b)]
                .into_iter()
                .flatten()
                .collect(),
        }
    }

    /// The measured value of quantity `i`.
    pub fn measured(&self, i: usize) -> f64 {
        if i < self.figures.len() {
            self.figures[i].2
        } else {
            self.derived[i - self.figures.len()].1
        }
    }

    /// What the error of quantity `i` is relative to: its measured value, or a derived
    /// one's scale.
    pub fn scale(&self, i: usize) -> f64 {
        if i < self.figures.len() {
            self.figures[i].2
        } else {
            self.derived[i - self.figures.len()].2
        }
    }

    /// Quantities `which` at `x`, simulating only their runs.
    pub fn values(&self, ctx: &mut Ctx<'_>, x: &[f64], which: &[usize]) -> Option<Vec<f64>> {
        let mut need: Vec<usize> = which.iter().flat_map(|i| self.needs(*i)).collect();
        need.sort_unstable();
        need.dedup();
        let sub: Vec<&FitRun> = need.iter().map(|i| self.runs[*i]).collect();
        let out = ctx.simulate(&sub, &self.sets(x), &self.metrics);
        let get = |run: usize, m: Metric| -> Option<f64> {
            let k = self.metrics.iter().position(|x| *x == m)?;
            let j = need.iter().position(|n| *n == run)?;
            Some(out[j].as_ref()?[k])
        };
        let mut v = Vec::with_capacity(which.len());
        for i in which {
            let value = if *i < self.figures.len() {
                let (r, m, _) = &self.figures[*i];
                get(*r, *m)?
            } else {
                match &self.derived[i - self.figures.len()].0 {
                    Q::M(r, m) => get(self.run_ix(r)?, *m)?,
                    Q::Outside(r) => {
                        let k = self.run_ix(r)?;
                        1e6 / get(k, Metric::Iops)?.max(1e-9) - get(k, Metric::ClatMeanUs)?
                    }
                    Q::Gap(a, b) => {
                        get(self.run_ix(a)?, Metric::ClatMeanUs)?
                            - get(self.run_ix(b)?, Metric::ClatMeanUs)?
                    }
                }
            };
            v.push(value);
        }
        Some(v)
    }

    /// Sum of squared relative errors of quantities `which` (values `v`).
    pub fn cost(&self, v: &Option<Vec<f64>>, which: &[usize]) -> f64 {
        match v {
            None => f64::INFINITY,
            Some(v) => which
                .iter()
                .zip(v)
                .map(|(i, sim)| {
                    let r = (sim - self.measured(*i)) / self.scale(*i);
                    r * r
                })
                .sum(),
        }
    }

    /// The mean relative error of quantities `which`: 0 when they agree.
    pub fn gap(&self, v: &Option<Vec<f64>>, which: &[usize]) -> Option<f64> {
        let v = v.as_ref()?;
        let errs: Vec<f64> = which
            .iter()
            .zip(v)
            .map(|(i, s)| (s - self.measured(*i)) / self.scale(*i))
            .collect();
        (!errs.is_empty()).then(|| errs.iter().sum::<f64>() / errs.len() as f64)
    }
}
