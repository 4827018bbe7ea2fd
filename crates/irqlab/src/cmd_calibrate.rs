//! `irqlab calibrate`: fit chosen platform parameters, within bounds, to measured values
//! with a derivative-free optimiser (Nelder–Mead), then write the fitted platform file
//! and the residuals. This is how a user makes the model match their own machine.

use crate::calib::nelder_mead::{self, Options};
use crate::calib::runner::{par_map, run, workers};
use crate::calib::scenario::load_dir;
use crate::calib::table::{self, Row};
use crate::calib::targets::TargetSet;
use crate::cmd_reproduce::{find_dir, select};
use crate::progress::Progress;
use clap::Args;
use irqlab_sim::Platform;
use std::path::{Path, PathBuf};

#[derive(Debug, Args)]
pub struct CalibrateArgs {
    /// The platform file to fit (its other parameters stay as they are).
    #[arg(long)]
    pub platform: PathBuf,
    /// A parameter to fit and its bounds, e.g. --param iommu.notify_ns=50..400
    /// (repeatable; any key `--set` accepts).
    #[arg(long = "param", value_name = "KEY=LO..HI", required = true)]
    pub params: Vec<String>,
    /// A targets file: scenario, metric and measured value (or a fio JSON result and two
    /// /proc/interrupts snapshots). Repeatable.
    #[arg(long = "targets", value_name = "FILE")]
    pub targets: Vec<PathBuf>,
    /// Fit to the published figures of these experiments or scenarios (e.g. C4).
    #[arg(long = "scenario", value_name = "NAME")]
    pub scenario: Vec<String>,
    /// Where --scenario names are looked up.
    #[arg(long, default_value = "scenarios")]
    pub scenarios: PathBuf,
    /// Where to write the fitted platform file.
    #[arg(long, default_value = "fitted.toml")]
    pub out: PathBuf,
    /// Objective evaluations (each simulates every target scenario once); at least the
    /// first simplex, one more than the number of parameters.
    #[arg(long, default_value_t = 60, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub max_evals: u32,
    /// Seed of the model's random streams in every evaluation (jobs seed from their own
    /// randseed), so each evaluation sees the same draws.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Scenarios simulated at once (default: one per scenario, up to the cores).
    #[arg(long, value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub threads: Option<u32>,
}

/// The targets file, for `irqlab calibrate --help`.
pub const TARGETS_HELP: &str = r#"Targets file (--targets FILE), TOML; paths are relative to the file:

  [[target]]
  scenario = "../scenarios/c4/interrupt-1-job.toml"  # job, platform and policy to simulate
  metric = "iops"          # iops, iops_per_disk, interrupts_per_sec, notifications_per_sec,
                           # cpu_busy_pct, clat_mean_us or ios_per_interrupt
  value = 131200           # measured; omitted: the scenario's published value
  weight = 1.0             # optional, default 1

  [[target]]
  scenario = "my-randread.toml"   # any scenario file; it needs no [[target]] itself
  fio_json = "fio.json"           # iops and clat_mean_us from fio --output-format=json
  interrupts_before = "irq.0"     # interrupts_per_sec and notifications_per_sec from
  interrupts_after = "irq.1"      # two /proc/interrupts snapshots around the run
  irq_match = "nvme"              # numbered rows counted (default: all of them)

Example:
  irqlab calibrate --platform platforms/p5800x-qd1.toml --param cpu.irq_entry_ns=100..600 \
      --targets my-targets.toml --out fitted.toml"#;

/// A parameter being fitted.
#[derive(Clone, Debug, PartialEq)]
pub struct Param {
    pub key: String,
    pub lo: f64,
    pub hi: f64,
    /// The platform stores an integer here: candidate values are rounded.
    pub integer: bool,
    pub start: f64,
}

/// The value at a dotted key of the platform, as TOML.
fn value_at(tree: &toml::Value, key: &str) -> Option<toml::Value> {
    let mut node = tree;
    for part in key.split('.') {
        node = match node {
            toml::Value::Table(t) => t.get(part)?,
            toml::Value::Array(a) => a.get(part.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
    Some(node.clone())
}

/// Parses `KEY=LO..HI` against `platform` (the key must hold a number).
pub fn parse_param(spec: &str, platform: &Platform) -> Result<Param, String> {
    let bad = |why: &str| {
        format!("--param '{spec}': {why}; expected KEY=LO..HI, e.g. iommu.notify_ns=50..400")
    };
    // The platform's own override check names the key; its message speaks of --set.
    let unknown_key = |e: irqlab_sim::PlatformError| {
        let msg = e.to_string();
        let why = msg
            .strip_prefix("--set '")
            .and_then(|rest| rest.split_once("': "))
            .map_or(msg.as_str(), |(_, why)| why);
        bad(why)
    };
    let (key, range) = spec.split_once('=').ok_or_else(|| bad("no '='"))?;
    let (lo, hi) = range
        .split_once("..")
        .ok_or_else(|| bad("no '..' in the bounds"))?;
    let lo: f64 = lo.trim().parse().map_err(|_| bad("LO is not a number"))?;
    let hi: f64 = hi.trim().parse().map_err(|_| bad("HI is not a number"))?;
    if !lo.is_finite() {
        return Err(bad("LO is not a finite number"));
    }
    if !hi.is_finite() {
        return Err(bad("HI is not a finite number"));
    }
    if lo >= hi {
        return Err(bad("LO must be below HI"));
    }
    let key = key.trim().to_string();
    // Validate the key with the platform's own --set, which names the known keys.
    platform
        .clone()
        .with_overrides(&[format!("{key}={}", lo.round() as i64)])
        .or_else(|_| platform.clone().with_overrides(&[format!("{key}={lo}")]))
        .map_err(unknown_key)?;
    let tree = toml::Value::try_from(platform).map_err(|e| e.to_string())?;
    let (integer, start) = match value_at(&tree, &key) {
        Some(toml::Value::Integer(i)) => (true, i as f64),
        Some(toml::Value::Float(f)) => (false, f),
        _ => return Err(bad("the key does not hold a number")),
    };
    Ok(Param {
        key,
        lo,
        hi,
        integer,
        start: start.clamp(lo, hi),
    })
}

/// `--set` strings for a candidate point.
pub fn sets_for(params: &[Param], x: &[f64]) -> Vec<String> {
    params
        .iter()
        .zip(x)
        .map(|(p, v)| {
            if p.integer {
                format!("{}={}", p.key, v.round() as i64)
            } else {
                format!("{}={v:.6}", p.key)
            }
        })
        .collect()
}

/// The simulated value of every target under `platform` (None where a run failed).
fn evaluate(set: &TargetSet, platform: &Platform, seed: u64, threads: usize) -> Vec<Option<f64>> {
    let outs = par_map(&set.scenarios, threads, &Progress::hidden(0), |s| {
        run(s, Some(platform), seed).ok()
    });
    set.targets
        .iter()
        .map(|t| {
            let s = &set.scenarios[t.scenario];
            let o = outs[t.scenario].as_ref()?;
            let k = s.targets.iter().position(|x| x.metric == t.metric);
            Some(match k {
                Some(k) => o.values[k],
                None => t.metric.of(&o.report, o.disks),
            })
        })
        .collect()
}

/// Weighted sum of squared relative residuals; a failed run costs as much as being off
/// by 1000%.
fn objective(set: &TargetSet, sims: &[Option<f64>]) -> f64 {
    set.targets
        .iter()
        .zip(sims)
        .map(|(t, s)| {
            let r = s.map_or(10.0, |v| (v - t.value) / t.value);
            t.weight * r * r
        })
        .sum()
}

/// Replaces the values of fitted keys in the platform file's text, keeping its comments
/// and layout; None when a key is not written in the file (defaults).
pub fn patch_text(text: &str, fitted: &[(String, String)]) -> Option<String> {
    let mut lines: Vec<String> = text.lines().map(String::from).collect();
    for (key, value) in fitted {
        let parts: Vec<&str> = key.split('.').collect();
        let (leaf, path) = parts.split_last()?;
        // "devices.0" → the first [[devices]]; "engine.libaio" → [engine.libaio].
        let mut header = String::new();
        let mut index = None;
        for p in path {
            if let Ok(i) = p.parse::<usize>() {
                index = Some(i);
            } else {
                if !header.is_empty() {
                    header.push('.');
                }
                header.push_str(p);
            }
        }
        let mut seen = 0usize;
        let mut in_target = path.is_empty();
        let mut done = false;
        for line in lines.iter_mut() {
            let t = line.trim();
            if t.starts_with('[') {
                let name = t.trim_matches(|c| c == '[' || c == ']').trim();
                in_target = false;
                if name == header {
                    match index {
                        Some(i) if t.starts_with("[[") => {
                            in_target = seen == i;
                            seen += 1;
                        }
                        None if !t.starts_with("[[") => in_target = true,
                        _ => {}
                    }
                }
                continue;
            }
            if !in_target {
                continue;
            }
            let Some((k, rest)) = line.split_once('=') else {
                continue;
            };
            if k.trim() != *leaf {
                continue;
            }
            let indent = &k[..k.len() - k.trim_start().len()];
            let mut new = format!("{indent}{leaf} = {value}");
            if let Some(i) = rest.find('#') {
                // Keep the comment in its column when the new value fits before it.
                let col = (k.len() + 1 + i).max(new.len() + 1);
                new = format!("{new:<col$}{}", &rest[i..]);
            }
            *line = new;
            done = true;
            break;
        }
        if !done {
            return None;
        }
    }
    let mut out = lines.join("\n");
    out.push('\n');
    Some(out)
}

pub fn main(args: CalibrateArgs) -> Result<(), String> {
    let path = crate::cmd_run::resolve_platform(&args.platform.to_string_lossy())?;
    let base = Platform::load(&path, &[]).map_err(|e| e.to_string())?;
    let params: Vec<Param> = args
        .params
        .iter()
        .map(|s| parse_param(s, &base))
        .collect::<Result<_, _>>()?;
    if let Some((i, p)) = params
        .iter()
        .enumerate()
        .find(|(i, p)| params[..*i].iter().any(|q| q.key == p.key))
    {
        return Err(format!(
            "--param '{}': {} is already fitted by --param '{}'; expected each key once",
            args.params[i],
            p.key,
            args.params[params.iter().position(|q| q.key == p.key).unwrap_or(0)]
        ));
    }
    // Nelder-Mead's first simplex is one point more than there are parameters.
    let simplex = params.len() as u32 + 1;
    if args.max_evals < simplex {
        return Err(format!(
            "--max-evals {}: fitting {} parameter(s) needs at least {simplex} evaluations (the first simplex)",
            args.max_evals,
            params.len()
        ));
    }
    let mut set = TargetSet::default();
    for f in &args.targets {
        set.add_file(f)?;
    }
    if !args.scenario.is_empty() {
        let dir = find_dir(&args.scenarios)?;
        for s in select(load_dir(&dir)?, &args.scenario)? {
            set.add_published(&s);
        }
    }
    if set.targets.is_empty() {
        return Err("nothing to fit: give --targets FILE or --scenario NAME".into());
    }
    let threads = args
        .threads
        .map_or_else(|| workers(set.scenarios.len()), |n| n as usize)
        .min(set.scenarios.len())
        .max(1);
    let lo: Vec<f64> = params.iter().map(|p| p.lo).collect();
    let hi: Vec<f64> = params.iter().map(|p| p.hi).collect();
    let x0: Vec<f64> = params.iter().map(|p| p.start).collect();
    let progress = Progress::new(u64::from(args.max_evals), "calibrate");
    let mut f = |x: &[f64]| -> f64 {
        progress.inc(1);
        match base.clone().with_overrides(&sets_for(&params, x)) {
            Ok(p) => objective(&set, &evaluate(&set, &p, args.seed, threads)),
            Err(_) => f64::INFINITY,
        }
    };
    let opts = Options {
        max_evals: args.max_evals as usize,
        ..Options::default()
    };
    let best = nelder_mead::minimize(&mut f, &x0, &lo, &hi, &opts);
    progress.finish();

    let sets = sets_for(&params, &best.x);
    let fitted = base
        .clone()
        .with_overrides(&sets)
        .map_err(|e| e.to_string())?;
    let sims = evaluate(&set, &fitted, args.seed, threads);
    let rows: Vec<Row> = set
        .targets
        .iter()
        .zip(&sims)
        .map(|(t, s)| {
            let sc = &set.scenarios[t.scenario];
            Row {
                experiment: sc.name.clone(),
                row: sc.row.clone(),
                metric: t.metric.to_string(),
                published: t.value,
                simulated: s.unwrap_or(f64::NAN),
                source: String::new(),
            }
        })
        .collect();

    let pairs: Vec<(String, String)> = sets
        .iter()
        .filter_map(|s| {
            s.split_once('=')
                .map(|(k, v)| (k.to_string(), v.to_string()))
        })
        .collect();
    let original = std::fs::read_to_string(&path)
        .map_err(|e| format!("{}: cannot read: {e}", path.display()))?;
    let mut header = format!(
        "# Fitted by `irqlab calibrate` from {} ({} evaluations, objective {:.4e}):\n",
        path.display(),
        best.evals,
        best.f
    );
    for s in &sets {
        header.push_str(&format!("#   {s}\n"));
    }
    let body = match patch_text(&original, &pairs) {
        Some(t) => t,
        None => toml::to_string_pretty(&fitted)
            .map_err(|e| format!("cannot encode the fitted platform: {e}"))?,
    };
    write(&args.out, &format!("{header}{body}"))?;
    println!("fitted parameters ({} evaluations):", best.evals);
    for (p, s) in params.iter().zip(&sets) {
        println!("  {s}    (bounds {}..{}, start {})", p.lo, p.hi, p.start);
    }
    println!("\nresiduals:");
    print!("{}", table::text(&rows));
    println!("\nwrote {}", args.out.display());
    Ok(())
}

fn write(path: &Path, text: &str) -> Result<(), String> {
    std::fs::write(path, text).map_err(|e| format!("{}: cannot write: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    const EXAMPLE: &str = include_str!("../../../platforms/example.toml");

    #[test]
    fn params_know_their_type_and_start() {
        let p = Platform::from_toml(EXAMPLE, "example", &[]).unwrap();
        let a = parse_param("iommu.notify_ns=10..400", &p).unwrap();
        assert!(a.integer && a.start == 45.0);
        let b = parse_param("devices.0.max_iops=5e5..2e6", &p).unwrap();
        assert!(!b.integer);
        let e = parse_param("iommu.nope=1..2", &p).unwrap_err();
        assert!(
            e.starts_with("--param 'iommu.nope=1..2': unknown key 'nope'"),
            "{e}"
        );
        assert!(!e.contains("--set"), "{e}");
        assert!(parse_param("iommu.notify_ns=5..1", &p).is_err());
        assert_eq!(
            sets_for(&[a], &[123.6]),
            vec!["iommu.notify_ns=124".to_string()]
        );
    }

    #[test]
    fn patch_keeps_comments_and_finds_array_entries() {
        let fitted = vec![
            ("iommu.notify_ns".to_string(), "222".to_string()),
            ("devices.0.read_ns".to_string(), "9000".to_string()),
            ("engine.libaio.submit_io_ns".to_string(), "777".to_string()),
        ];
        let out = patch_text(EXAMPLE, &fitted).unwrap();
        assert!(out.contains("notify_ns = 222"), "{out}");
        assert!(out.lines().any(
            |l| l.starts_with("notify_ns = 222") && l.contains("# a remapped interrupt waits")
        ));
        assert!(out.contains("read_ns = 9000"));
        assert!(out.contains("submit_io_ns = 777"));
        // The io_uring entry of the same name is untouched.
        assert!(out.contains("submit_io_ns = 700"));
        let p = Platform::from_toml(&out, "patched", &[]).unwrap();
        assert_eq!(p.iommu.notify_ns, 222);
        assert_eq!(p.engine.libaio.submit_io_ns, 777);
        assert!(patch_text(EXAMPLE, &[("cpu.nope".into(), "1".into())]).is_none());
    }
}
