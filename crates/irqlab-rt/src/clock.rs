//! The monotonic clock the runtime hands to the core mechanisms as `now_ns`.

use rustix::time::{ClockId, clock_gettime};

/// CLOCK_MONOTONIC in ns: the same clock for every thread, so controller and CPU
/// timestamps compare directly.
pub fn now_ns() -> u64 {
    let ts = clock_gettime(ClockId::Monotonic);
    (ts.tv_sec as u64) * 1_000_000_000 + ts.tv_nsec as u64
}

/// CLOCK_THREAD_CPUTIME_ID in ns: the calling thread's CPU time. A system call (about
/// 0.6 µs on the development VM), so it is read at the window's edges, never per event.
pub fn thread_cpu_ns() -> u64 {
    let ts = clock_gettime(ClockId::ThreadCPUTime);
    (ts.tv_sec as u64) * 1_000_000_000 + ts.tv_nsec as u64
}

/// Spins until `deadline_ns`: sleeping is far too coarse (timer slack alone is 50 µs) for
/// the sub-100 µs media latencies the controllers emulate.
pub fn spin_until(deadline_ns: u64) {
    while now_ns() < deadline_ns {
        std::hint::spin_loop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clock_is_monotonic_and_spin_waits_at_least_the_deadline() {
        let a = now_ns();
        spin_until(a + 200_000);
        let b = now_ns();
        assert!(b >= a + 200_000, "spun {} ns", b - a);
        assert!(now_ns() >= b);
    }
}
