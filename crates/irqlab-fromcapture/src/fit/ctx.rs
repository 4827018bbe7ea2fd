//! Simulating capture runs for the fit: each run under a candidate's `--set`s is an
//! evaluation task of the calibration machinery (irqlab-calib's `EvalTask`), run as a
//! batch by an `Evaluator` (threads here, Dask from Python).

use crate::runs::FitRun;
use irqlab_calib::{EvalTask, Evaluator, Metric};
use irqlab_sim::Budget;

/// What a fit evaluation needs beyond the runs.
pub struct Ctx<'a> {
    /// The platform before the fit, self-contained.
    pub platform_text: &'a str,
    pub origin: &'a str,
    pub seed: u64,
    pub budget: Budget,
    pub eval: &'a mut dyn Evaluator,
    /// Told of each batch simulated.
    pub progress: &'a mut dyn FnMut(usize),
    /// Batches simulated so far.
    pub evals: usize,
}

impl Ctx<'_> {
    /// Simulates each run with `sets`, asking for `metrics`; None where a run failed.
    pub fn simulate(
        &mut self,
        runs: &[&FitRun],
        sets: &[String],
        metrics: &[Metric],
    ) -> Vec<Option<Vec<f64>>> {
        let tasks: Vec<EvalTask> = runs.iter().map(|r| self.task(r, sets, metrics)).collect();
        let out = self.eval.evaluate(&tasks);
        self.evals += 1;
        (self.progress)(1);
        out
    }

    fn task(&self, r: &FitRun, sets: &[String], metrics: &[Metric]) -> EvalTask {
        EvalTask {
            scenario: format!("capture run {}", r.name),
            job_name: format!("{}.fio", r.name),
            job_text: r.job_text.clone(),
            platform_text: self.platform_text.to_string(),
            platform_origin: self.origin.to_string(),
            sets: sets.to_vec(),
            policy: String::new(),
            disks: None,
            jobs_per_disk: None,
            vectors_per_cpu: None,
            seed: self.seed,
            metrics: metrics.iter().map(|m| m.to_string()).collect(),
            budget: self.budget,
        }
    }

    /// Why run `r` cannot be simulated with `sets` (the task's own error).
    pub fn why(&self, r: &FitRun, sets: &[String]) -> String {
        match self.task(r, sets, &[Metric::Iops]).run() {
            Err(e) => e.to_string(),
            Ok(_) => "the evaluator returned no result".into(),
        }
    }
}
