//! The cost of entering and leaving the kernel: a null system call, many times.

use std::time::Instant;

/// ns per getppid() (a syscall that does no work and that no libc caches), once per
/// trial of `iters` calls.
pub fn null_syscall(trials: usize, iters: u32) -> Vec<f64> {
    // One trial's worth first, so the code and the vDSO page are warm.
    for _ in 0..iters.min(10_000) {
        std::hint::black_box(rustix::process::getppid());
    }
    (0..trials)
        .map(|_| {
            let t = Instant::now();
            for _ in 0..iters {
                std::hint::black_box(rustix::process::getppid());
            }
            t.elapsed().as_nanos() as f64 / f64::from(iters.max(1))
        })
        .collect()
}
