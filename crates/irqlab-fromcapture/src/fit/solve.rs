//! Solving for the costs: first each against its primary figures alone, one after the
//! other (the costs are nearly separable: service time and QD1 latency, ceiling and deep
//! IOPS, ...), by the secant method on the logarithm; then all of them together against
//! every figure with Nelder–Mead (irqlab-calib), in logarithms (the costs span decades).

use super::ctx::Ctx;
use super::problem::Problem;
use irqlab_calib::nelder_mead::{self, Options};

/// Rounds of the one-at-a-time solve, and batches per cost per round.
const ROUNDS: usize = 3;
const STEPS: usize = 5;
/// Close enough: the primary quantities within 0.1%.
const CLOSE: f64 = 0.001;

/// Solves cost `k` alone against its primary figures; returns its new value.
fn secant(p: &Problem<'_>, ctx: &mut Ctx<'_>, x: &[f64], k: usize, budget: &mut usize) -> f64 {
    let which = p.index_q(&p.params[k].primary);
    if which.is_empty() {
        return x[k];
    }
    let (lo, hi) = (p.params[k].lo.ln(), p.params[k].hi.ln());
    let mut y = x.to_vec();
    let mut gap = |u: f64, budget: &mut usize| -> Option<f64> {
        *budget = budget.saturating_sub(1);
        y[k] = u.exp();
        let v = p.values(ctx, &y, &which);
        p.gap(&v, &which)
    };
    let mut u0 = x[k].ln();
    let Some(mut g0) = gap(u0, budget) else {
        return x[k];
    };
    let (mut best_u, mut best_g) = (u0, g0.abs());
    // A first step of 10% in the direction the error asks for: most costs raise what
    // they pin (latency, CPU time); a ceiling raises IOPS. The secant finds the sign.
    let mut u1 = (u0 - 0.1 * g0.signum()).clamp(lo, hi);
    for _ in 0..STEPS {
        if best_g < CLOSE || *budget == 0 || (u1 - u0).abs() < 1e-9 {
            break;
        }
        let Some(g1) = gap(u1, budget) else { break };
        if g1.abs() < best_g {
            (best_u, best_g) = (u1, g1.abs());
        }
        if (g1 - g0).abs() < 1e-12 {
            break;
        }
        let next = (u1 - g1 * (u1 - u0) / (g1 - g0)).clamp(lo, hi);
        // Never more than a factor of e in one step: the response is not linear.
        let next = next.clamp(u1 - 1.0, u1 + 1.0);
        (u0, g0, u1) = (u1, g1, next);
    }
    best_u.exp()
}

/// The costs at the fit, and the objective there.
pub fn solve(p: &Problem<'_>, ctx: &mut Ctx<'_>, max_evals: usize) -> (Vec<f64>, f64) {
    let all = p.all();
    let mut x: Vec<f64> = p.params.iter().map(|q| q.start).collect();
    if p.params.is_empty() {
        let v = p.values(ctx, &x, &all);
        return (x, p.cost(&v, &all));
    }
    let mut budget = max_evals;
    for _ in 0..ROUNDS {
        for k in 0..p.params.len() {
            x[k] = secant(p, ctx, &x, k, &mut budget);
        }
    }
    // All together, from there, with small first steps.
    let lo: Vec<f64> = p.params.iter().map(|q| q.lo.ln()).collect();
    let hi: Vec<f64> = p.params.iter().map(|q| q.hi.ln()).collect();
    let opts = Options {
        max_evals: budget.max(p.params.len() + 2),
        step: 0.03,
        ..Options::default()
    };
    let mut f = |us: &[Vec<f64>]| -> Vec<f64> {
        us.iter()
            .map(|u| {
                let y: Vec<f64> = u.iter().map(|v| v.exp()).collect();
                p.cost(&p.values(ctx, &y, &all), &all)
            })
            .collect()
    };
    let u0: Vec<f64> = x.iter().map(|v| v.ln()).collect();
    let best = nelder_mead::minimize(&mut f, &u0, &lo, &hi, &opts);
    (best.x.iter().map(|v| v.exp()).collect(), best.f)
}
