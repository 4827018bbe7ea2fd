//! fio's rate limiting clock (backend.c usec_for_io, io_u.c rate_ddir): when the next
//! I/O of a direction may be issued, in µs since the job's epoch (its start, reset when
//! ramp_time ends).

use crate::spec::{BlockSizes, RateLimit, RateProcess};

/// One job's rate state.
#[derive(Clone, Debug)]
pub struct RateClock {
    /// Bytes per second per direction (init.c __setup_rate: rate, or rate_iops * min_bs).
    bps: [u64; 2],
    min_bs: [u64; 2],
    /// `rate_iops` with bssplit and no `rate`: a fixed gap per I/O.
    fixed_gap: [bool; 2],
    poisson: bool,
    issued_bytes: [u64; 2],
    last_usec: [u64; 2],
    next_usec: [u64; 2],
}

impl RateClock {
    /// None when the job has no rate limit.
    pub fn new(limit: &RateLimit, sizes: &[BlockSizes; 2]) -> Option<RateClock> {
        if !limit.is_set() {
            return None;
        }
        let min_bs = [sizes[0].min(), sizes[1].min()];
        let bps = [0, 1].map(|d| {
            if limit.bytes_per_sec[d] > 0 {
                limit.bytes_per_sec[d]
            } else {
                // Saturates: a rate past 16 EiB/s is no limit the model can tell apart.
                limit.iops[d].saturating_mul(min_bs[d])
            }
        });
        let fixed_gap =
            [0, 1].map(|d| limit.bytes_per_sec[d] == 0 && matches!(sizes[d], BlockSizes::Split(_)));
        Some(RateClock {
            bps,
            min_bs,
            fixed_gap,
            poisson: limit.process == RateProcess::Poisson,
            issued_bytes: [0; 2],
            last_usec: [0; 2],
            next_usec: [0; 2],
        })
    }

    /// libfio.c reset_io_counters: the clock restarts when ramp_time ends.
    pub fn reset(&mut self) {
        self.issued_bytes = [0; 2];
        self.last_usec = [0; 2];
        self.next_usec = [0; 2];
    }

    /// When direction `d` (0 read, 1 write) may issue next, µs since the epoch.
    pub fn next_usec(&self, d: usize) -> u64 {
        self.next_usec[d]
    }

    /// io_u.c rate_ddir: the direction to issue at `now_usec` given the one the mix
    /// chose, or Err(the µs to wait until and the direction then) when both are ahead.
    /// `other_mixed`: the other direction has a non-zero share of the mix.
    pub fn choose(
        &self,
        d: usize,
        other_mixed: bool,
        now_usec: u64,
    ) -> Result<usize, (u64, usize)> {
        if self.next_usec[d] <= now_usec {
            return Ok(d);
        }
        let o = d ^ 1;
        if other_mixed {
            if self.next_usec[o] <= now_usec {
                return Ok(o);
            }
            if self.next_usec[d] <= self.next_usec[o] {
                return Err((self.next_usec[d], d));
            }
            return Err((self.next_usec[o], o));
        }
        Err((self.next_usec[d], d))
    }

    /// An I/O of `bytes` in direction `d` was issued: backend.c usec_for_io sets the
    /// direction's next time. `u` is a uniform draw in (0, 1] of the direction's Poisson
    /// stream (used only with rate_process=poisson).
    pub fn issued(&mut self, d: usize, bytes: u64, u: f64) {
        self.issued_bytes[d] = self.issued_bytes[d].saturating_add(bytes);
        let bps = self.bps[d];
        self.next_usec[d] = if bps == 0 {
            0
        } else if self.poisson {
            let iops = (bps / self.min_bs[d]).max(1);
            let gap = (1_000_000 / iops) as f64 * -(u as f32).ln() as f64;
            self.last_usec[d] = self.last_usec[d].saturating_add(gap as u64);
            self.last_usec[d]
        } else if self.fixed_gap[d] {
            match 1_000_000u64.checked_div(bps / self.min_bs[d]) {
                None => 0,
                Some(gap) => {
                    self.last_usec[d] = self.last_usec[d].saturating_add(gap);
                    self.last_usec[d]
                }
            }
        } else {
            // usec_for_io in 128 bits: bytes * 10^6 overflows 64 bits past 18 TB issued.
            let usec = u128::from(self.issued_bytes[d]) * 1_000_000 / u128::from(bps);
            u64::try_from(usec).unwrap_or(u64::MAX)
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn clock(iops: u64) -> RateClock {
        let limit = RateLimit {
            iops: [iops, 0],
            ..RateLimit::default()
        };
        let sizes = [BlockSizes::Fixed(4096), BlockSizes::Fixed(4096)];
        RateClock::new(&limit, &sizes).unwrap()
    }

    #[test]
    fn linear_rate_spaces_ios_evenly() {
        let mut c = clock(10_000);
        assert_eq!(c.choose(0, false, 0), Ok(0));
        c.issued(0, 4096, 1.0);
        // 4096 bytes at 40.96 MB/s: the next read is due 100 µs after the epoch.
        assert_eq!(c.next_usec(0), 100);
        assert_eq!(c.choose(0, false, 50), Err((100, 0)));
        c.issued(0, 4096, 1.0);
        assert_eq!(c.next_usec(0), 200);
        // Writes have no limit here: a mixed job switches to them while reads are ahead.
        assert_eq!(c.choose(0, true, 150), Ok(1));
        c.reset();
        assert_eq!(c.next_usec(0), 0);
    }

    #[test]
    fn poisson_gaps_average_the_rate() {
        let mut c = RateClock::new(
            &RateLimit {
                iops: [1_000, 0],
                process: RateProcess::Poisson,
                ..RateLimit::default()
            },
            &[BlockSizes::Fixed(512), BlockSizes::Fixed(512)],
        )
        .unwrap();
        let n = 20_000u64;
        let mut state = 1u64;
        for _ in 0..n {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let u = ((state >> 11) as f64 + 1.0) / (1u64 << 53) as f64;
            c.issued(0, 512, u);
        }
        let mean_gap = c.next_usec(0) as f64 / n as f64;
        assert!((mean_gap - 1000.0).abs() < 30.0, "mean gap {mean_gap} µs");
        assert!(
            RateClock::new(
                &RateLimit::default(),
                &[BlockSizes::Fixed(1), BlockSizes::Fixed(1)]
            )
            .is_none()
        );
    }
}
