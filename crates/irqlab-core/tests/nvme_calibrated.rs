//! Calibrated interrupts, Algorithm 2 of Tai et al. (OSDI '21).

use irqlab_core::nvme::{
    Calibrated, CalibratedParams, Fire, FireCause, Hint, IrqDecision, SQE_HINT_BARRIER,
    SQE_HINT_URGENT,
};

fn cal(delta_ns: u64, thr: u32) -> Calibrated {
    Calibrated::new(CalibratedParams { delta_ns, thr })
}

fn fire(coalesced: u32, cause: FireCause) -> IrqDecision {
    IrqDecision::Fire(Fire { coalesced, cause })
}

#[test]
fn defaults_are_the_papers_optane_settings() {
    assert_eq!(
        CalibratedParams::default(),
        CalibratedParams {
            delta_ns: 6_000,
            thr: 32
        }
    );
}

#[test]
fn hints_decode_urgent_xor_barrier() {
    assert_eq!(Hint::from_sqe_hints(SQE_HINT_URGENT), Hint::Urgent);
    assert_eq!(Hint::from_sqe_hints(SQE_HINT_BARRIER), Hint::Barrier);
    assert_eq!(
        Hint::from_sqe_hints(SQE_HINT_URGENT | SQE_HINT_BARRIER),
        Hint::None
    );
    assert_eq!(Hint::from_sqe_hints(0), Hint::None);
}

#[test]
fn each_completion_pushes_the_timeout_out_by_delta() {
    let mut c = cal(6_000, 32);
    assert_eq!(
        c.on_completion(0, Hint::None),
        IrqDecision::ArmTimer { deadline_ns: 6_000 }
    );
    assert_eq!(
        c.on_completion(5_000, Hint::None),
        IrqDecision::ArmTimer {
            deadline_ns: 11_000
        }
    );
    assert_eq!(c.on_timer(6_000), None, "stale: the burst continued");
    assert_eq!(
        c.on_timer(11_000),
        Some(Fire {
            coalesced: 2,
            cause: FireCause::Timer
        })
    );
    assert_eq!(c.on_timer(20_000), None);
}

#[test]
fn urgent_fires_at_once_and_takes_the_withheld_ones_along() {
    let mut c = cal(6_000, 32);
    c.on_completion(0, Hint::None);
    c.on_completion(1_000, Hint::None);
    assert_eq!(
        c.on_completion(2_000, Hint::Urgent),
        fire(3, FireCause::Urgent)
    );
    assert_eq!(c.coalesced(), 0);
    assert_eq!(c.deadline(), None);
}

#[test]
fn barrier_ends_the_batch_without_waiting_for_delta() {
    let mut c = cal(15_000, 32);
    for t in [0, 1_000, 2_000] {
        assert!(matches!(
            c.on_completion(t, Hint::None),
            IrqDecision::ArmTimer { .. }
        ));
    }
    assert_eq!(
        c.on_completion(3_000, Hint::Barrier),
        fire(4, FireCause::Barrier)
    );
}

#[test]
fn thr_bounds_a_long_burst() {
    let mut c = cal(6_000, 4);
    let mut fires = 0;
    for i in 0..20u64 {
        if let IrqDecision::Fire(f) = c.on_completion(i * 1_000, Hint::None) {
            assert_eq!(
                f,
                Fire {
                    coalesced: 4,
                    cause: FireCause::Threshold
                }
            );
            fires += 1;
        }
    }
    assert_eq!(fires, 5, "a burst of 20 at 1 µs spacing fires every 4");
}
