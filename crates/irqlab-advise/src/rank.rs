//! Ranking the candidates by the objective within the constraints, and the
//! recommendation: the best that meets them, unless it is no better than the stock
//! kernel by more than the model's noise.

use crate::measure::Figures;
use irqlab_inputs::ValueError;
use serde::Serialize;
use std::fmt;
use std::str::FromStr;

/// What to optimise.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Objective {
    /// The most I/Os per second.
    Iops,
    /// The lowest 99th percentile completion latency (then the lowest median).
    Latency,
    /// The least CPU time per I/O.
    Cpu,
}

impl Objective {
    pub fn name(self) -> &'static str {
        match self {
            Objective::Iops => "iops",
            Objective::Latency => "latency",
            Objective::Cpu => "cpu",
        }
    }

    /// The figure the objective reads, and whether more is better.
    pub fn value(self, f: &Figures) -> (f64, bool) {
        match self {
            Objective::Iops => (f.iops, true),
            Objective::Latency => (f.clat_p99_us, false),
            Objective::Cpu => (f.cpu_per_io_us, false),
        }
    }

    /// How much better `f` is than `base` on this objective, as a fraction (+0.35: 35%
    /// better).
    pub fn gain(self, f: &Figures, base: &Figures) -> f64 {
        let (a, more) = self.value(f);
        let (b, _) = self.value(base);
        if b == 0.0 || a == 0.0 {
            return 0.0;
        }
        if more { a / b - 1.0 } else { b / a - 1.0 }
    }
}

impl fmt::Display for Objective {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Objective {
    type Err = ValueError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "iops" => Ok(Objective::Iops),
            "latency" => Ok(Objective::Latency),
            "cpu" => Ok(Objective::Cpu),
            _ => Err(ValueError::new(s, "expected iops, latency or cpu")),
        }
    }
}

/// Limits a candidate must meet.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Constraints {
    /// The 99th percentile completion latency, µs, at most.
    pub max_p99_us: Option<f64>,
    /// Busy CPU time, % of all the platform's CPUs, at most.
    pub max_cpu_pct: Option<f64>,
}

impl Constraints {
    /// What `f` violates, in words (empty: it meets every limit).
    pub fn violated(&self, f: &Figures) -> Vec<String> {
        let mut v = Vec::new();
        if let Some(m) = self.max_p99_us
            && f.clat_p99_us > m
        {
            v.push(format!("p99 {:.1} us > {m} us", f.clat_p99_us));
        }
        if let Some(m) = self.max_cpu_pct
            && f.cpu_pct > m
        {
            v.push(format!("CPU {:.1}% > {m}%", f.cpu_pct));
        }
        v
    }
}

/// Differences smaller than this are within the model's noise between policies.
pub const NOISE: f64 = 0.02;

/// The order of `figures` (indices): those meeting the constraints first, each part by
/// the objective, ties by name order (stable).
pub fn order(figures: &[Figures], objective: Objective, c: &Constraints) -> Vec<usize> {
    let mut ix: Vec<usize> = (0..figures.len()).collect();
    ix.sort_by(|&a, &b| {
        let (fa, fb) = (&figures[a], &figures[b]);
        let ok = |f: &Figures| c.violated(f).is_empty();
        let (va, more) = objective.value(fa);
        let (vb, _) = objective.value(fb);
        ok(fb)
            .cmp(&ok(fa))
            .then_with(|| {
                if more {
                    vb.total_cmp(&va)
                } else {
                    va.total_cmp(&vb)
                }
            })
            .then_with(|| fa.clat_p50_us.total_cmp(&fb.clat_p50_us))
    });
    ix
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f(iops: f64, p99: f64, cpu: f64) -> Figures {
        Figures {
            iops,
            clat_p99_us: p99,
            cpu_per_io_us: cpu,
            cpu_pct: cpu * 10.0,
            ..Figures::default()
        }
    }

    #[test]
    fn the_objective_orders_and_constraints_come_first() {
        let v = vec![
            f(100.0, 50.0, 2.0),
            f(150.0, 80.0, 3.0),
            f(120.0, 40.0, 1.0),
        ];
        assert_eq!(
            order(&v, Objective::Iops, &Constraints::default()),
            vec![1, 2, 0]
        );
        assert_eq!(
            order(&v, Objective::Latency, &Constraints::default()),
            vec![2, 0, 1]
        );
        assert_eq!(
            order(&v, Objective::Cpu, &Constraints::default()),
            vec![2, 0, 1]
        );
        let c = Constraints {
            max_p99_us: Some(60.0),
            max_cpu_pct: None,
        };
        assert_eq!(order(&v, Objective::Iops, &c), vec![2, 0, 1]);
        assert_eq!(c.violated(&v[1]), vec!["p99 80.0 us > 60 us"]);
        assert!((Objective::Iops.gain(&v[1], &v[0]) - 0.5).abs() < 1e-12);
        assert!((Objective::Latency.gain(&v[2], &v[0]) - 0.25).abs() < 1e-12);
        assert!(
            "speed"
                .parse::<Objective>()
                .unwrap_err()
                .to_string()
                .contains("iops, latency or cpu")
        );
    }
}

/// A latency limit: `200us`, `1.5ms`, `2s`, or a bare number of µs; returns µs.
pub fn parse_latency_us(s: &str) -> Result<f64, ValueError> {
    latency_us(s).map_err(|why| ValueError::new(s, why))
}

fn latency_us(s: &str) -> Result<f64, String> {
    let t = s.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (n, unit) = t.split_at(split);
    let n: f64 = n.parse().map_err(|_| {
        "expected a duration such as 200us or 1.5ms (a bare number is µs)".to_string()
    })?;
    let us = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "us" | "usec" => n,
        "ns" | "nsec" => n / 1000.0,
        "ms" | "msec" => n * 1000.0,
        "s" | "sec" => n * 1e6,
        other => {
            return Err(format!(
                "unit '{other}' is not one of ns, us, ms, s (a bare number is µs)"
            ));
        }
    };
    if !(us.is_finite() && us > 0.0) {
        return Err("expected a duration above 0".to_string());
    }
    Ok(us)
}

#[cfg(test)]
mod parse_tests {
    use super::parse_latency_us;

    #[test]
    fn latency_limits_take_units() {
        assert_eq!(parse_latency_us("200us"), Ok(200.0));
        assert_eq!(parse_latency_us("1.5ms"), Ok(1500.0));
        assert_eq!(parse_latency_us("80"), Ok(80.0));
        assert!(
            parse_latency_us("fast")
                .unwrap_err()
                .to_string()
                .contains("200us")
        );
        assert!(
            parse_latency_us("3h")
                .unwrap_err()
                .to_string()
                .contains("unit 'h'")
        );
        assert!(parse_latency_us("0").is_err());
    }
}
