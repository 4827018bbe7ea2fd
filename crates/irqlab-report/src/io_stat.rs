//! fio's running statistic (stat.h struct io_stat, stat.c add_stat_sample, sum_stat,
//! calc_lat): min, max, Welford mean and sum of squares, sample count. Bandwidth and
//! IOPS samples are kept this way.

/// One running statistic.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct IoStat {
    pub min: u64,
    pub max: u64,
    pub samples: u64,
    mean: f64,
    s: f64,
}

impl Default for IoStat {
    /// stat.c reset_io_stat: min starts at the largest value.
    fn default() -> Self {
        IoStat {
            min: u64::MAX,
            max: 0,
            samples: 0,
            mean: 0.0,
            s: 0.0,
        }
    }
}

impl IoStat {
    /// stat.c add_stat_sample.
    pub fn add(&mut self, v: u64) {
        let val = v as f64;
        self.max = self.max.max(v);
        self.min = self.min.min(v);
        let delta = val - self.mean;
        if delta != 0.0 {
            self.mean += delta / (self.samples as f64 + 1.0);
            self.s += delta * (val - self.mean);
        }
        self.samples += 1;
    }

    /// stat.c sum_stat with pure_sum, as sum_thread_stats merges bw_stat and iops_stat of
    /// a reporting group: min, max, mean, sum of squares and counts add up, so the group's
    /// figures are those of the summed bandwidth.
    pub fn add_group_member(&mut self, other: &IoStat) {
        if other.samples == 0 {
            return;
        }
        if self.samples == 0 {
            *self = *other;
            return;
        }
        self.min += other.min;
        self.max += other.max;
        self.samples += other.samples;
        self.mean += other.mean;
        self.s += other.s;
    }

    /// stat.c calc_lat: (min, max, mean, sample standard deviation), None without samples.
    pub fn calc(&self) -> Option<(u64, u64, f64, f64)> {
        if self.samples == 0 {
            return None;
        }
        let n = self.samples as f64;
        let dev = if n > 1.0 {
            (self.s / (n - 1.0)).sqrt()
        } else {
            0.0
        };
        Some((self.min, self.max, self.mean, dev))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn welford_matches_the_textbook() {
        let mut s = IoStat::default();
        assert_eq!(s.calc(), None);
        for v in [2, 4, 4, 4, 5, 5, 7, 9] {
            s.add(v);
        }
        let (min, max, mean, dev) = s.calc().unwrap();
        assert_eq!((min, max, s.samples), (2, 9, 8));
        assert!((mean - 5.0).abs() < 1e-12);
        // Sample standard deviation of the classic example: sqrt(32 / 7).
        assert!((dev - (32.0f64 / 7.0).sqrt()).abs() < 1e-12);
        let mut g = s;
        g.add_group_member(&s);
        assert_eq!((g.min, g.max, g.samples), (4, 18, 16));
    }
}
