//! Ming Lei's 2019 IRQ flood detector: EWMA (127/128) of the gap between irq_exit and the
//! next irq_enter, flood when it averages 8 µs or less.

use irqlab_core::flood::{FloodDetector, HandlerPlacement, IRQ_FLOOD_THRESHOLD_NS};

/// Interrupts every `period_ns`, each taking `handling_ns` of hardirq + irq_exit softirq.
fn drive(period_ns: u64, handling_ns: u64, n: u64) -> FloodDetector {
    let mut d = FloodDetector::default();
    // `now` counts from boot, as sched_clock does.
    let boot = 1_000_000_000;
    for i in 0..n {
        let t = boot + i * period_ns;
        d.irq_enter(t);
        d.irq_exit(t + handling_ns);
    }
    d
}

#[test]
fn interrupts_faster_than_they_leave_room_for_are_a_flood() {
    // Every 10 µs, 5 µs of handling: 5 µs left between interrupts.
    let mut d = drive(10_000, 5_000, 5_000);
    assert!(d.flood_detected());
    assert!(d.avg_interval_ns().abs_diff(5_000) < 50);
    assert_eq!(d.placement(true), HandlerPlacement::RescueThread);
    assert_eq!(
        d.placement(false),
        HandlerPlacement::Hardirq,
        "only IRQF_RESCUE_THREAD"
    );
    assert_eq!(d.floods(), 1);
}

#[test]
fn the_same_rate_with_quick_handlers_is_not_a_flood() {
    // Every 10 µs, 1 µs of handling: 9 µs left, over the 8 µs threshold.
    let mut d = drive(10_000, 1_000, 5_000);
    assert!(!d.flood_detected());
    assert!(d.avg_interval_ns() > IRQ_FLOOD_THRESHOLD_NS);
    assert_eq!(d.placement(true), HandlerPlacement::Hardirq);
}

#[test]
fn the_average_is_seeded_with_the_first_gap_then_moves_one_128th() {
    let mut d = FloodDetector::default();
    d.irq_enter(128_000);
    assert_eq!(d.avg_interval_ns(), 0, "no gap measured yet");
    assert!(!d.flood_detected(), "a CPU with no history is not flooded");
    d.irq_exit(130_000);
    d.irq_enter(130_000 + 256_000);
    assert_eq!(d.avg_interval_ns(), 256_000, "seeded with the first gap");
    d.irq_exit(400_000);
    d.irq_enter(401_000);
    assert_eq!(d.avg_interval_ns(), (256_000 * 127 + 1_000) / 128);
    // A long-quiet CPU takes many interrupts to be judged flooded again: after 1 s of
    // quiet, 100 interrupts 1 µs apart still leave the average far above 8 µs.
    let mut quiet = FloodDetector::default();
    quiet.irq_enter(0);
    quiet.irq_exit(1_000);
    for i in 0..100 {
        let t = 1_000_000_000 + i * 10_000;
        quiet.irq_enter(t);
        quiet.irq_exit(t + 9_000);
    }
    assert!(!quiet.flood_detected());
    assert_eq!(quiet.placement(true), HandlerPlacement::Hardirq);
}

#[test]
fn a_clock_that_starts_at_zero_does_not_look_flooded() {
    // A simulation starts at t = 0: 19 µs gaps are no flood, from the first interrupt on.
    let mut d = FloodDetector::default();
    for i in 0..64u64 {
        let t = i * 20_000;
        d.irq_enter(t);
        assert_eq!(
            d.placement(true),
            HandlerPlacement::Hardirq,
            "interrupt {i}"
        );
        d.irq_exit(t + 1_000);
    }
    assert_eq!(d.floods(), 0);
}
