//! Percentiles of a set of samples (nearest rank, as the samples are few and exact).

use serde::{Deserialize, Serialize};

/// One measured cost: what it is and its spread over the samples.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Measure {
    pub key: String,
    pub what: String,
    /// How many samples (trials or single events) the percentiles are over.
    pub samples: usize,
    pub p10_ns: f64,
    pub median_ns: f64,
    pub p90_ns: f64,
}

/// Nearest-rank percentile of sorted samples.
fn pick(sorted: &[f64], pct: f64) -> f64 {
    let rank = ((pct / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// The p10, median and p90 of `samples`; None when there are none.
pub fn measure(key: &str, what: &str, mut samples: Vec<f64>) -> Option<Measure> {
    samples.retain(|s| s.is_finite());
    if samples.is_empty() {
        return None;
    }
    samples.sort_by(f64::total_cmp);
    Some(Measure {
        key: key.to_string(),
        what: what.to_string(),
        samples: samples.len(),
        p10_ns: pick(&samples, 10.0),
        median_ns: pick(&samples, 50.0),
        p90_ns: pick(&samples, 90.0),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let m = measure("k", "w", (1..=10).rev().map(f64::from).collect()).unwrap();
        assert_eq!(
            (m.p10_ns, m.median_ns, m.p90_ns, m.samples),
            (1.0, 5.0, 9.0, 10)
        );
        let one = measure("k", "w", vec![7.0]).unwrap();
        assert_eq!((one.p10_ns, one.median_ns, one.p90_ns), (7.0, 7.0, 7.0));
        assert!(measure("k", "w", vec![f64::NAN]).is_none());
    }
}
