//! Which CPUs the benchmark's threads run on, and pinning them there.

use crate::error::CaptureError;
use rustix::thread::{CpuSet, sched_getaffinity, sched_setaffinity};

/// The CPUs this process may run on, ascending.
pub fn allowed_cpus() -> Vec<usize> {
    match sched_getaffinity(None) {
        Ok(set) => (0..CpuSet::MAX_CPU).filter(|&c| set.is_set(c)).collect(),
        Err(_) => (0..std::thread::available_parallelism().map_or(1, |n| n.get())).collect(),
    }
}

/// Pins the calling thread to `cpu`.
pub fn pin(cpu: usize) -> Result<(), CaptureError> {
    let mut set = CpuSet::new();
    set.set(cpu);
    sched_setaffinity(None, &set)
        .map_err(|e| CaptureError::Bench(format!("cannot pin a thread to CPU {cpu}: {e}")))
}

/// The two CPUs the benchmark uses: the last two this process may run on (CPU 0 takes
/// most device and timer interrupts on many hosts); one alone when there is one.
pub fn choose() -> (usize, Option<usize>) {
    let cpus = allowed_cpus();
    match cpus.as_slice() {
        [] => (0, None),
        [only] => (*only, None),
        [.., a, b] => (*a, Some(*b)),
    }
}
