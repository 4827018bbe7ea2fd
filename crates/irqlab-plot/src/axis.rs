//! Axis ranges and tick label text.

use crate::{LinePlot, PlotError};

/// The drawn ranges of both axes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Ranges {
    pub x: (f64, f64),
    pub y: (f64, f64),
}

impl Ranges {
    /// x spans the data with a little room for the end markers; y starts at 0 unless a
    /// value is negative, and leaves headroom above the highest point.
    pub(crate) fn of(plot: &LinePlot) -> Result<Ranges, PlotError> {
        let mut xs = (f64::INFINITY, f64::NEG_INFINITY);
        let mut ys = (f64::INFINITY, f64::NEG_INFINITY);
        for s in &plot.series {
            for &(x, y) in &s.points {
                if !(x.is_finite() && y.is_finite()) {
                    return Err(PlotError::NotFinite {
                        series: s.label.clone(),
                    });
                }
                xs = (xs.0.min(x), xs.1.max(x));
                ys = (ys.0.min(y), ys.1.max(y));
            }
        }
        if xs.0 > xs.1 {
            return Err(PlotError::Empty);
        }
        let x = widen(xs.0, xs.1);
        let pad = (x.1 - x.0) * 0.03;
        let ylo = ys.0.min(0.0);
        let yhi = ys.1.max(0.0);
        let y = widen(ylo, yhi);
        let head = (y.1 - y.0) * 0.08;
        let y = (
            if y.0 < 0.0 { y.0 - head } else { y.0 },
            if y.1 > 0.0 { y.1 + head } else { y.1 },
        );
        Ok(Ranges {
            x: (x.0 - pad, x.1 + pad),
            y,
        })
    }
}

/// A range of zero width becomes one around the value.
fn widen(lo: f64, hi: f64) -> (f64, f64) {
    if hi > lo {
        return (lo, hi);
    }
    let d = if lo == 0.0 { 1.0 } else { lo.abs() * 0.5 };
    (lo - d, hi + d)
}

/// A tick label with an SI suffix: 1500000 → "1.5M", 2000 → "2k", 0.25 → "0.25".
pub fn si(v: f64) -> String {
    if !v.is_finite() {
        return "0".into();
    }
    let a = v.abs();
    let (scaled, suffix) = if a >= 1e12 {
        (v / 1e12, "T")
    } else if a >= 1e9 {
        (v / 1e9, "G")
    } else if a >= 1e6 {
        (v / 1e6, "M")
    } else if a >= 1e3 {
        (v / 1e3, "k")
    } else {
        (v, "")
    };
    format!("{}{suffix}", trim(scaled))
}

/// At most three significant decimals, no trailing zeros, no "-0".
fn trim(x: f64) -> String {
    let decimals = if x.abs() >= 100.0 {
        0
    } else if x.abs() >= 10.0 {
        1
    } else if x.abs() >= 1.0 {
        2
    } else {
        3
    };
    let s = format!("{x:.decimals$}");
    let s = if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    };
    if s == "-0" { "0".into() } else { s }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Series;

    #[test]
    fn si_suffixes() {
        assert_eq!(si(1_500_000.0), "1.5M");
        assert_eq!(si(2_000.0), "2k");
        assert_eq!(si(999.0), "999");
        assert_eq!(si(0.25), "0.25");
        assert_eq!(si(0.0), "0");
        assert_eq!(si(-2.5e9), "-2.5G");
        assert_eq!(si(123_456_789.0), "123M");
        assert_eq!(si(-0.0001), "0");
    }

    fn plot(points: Vec<(f64, f64)>) -> LinePlot {
        LinePlot {
            title: String::new(),
            x_label: String::new(),
            y_label: String::new(),
            series: vec![Series {
                label: "s".into(),
                points,
            }],
        }
    }

    #[test]
    fn y_starts_at_zero_for_positive_data() {
        let r = Ranges::of(&plot(vec![(1.0, 500.0), (2.0, 1000.0)])).unwrap();
        assert_eq!(r.y.0, 0.0);
        assert!(r.y.1 > 1000.0);
        assert!(r.x.0 < 1.0 && r.x.1 > 2.0);
    }

    #[test]
    fn negative_data_extends_below_zero() {
        let r = Ranges::of(&plot(vec![(1.0, -5.0), (2.0, 10.0)])).unwrap();
        assert!(r.y.0 < -5.0);
        assert!(r.y.1 > 10.0);
    }

    #[test]
    fn flat_data_gets_a_range() {
        let r = Ranges::of(&plot(vec![(3.0, 0.0)])).unwrap();
        assert!(r.x.1 > r.x.0);
        assert!(r.y.1 > r.y.0);
    }
}
