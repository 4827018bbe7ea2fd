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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_clocks_move_forward() {
        let (a, c) = (now_ns(), thread_cpu_ns());
        let mut x = 0u64;
        for i in 0..100_000u64 {
            x = std::hint::black_box(x.wrapping_add(i));
        }
        assert!(now_ns() > a && thread_cpu_ns() >= c, "{x}");
    }
}
