//! Feature 08h/09h encodings and the aggregation state machine; the device-side policy.

use irqlab_core::DeviceCoalescing;
use irqlab_core::nvme::{
    CoalesceParams, CoalescingDisable, DeviceIrq, Fire, FireCause, Hint, IrqCoalescing,
    IrqDecision, IrqVectorConfig, NvmeCoalescer,
};

#[test]
fn feature_08h_cdw11_round_trips() {
    let f = IrqCoalescing::from_cdw11(0x0a07);
    assert_eq!((f.thr, f.time_100us), (7, 10));
    assert_eq!(f.threshold_entries(), 8, "THR is 0-based");
    assert_eq!(f.time_ns(), 1_000_000);
    assert_eq!(f.cdw11(), 0x0a07);
    assert_eq!(
        IrqCoalescing::from_cdw11(0xffff_0102).cdw11(),
        0x0102,
        "reserved bits dropped"
    );
}

#[test]
fn feature_09h_cdw11_round_trips() {
    let c = IrqVectorConfig::from_cdw11(0x1_0005);
    assert_eq!((c.iv, c.cd), (5, true));
    assert_eq!(c.cdw11(), 0x1_0005);
    assert!(!IrqVectorConfig::from_cdw11(0x0005).cd);
}

#[test]
fn usec_count_maps_to_the_nearest_08h_encoding() {
    let p = CoalesceParams::from_usec_count(150, 16);
    assert_eq!((p.count, p.time_ns), (16, 150_000));
    assert_eq!(
        p.to_feature(),
        IrqCoalescing {
            thr: 15,
            time_100us: 2
        }
    );
    assert_eq!(CoalesceParams::from_usec_count(1, 0).count, 1);
    assert_eq!(
        CoalesceParams::from_usec_count(100_000, 1000).to_feature(),
        IrqCoalescing {
            thr: 255,
            time_100us: 255
        }
    );
}

fn fire(coalesced: u32, cause: FireCause) -> IrqDecision {
    IrqDecision::Fire(Fire { coalesced, cause })
}

#[test]
fn threshold_fires_on_the_thr_plus_one_th_entry() {
    let mut c = NvmeCoalescer::from_feature(IrqCoalescing {
        thr: 3,
        time_100us: 1,
    });
    assert_eq!(
        c.on_completion(1_000),
        IrqDecision::ArmTimer {
            deadline_ns: 101_000
        }
    );
    assert_eq!(c.on_completion(2_000), IrqDecision::Hold);
    assert_eq!(c.on_completion(3_000), IrqDecision::Hold);
    assert_eq!(c.on_completion(4_000), fire(4, FireCause::Threshold));
    assert_eq!(c.deadline(), None);
    assert_eq!(
        c.on_timer(101_000),
        None,
        "stale timer after a threshold fire"
    );
}

#[test]
fn time_runs_from_the_first_withheld_completion() {
    let mut c = NvmeCoalescer::from_feature(IrqCoalescing {
        thr: 9,
        time_100us: 2,
    });
    assert_eq!(
        c.on_completion(0),
        IrqDecision::ArmTimer {
            deadline_ns: 200_000
        }
    );
    assert_eq!(
        c.on_completion(150_000),
        IrqDecision::Hold,
        "no re-arm: not adaptive"
    );
    assert_eq!(c.on_timer(199_999), None);
    assert_eq!(
        c.on_timer(200_000),
        Some(Fire {
            coalesced: 2,
            cause: FireCause::Timer
        })
    );
    assert_eq!(
        c.on_completion(300_000),
        IrqDecision::ArmTimer {
            deadline_ns: 500_000
        }
    );
}

#[test]
fn zero_time_or_zero_thr_disables_coalescing() {
    for f in [
        IrqCoalescing {
            thr: 5,
            time_100us: 0,
        },
        IrqCoalescing {
            thr: 0,
            time_100us: 5,
        },
    ] {
        let mut c = NvmeCoalescer::from_feature(f);
        assert_eq!(c.on_completion(10), fire(1, FireCause::Immediate));
    }
}

#[test]
fn coalescing_disable_bypasses_aggregation_for_its_vector() {
    let mut c = NvmeCoalescer::from_feature(IrqCoalescing {
        thr: 7,
        time_100us: 3,
    });
    c.set_vector_config(IrqVectorConfig { iv: 1, cd: true });
    assert_eq!(c.on_completion(0), fire(1, FireCause::Immediate));
    c.set_vector_config(IrqVectorConfig { iv: 1, cd: false });
    assert!(matches!(c.on_completion(0), IrqDecision::ArmTimer { .. }));
}

#[test]
fn reprogramming_judges_withheld_completions_at_once() {
    let mut c = NvmeCoalescer::new(CoalesceParams::from_usec_count(50, 8));
    c.on_completion(0);
    c.on_completion(1_000);
    c.on_completion(2_000);
    assert_eq!(
        c.set_params(CoalesceParams::from_usec_count(50, 3), 3_000),
        fire(3, FireCause::Threshold)
    );
    c.on_completion(10_000);
    assert_eq!(
        c.set_params(CoalesceParams::from_usec_count(20, 8), 11_000),
        IrqDecision::ArmTimer {
            deadline_ns: 30_000
        }
    );
    assert_eq!(
        c.set_params(CoalesceParams::from_usec_count(1, 8), 12_000),
        fire(1, FireCause::Timer)
    );
}

#[test]
fn device_irq_follows_the_policy() {
    let mut off = DeviceIrq::from_policy(DeviceCoalescing::Off);
    assert_eq!(
        off.on_completion(0, Hint::None),
        fire(1, FireCause::Immediate)
    );
    let mut nvme = DeviceIrq::from_policy(DeviceCoalescing::Nvme {
        thr: 1,
        time_100us: 1,
    });
    assert!(
        matches!(
            nvme.on_completion(0, Hint::Urgent),
            IrqDecision::ArmTimer { .. }
        ),
        "08h ignores hints"
    );
    assert_eq!(
        nvme.on_completion(5, Hint::None),
        fire(2, FireCause::Threshold)
    );
    let mut cal = DeviceIrq::from_policy(DeviceCoalescing::Calibrated);
    assert_eq!(
        cal.on_completion(0, Hint::Urgent),
        fire(1, FireCause::Urgent)
    );
    cal.on_completion(10, Hint::None);
    assert_eq!(cal.deadline(), Some(6_010));
    let d = cal.program(CoalesceParams::from_usec_count(10, 4), 20);
    assert_eq!(
        d,
        fire(1, FireCause::Immediate),
        "withheld completions go out with the switch"
    );
    assert!(matches!(cal, DeviceIrq::Nvme(_)));
}

#[test]
fn feature_09h_cd_makes_one_vector_fire_every_completion_under_08h_aggregation() {
    let mut cd = CoalescingDisable::default();
    cd.insert(3).unwrap();
    assert!(cd.insert(2048).is_err(), "beyond the MSI-X table");
    assert_eq!(cd.to_string(), "3");
    let agg = DeviceCoalescing::Nvme {
        thr: 3,
        time_100us: 1,
    };
    // Vector 3 has CD set: every completion fires at once.
    let mut v3 = DeviceIrq::for_vector(agg, cd.config(3));
    for t in 0..3 {
        assert_eq!(
            v3.on_completion(t, Hint::None),
            fire(1, FireCause::Immediate)
        );
    }
    // Vector 1 keeps the aggregation: the first completion arms the timer.
    let mut v1 = DeviceIrq::for_vector(agg, cd.config(1));
    assert!(matches!(
        v1.on_completion(0, Hint::None),
        IrqDecision::ArmTimer { .. }
    ));
    // CD means nothing without 08h aggregation.
    let mut off = DeviceIrq::for_vector(DeviceCoalescing::Off, cd.config(3));
    assert_eq!(
        off.on_completion(0, Hint::None),
        fire(1, FireCause::Immediate)
    );
    assert_eq!(
        IrqVectorConfig::from_cdw11(cd.config(3).cdw11()),
        IrqVectorConfig { iv: 3, cd: true }
    );
}

#[test]
fn an_acknowledging_device_cancels_its_timer_when_the_host_reaps_everything() {
    let params = CoalesceParams {
        count: 256,
        time_ns: 50_000,
    };
    // Feature 08h's rule: the host's doorbell does not touch the aggregation.
    let mut plain = NvmeCoalescer::new(params);
    assert_eq!(
        plain.on_completion(1_000),
        IrqDecision::ArmTimer {
            deadline_ns: 51_000
        }
    );
    assert!(!plain.on_ack_all());
    assert!(plain.on_timer(51_000).is_some());
    // Timed from the first unacknowledged entry: an ack of all cancels, the stale
    // deadline does nothing, and the next entry starts a new time.
    let mut acking = NvmeCoalescer::new(params).acknowledging();
    acking.on_completion(1_000);
    acking.on_completion(2_000);
    assert!(acking.on_ack_all());
    assert_eq!((acking.pending(), acking.deadline()), (0, None));
    assert_eq!(acking.on_timer(51_000), None);
    assert!(!acking.on_ack_all(), "nothing left to cancel");
    assert_eq!(
        acking.on_completion(60_000),
        IrqDecision::ArmTimer {
            deadline_ns: 110_000
        }
    );
    assert_eq!(acking.on_timer(110_000).map(|f| f.coalesced), Some(1));
}
