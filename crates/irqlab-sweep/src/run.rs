//! A sweep on threads of this process: workers take points from a shared counter and
//! results land at their grid index, so the output does not depend on timing.

use crate::SweepError;
use crate::output::PointResult;
use crate::plan::Plan;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// Every core of this host.
pub fn default_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// Runs every point of `plan` on `threads` workers; `done` is called as each point
/// finishes. The first failing point (lowest index among those run) stops the sweep.
pub fn run_local(
    plan: &Plan,
    threads: usize,
    done: &(dyn Fn() + Sync),
) -> Result<Vec<PointResult>, SweepError> {
    let n = plan.len();
    let next = AtomicUsize::new(0);
    let failed = AtomicBool::new(false);
    let slots: Mutex<Vec<Option<Result<PointResult, SweepError>>>> =
        Mutex::new((0..n).map(|_| None).collect());
    std::thread::scope(|s| {
        for _ in 0..threads.clamp(1, n.max(1)) {
            s.spawn(|| {
                loop {
                    if failed.load(Ordering::Relaxed) {
                        break;
                    }
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= n {
                        break;
                    }
                    let r = plan.run_point(i);
                    if r.is_err() {
                        failed.store(true, Ordering::Relaxed);
                    }
                    if let Ok(mut slots) = slots.lock() {
                        slots[i] = Some(r);
                    }
                    done();
                }
            });
        }
    });
    let slots = slots.into_inner().map_err(|_| SweepError::WorkerPanicked)?;
    let mut out = Vec::with_capacity(n);
    for (i, slot) in slots.into_iter().enumerate() {
        match slot {
            Some(Ok(r)) => out.push(r),
            Some(Err(e)) => return Err(e),
            None => return Err(SweepError::NotRun(plan.describe(i))),
        }
    }
    Ok(out)
}
