//! GSIM (Luigi Rizzo, v4 2026): the adaptive controller's +1/8 and −1/16 steps with the
//! 500 ns floor, the rate test that needs both global and local load, fixed mode, the
//! parameter reset, and the mechanism (10 µs accumulation, per-CPU timer, pending replay).

use irqlab_core::gsim::{
    GSIM_MIN_DELAY_NS, GsimCpu, GsimExpiry, GsimGlobal, GsimParams, GsimRelease,
};

const MS: u64 = 1_000_000;

fn hardirq_params(delay_us: u32) -> GsimParams {
    GsimParams {
        delay_us,
        target_intr_rate: 0,
        hardirq_percent: 50,
        update_ms: 5,
        ..GsimParams::default()
    }
}

#[test]
fn decays_by_a_sixteenth_and_climbs_by_an_eighth_capped_at_delay_us() {
    let mut g = GsimGlobal::new(hardirq_params(100)).unwrap();
    let mut cpu = GsimCpu::new(&g, 0);
    assert_eq!(cpu.mod_ns(), 100_000, "starts at the maximum");
    let mut irqtime = 0;
    // Quiet epochs (no hardirq time): −1/16 each.
    cpu.check_epoch(&mut g, 5 * MS, irqtime);
    assert_eq!(cpu.mod_ns(), 93_750);
    cpu.check_epoch(&mut g, 10 * MS, irqtime);
    assert_eq!(cpu.mod_ns(), 87_891);
    // Too early for an epoch (less than update_ms − 5 µs): nothing.
    cpu.check_epoch(&mut g, 14 * MS, irqtime);
    assert_eq!(cpu.mod_ns(), 87_891);
    // 80% of the epoch in hardirq > 50%: +1/8 each, capped at delay_us.
    irqtime += 4 * MS;
    cpu.check_epoch(&mut g, 15 * MS, irqtime);
    assert_eq!(cpu.mod_ns(), 87_891 + 87_891 / 8);
    irqtime += 4 * MS;
    cpu.check_epoch(&mut g, 20 * MS, irqtime);
    assert_eq!(cpu.mod_ns(), 100_000);
    assert_eq!(cpu.stats().hardirq_high, 2);
    // A double-length epoch counts as two steps: −2/16.
    cpu.check_epoch(&mut g, 30 * MS, irqtime);
    assert_eq!(cpu.mod_ns(), 100_000 - 100_000 * 2 / 16);
}

#[test]
fn under_500_ns_snaps_to_zero_and_climbing_restarts_from_500() {
    let mut g = GsimGlobal::new(hardirq_params(1)).unwrap();
    let mut cpu = GsimCpu::new(&g, 0);
    let mut t = 0;
    let mut seen = vec![cpu.mod_ns()];
    while cpu.mod_ns() != 0 {
        t += 5 * MS;
        cpu.check_epoch(&mut g, t, 0);
        seen.push(cpu.mod_ns());
    }
    assert_eq!(
        seen,
        vec![1000, 938, 880, 825, 774, 726, 681, 639, 600, 563, 528, 0],
        "528 − 33 = 495 < 500 snaps to 0"
    );
    t += 5 * MS;
    cpu.check_epoch(&mut g, t, 5 * MS);
    assert_eq!(cpu.mod_ns(), GSIM_MIN_DELAY_NS + GSIM_MIN_DELAY_NS / 8);
}

#[test]
fn fixed_mode_and_parameter_changes_reset_to_the_maximum() {
    let fixed = GsimParams {
        delay_us: 50,
        ..GsimParams::default()
    };
    let mut g = GsimGlobal::new(fixed).unwrap();
    let mut cpu = GsimCpu::new(&g, 0);
    cpu.check_epoch(&mut g, 5 * MS, 0);
    assert_eq!(cpu.mod_ns(), 50_000, "both targets 0: fixed delay_us");
    g.set_params(hardirq_params(200)).unwrap();
    cpu.check_epoch(&mut g, 10 * MS, 0);
    // The new delay is picked up as the start value, then the quiet epoch decays it.
    assert_eq!(cpu.mod_ns(), 200_000 - 200_000 / 16);
    assert!(
        g.set_params(GsimParams {
            update_ms: 0,
            ..fixed
        })
        .is_err()
    );
}

/// Feeds `n` interrupts of one IRQ evenly over `[start, start + 5 ms)` through the hook.
fn interrupts(cpu: &mut GsimCpu, g: &mut GsimGlobal, start: u64, n: u64, irq: u32) {
    for i in 1..=n {
        cpu.hook(g, start + i * 5 * MS / n, 0, irq);
    }
}

#[test]
fn rate_moderation_needs_both_the_global_and_the_local_rate_high() {
    let params = GsimParams {
        delay_us: 100,
        target_intr_rate: 1_000_000,
        hardirq_percent: 0,
        update_ms: 5,
        ..GsimParams::default()
    };
    let mut g = GsimGlobal::new(params).unwrap();
    let mut busy = GsimCpu::new(&g, 0);
    let mut quiet = GsimCpu::new(&g, 0);
    // 10,000 interrupts in 5 ms on the busy CPU (2M/s), 160 on the quiet one.
    interrupts(&mut busy, &mut g, 0, 10_000, 1);
    interrupts(&mut quiet, &mut g, 0, 160, 2);
    assert_eq!(busy.stats().epochs, 1);
    assert_eq!(quiet.stats().epochs, 1);
    assert_eq!(
        (busy.stats().global_irq_high, busy.stats().local_irq_high),
        (1, 1)
    );
    assert_eq!(busy.mod_ns(), 100_000, "high: +1/8, capped");
    // The quiet CPU sees the global rate over target, but 32K/s × 2 CPUs × 150% is far
    // under 1M: it is not the source, so it decays.
    assert_eq!(
        (quiet.stats().global_irq_high, quiet.stats().local_irq_high),
        (1, 0)
    );
    assert_eq!(quiet.mod_ns(), 93_750);
    assert_eq!(
        quiet.stats().scaled_cpu_count,
        2 * 256 / 64,
        "EWMA of 2 CPUs × 256"
    );
}

#[test]
fn small_delays_accumulate_to_10_us_before_the_timer_is_armed() {
    let mut g = GsimGlobal::new(GsimParams {
        delay_us: 2,
        ..GsimParams::default()
    })
    .unwrap();
    let mut cpu = GsimCpu::new(&g, 0);
    // delay_us=2: the timer is set only every 5 interrupts, for 10 µs.
    for t in 1..=4 {
        assert!(!cpu.hook(&mut g, t * 1_000, 0, 9));
    }
    assert!(cpu.hook(&mut g, 5_000, 0, 9));
    assert_eq!(cpu.timer_deadline(), Some(15_000));
    assert!(cpu.is_moderated(9));
    // Another source on this CPU joins the list; the timer is already queued.
    assert!(cpu.hook(&mut g, 6_000, 0, 11));
    assert!(
        cpu.on_masked_irq(9),
        "IRQ 9 fires while disabled: masked, pending"
    );
    assert!(!cpu.on_masked_irq(42));
    assert_eq!(
        cpu.timer_expired(15_000),
        GsimExpiry::Enable(vec![
            GsimRelease {
                irq: 11,
                pending: false
            },
            GsimRelease {
                irq: 9,
                pending: true
            },
        ])
    );
    assert_eq!(cpu.timer_deadline(), None);
    assert_eq!((cpu.stats().timer_set, cpu.stats().enqueue), (1, 2));
    // sleep_ns restarted from 0: four more interrupts before the next timer.
    for t in 0..4 {
        assert!(!cpu.hook(&mut g, 20_000 + t, 0, 9));
    }
    assert!(cpu.hook(&mut g, 20_004, 0, 9));
}

#[test]
fn timer_rounds_poll_from_the_timer_before_re_enabling() {
    let mut g = GsimGlobal::new(GsimParams {
        delay_us: 20,
        timer_rounds: 2,
        ..GsimParams::default()
    })
    .unwrap();
    let mut cpu = GsimCpu::new(&g, 0);
    assert!(cpu.hook(&mut g, 0, 0, 3));
    assert_eq!(cpu.timer_deadline(), Some(20_000));
    assert_eq!(
        cpu.timer_expired(20_000),
        GsimExpiry::RunHandlers {
            irqs: vec![3],
            rearm_at: 40_000
        }
    );
    assert_eq!(
        cpu.timer_expired(40_000),
        GsimExpiry::RunHandlers {
            irqs: vec![3],
            rearm_at: 60_000
        }
    );
    assert!(matches!(cpu.timer_expired(60_000), GsimExpiry::Enable(r) if r.len() == 1));
}

#[test]
fn moderation_off_while_delay_us_is_zero() {
    let mut g = GsimGlobal::new(GsimParams::default()).unwrap();
    let mut cpu = GsimCpu::new(&g, 0);
    for t in 0..100 {
        assert!(!cpu.hook(&mut g, t * 1000, 0, 1));
    }
    assert_eq!(cpu.stats().epochs, 0);
}
