//! The grid of a sweep: which keys vary, what kind of key each is, and their values.
//!
//! `--set KEY=A..B` (integers, step 1), `KEY=A..B:STEP`, `KEY=A..B:*F` (multiply by F:
//! 1, 2, 4, ...), `KEY=v1,v2,...` or a single `KEY=v`. Points are the cartesian
//! product, the first --set varying slowest.

use crate::SweepError;
use irqlab_inputs::PolicyKey;
use irqlab_inputs::policy::POLICY_KEYS;

/// More points than this is almost certainly a typo in a range.
pub const MAX_POINTS: usize = 10_000;

/// What a key changes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KeyKind {
    Policy(PolicyKey),
    /// A fio option set in every job section (`job.iodepth` → `iodepth`).
    Job(String),
    /// A platform parameter, through the platform's own `--set` overrides.
    Platform,
    /// The seed of the model's random streams.
    Seed,
}

impl KeyKind {
    pub(crate) fn of(key: &str) -> Result<KeyKind, String> {
        if let Some(k) = PolicyKey::lookup(key) {
            return Ok(KeyKind::Policy(k));
        }
        if key == "seed" {
            return Ok(KeyKind::Seed);
        }
        if let Some(opt) = key.strip_prefix("job.") {
            let ok = !opt.is_empty()
                && opt
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
            return if ok {
                Ok(KeyKind::Job(opt.to_string()))
            } else {
                Err(format!(
                    "'{key}': expected job.OPTION with a fio option name"
                ))
            };
        }
        if key.contains('.') {
            return Ok(KeyKind::Platform);
        }
        let policy: Vec<&str> = POLICY_KEYS.iter().map(|(n, _)| *n).collect();
        Err(format!(
            "unknown key '{key}': expected a policy key ({}), seed, job.OPTION \
             (e.g. job.iodepth) or a platform key (e.g. cpu.irq_entry_ns, devices.0.count)",
            policy.join(", ")
        ))
    }
}

/// One varying (or fixed) key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Dim {
    /// The key as written on the command line.
    pub key: String,
    pub kind: KeyKind,
    /// Values as text, in order; each is handed to the key's own parser.
    pub values: Vec<String>,
}

impl Dim {
    /// Every value parses as a number (the key can be an x axis).
    pub fn is_numeric(&self) -> bool {
        self.values
            .iter()
            .all(|v| v.parse::<f64>().is_ok_and(f64::is_finite))
    }
}

/// The cartesian product of the dims.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Grid {
    pub dims: Vec<Dim>,
}

impl Grid {
    pub fn parse(sets: &[String]) -> Result<Grid, SweepError> {
        Grid::parse_text(sets).map_err(SweepError::Grid)
    }

    fn parse_text(sets: &[String]) -> Result<Grid, String> {
        if sets.is_empty() {
            return Err("nothing to sweep: give at least one --set KEY=A..B or KEY=v1,v2".into());
        }
        let mut dims: Vec<Dim> = Vec::new();
        for set in sets {
            let (key, raw) = set
                .split_once('=')
                .ok_or_else(|| format!("--set '{set}': expected KEY=VALUES, e.g. max_loop=1..8"))?;
            let key = key.trim();
            let kind = KeyKind::of(key).map_err(|e| format!("--set '{set}': {e}"))?;
            if dims
                .iter()
                .any(|d| d.key == key || (kind != KeyKind::Platform && d.kind == kind))
            {
                return Err(format!("--set '{set}': '{key}' is already swept"));
            }
            let values =
                parse_values(&kind, raw.trim()).map_err(|e| format!("--set '{set}': {e}"))?;
            dims.push(Dim {
                key: key.to_string(),
                kind,
                values,
            });
        }
        let grid = Grid { dims };
        let n = grid.len();
        if n > MAX_POINTS {
            return Err(format!(
                "the grid has {n} points, more than {MAX_POINTS}: narrow a range or use a larger step"
            ));
        }
        Ok(grid)
    }

    /// Number of points (at most [`MAX_POINTS`] once parsed).
    pub fn len(&self) -> usize {
        self.dims
            .iter()
            .map(|d| d.values.len())
            .try_fold(1usize, |acc, n| acc.checked_mul(n))
            .unwrap_or(usize::MAX)
    }

    /// A grid has at least one point once parsed; a grid with an empty dim has none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The value index of every dim at point `i`, the first dim varying slowest.
    pub fn point(&self, mut i: usize) -> Vec<usize> {
        let mut ix = vec![0; self.dims.len()];
        for (d, dim) in self.dims.iter().enumerate().rev() {
            let n = dim.values.len();
            ix[d] = i % n;
            i /= n;
        }
        ix
    }

    /// The values at point `i`, one per dim.
    pub fn values(&self, i: usize) -> Vec<&str> {
        self.point(i)
            .iter()
            .zip(&self.dims)
            .map(|(&v, d)| d.values[v].as_str())
            .collect()
    }
}

/// A range, a comma list or a single value.
fn parse_values(kind: &KeyKind, raw: &str) -> Result<Vec<String>, String> {
    if raw.is_empty() {
        return Err("no values".into());
    }
    let values = if raw.contains("..") {
        parse_range(raw)?
    } else if *kind == KeyKind::Policy(PolicyKey::Coalesce) {
        coalesce_list(raw)?
    } else {
        let vs: Vec<String> = raw.split(',').map(|v| v.trim().to_string()).collect();
        if vs.iter().any(String::is_empty) {
            return Err(format!("'{raw}': an empty value in the list"));
        }
        vs
    };
    let mut seen = std::collections::BTreeSet::new();
    if let Some(dup) = values.iter().find(|v| !seen.insert(v.as_str())) {
        return Err(format!("'{dup}' appears twice"));
    }
    Ok(values)
}

/// `coalesce` values hold a comma themselves ("THR,TIME"): two numbers in a row are one
/// value, so `off,7,1,15,2` is off, 7,1 and 15,2.
fn coalesce_list(raw: &str) -> Result<Vec<String>, String> {
    let toks: Vec<&str> = raw.split(',').map(str::trim).collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < toks.len() {
        let t = toks[i];
        if t.is_empty() {
            return Err(format!("'{raw}': an empty value in the list"));
        }
        if t.parse::<u32>().is_ok() {
            let time = toks
                .get(i + 1)
                .filter(|n| n.parse::<u32>().is_ok())
                .ok_or_else(|| format!("'{raw}': '{t}' must be followed by TIME (THR,TIME)"))?;
            out.push(format!("{t},{time}"));
            i += 2;
        } else {
            out.push(t.to_string());
            i += 1;
        }
    }
    Ok(out)
}

/// `A..B` (integers), `A..B:STEP` or `A..B:*FACTOR`, B included when the steps land on it.
fn parse_range(raw: &str) -> Result<Vec<String>, String> {
    let syntax =
        || format!("'{raw}' is not a range; expected A..B (integers), A..B:STEP or A..B:*FACTOR");
    let (span, step) = match raw.split_once(':') {
        Some((s, st)) => (s, Some(st.trim())),
        None => (raw, None),
    };
    let (a, b) = span.split_once("..").ok_or_else(syntax)?;
    let (a, b) = (a.trim(), b.trim());
    let num = |s: &str| s.parse::<f64>().ok().filter(|x| x.is_finite());
    let (lo, hi) = (num(a).ok_or_else(syntax)?, num(b).ok_or_else(syntax)?);
    if hi < lo {
        return Err(format!(
            "'{raw}': the range ends ({b}) before it starts ({a})"
        ));
    }
    let decimals = |s: &str| s.split_once('.').map_or(0, |(_, f)| f.len());
    let mut values = Vec::new();
    match step {
        Some(f) if f.starts_with('*') => {
            let f = num(&f[1..])
                .filter(|f| *f > 1.0)
                .ok_or_else(|| format!("'{raw}': the factor after '*' must be a number above 1"))?;
            if lo <= 0.0 {
                return Err(format!("'{raw}': a multiplied range must start above 0"));
            }
            let dec = decimals(a);
            let mut x = lo;
            while x <= hi * (1.0 + 1e-12) {
                values.push(format!("{x:.dec$}"));
                x *= f;
                if values.len() > MAX_POINTS {
                    break;
                }
            }
        }
        _ => {
            let step_text = step.unwrap_or("1");
            let st = num(step_text).filter(|s| *s > 0.0).ok_or_else(|| {
                format!("'{raw}': the step '{step_text}' must be a number above 0")
            })?;
            let integral = [a, b, step_text].iter().all(|s| s.parse::<i64>().is_ok());
            if step.is_none() && !integral {
                return Err(format!(
                    "'{raw}': a range of non-integers needs a step (A..B:STEP)"
                ));
            }
            let dec = decimals(a).max(decimals(step_text));
            let n = ((hi - lo) / st + 1e-9).floor();
            if n >= MAX_POINTS as f64 {
                return Err(format!("'{raw}' has more than {MAX_POINTS} values"));
            }
            for k in 0..=(n as usize) {
                let x = lo + k as f64 * st;
                values.push(format!("{x:.dec$}"));
            }
        }
    }
    if values.len() > MAX_POINTS {
        return Err(format!("'{raw}' has more than {MAX_POINTS} values"));
    }
    Ok(values)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vals(key: &str, raw: &str) -> Result<Vec<String>, String> {
        parse_values(&KeyKind::of(key)?, raw)
    }

    #[test]
    fn ranges_and_lists() {
        assert_eq!(vals("max_loop", "1..4").unwrap(), ["1", "2", "3", "4"]);
        assert_eq!(
            vals("cpu.irq_entry_ns", "100..400:100").unwrap(),
            ["100", "200", "300", "400"]
        );
        assert_eq!(
            vals("job.iodepth", "1..32:*2").unwrap(),
            ["1", "2", "4", "8", "16", "32"]
        );
        assert_eq!(
            vals("devices.0.service_cv", "0.1..0.3:0.1").unwrap(),
            ["0.1", "0.2", "0.3"]
        );
        assert_eq!(
            vals("delivery", "remapped, posted").unwrap(),
            ["remapped", "posted"]
        );
        assert_eq!(
            vals("coalesce", "off,7,1,calibrated,15,2").unwrap(),
            ["off", "7,1", "calibrated", "15,2"]
        );
        assert_eq!(vals("seed", "5").unwrap(), ["5"]);
    }

    #[test]
    fn bad_values_say_why() {
        assert!(
            vals("max_loop", "4..1")
                .unwrap_err()
                .contains("before it starts")
        );
        assert!(
            vals("max_loop", "1..x")
                .unwrap_err()
                .contains("not a range")
        );
        assert!(
            vals("cpu.a", "0.5..1")
                .unwrap_err()
                .contains("needs a step")
        );
        assert!(vals("cpu.a", "1..5:0").unwrap_err().contains("above 0"));
        assert!(vals("cpu.a", "1..5:*1").unwrap_err().contains("above 1"));
        assert!(
            vals("cpu.a", "0..100000")
                .unwrap_err()
                .contains("more than")
        );
        assert!(
            vals("delivery", "posted,,remapped")
                .unwrap_err()
                .contains("empty")
        );
        assert!(
            vals("delivery", "posted,posted")
                .unwrap_err()
                .contains("twice")
        );
        assert!(vals("coalesce", "7").unwrap_err().contains("TIME"));
        assert!(
            KeyKind::of("frobnicate")
                .unwrap_err()
                .contains("unknown key 'frobnicate'")
        );
    }

    #[test]
    fn grid_is_row_major_first_key_slowest() {
        let g =
            Grid::parse(&["a.x=1..2".into(), "delivery=remapped,posted,polled".into()]).unwrap();
        assert_eq!(g.len(), 6);
        assert_eq!(g.values(0), ["1", "remapped"]);
        assert_eq!(g.values(1), ["1", "posted"]);
        assert_eq!(g.values(3), ["2", "remapped"]);
        assert!(g.dims[0].is_numeric() && !g.dims[1].is_numeric());
    }

    #[test]
    fn grid_limits() {
        let e = Grid::parse_text(&["a.x=1..200".into(), "a.y=1..100".into()]).unwrap_err();
        assert!(e.contains("20000 points"), "{e}");
        assert!(
            Grid::parse_text(&[])
                .unwrap_err()
                .contains("nothing to sweep")
        );
        assert!(
            Grid::parse_text(&["max_loop".into()])
                .unwrap_err()
                .contains("KEY=VALUES")
        );
        let e = Grid::parse_text(&["max_loop=1".into(), "max-loop=2".into()]).unwrap_err();
        assert!(e.contains("already swept"), "{e}");
    }
}
