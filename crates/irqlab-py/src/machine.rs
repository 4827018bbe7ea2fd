//! Your machine from Python: `capture_json` (record a capture directory, or read one),
//! `platform_from_capture_json` (irqlab platform --from-capture) and `advise_json`
//! (irqlab advise), each as JSON the Python package turns into dicts and DataFrames.

use crate::err;
use irqlab_advise::{Constraints, Objective, Request};
use irqlab_capture::{Capture, CaptureOptions};
use irqlab_inputs::{MapRule, find_dir, resolve_platform};
use pyo3::prelude::*;
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;

/// A capture as JSON: its directory, host, runs (the figures `capture --show` prints),
/// runs left out, and the `--show` text.
fn capture_value(c: &Capture) -> serde_json::Value {
    let runs: Vec<serde_json::Value> = c
        .runs
        .iter()
        .map(|r| {
            serde_json::json!({
                "name": r.name,
                "device": r.device,
                "iops": r.summary.iops,
                "clat_mean_us": r.summary.clat_mean_us,
                "clat_p99_us": r.summary.clat_p99_us,
                "interrupts_per_s": r.interrupts_per_s,
                "ios_per_interrupt": r.ios_per_interrupt,
                "cpu_pct": r.cpu_pct(),
                "runtime_s": r.window_s,
            })
        })
        .collect();
    serde_json::json!({
        "dir": c.dir.display().to_string(),
        "host": c.host,
        "runs": runs,
        "skipped": c.skipped.iter().map(|s| serde_json::json!({"name": s.name, "why": s.why})).collect::<Vec<_>>(),
        "show": irqlab_capture::show(c),
    })
}

/// Reads the capture in `dir`, or records this machine into it first (`record`).
#[pyfunction]
#[pyo3(signature = (dir, record=false, target=None, quick=false, no_fio=false, fio=None))]
fn capture_json(
    py: Python<'_>,
    dir: PathBuf,
    record: bool,
    target: Option<PathBuf>,
    quick: bool,
    no_fio: bool,
    fio: Option<PathBuf>,
) -> PyResult<String> {
    py.detach(move || -> Result<String, String> {
        if record {
            let mut o = CaptureOptions::new(dir.clone(), quick);
            o.target = target;
            o.no_fio = no_fio;
            o.fio = fio;
            o.tool = format!("irqlab {} (Python)", env!("CARGO_PKG_VERSION"));
            irqlab_capture::record(&o, &AtomicBool::new(false), &|_| {})
                .map_err(|e| e.to_string())?;
        }
        let c = Capture::open(&dir).map_err(|e| e.to_string())?;
        Ok(capture_value(&c).to_string())
    })
    .map_err(err)
}

fn figures(v: &[irqlab_fromcapture::Figure]) -> Vec<serde_json::Value> {
    v.iter()
        .map(|f| {
            serde_json::json!({
                "run": f.run, "metric": f.metric.name(), "measured": f.measured,
                "model": f.simulated, "error_pct": f.error_pct(),
            })
        })
        .collect()
}

/// A platform for the machine captured in `dir`, fitted to `runs` (all when None).
#[pyfunction]
#[pyo3(signature = (dir, runs=None, max_evals=120, platforms=PathBuf::from("platforms"), seed=1, threads=None))]
fn platform_from_capture_json(
    py: Python<'_>,
    dir: PathBuf,
    runs: Option<Vec<String>>,
    max_evals: usize,
    platforms: PathBuf,
    seed: u64,
    threads: Option<usize>,
) -> PyResult<String> {
    py.detach(move || -> Result<String, String> {
        let c = Capture::open(&dir).map_err(|e| e.to_string())?;
        let mut opts = irqlab_fromcapture::Options::new(find_dir(&platforms).map_err(|e| e.to_string())?);
        opts.runs = runs;
        opts.max_evals = max_evals.max(4);
        opts.seed = seed;
        let threads = threads.unwrap_or_else(|| irqlab_calib::runner::workers(c.runs.len()));
        let b = irqlab_fromcapture::build(&c, &opts, &mut irqlab_calib::Threads(threads), &mut |_| {})
            .map_err(|e| e.to_string())?;
        let fitted: Vec<serde_json::Value> = b
            .outcome
            .fitted
            .iter()
            .map(|f| {
                serde_json::json!({
                    "key": f.param.key(), "value": f.value, "before": f.param.before,
                    "lo": f.param.lo, "hi": f.param.hi, "what": f.param.what,
                    "pins": f.pins.iter().map(|(r, m)| format!("{r}:{m}")).collect::<Vec<_>>(),
                    "at_bound": f.at_bound, "bound": f.bound,
                })
            })
            .collect();
        Ok(serde_json::json!({
            "machine": b.machine,
            "platform_toml": b.platform_text,
            "report": irqlab_fromcapture::report(&b),
            "used": b.used,
            "left_out": b.left_out,
            "fitted": fitted,
            "not_fitted": b.outcome.unpinned.iter().map(|u| serde_json::json!({"key": u.param.key(), "why": u.why})).collect::<Vec<_>>(),
            "in_sample": figures(&b.outcome.in_sample),
            "held_out": figures(&b.held_out),
            "evals": b.outcome.evals,
        })
        .to_string())
    })
    .map_err(err)
}

/// `irqlab advise`: every candidate policy for `job` (a path or job text) on `platform`
/// (a name or path), ranked; JSON.
#[pyfunction]
#[pyo3(signature = (job, platform, objective="iops".to_string(), max_p99=None, max_cpu=None, window=None, candidates=None, maps=Vec::new(), seed=1, threads=None))]
#[allow(clippy::too_many_arguments)]
fn advise_json(
    py: Python<'_>,
    job: String,
    platform: String,
    objective: String,
    max_p99: Option<String>,
    max_cpu: Option<f64>,
    window: Option<String>,
    candidates: Option<Vec<String>>,
    maps: Vec<String>,
    seed: u64,
    threads: Option<usize>,
) -> PyResult<String> {
    py.detach(move || -> Result<String, String> {
        let objective: Objective = objective
            .parse()
            .map_err(|e: irqlab_inputs::ValueError| format!("objective: {e}"))?;
        let max_p99_us = max_p99
            .map(|t| irqlab_advise::rank::parse_latency_us(&t).map_err(|e| format!("max_p99: {e}")))
            .transpose()?;
        if let Some(c) = max_cpu
            && !(c > 0.0 && c <= 100.0)
        {
            return Err(format!(
                "max_cpu: {c} is not a percentage above 0 and at most 100"
            ));
        }
        let window_ns = match window {
            None => 20_000_000,
            Some(w) => {
                let us = irqlab_advise::rank::parse_latency_us(&w)
                    .map_err(|e| format!("window: {e}"))?;
                let ns = (us * 1000.0) as u64;
                if !(100_000..=10_000_000_000).contains(&ns) {
                    return Err(format!("window: '{w}' is not from 100us to 10s"));
                }
                ns
            }
        };
        let maps = maps
            .iter()
            .map(|m| MapRule::parse(m).map_err(|e| format!("maps: {e}")))
            .collect::<Result<Vec<_>, _>>()?;
        let source = irqlab_inputs::JobSource::guess(&job).map_err(|e| e.to_string())?;
        let (job_text, job_name) = source.read().map_err(|e| e.to_string())?;
        let path = resolve_platform(&platform).map_err(|e| e.to_string())?;
        let resolved = irqlab_sim::ledger::load(&path, &[]).map_err(|e| e.to_string())?;
        let req = Request {
            job_text,
            job_name: job_name.display().to_string(),
            platform: resolved,
            objective,
            constraints: Constraints {
                max_p99_us,
                max_cpu_pct: max_cpu,
            },
            window_ns,
            seed,
            threads: threads.unwrap_or_else(|| irqlab_calib::runner::workers(64)),
            budget: irqlab_sim::Budget::DEFAULT,
            only: candidates,
            maps,
        };
        let a = irqlab_advise::advise(&req, &|| {}).map_err(|e| e.to_string())?;
        let mut v = irqlab_advise::json(&a);
        v["text"] = serde_json::Value::String(irqlab_advise::text(&a));
        Ok(v.to_string())
    })
    .map_err(err)
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(capture_json, m)?)?;
    m.add_function(wrap_pyfunction!(platform_from_capture_json, m)?)?;
    m.add_function(wrap_pyfunction!(advise_json, m)?)
}
