//! GSIM, Global Software Interrupt Moderation (Luigi Rizzo, Google; "[PATCH-v4 0/3]",
//! 15 Jan 2026, kernel/irq/irq_moderation.{c,h}; not merged).
//!
//! Two parts, both per CPU:
//! - the mechanism: after an opted-in IRQ's handler ran, [`GsimCpu::hook`] may disable it,
//!   list it on the CPU and start the CPU's one timer; interrupts that arrive meanwhile are
//!   masked and marked pending ([`GsimCpu::on_masked_irq`]); at expiry
//!   ([`GsimCpu::timer_expired`]) the listed IRQs are re-enabled and pending ones replayed;
//! - the adaptive controller: once per epoch (`update_ms`) `mod_ns` grows by `steps/8` when
//!   the CPU is "high" and shrinks by `steps/16` otherwise.
//!
//! The shared atomics (`total_intrs`, `total_cpus`) and the parameters with their sequence
//! count live in [`GsimGlobal`]; the caller passes it to every CPU.
//! Modelling choices: the timer fires exactly at its deadline (the kernel gives it 2 µs of
//! slack); `timer_rounds` comes from the v1 series (extra timer runs that call the handlers
//! before re-enabling, like napi_defer_hard_irqs); hardirq time is the caller's counter
//! (CPUTIME_IRQ, i.e. IRQ_TIME_ACCOUNTING on).

use std::fmt;

/// irq_moderation.h: MIN_SCALING_FACTOR, the increase factor (+1/8 per step).
pub const MIN_SCALING_FACTOR: u32 = 8;
/// irq_moderation_update_epoch: below this the controller snaps mod_ns to 0.
pub const GSIM_MIN_DELAY_NS: u32 = 500;
/// irq_moderation_do_start: accumulated delays under 10 µs do not start the timer.
pub const GSIM_MIN_TIMER_NS: u32 = 10_000;
/// smooth_avg's EWMA factor.
pub const GSIM_SMOOTH_FACTOR: u32 = 64;
/// check_epoch: an epoch may end 5 µs early.
const EPOCH_SLACK_NS: u64 = 5_000;
/// irq_start_moderation checks the clock only every 16 interrupts.
const EPOCH_CHECK_MASK: u32 = 0xf;

/// The procfs parameters (/proc/irq/soft_moderation).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GsimParams {
    /// Maximum (and fixed-mode) delay, 0 = off, 0-500.
    pub delay_us: u32,
    /// Global interrupts/s above which moderation kicks in, 0 = off, 0-50,000,000.
    pub target_intr_rate: u32,
    /// Hardirq time share above which moderation kicks in, 0 = off, 0-100.
    pub hardirq_percent: u32,
    /// Epoch length, 1-100 ms.
    pub update_ms: u32,
    /// Correction of the active-CPU estimate in percent, 50-1000 (not settable at runtime).
    pub scale_cpus: u32,
    /// v1: extra timer runs before re-enabling, 0-20.
    pub timer_rounds: u32,
}

impl Default for GsimParams {
    /// The module defaults: moderation off, update_ms 5, scale_cpus 150.
    fn default() -> Self {
        GsimParams {
            delay_us: 0,
            target_intr_rate: 0,
            hardirq_percent: 0,
            update_ms: 5,
            scale_cpus: 150,
            timer_rounds: 0,
        }
    }
}

impl GsimParams {
    /// The values the patch suggests: delay_us 100, target_intr_rate 1M, hardirq_percent 70.
    pub fn suggested() -> Self {
        GsimParams {
            delay_us: 100,
            target_intr_rate: 1_000_000,
            hardirq_percent: 70,
            ..GsimParams::default()
        }
    }

    /// The kernel clamps on write; irqlab refuses out-of-range values instead.
    pub fn validate(&self) -> Result<(), GsimError> {
        let checks = [
            ("delay_us", self.delay_us, 0, 500),
            ("target_intr_rate", self.target_intr_rate, 0, 50_000_000),
            ("hardirq_percent", self.hardirq_percent, 0, 100),
            ("update_ms", self.update_ms, 1, 100),
            ("scale_cpus", self.scale_cpus, 50, 1000),
            ("timer_rounds", self.timer_rounds, 0, 20),
        ];
        for (name, value, min, max) in checks {
            if value < min || value > max {
                return Err(GsimError {
                    name,
                    value,
                    min,
                    max,
                });
            }
        }
        Ok(())
    }
}

/// A GSIM parameter outside its range.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GsimError {
    pub name: &'static str,
    pub value: u32,
    pub min: u32,
    pub max: u32,
}

impl fmt::Display for GsimError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "gsim parameter {} = {} is outside its range {}-{}",
            self.name, self.value, self.min, self.max
        )
    }
}

impl std::error::Error for GsimError {}

/// `irq_mod_info`: parameters, their write sequence, and the two shared counters.
#[derive(Clone, Debug)]
pub struct GsimGlobal {
    params: GsimParams,
    seq: u32,
    total_intrs: u32,
    total_cpus: u32,
}

impl GsimGlobal {
    pub fn new(params: GsimParams) -> Result<GsimGlobal, GsimError> {
        params.validate()?;
        Ok(GsimGlobal {
            params,
            seq: 1,
            total_intrs: 0,
            total_cpus: 0,
        })
    }

    /// A procfs write: every CPU resets mod_ns to the maximum at its next epoch, so a
    /// bus-saturated system cannot hold the measured rate under target and stall the loop.
    pub fn set_params(&mut self, params: GsimParams) -> Result<(), GsimError> {
        params.validate()?;
        self.params = params;
        self.seq = self.seq.wrapping_add(1);
        Ok(())
    }

    pub fn params(&self) -> GsimParams {
        self.params
    }
}

/// Per-CPU statistics, as /proc/irq/soft_moderation/stats shows them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GsimStats {
    /// EWMA (factor 64) of the global interrupt rate seen at this CPU's epochs.
    pub global_intr_rate: u32,
    pub local_intr_rate: u32,
    /// EWMA of active CPUs × 256.
    pub scaled_cpu_count: u32,
    pub global_irq_high: u32,
    pub local_irq_high: u32,
    pub hardirq_high: u32,
    pub timer_set: u32,
    pub enqueue: u32,
    pub stray_irq: u32,
    pub epochs: u32,
}

/// An IRQ released by the timer; `pending` means one arrived while masked: replay it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GsimRelease {
    pub irq: u32,
    pub pending: bool,
}

/// What the caller does when the CPU's moderation timer fires.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum GsimExpiry {
    /// timer_rounds: run these IRQs' handlers from the timer, keep them disabled, and fire
    /// again at `rearm_at`.
    RunHandlers { irqs: Vec<u32>, rearm_at: u64 },
    /// Re-enable these IRQs (`__enable_irq`), replaying the pending ones.
    Enable(Vec<GsimRelease>),
}

/// `struct irq_mod_state`: one CPU's moderation state.
#[derive(Clone, Debug)]
pub struct GsimCpu {
    seq: u32,
    update_ns: u32,
    delay_ns: u32,
    mod_ns: u32,
    epoch_start_ns: u64,
    epoch_ns: u32,
    intr_count: u32,
    last_total_intrs: u32,
    last_total_cpus: u32,
    last_irqtime: u64,
    sleep_ns: u32,
    timer: Option<u64>,
    rounds_left: u32,
    /// Moderated IRQs, in list_add order (newest last); drained newest first.
    descs: Vec<GsimRelease>,
    stats: GsimStats,
}

impl GsimCpu {
    /// A CPU that has already picked up the current parameters: mod_ns starts at the
    /// maximum, as after any parameter write.
    pub fn new(global: &GsimGlobal, now_ns: u64) -> GsimCpu {
        let mut cpu = GsimCpu {
            seq: 0,
            update_ns: 0,
            delay_ns: 0,
            mod_ns: 0,
            epoch_start_ns: now_ns,
            epoch_ns: 0,
            intr_count: 0,
            last_total_intrs: global.total_intrs,
            last_total_cpus: global.total_cpus,
            last_irqtime: 0,
            sleep_ns: 0,
            timer: None,
            rounds_left: 0,
            descs: Vec::new(),
            stats: GsimStats::default(),
        };
        cpu.fetch_params(global);
        cpu
    }

    fn fetch_params(&mut self, global: &GsimGlobal) {
        self.seq = global.seq;
        self.update_ns = global.params.update_ms.saturating_mul(1_000_000);
        self.mod_ns = global.params.delay_us.saturating_mul(1_000);
        self.delay_ns = self.mod_ns;
    }

    /// The current adaptive delay.
    pub fn mod_ns(&self) -> u32 {
        self.mod_ns
    }
    /// When the CPU's moderation timer fires, if armed.
    pub fn timer_deadline(&self) -> Option<u64> {
        self.timer
    }
    pub fn stats(&self) -> GsimStats {
        self.stats
    }
    /// Is `irq` disabled and listed on this CPU?
    pub fn is_moderated(&self, irq: u32) -> bool {
        self.descs.iter().any(|d| d.irq == irq)
    }

    /// irq_start_moderation, called after an opted-in IRQ's handler ran on this CPU.
    /// `hardirq_time_ns` is the CPU's cumulative hardirq time (CPUTIME_IRQ). True: the IRQ
    /// is now disabled and listed until [`GsimCpu::timer_expired`] releases it.
    pub fn hook(
        &mut self,
        global: &mut GsimGlobal,
        now_ns: u64,
        hardirq_time_ns: u64,
        irq: u32,
    ) -> bool {
        // The static key is off while delay_us is 0.
        if global.params.delay_us == 0 {
            return false;
        }
        self.intr_count = self.intr_count.wrapping_add(1);
        if self.intr_count & EPOCH_CHECK_MASK == 0 {
            self.check_epoch(global, now_ns, hardirq_time_ns);
        }
        self.do_start(global, now_ns, irq)
    }

    /// An interrupt for an IRQ this CPU holds disabled: the modified handler masks it and
    /// sets IRQS_PENDING. Returns false (a stray) if the IRQ is not listed here.
    pub fn on_masked_irq(&mut self, irq: u32) -> bool {
        match self.descs.iter_mut().find(|d| d.irq == irq) {
            Some(d) => {
                d.pending = true;
                true
            }
            None => false,
        }
    }

    /// check_epoch: run the controller when an epoch (update_ns, minus 5 µs of slack) has
    /// passed. [`GsimCpu::hook`] calls it every 16th interrupt.
    pub fn check_epoch(&mut self, global: &mut GsimGlobal, now_ns: u64, hardirq_time_ns: u64) {
        let epoch_ns = now_ns.saturating_sub(self.epoch_start_ns);
        if epoch_ns < u64::from(self.update_ns).saturating_sub(EPOCH_SLACK_NS) {
            return;
        }
        self.epoch_ns = u32::try_from(epoch_ns).unwrap_or(u32::MAX).max(1);
        self.epoch_start_ns = now_ns;
        self.update_epoch(global, hardirq_time_ns);
    }

    /// irq_moderation_update_epoch.
    fn update_epoch(&mut self, global: &mut GsimGlobal, hardirq_time_ns: u64) {
        self.stats.epochs += 1;
        if global.seq != self.seq {
            self.fetch_params(global);
        }
        let p = global.params;
        if p.target_intr_rate == 0 && p.hardirq_percent == 0 {
            // Fixed moderation at delay_us.
            self.mod_ns = self.delay_ns;
            self.stats.global_intr_rate = 0;
            self.stats.local_intr_rate = 0;
            self.stats.scaled_cpu_count = 0;
            return;
        }
        // N epochs' worth of (1 ± 1/F) approximated as (1 ± N/F), N capped below F.
        let steps = (self.epoch_ns / self.update_ns.max(1)).clamp(1, MIN_SCALING_FACTOR - 1);
        let mut above_target = false;
        if p.target_intr_rate > 0 && self.irqrate_high(global, steps) {
            above_target = true;
        }
        if p.hardirq_percent > 0 && self.hardirq_high(p.hardirq_percent, hardirq_time_ns) {
            above_target = true;
        }
        // Increase fast, decrease slowly: a falling delay raises the interrupt rate.
        if above_target {
            self.mod_ns = self.mod_ns.max(GSIM_MIN_DELAY_NS);
            self.mod_ns += self.mod_ns * steps / MIN_SCALING_FACTOR;
            self.mod_ns = self.mod_ns.min(self.delay_ns);
        } else {
            self.mod_ns -= self.mod_ns * steps / (2 * MIN_SCALING_FACTOR);
            if self.mod_ns < GSIM_MIN_DELAY_NS {
                self.mod_ns = 0;
            }
        }
    }

    /// irqrate_high: high only if the global rate is over target *and* this CPU's share,
    /// scaled by the active-CPU estimate and scale_cpus, is too.
    fn irqrate_high(&mut self, global: &mut GsimGlobal, steps: u32) -> bool {
        let epoch_ns = u64::from(self.epoch_ns);
        let local = u64::from(self.intr_count) * 1_000_000_000 / epoch_ns;
        global.total_intrs = global.total_intrs.wrapping_add(self.intr_count);
        self.intr_count = 1;
        let delta_intrs = global.total_intrs.wrapping_sub(self.last_total_intrs);
        self.last_total_intrs = global.total_intrs;
        let global_rate = u64::from(delta_intrs) * 1_000_000_000 / epoch_ns;
        // Each active CPU bumps total_cpus once per epoch; rescale to update_ns.
        global.total_cpus = global.total_cpus.wrapping_add(1);
        let delta_cpus = u64::from(global.total_cpus.wrapping_sub(self.last_total_cpus));
        self.last_total_cpus = global.total_cpus;
        let active_cpus =
            ((delta_cpus * u64::from(self.update_ns) + epoch_ns / 2) / epoch_ns).max(1);
        let target = u64::from(global.params.target_intr_rate);
        let global_high = global_rate > target;
        let local_high = local * active_cpus * u64::from(global.params.scale_cpus) > target * 100;
        let to_u32 = |v: u64| u32::try_from(v).unwrap_or(u32::MAX);
        let s = &mut self.stats;
        s.global_intr_rate = smooth_avg(s.global_intr_rate, to_u32(global_rate), steps);
        s.local_intr_rate = smooth_avg(s.local_intr_rate, to_u32(local), steps);
        s.scaled_cpu_count = smooth_avg(s.scaled_cpu_count, to_u32(active_cpus * 256), steps);
        s.local_irq_high += u32::from(local_high);
        s.global_irq_high += u32::from(global_high);
        global_high && local_high
    }

    /// hardirq_high: this epoch's hardirq time over hardirq_percent of the epoch.
    fn hardirq_high(&mut self, hardirq_percent: u32, hardirq_time_ns: u64) -> bool {
        let irqtime = hardirq_time_ns.saturating_sub(self.last_irqtime);
        self.last_irqtime = hardirq_time_ns;
        let above =
            u128::from(irqtime) * 100 > u128::from(self.epoch_ns) * u128::from(hardirq_percent);
        self.stats.hardirq_high += u32::from(above);
        above
    }

    /// irq_moderation_do_start: small delays accumulate in sleep_ns until they reach 10 µs,
    /// so mod_ns = 2 µs arms the timer (for 10 µs) only every 5th interrupt.
    fn do_start(&mut self, global: &GsimGlobal, now_ns: u64, irq: u32) -> bool {
        if self.timer.is_none() {
            self.sleep_ns = self.sleep_ns.saturating_add(self.mod_ns);
            if self.sleep_ns < GSIM_MIN_TIMER_NS {
                return false;
            }
            self.stats.timer_set += 1;
            self.timer = Some(now_ns + u64::from(self.sleep_ns));
            self.rounds_left = global.params.timer_rounds;
        }
        if self.is_moderated(irq) {
            self.stats.stray_irq += 1;
        } else {
            self.stats.enqueue += 1;
            self.descs.push(GsimRelease {
                irq,
                pending: false,
            });
        }
        true
    }

    /// The CPU's moderation timer fired (timer_callback / drain_desc_list).
    pub fn timer_expired(&mut self, now_ns: u64) -> GsimExpiry {
        if self.rounds_left > 0 {
            self.rounds_left -= 1;
            let rearm_at = now_ns + u64::from(self.sleep_ns.max(GSIM_MIN_TIMER_NS));
            self.timer = Some(rearm_at);
            for d in &mut self.descs {
                d.pending = false;
            }
            let irqs = self.descs.iter().rev().map(|d| d.irq).collect();
            return GsimExpiry::RunHandlers { irqs, rearm_at };
        }
        self.timer = None;
        // Prepare to accumulate the next moderation delay.
        self.sleep_ns = 0;
        // list_add puts new entries at the head, so the drain releases newest first.
        let released = self.descs.drain(..).rev().collect();
        GsimExpiry::Enable(released)
    }
}

/// smooth_avg: EWMA with factor 64, `steps` applications approximated linearly.
fn smooth_avg(old: u32, cur: u32, steps: u32) -> u32 {
    let steps = u64::from(steps.min(GSIM_SMOOTH_FACTOR - 1));
    let f = u64::from(GSIM_SMOOTH_FACTOR);
    (((f - steps) * u64::from(old) + steps * u64::from(cur)) / f) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn smooth_avg_moves_one_sixty_fourth_per_step() {
        assert_eq!(smooth_avg(0, 6400, 1), 100);
        assert_eq!(smooth_avg(6400, 6400, 3), 6400);
        assert_eq!(smooth_avg(0, 6400, 100), 6300); // steps capped at 63
    }

    #[test]
    fn out_of_range_parameters_are_refused() {
        let p = GsimParams {
            delay_us: 501,
            ..GsimParams::default()
        };
        let e = GsimGlobal::new(p).expect_err("delay_us 501 refused");
        assert_eq!(e.name, "delay_us");
        assert!(e.to_string().contains("0-500"));
        assert!(GsimGlobal::new(GsimParams::suggested()).is_ok());
    }
}
