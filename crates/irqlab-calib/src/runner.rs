//! Runs scenarios: job file + platform + topology + policy through the simulator, in
//! parallel on every core, each run independent and seeded, so results do not depend on
//! the number of threads.

use crate::CalibError;
use crate::scenario::Scenario;
use irqlab_inputs::disks_used;
use irqlab_report::RunReport;
use irqlab_sim::{Budget, Platform, SimOptions};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

/// What one scenario run produced.
#[derive(Clone, Debug)]
pub struct Outcome {
    pub report: RunReport,
    /// Devices the jobs used (the divisor of per-disk metrics).
    pub disks: usize,
    /// The simulated value of each of the scenario's targets, in order.
    pub values: Vec<f64>,
}

/// Simulates `s` within `budget`. `platform` replaces the scenario's platform file
/// (calibration runs a candidate platform); the scenario's topology is applied on top of
/// either.
pub fn run(
    s: &Scenario,
    platform: Option<&Platform>,
    seed: u64,
    budget: Budget,
) -> Result<Outcome, CalibError> {
    let at = |e: &dyn std::fmt::Display| CalibError::at(&s.path, e);
    let base = match platform {
        Some(p) => p.clone(),
        None => Platform::load(&s.platform, &[]).map_err(|e| at(&e))?,
    };
    let sets = s.topology.platform_sets(&base);
    let platform = base.with_overrides(&sets).map_err(|e| at(&e))?;
    let jobs = irqlab_fio::parse_file(&s.job).map_err(|e| at(&e))?;
    let jobs = s
        .topology
        .apply_jobs(&jobs, &platform)
        .map_err(|e| at(&e))?;
    let opts = SimOptions::with_seed(seed).with_budget(budget);
    let report = irqlab_sim::simulate(&jobs, &platform, &s.policy, &opts).map_err(|e| at(&e))?;
    let disks = disks_used(&jobs);
    let values = s
        .targets
        .iter()
        .map(|t| t.metric.of(&report, disks))
        .collect();
    Ok(Outcome {
        report,
        disks,
        values,
    })
}

/// How many worker threads to use: every core, never more than there is work.
pub fn workers(items: usize) -> usize {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    cores.min(items).max(1)
}

/// Applies `f` to every item on `threads` workers; results come back in input order.
/// `done` is called once per item as it finishes (a progress bar's tick).
pub fn par_map<T: Sync, R: Send>(
    items: &[T],
    threads: usize,
    done: &(dyn Fn() + Sync),
    f: impl Fn(&T) -> R + Sync,
) -> Vec<R> {
    let next = AtomicUsize::new(0);
    let slots: Vec<Mutex<Option<R>>> = items.iter().map(|_| Mutex::new(None)).collect();
    std::thread::scope(|scope| {
        for _ in 0..threads.max(1) {
            scope.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(item) = items.get(i) else {
                        break;
                    };
                    let r = f(item);
                    if let Ok(mut slot) = slots[i].lock() {
                        *slot = Some(r);
                    }
                    done();
                }
            });
        }
    });
    slots
        .into_iter()
        .map(|m| {
            m.into_inner()
                .ok()
                .flatten()
                .expect("every item was processed by a worker")
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn par_map_keeps_order_with_any_thread_count() {
        let items: Vec<u64> = (0..37).collect();
        for threads in [1, 3, 8] {
            let out = par_map(&items, threads, &|| {}, |x| x * x);
            assert_eq!(out, items.iter().map(|x| x * x).collect::<Vec<_>>());
        }
    }
}
