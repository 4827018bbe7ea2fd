//! `SweepPlan`: a sweep's plan, with the point function the engines run and the CSV
//! lines `irqlab sweep` writes, so a sweep run anywhere gives the same bytes.

use crate::err;
use crate::run::{policy_from, shape_from};
use irqlab_inputs::JobSource;
use irqlab_sweep::{METRICS, Plan, SweepSpec, output};
use pyo3::prelude::*;

#[pyclass(module = "irqlab._native", frozen)]
struct SweepPlan {
    plan: Plan,
}

#[pymethods]
impl SweepPlan {
    #[new]
    #[pyo3(signature = (job, platform, sets, seed=1, policy=Vec::new(), maps=Vec::new(), max_runtime=None))]
    fn new(
        job: String,
        platform: String,
        sets: Vec<String>,
        seed: u64,
        policy: Vec<(String, String)>,
        maps: Vec<String>,
        max_runtime: Option<String>,
    ) -> PyResult<SweepPlan> {
        let policy = policy_from(&policy).map_err(err)?;
        let shape = shape_from(&maps, max_runtime.as_deref()).map_err(err)?;
        let job = JobSource::guess(&job).map_err(err)?;
        let plan = Plan::new(&SweepSpec {
            job,
            platform,
            policy,
            sets,
            seed,
            fio_dir: None,
            budget: irqlab_sim::Budget::DEFAULT,
            shape,
        })
        .map_err(err)?;
        Ok(SweepPlan { plan })
    }

    /// The plan written by `portable()` (on a worker).
    #[staticmethod]
    fn from_portable(text: &str) -> PyResult<SweepPlan> {
        Ok(SweepPlan {
            plan: Plan::from_portable(text).map_err(err)?,
        })
    }

    /// The plan as JSON, job and platform text inside.
    fn portable(&self) -> String {
        self.plan.portable()
    }

    fn __len__(&self) -> usize {
        self.plan.len()
    }

    /// Simulates point `i`; its metrics in `METRICS` order. Releases the GIL.
    fn point(&self, py: Python<'_>, i: usize) -> PyResult<Vec<f64>> {
        py.detach(|| self.plan.run_point(i))
            .map(|r| r.metrics)
            .map_err(err)
    }

    /// (key, values, numeric) of every swept key, the first varying slowest.
    fn dims(&self) -> Vec<(String, Vec<String>, bool)> {
        self.plan
            .grid()
            .dims
            .iter()
            .map(|d| (d.key.clone(), d.values.clone(), d.is_numeric()))
            .collect()
    }

    /// The value of every key at point `i`.
    fn values(&self, i: usize) -> Vec<String> {
        self.plan
            .grid()
            .values(i)
            .into_iter()
            .map(String::from)
            .collect()
    }

    /// "key=value ..." of point `i`.
    fn describe(&self, i: usize) -> String {
        self.plan.describe(i)
    }

    fn csv_header(&self) -> String {
        output::csv_header(self.plan.grid())
    }

    fn csv_row(&self, i: usize, metrics: Vec<f64>) -> PyResult<String> {
        if metrics.len() != METRICS.len() || i >= self.plan.len() {
            return Err(err(format!(
                "point {i} with {} metrics: expected a point below {} and {} metrics",
                metrics.len(),
                self.plan.len(),
                METRICS.len()
            )));
        }
        Ok(output::csv_row(self.plan.grid(), i, &metrics))
    }
}

/// Every sweep metric's name and axis label, in CSV order.
#[pyfunction]
fn sweep_metrics() -> Vec<(&'static str, &'static str)> {
    METRICS.iter().map(|m| (m.name, m.label)).collect()
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<SweepPlan>()?;
    m.add_function(wrap_pyfunction!(sweep_metrics, m)?)
}
