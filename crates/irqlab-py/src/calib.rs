//! `reproduce_json`, `Calibration` and `eval_task`: the published table, and fits whose
//! evaluations run on threads here or through a Python callable (a Dask cluster).

use crate::err;
use irqlab_calib::runner::workers;
use irqlab_calib::{EvalTask, Evaluator, Fit, FitSpec, Fitted, Threads, load_dir, table};
use irqlab_inputs::find_dir;
use pyo3::prelude::*;
use std::path::PathBuf;

/// The published table of the selected scenarios as JSON rows, and the error of every
/// scenario that could not run.
#[pyfunction]
#[pyo3(signature = (names, scenarios, seed=1, threads=None))]
fn reproduce_json(
    py: Python<'_>,
    names: Vec<String>,
    scenarios: PathBuf,
    seed: u64,
    threads: Option<usize>,
) -> PyResult<(String, Vec<String>)> {
    py.detach(move || -> Result<(String, Vec<String>), String> {
        let dir = find_dir(&scenarios).map_err(|e| e.to_string())?;
        let all = load_dir(&dir).map_err(|e| e.to_string())?;
        let chosen = irqlab_calib::select(all, &names).map_err(|e| e.to_string())?;
        let threads = threads.unwrap_or_else(|| workers(chosen.len())).max(1);
        let budget = irqlab_sim::Budget::DEFAULT;
        let (rows, failed) = irqlab_calib::reproduce(&chosen, seed, budget, threads, &|| {});
        Ok((
            table::json(&rows).to_string(),
            failed.iter().map(ToString::to_string).collect(),
        ))
    })
    .map_err(err)
}

/// Runs one evaluation task (JSON) and returns its metrics; on a worker.
#[pyfunction]
fn eval_task(py: Python<'_>, task: String) -> PyResult<Vec<f64>> {
    py.detach(move || EvalTask::from_json(&task).and_then(|t| t.run()))
        .map_err(err)
}

/// Batches of tasks handed to a Python callable: `evaluate(list[str]) -> list[list[float]
/// | None]`. The first exception it raises stops asking and is raised after the fit.
struct PyEvaluator {
    evaluate: Py<PyAny>,
    error: Option<PyErr>,
}

impl Evaluator for PyEvaluator {
    fn evaluate(&mut self, tasks: &[EvalTask]) -> Vec<Option<Vec<f64>>> {
        if self.error.is_some() {
            return vec![None; tasks.len()];
        }
        let json: Vec<String> = tasks.iter().map(EvalTask::to_json).collect();
        let got = Python::attach(|py| {
            self.evaluate
                .call1(py, (json,))
                .and_then(|r| r.extract::<Vec<Option<Vec<f64>>>>(py))
        });
        match got {
            Ok(v) if v.len() == tasks.len() => v,
            Ok(v) => {
                self.error = Some(err(format!(
                    "the evaluator returned {} results for {} tasks",
                    v.len(),
                    tasks.len()
                )));
                vec![None; tasks.len()]
            }
            Err(e) => {
                self.error = Some(e);
                vec![None; tasks.len()]
            }
        }
    }
}

#[pyclass(module = "irqlab._native", frozen)]
struct Calibration {
    fit: Fit,
}

/// A fit's result as JSON: parameters, evaluations, objective, residual rows and the
/// fitted platform file.
fn fitted_json(f: &Fitted) -> String {
    let params: Vec<serde_json::Value> = f
        .params
        .iter()
        .zip(&f.sets)
        .map(|(p, s)| {
            let value = s.split_once('=').map_or("", |(_, v)| v);
            serde_json::json!({
                "key": p.key, "value": value.parse::<f64>().unwrap_or(f64::NAN),
                "lo": p.lo, "hi": p.hi, "start": p.start, "integer": p.integer,
            })
        })
        .collect();
    serde_json::json!({
        "params": params,
        "sets": f.sets,
        "evals": f.evals,
        "objective": f.objective,
        "residuals": table::json(&f.rows),
        "platform_toml": f.platform_text,
    })
    .to_string()
}

#[pymethods]
impl Calibration {
    #[new]
    #[pyo3(signature = (platform, params, targets, scenarios, scenarios_dir, max_evals=60, seed=1))]
    fn new(
        platform: String,
        params: Vec<String>,
        targets: Vec<PathBuf>,
        scenarios: Vec<String>,
        scenarios_dir: PathBuf,
        max_evals: usize,
        seed: u64,
    ) -> PyResult<Calibration> {
        let fit = Fit::new(&FitSpec {
            platform,
            params,
            targets,
            scenarios,
            scenarios_dir,
            max_evals,
            seed,
            budget: irqlab_sim::Budget::DEFAULT,
        })
        .map_err(err)?;
        Ok(Calibration { fit })
    }

    /// Scenarios simulated per evaluation.
    fn scenarios(&self) -> usize {
        self.fit.scenarios()
    }

    /// Fits on `threads` threads of this process (GIL released); the result as JSON.
    #[pyo3(signature = (threads=None))]
    fn run_local(&self, py: Python<'_>, threads: Option<usize>) -> PyResult<String> {
        let threads = threads.unwrap_or_else(|| self.fit.default_threads()).max(1);
        py.detach(|| self.fit.run(&mut Threads(threads), &mut |_| {}))
            .map(|f| fitted_json(&f))
            .map_err(err)
    }

    /// Fits with every batch of evaluation tasks handed to `evaluate`.
    fn run_with(&self, evaluate: Py<PyAny>) -> PyResult<String> {
        let mut ev = PyEvaluator {
            evaluate,
            error: None,
        };
        let fitted = self.fit.run(&mut ev, &mut |_| {});
        // The evaluator's own exception first: the fit's error may only follow from it.
        match ev.error {
            Some(e) => Err(e),
            None => fitted.map(|f| fitted_json(&f)).map_err(err),
        }
    }
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Calibration>()?;
    m.add_function(wrap_pyfunction!(reproduce_json, m)?)?;
    m.add_function(wrap_pyfunction!(eval_task, m)?)
}
