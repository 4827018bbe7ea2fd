//! io_uring hybrid IOPOLL (IORING_SETUP_HYBRID_IOPOLL, v6.13; io_uring/rw.c
//! `io_hybrid_iopoll_delay`, `io_uring_hybrid_poll`): before polling for a request, the
//! submitter sleeps on an hrtimer for half the fastest completion time seen on the ring,
//! once per wait, then spins. Until a completion time is known it only polls.
//!
//! Modelling choice: a completion time runs from submission to the reap that found it
//! (the kernel subtracts the sleep it took; both give the fastest request's time when the
//! sleep is short of it, which half the minimum is).

/// One ring's hybrid-polling state (`ctx->hybrid_poll_time` and the per-wait sleep flag).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HybridPoll {
    /// The fastest completion seen, ns (LLONG_MAX in the kernel until one is seen).
    min_ns: Option<u64>,
    /// This wait has slept already (REQ_F_IOPOLL_STATE).
    slept: bool,
    sleeps: u64,
}

impl HybridPoll {
    pub fn new() -> HybridPoll {
        HybridPoll::default()
    }

    /// The submitter starts waiting for completions: the wait may sleep once.
    pub fn start_wait(&mut self) {
        self.slept = false;
    }

    /// A request polled to completion `completion_ns` after it was submitted.
    pub fn observe(&mut self, completion_ns: u64) {
        self.min_ns = Some(self.min_ns.map_or(completion_ns, |m| m.min(completion_ns)));
    }

    /// Before polling at `now_ns`: the hrtimer deadline to sleep until, half the fastest
    /// completion after `last_submit_ns`, or None to poll at once (this wait slept
    /// already, no completion time is known yet, or the deadline is less than
    /// `min_sleep_ns` away, which an hrtimer cannot sleep usefully). Counts the wait as
    /// slept once it has asked.
    pub fn sleep_until(
        &mut self,
        now_ns: u64,
        last_submit_ns: u64,
        min_sleep_ns: u64,
    ) -> Option<u64> {
        if self.slept {
            return None;
        }
        let min = self.min_ns?;
        self.slept = true;
        let wake_at = last_submit_ns.saturating_add(min / 2);
        if wake_at > now_ns.saturating_add(min_sleep_ns) {
            self.sleeps += 1;
            Some(wake_at)
        } else {
            None
        }
    }

    /// The fastest completion seen so far.
    pub fn poll_time_ns(&self) -> Option<u64> {
        self.min_ns
    }

    /// Waits that slept.
    pub fn sleeps(&self) -> u64 {
        self.sleeps
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn polls_until_a_time_is_known_then_sleeps_half_of_the_fastest_once_per_wait() {
        let mut h = HybridPoll::new();
        h.start_wait();
        assert_eq!(h.sleep_until(1_000, 1_000, 100), None, "nothing measured");
        h.observe(30_000);
        h.observe(20_000);
        h.observe(25_000);
        assert_eq!(h.poll_time_ns(), Some(20_000));
        h.start_wait();
        assert_eq!(h.sleep_until(2_000, 1_000, 100), Some(11_000));
        assert_eq!(h.sleep_until(2_000, 1_000, 100), None, "once per wait");
        h.start_wait();
        // Half the minimum is already past (or too close): poll at once.
        assert_eq!(h.sleep_until(10_950, 1_000, 100), None);
        assert_eq!(h.sleeps(), 1);
    }
}
