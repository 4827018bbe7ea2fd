//! Ming Lei's 2019 IRQ flood detector: EWMA (127/128) of the gap between irq_exit and the
//! next irq_enter, flood when it averages 8 µs or less.

use irqlab_core::flood::{FloodDetector, HandlerPlacement, IRQ_FLOOD_THRESHOLD_NS};

/// Interrupts every `period_ns`, each taking `handling_ns` of hardirq + irq_exit softirq.
fn drive(period_ns: u64, handling_ns: u64, n: u64) -> FloodDetector {
    let mut d = FloodDetector::default();
    // `now` counts from boot, as sched_clock does: the first gap is 1 s.
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
fn the_average_moves_one_128th_per_interrupt() {
    let mut d = FloodDetector::default();
    d.irq_enter(128_000);
    assert_eq!(d.avg_interval_ns(), 1_000);
    d.irq_exit(130_000);
    d.irq_enter(130_000 + 256_000);
    assert_eq!(d.avg_interval_ns(), (1_000 * 127 + 256_000) / 128);
    // A long-quiet CPU takes many interrupts to be judged flooded again.
    let mut quiet = drive(10_000, 9_000, 100);
    assert!(!quiet.flood_detected());
    assert_eq!(quiet.placement(true), HandlerPlacement::Hardirq);
}
