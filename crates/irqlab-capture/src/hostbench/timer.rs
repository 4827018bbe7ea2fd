//! How late a short sleep wakes: the timer interrupt, the exit from idle and the switch
//! back, on a CPU with nothing else to run (the idle-exit path a blocked I/O waiter sees).

use rustix::thread::{ClockId, clock_nanosleep_relative, set_current_timer_slack};
use rustix::time::Timespec;
use std::num::NonZeroU64;
use std::time::Instant;

/// Overshoot of `samples` clock_nanosleep(CLOCK_MONOTONIC, sleep_ns) calls, ns. The
/// thread's timer slack is set to 1 ns first (its default of 50 us would be measured
/// instead; kernel/time/hrtimer.c adds it to the expiry).
pub fn overshoot(samples: usize, sleep_ns: u64) -> Vec<f64> {
    let _ = set_current_timer_slack(NonZeroU64::new(1));
    let req = Timespec {
        tv_sec: (sleep_ns / 1_000_000_000) as i64,
        tv_nsec: (sleep_ns % 1_000_000_000) as _,
    };
    let mut out = Vec::with_capacity(samples);
    for i in 0..samples + 5 {
        let t = Instant::now();
        let _ = clock_nanosleep_relative(ClockId::Monotonic, &req);
        let late = t.elapsed().as_nanos() as f64 - sleep_ns as f64;
        // The first few wake the path up; they are not kept.
        if i >= 5 {
            out.push(late);
        }
    }
    out
}
