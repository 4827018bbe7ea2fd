//! Per-entity load tracking (kernel/sched/pelt.c, the same in v5.3 and v6.6 for a task):
//! a geometric series over 1024 µs periods with y^32 = 1/2, in the kernel's integer
//! arithmetic (decay_load's table, accumulate_sum's three segments, 1024 ns as a µs).
//! `load_avg` is the runnable (running or waiting) fraction scaled by a nice-0 weight,
//! `util_avg` the running fraction scaled by the CPU's capacity (both out of 1024).

/// kernel/sched/sched-pelt.h: y^n scaled by 2^32, n < LOAD_AVG_PERIOD.
const RUNNABLE_AVG_Y_N_INV: [u32; 32] = [
    0xffffffff, 0xfa83b2da, 0xf5257d14, 0xefe4b99a, 0xeac0c6e6, 0xe5b906e6, 0xe0ccdeeb, 0xdbfbb796,
    0xd744fcc9, 0xd2a81d91, 0xce248c14, 0xc9b9bd85, 0xc5672a10, 0xc12c4cc9, 0xbd08a39e, 0xb8fbaf46,
    0xb504f333, 0xb123f581, 0xad583ee9, 0xa9a15ab4, 0xa5fed6a9, 0xa2704302, 0x9ef5325f, 0x9b8d39b9,
    0x9837f050, 0x94f4efa8, 0x91c3d373, 0x8ea4398a, 0x8b95c1e3, 0x88980e80, 0x85aac367, 0x82cd8698,
];
const LOAD_AVG_PERIOD: u64 = 32;
const LOAD_AVG_MAX: u64 = 47742;
/// A nice-0 task's weight and a CPU's capacity (scale_load_down(NICE_0_LOAD),
/// SCHED_CAPACITY_SCALE).
pub(crate) const SCALE: u64 = 1024;

/// decay_load: val × y^n.
fn decay_load(val: u64, n: u64) -> u64 {
    if n > LOAD_AVG_PERIOD * 63 {
        return 0;
    }
    let (mut val, mut n) = (val, n);
    if n >= LOAD_AVG_PERIOD {
        val >>= n / LOAD_AVG_PERIOD;
        n %= LOAD_AVG_PERIOD;
    }
    ((u128::from(val) * u128::from(RUNNABLE_AVG_Y_N_INV[n as usize])) >> 32) as u64
}

/// __accumulate_pelt_segments: the rest of the first period (d1) decayed, the whole
/// periods between, and the start of the current one (d3).
fn accumulate_segments(periods: u64, d1: u64, d3: u64) -> u64 {
    let c1 = decay_load(d1, periods);
    let c2 = LOAD_AVG_MAX - decay_load(LOAD_AVG_MAX, periods) - 1024;
    c1 + c2 + d3
}

/// One task's sched_avg.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Pelt {
    last_update: u64,
    period_contrib: u64,
    load_sum: u64,
    util_sum: u64,
    load_avg: u64,
    util_avg: u64,
}

impl Pelt {
    /// load_avg: the runnable fraction scaled by a nice-0 weight (out of 1024).
    #[inline]
    pub fn load_avg(&self) -> u64 {
        self.load_avg
    }

    /// util_avg: the running fraction scaled by the CPU's capacity (out of 1024).
    #[inline]
    pub fn util_avg(&self) -> u64 {
        self.util_avg
    }

    /// A task that has been runnable (`runnable`) or asleep for ever. The published runs
    /// the model compares with were measured in a steady state; a v5.3 fork would start
    /// at load 1024 with empty sums (init_entity_runnable_average).
    pub fn steady(runnable: bool) -> Pelt {
        let full = LOAD_AVG_MAX - 1024;
        let (sum, avg) = if runnable { (full, SCALE) } else { (0, 0) };
        Pelt {
            load_sum: sum,
            util_sum: sum * SCALE,
            load_avg: avg,
            util_avg: avg,
            ..Pelt::default()
        }
    }

    /// A task forked at `now`: init_entity_runnable_average gives it a nice-0 task's
    /// full load (here with the sum to match, as if it had always been runnable).
    pub fn forked(now: u64) -> Pelt {
        Pelt {
            last_update: now,
            ..Pelt::steady(true)
        }
    }

    /// ___update_load_sum then ___update_load_avg up to `now` (ns), the task having been
    /// runnable / running since the last update as given.
    pub fn update(&mut self, now: u64, runnable: bool, running: bool) {
        let Some(delta) = now.checked_sub(self.last_update) else {
            self.last_update = now;
            return;
        };
        let delta = delta >> 10;
        if delta == 0 {
            return;
        }
        self.last_update += delta << 10;
        let running = running && runnable;
        let mut contrib = delta;
        let d = delta + self.period_contrib;
        let periods = d / 1024;
        if periods > 0 {
            self.load_sum = decay_load(self.load_sum, periods);
            self.util_sum = decay_load(self.util_sum, periods);
            contrib = accumulate_segments(periods, 1024 - self.period_contrib, d % 1024);
        }
        self.period_contrib = d % 1024;
        if runnable {
            self.load_sum += contrib;
        }
        if running {
            self.util_sum += contrib * SCALE;
        }
        if periods > 0 {
            let divider = LOAD_AVG_MAX - 1024 + self.period_contrib;
            self.load_avg = SCALE * self.load_sum / divider;
            self.util_avg = self.util_sum / divider;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decay_halves_every_32_periods() {
        // y^0 is 0xffffffff / 2^32: the kernel's halving rounds down.
        assert_eq!(decay_load(1024, 32), 511);
        assert!((decay_load(1 << 20, 1) as f64 / (1 << 20) as f64 - 0.97857).abs() < 1e-4);
    }

    #[test]
    fn an_always_runnable_task_stays_at_full_load_and_a_sleeper_decays() {
        let mut busy = Pelt::steady(true);
        busy.update(100_000_000, true, true);
        assert!(busy.load_avg >= 1000, "{busy:?}");
        let mut sleeper = Pelt::steady(true);
        // Asleep for one half-life (32 periods of 1024 us).
        sleeper.update(32 * 1024 * 1024, false, false);
        assert!((500..=530).contains(&sleeper.load_avg), "{sleeper:?}");
        let mut idle = Pelt::steady(false);
        idle.update(1_000_000_000, false, false);
        assert_eq!(idle.load_avg, 0);
    }

    #[test]
    fn half_runnable_converges_to_half() {
        let mut p = Pelt::steady(false);
        let mut t = 0;
        for i in 0..2000 {
            t += 512 * 1024;
            p.update(t, i % 2 == 0, false);
        }
        assert!((480..=545).contains(&p.load_avg), "{p:?}");
    }
}
