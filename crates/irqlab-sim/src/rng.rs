//! Seeded random streams. Each component draws from its own stream derived from the run
//! seed, so adding a job does not change another device's service times.

use rand_xoshiro::Xoshiro256PlusPlus;
use rand_xoshiro::rand_core::{Rng, SeedableRng};

/// One deterministic random stream.
#[derive(Clone, Debug)]
pub struct Stream {
    rng: Xoshiro256PlusPlus,
    spare_normal: Option<f64>,
}

impl Stream {
    /// The stream `index` of the run seeded with `seed`.
    pub fn new(seed: u64, index: u64) -> Self {
        // SplitMix-style mixing so neighbouring indices give unrelated streams.
        let mut z = seed ^ index.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        Stream {
            rng: Xoshiro256PlusPlus::seed_from_u64(z),
            spare_normal: None,
        }
    }

    /// Uniform in [0, 1).
    #[inline]
    pub fn uniform(&mut self) -> f64 {
        (self.rng.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// Uniform integer in 0..n (n > 0), by multiply-shift.
    #[inline]
    pub fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.rng.next_u64()) * u128::from(n)) >> 64) as u64
    }

    /// Standard normal (Box-Muller, the second value is kept for the next call).
    pub fn normal(&mut self) -> f64 {
        if let Some(z) = self.spare_normal.take() {
            return z;
        }
        let u1 = 1.0 - self.uniform(); // (0, 1]
        let u2 = self.uniform();
        let r = (-2.0 * u1.ln()).sqrt();
        let (s, c) = (std::f64::consts::TAU * u2).sin_cos();
        self.spare_normal = Some(r * s);
        r * c
    }
}

/// A positive service-time distribution with a given mean and coefficient of variation:
/// lognormal, or constant when cv is 0.
#[derive(Clone, Copy, Debug)]
pub struct ServiceTime {
    mean: f64,
    mu: f64,
    sigma: f64,
}

impl ServiceTime {
    pub fn new(mean_ns: u64, cv: f64) -> Self {
        let mean = mean_ns as f64;
        let sigma2 = (1.0 + cv * cv).ln();
        ServiceTime {
            mean,
            mu: mean.ln() - sigma2 / 2.0,
            sigma: sigma2.sqrt(),
        }
    }

    #[inline]
    pub fn draw(&self, s: &mut Stream) -> u64 {
        if self.sigma == 0.0 {
            return self.mean as u64;
        }
        let x = (self.mu + self.sigma * s.normal()).exp();
        (x as u64).max(1)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lognormal_has_the_requested_mean() {
        let d = ServiceTime::new(80_000, 0.3);
        let mut s = Stream::new(7, 1);
        let n = 200_000;
        let sum: u64 = (0..n).map(|_| d.draw(&mut s)).sum();
        let mean = sum as f64 / n as f64;
        assert!((mean - 80_000.0).abs() < 400.0, "mean {mean}");
    }

    #[test]
    fn streams_are_reproducible_and_distinct() {
        let a: Vec<u64> = {
            let mut s = Stream::new(1, 0);
            (0..4).map(|_| s.below(1000)).collect()
        };
        let b: Vec<u64> = {
            let mut s = Stream::new(1, 0);
            (0..4).map(|_| s.below(1000)).collect()
        };
        let c: Vec<u64> = {
            let mut s = Stream::new(1, 1);
            (0..4).map(|_| s.below(1000)).collect()
        };
        assert_eq!(a, b);
        assert_ne!(a, c);
    }
}
