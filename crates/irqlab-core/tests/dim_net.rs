//! Worked net_dim examples pinning lib/dim/net_dim.c: climbing to the edge, oscillation
//! detection (dim_on_top), parking with a frozen reference, tired parking, and samples
//! ignored while a new profile is applied.

use irqlab_core::dim::{
    CqPeriodMode, DIM_NEVENTS, Dim, DimSample, DimState, NET_DIM_RX_CQE_PROFILES, NetDirection,
    TuneState,
};

/// Feeds windows of DIM_NEVENTS events, 1 ms each, carrying `bytes` (and bytes/1024 packets).
struct Feeder {
    ctr: DimSample,
}

impl Feeder {
    fn new() -> Self {
        Feeder {
            ctr: DimSample {
                time_ns: 1_000_000_000,
                ..DimSample::default()
            },
        }
    }

    /// One full window; returns whether the profile changed. Acks a change at once, like
    /// a consumer whose work item runs before the next interrupt.
    fn window(&mut self, dim: &mut Dim, bytes: u32) -> bool {
        if dim.state() == DimState::StartMeasure {
            assert!(!dim.net_dim(self.ctr), "a start sample decides nothing");
        }
        let mut changed = false;
        for i in 0..DIM_NEVENTS {
            self.ctr.time_ns += 1_000_000 / u64::from(DIM_NEVENTS);
            self.ctr.event_ctr = self.ctr.event_ctr.wrapping_add(1);
            // Whole-window totals land exactly: the remainder rides on the last event.
            let n = u32::from(DIM_NEVENTS);
            let last = i == DIM_NEVENTS - 1;
            let share = |total: u32| total / n + if last { total % n } else { 0 };
            self.ctr.byte_ctr = self.ctr.byte_ctr.wrapping_add(share(bytes));
            self.ctr.pkt_ctr = self.ctr.pkt_ctr.wrapping_add(share(bytes / 1024));
            let c = dim.net_dim(self.ctr);
            assert!(
                !c || i == DIM_NEVENTS - 1,
                "decisions only at the window's end"
            );
            changed |= c;
        }
        if changed {
            assert_eq!(dim.state(), DimState::ApplyNewProfile);
            dim.work_done();
        }
        changed
    }
}

fn rx_cqe() -> Dim {
    Dim::net(NetDirection::Rx, CqPeriodMode::StartFromCqe)
}

#[test]
fn starts_at_default_profile_one_parked() {
    let dim = rx_cqe();
    assert_eq!(dim.profile_ix(), 1);
    assert_eq!(dim.profile(), NET_DIM_RX_CQE_PROFILES[1]);
    assert_eq!((dim.profile().usec, dim.profile().count), (8, 128));
    assert_eq!(dim.tune_state(), TuneState::ParkingOnTop);
}

#[test]
fn climbs_while_more_moderation_brings_more_bytes_then_parks_on_the_edge() {
    let mut dim = rx_cqe();
    let mut f = Feeder::new();
    // Throughput grows with the profile: 100 KB/ms per level above 0.
    let traffic = |ix: usize| 100_000 * (1 + ix as u32);
    let mut path = vec![dim.profile_ix()];
    for _ in 0..7 {
        let ix = dim.profile_ix();
        f.window(&mut dim, traffic(ix));
        path.push(dim.profile_ix());
    }
    // First window beats the zero reference: exit parking to the LEFT (profile_ix > 0).
    // Level 0 is worse: turn right and climb 1, 2, 3, 4; at 4 the step hits DIM_ON_EDGE.
    assert_eq!(path, vec![1, 0, 1, 2, 3, 4, 4, 4]);
    assert_eq!(dim.tune_state(), TuneState::ParkingOnTop);
    assert_eq!(dim.tired(), 0, "dim_park_on_top resets tired");
    assert_eq!(dim.counters().level_changes, 5);
}

#[test]
fn parking_on_top_keeps_the_stats_from_when_parking_began() {
    let mut dim = rx_cqe();
    let mut f = Feeder::new();
    let traffic = |ix: usize| 100_000 * (1 + ix as u32);
    for _ in 0..6 {
        let ix = dim.profile_ix();
        f.window(&mut dim, traffic(ix));
    }
    assert_eq!(dim.tune_state(), TuneState::ParkingOnTop);
    let reference = dim.prev_stats();
    assert_eq!(reference.bpms, 500_000);
    // +10% is not significant (strictly more than 10% is), twice over.
    assert!(!f.window(&mut dim, 550_000));
    assert!(!f.window(&mut dim, 550_000));
    assert_eq!(dim.prev_stats(), reference, "reference frozen while parked");
    // +12% over the *parking* reference (only +1.8% over the last window) exits parking.
    assert!(f.window(&mut dim, 560_000));
    assert_eq!(dim.tune_state(), TuneState::GoingLeft);
    assert_eq!(dim.profile_ix(), 3);
}

#[test]
fn oscillation_around_a_peak_parks_on_top_there() {
    let mut dim = rx_cqe();
    let mut f = Feeder::new();
    // Best at profile 2.
    let traffic = [100_000, 200_000, 300_000, 200_000, 100_000];
    let mut path = vec![dim.profile_ix()];
    for _ in 0..6 {
        let ix = dim.profile_ix();
        f.window(&mut dim, traffic[ix]);
        path.push(dim.profile_ix());
    }
    // 1 → 0 (exit parking left), worse: turn → 1, 2, 3; worse at 3: turn, step to 2
    // (steps_left 1); better at 2 with steps_right 3 > 1 and steps_left == 1: dim_on_top.
    assert_eq!(path, vec![1, 0, 1, 2, 3, 2, 2]);
    assert_eq!(dim.tune_state(), TuneState::ParkingOnTop);
    assert_eq!(dim.profile_ix(), 2);
    assert_eq!((dim.steps_left(), dim.steps_right()), (0, 0));
}

#[test]
fn ten_steps_without_settling_park_tired_for_ten_windows() {
    let mut dim = rx_cqe();
    let mut f = Feeder::new();
    // Traffic falls 20% per window whatever the profile: every window is WORSE, so the
    // machine ping-pongs between 0 and 1 and never satisfies dim_on_top.
    let mut bytes = 10_000_000u32;
    let mut next = || {
        let b = bytes;
        bytes = bytes / 5 * 4;
        b
    };
    for w in 1..=10 {
        assert!(f.window(&mut dim, next()), "window {w} steps");
        assert_eq!(u32::from(dim.tired()), w);
    }
    assert_ne!(dim.tune_state(), TuneState::ParkingTired);
    // The 11th step would make tired exceed 2 × 5 profiles: DIM_TOO_TIRED.
    let ix = dim.profile_ix();
    assert!(!f.window(&mut dim, next()));
    assert_eq!(dim.tune_state(), TuneState::ParkingTired);
    assert_eq!(dim.tired(), 10, "dim_park_tired keeps tired");
    // It sits out windows, counting tired down, and exits parking when it reaches 0.
    for left in (1..10).rev() {
        assert!(!f.window(&mut dim, next()));
        assert_eq!(u32::from(dim.tired()), left);
        assert_eq!(dim.profile_ix(), ix);
    }
    assert!(f.window(&mut dim, next()), "exit parking steps at once");
    assert_eq!(dim.profile_ix(), 0);
    assert_eq!(dim.tune_state(), TuneState::GoingLeft);
}

#[test]
fn samples_are_ignored_until_the_new_profile_is_acknowledged() {
    let mut dim = rx_cqe();
    let mut ctr = DimSample {
        time_ns: 5_000_000,
        ..DimSample::default()
    };
    let step = |dim: &mut Dim, ctr: &mut DimSample| {
        ctr.time_ns += 10_000;
        ctr.event_ctr = ctr.event_ctr.wrapping_add(1);
        ctr.byte_ctr += 64_000;
        ctr.pkt_ctr += 16;
        dim.net_dim(*ctr)
    };
    assert!(!dim.net_dim(ctr));
    let changed: Vec<bool> = (0..64).map(|_| step(&mut dim, &mut ctr)).collect();
    assert_eq!(changed.iter().filter(|c| **c).count(), 1);
    assert_eq!(dim.state(), DimState::ApplyNewProfile);
    let ix = dim.profile_ix();
    // 200 more events (three windows' worth): nothing decided, all counted as ignored.
    for _ in 0..200 {
        assert!(!step(&mut dim, &mut ctr));
    }
    assert_eq!(dim.counters().samples_ignored, 200);
    assert_eq!(dim.profile_ix(), ix);
    assert_eq!(dim.counters().windows, 1);
    // The work item ran: the next sample only starts a window.
    dim.work_done();
    assert!(!step(&mut dim, &mut ctr));
    assert_eq!(dim.state(), DimState::MeasureInProgress);
    for _ in 0..63 {
        assert!(!step(&mut dim, &mut ctr));
    }
    assert_eq!(
        dim.counters().windows,
        1,
        "63 events do not complete a window"
    );
    step(&mut dim, &mut ctr);
    assert_eq!(dim.counters().windows, 2);
}

#[test]
fn a_sub_microsecond_window_is_rejected_and_measuring_continues() {
    let mut dim = rx_cqe();
    let mut ctr = DimSample::default();
    assert!(!dim.net_dim(ctr));
    ctr.event_ctr = 64;
    ctr.byte_ctr = 1_000_000;
    ctr.time_ns = 900; // delta_us == 0
    assert!(!dim.net_dim(ctr));
    assert_eq!(dim.counters().decisions, 0);
    assert_eq!(dim.state(), DimState::MeasureInProgress);
    ctr.event_ctr = 65;
    ctr.time_ns = 100_000;
    assert!(
        dim.net_dim(ctr),
        "the same start sample now gives a valid window"
    );
    assert_eq!(dim.counters().decisions, 1);
}
