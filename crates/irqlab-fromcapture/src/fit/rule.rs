//! The device's interrupt rule, from the deep runs' I/Os per interrupt: a message per
//! completion (the NVMe specification's MSI-X text with no coalescing set), one message
//! until the CQ head doorbell, or the device's own aggregation in time (Feature 08h, or a
//! rate limit of its own), whichever the measurements say.

use super::ctx::Ctx;
use crate::runs::FitRun;
use irqlab_calib::Metric;

/// A choice made from the measurements rather than fitted.
#[derive(Clone, Debug, PartialEq)]
pub struct Decided {
    pub key: String,
    pub value: String,
    pub why: String,
    pub runs: Vec<String>,
}

/// What the rule adds to the fit.
pub struct Rule {
    pub decided: Decided,
    /// `--set`s every point carries.
    pub fixed: Vec<String>,
    /// The aggregation time to fit, and where to start it (ns), when the device
    /// aggregates.
    pub aggregation: Option<f64>,
}

/// The geometric mean of measured over simulated I/Os per interrupt.
fn ratio(deep: &[&FitRun], sim: &[Option<f64>]) -> f64 {
    let logs: Vec<f64> = deep
        .iter()
        .zip(sim)
        .filter_map(|(r, s)| {
            let s = (*s)?;
            let m = r.value(Metric::IosPerInterrupt)?;
            (s > 0.0).then(|| (m / s).ln())
        })
        .collect();
    (logs.iter().sum::<f64>() / logs.len().max(1) as f64).exp()
}

/// Decides the rule for the deep interrupt-driven runs; `base` is what each gives at
/// the tables' values.
pub fn decide(groups: &[usize], deep: &[&FitRun], base: &[Option<f64>], ctx: &mut Ctx<'_>) -> Rule {
    let runs: Vec<String> = deep.iter().map(|r| r.name.clone()).collect();
    let said = deep
        .iter()
        .map(|r| {
            format!(
                "{} {:.2}",
                r.name,
                r.value(Metric::IosPerInterrupt).unwrap_or(0.0)
            )
        })
        .collect::<Vec<_>>()
        .join(", ");
    let per = ratio(deep, base);
    if per <= 1.3 {
        return Rule {
            decided: Decided {
                key: "devices.0.msi".into(),
                value: "per_completion".into(),
                why: format!(
                    "I/Os per interrupt ({said}) are within 30% of a message per completion (measured/modelled {per:.2})"
                ),
                runs,
            },
            fixed: Vec::new(),
            aggregation: None,
        };
    }
    let until: Vec<String> = groups
        .iter()
        .map(|g| format!("devices.{g}.msi=until_doorbell"))
        .collect();
    let out = ctx.simulate(deep, &until, &[Metric::IosPerInterrupt]);
    let sim: Vec<Option<f64>> = out.iter().map(|o| o.as_ref().map(|v| v[0])).collect();
    let ud = ratio(deep, &sim);
    if ud.ln().abs() < per.ln().abs() && ud <= 1.3 {
        return Rule {
            decided: Decided {
                key: "devices.0.msi".into(),
                value: "until_doorbell".into(),
                why: format!(
                    "I/Os per interrupt ({said}) are {per:.1}x what a message per completion gives and {ud:.2}x what one message until the CQ head doorbell gives"
                ),
                runs,
            },
            fixed: until,
            aggregation: None,
        };
    }
    // An aggregation time T gives about 1 + (completions per second per vector) x T per
    // message: the start, from the run with the fewest jobs (one vector per job's CPU).
    let mut starts: Vec<f64> = deep
        .iter()
        .filter_map(|r| {
            let ipi = r.value(Metric::IosPerInterrupt)?;
            let per_vector = r.value(Metric::Iops)? / f64::from(r.jobs.max(1));
            Some((ipi - 1.0).max(0.0) / per_vector.max(1.0) * 1e9)
        })
        .collect();
    starts.sort_by(f64::total_cmp);
    let t0 = starts
        .get(starts.len() / 2)
        .copied()
        .unwrap_or(50_000.0)
        .clamp(1000.0, 2_000_000.0);
    Rule {
        decided: Decided {
            key: "devices.0.coalesce_count".into(),
            value: "256".into(),
            why: format!(
                "I/Os per interrupt ({said}) are {per:.1}x a message per completion and {ud:.1}x one until the doorbell: the device aggregates completions itself; its threshold is left at 256 (08h's largest) and its time fitted"
            ),
            runs,
        },
        fixed: groups
            .iter()
            .map(|g| format!("devices.{g}.coalesce_count=256"))
            .collect(),
        aggregation: Some(t0),
    }
}
