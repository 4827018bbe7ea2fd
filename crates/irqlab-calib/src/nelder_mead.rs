//! Nelder–Mead simplex minimisation inside a box: derivative-free, so it works on the
//! simulator's noisy, piecewise objective. Points are clamped to the bounds; the
//! coefficients are the standard ones (reflection 1, expansion 2, contraction ½,
//! shrink ½). The objective is asked for points in batches (the first simplex, a shrink
//! step), so a caller can evaluate a batch at once on many cores or machines; the points
//! and the result are the same as one at a time.

/// Options of one minimisation.
#[derive(Clone, Debug)]
pub struct Options {
    /// Objective evaluations allowed.
    pub max_evals: usize,
    /// Stop when the best and worst values of the simplex differ by less than this.
    pub f_tol: f64,
    /// Stop when the simplex is smaller than this in every coordinate (box units: 1 is
    /// the whole range).
    pub x_tol: f64,
    /// Initial simplex step as a fraction of each range.
    pub step: f64,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            max_evals: 200,
            f_tol: 1e-9,
            x_tol: 1e-4,
            step: 0.2,
        }
    }
}

/// One point through a batch objective.
fn eval_one(
    batch: &mut impl FnMut(&[Vec<f64>], &mut usize) -> Vec<f64>,
    u: &[f64],
    evals: &mut usize,
) -> f64 {
    batch(&[u.to_vec()], evals)[0]
}

/// The best point found.
#[derive(Clone, Debug, PartialEq)]
pub struct Minimum {
    pub x: Vec<f64>,
    pub f: f64,
    pub evals: usize,
}

/// Minimises `f` over the box `lo[i] <= x[i] <= hi[i]`, starting at `x0` (clamped into
/// the box). `f` takes a batch of points (in the box only) and returns their values in
/// order.
pub fn minimize(
    f: &mut dyn FnMut(&[Vec<f64>]) -> Vec<f64>,
    x0: &[f64],
    lo: &[f64],
    hi: &[f64],
    opts: &Options,
) -> Minimum {
    let n = x0.len();
    assert!(
        lo.len() == n && hi.len() == n,
        "bounds and start differ in length"
    );
    // Work in the unit cube so every coordinate has the same scale.
    let span: Vec<f64> = (0..n).map(|i| (hi[i] - lo[i]).max(0.0)).collect();
    let to_x = |u: &[f64]| -> Vec<f64> {
        (0..n)
            .map(|i| lo[i] + u[i].clamp(0.0, 1.0) * span[i])
            .collect()
    };
    let u0: Vec<f64> = (0..n)
        .map(|i| {
            if span[i] > 0.0 {
                ((x0[i] - lo[i]) / span[i]).clamp(0.0, 1.0)
            } else {
                0.0
            }
        })
        .collect();
    let mut evals = 0usize;
    let mut eval_batch = |us: &[Vec<f64>], evals: &mut usize| -> Vec<f64> {
        *evals += us.len();
        let xs: Vec<Vec<f64>> = us.iter().map(|u| to_x(u)).collect();
        let vs = f(&xs);
        assert_eq!(
            vs.len(),
            us.len(),
            "the objective returned a value per point"
        );
        vs.into_iter()
            .map(|v| if v.is_nan() { f64::INFINITY } else { v })
            .collect()
    };
    let clamp = |u: Vec<f64>| -> Vec<f64> { u.into_iter().map(|v| v.clamp(0.0, 1.0)).collect() };

    // The start and one step along each axis, evaluated as one batch.
    let mut first = vec![u0.clone()];
    for i in 0..n {
        let mut u = u0.clone();
        // Step inward when the start sits on the upper bound.
        u[i] = if u[i] + opts.step <= 1.0 {
            u[i] + opts.step
        } else {
            u[i] - opts.step
        };
        first.push(clamp(u));
    }
    let values = eval_batch(&first, &mut evals);
    let mut simplex: Vec<(Vec<f64>, f64)> = first.into_iter().zip(values).collect();

    while evals < opts.max_evals {
        simplex.sort_by(|a, b| a.1.total_cmp(&b.1));
        let (best, worst) = (simplex[0].1, simplex[n].1);
        let size = (0..n)
            .map(|i| {
                simplex
                    .iter()
                    .map(|p| (p.0[i] - simplex[0].0[i]).abs())
                    .fold(0.0, f64::max)
            })
            .fold(0.0, f64::max);
        if (worst - best).abs() <= opts.f_tol || size <= opts.x_tol {
            break;
        }
        let centroid: Vec<f64> = (0..n)
            .map(|i| simplex[..n].iter().map(|p| p.0[i]).sum::<f64>() / n as f64)
            .collect();
        let along = |t: f64| -> Vec<f64> {
            clamp(
                (0..n)
                    .map(|i| centroid[i] + t * (simplex[n].0[i] - centroid[i]))
                    .collect(),
            )
        };
        let xr = along(-1.0);
        let fr = eval_one(&mut eval_batch, &xr, &mut evals);
        if fr < simplex[0].1 {
            let xe = along(-2.0);
            let fe = eval_one(&mut eval_batch, &xe, &mut evals);
            simplex[n] = if fe < fr { (xe, fe) } else { (xr, fr) };
        } else if fr < simplex[n - 1].1 {
            simplex[n] = (xr, fr);
        } else {
            // Contract toward the better of the worst point and its reflection.
            let (xc, fc) = if fr < simplex[n].1 {
                let xc = along(-0.5);
                let fc = eval_one(&mut eval_batch, &xc, &mut evals);
                (xc, fc)
            } else {
                let xc = along(0.5);
                let fc = eval_one(&mut eval_batch, &xc, &mut evals);
                (xc, fc)
            };
            if fc < simplex[n].1.min(fr) {
                simplex[n] = (xc, fc);
            } else {
                // Shrink toward the best point: n new points, one batch.
                let b = simplex[0].0.clone();
                let shrunk: Vec<Vec<f64>> = simplex
                    .iter()
                    .skip(1)
                    .map(|p| (0..n).map(|i| b[i] + 0.5 * (p.0[i] - b[i])).collect())
                    .collect();
                let values = eval_batch(&shrunk, &mut evals);
                for (p, (u, fu)) in simplex
                    .iter_mut()
                    .skip(1)
                    .zip(shrunk.into_iter().zip(values))
                {
                    *p = (u, fu);
                }
            }
        }
    }
    simplex.sort_by(|a, b| a.1.total_cmp(&b.1));
    Minimum {
        x: to_x(&simplex[0].0),
        f: simplex[0].1,
        evals,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A batch objective from a one-point one.
    fn each(mut f: impl FnMut(&[f64]) -> f64) -> impl FnMut(&[Vec<f64>]) -> Vec<f64> {
        move |xs: &[Vec<f64>]| xs.iter().map(|x| f(x)).collect()
    }

    #[test]
    fn finds_the_minimum_of_rosenbrock() {
        let mut f = each(|x: &[f64]| (1.0 - x[0]).powi(2) + 100.0 * (x[1] - x[0] * x[0]).powi(2));
        let opts = Options {
            max_evals: 2000,
            f_tol: 1e-14,
            x_tol: 1e-9,
            ..Default::default()
        };
        let m = minimize(&mut f, &[-1.2, 1.0], &[-2.0, -1.0], &[2.0, 3.0], &opts);
        assert!(
            (m.x[0] - 1.0).abs() < 1e-3 && (m.x[1] - 1.0).abs() < 2e-3,
            "{m:?}"
        );
        assert!(m.f < 1e-6);
    }

    #[test]
    fn respects_bounds_when_the_free_minimum_is_outside() {
        // Free minimum at (5, -3); the box caps both coordinates.
        let mut seen_outside = false;
        let mut f = each(|x: &[f64]| {
            seen_outside |= x[0] > 2.0 || x[1] < 0.0;
            (x[0] - 5.0).powi(2) + (x[1] + 3.0).powi(2)
        });
        let m = minimize(
            &mut f,
            &[1.0, 1.0],
            &[0.0, 0.0],
            &[2.0, 2.0],
            &Options::default(),
        );
        drop(f);
        assert!(!seen_outside, "the objective was called outside the box");
        assert!((m.x[0] - 2.0).abs() < 1e-3 && m.x[1].abs() < 1e-3, "{m:?}");
    }

    #[test]
    fn stops_at_the_evaluation_budget() {
        let mut calls = 0;
        let mut f = each(|x: &[f64]| {
            calls += 1;
            x.iter().map(|v| v * v).sum()
        });
        let opts = Options {
            max_evals: 25,
            f_tol: 0.0,
            x_tol: 0.0,
            ..Default::default()
        };
        let m = minimize(&mut f, &[3.0, 3.0, 3.0], &[-5.0; 3], &[5.0; 3], &opts);
        drop(f);
        // A shrink step may finish the iteration that crossed the budget.
        assert!(m.evals <= 25 + 3 && calls == m.evals, "{} evals", m.evals);
    }
}
