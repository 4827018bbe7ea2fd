//! `run_json`: one simulation, reported as `irqlab run --output-format json` writes it.

use crate::err;
use irqlab_inputs::{Inputs, JobSource, MapRule, PolicyArgs, PolicyKey, RunShape, Topology};
use irqlab_sim::SimOptions;
use pyo3::prelude::*;

/// The base policy with `options` (name, value) applied in order, parsed as the command
/// line parses them.
pub(crate) fn policy_from(options: &[(String, String)]) -> Result<PolicyArgs, String> {
    let mut policy = PolicyArgs::default();
    for (k, v) in options {
        PolicyKey::named(k)
            .and_then(|key| key.apply(&mut policy, v))
            .map_err(|e| e.to_string())?;
    }
    Ok(policy)
}

/// `maps` (PATTERN=DEVICE) and `max_runtime` (fio's duration syntax) as a run's shape.
pub(crate) fn shape_from(maps: &[String], max_runtime: Option<&str>) -> Result<RunShape, String> {
    let maps = maps
        .iter()
        .map(|m| MapRule::parse(m).map_err(|e| e.to_string()))
        .collect::<Result<Vec<_>, _>>()?;
    let max_runtime_ns = max_runtime
        .map(|d| irqlab_inputs::shape::parse_duration(d).map_err(|e| format!("max_runtime: {e}")))
        .transpose()?;
    Ok(RunShape {
        maps,
        max_runtime_ns,
    })
}

/// Simulates `job` (a path or job text) on `platform` (a name or path) and returns fio's
/// JSON with the "x-irqlab" section, as text.
#[pyfunction]
#[pyo3(signature = (job, platform, policy, sets, disks=None, jobs_per_disk=None, vectors_per_cpu=None, seed=None, plus=false, interrupts=false, maps=Vec::new(), max_runtime=None))]
#[allow(clippy::too_many_arguments)]
fn run_json(
    py: Python<'_>,
    job: String,
    platform: String,
    policy: Vec<(String, String)>,
    sets: Vec<String>,
    disks: Option<usize>,
    jobs_per_disk: Option<u32>,
    vectors_per_cpu: Option<usize>,
    seed: Option<u64>,
    plus: bool,
    interrupts: bool,
    maps: Vec<String>,
    max_runtime: Option<String>,
) -> PyResult<String> {
    py.detach(move || -> Result<String, String> {
        let policy = policy_from(&policy)?
            .checked_policy()
            .map_err(|e| e.to_string())?;
        let shape = shape_from(&maps, max_runtime.as_deref())?;
        let topology = Topology {
            disks,
            jobs_per_disk,
            vectors_per_cpu,
        };
        let source = JobSource::guess(&job).map_err(|e| e.to_string())?;
        let inputs = Inputs::prepare(&source, &platform, &sets, &topology, &shape)
            .map_err(|e| e.to_string())?;
        let opts = seed.map_or_else(SimOptions::default, SimOptions::overriding);
        let mut report = irqlab_sim::simulate(&inputs.jobs, &inputs.platform, &policy, &opts)
            .map_err(|e| e.to_string())?;
        report.notes.extend(inputs.notes);
        let mut value = irqlab_report::fio_json::render(&report, plus);
        if interrupts {
            value["x-irqlab"]["proc_interrupts"] =
                serde_json::Value::String(irqlab_report::proc_interrupts::render(&report));
        }
        serde_json::to_string(&value).map_err(|e| format!("cannot encode the JSON report: {e}"))
    })
    .map_err(err)
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(run_json, m)?)
}
