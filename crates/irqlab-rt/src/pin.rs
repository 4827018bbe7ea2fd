//! Thread placement: pin a thread to one host CPU where the host allows it.

use crate::error::RtError;
use rustix::thread::{CpuSet, sched_getaffinity, sched_setaffinity};

/// The host CPUs this process may run on, ascending.
pub fn allowed_cpus() -> Vec<usize> {
    match sched_getaffinity(None) {
        Ok(set) => (0..CpuSet::MAX_CPU).filter(|&c| set.is_set(c)).collect(),
        Err(_) => {
            let n = std::thread::available_parallelism().map_or(1, |n| n.get());
            (0..n).collect()
        }
    }
}

/// Pins the calling thread to host CPU `cpu`.
pub fn pin_current(cpu: usize) -> Result<(), RtError> {
    if cpu >= CpuSet::MAX_CPU {
        return Err(RtError::Pin(format!(
            "CPU {cpu} is beyond the affinity mask"
        )));
    }
    let mut set = CpuSet::new();
    set.set(cpu);
    sched_setaffinity(None, &set).map_err(|e| RtError::Pin(format!("cannot pin to CPU {cpu}: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_thread_can_be_pinned_to_an_allowed_cpu_and_not_to_an_absurd_one() {
        let cpus = allowed_cpus();
        assert!(!cpus.is_empty());
        let last = *cpus.last().unwrap();
        std::thread::spawn(move || {
            pin_current(last).unwrap();
            assert_eq!(rustix::thread::sched_getcpu(), last);
        })
        .join()
        .unwrap();
        assert!(pin_current(CpuSet::MAX_CPU + 1).is_err());
    }
}
