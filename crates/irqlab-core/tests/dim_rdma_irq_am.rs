//! rdma_dim (lib/dim/rdma_dim.c) and irq-am (Sagi Grimberg's 2018 RFC) worked examples.

use irqlab_core::dim::{
    DIM_NEVENTS, Dim, DimState, IrqAm, IrqAmTuneState, Profile, RDMA_DIM_PROFILES, TuneState,
};

/// Feeds rdma_dim one window: `DIM_NEVENTS` poll rounds over 1 ms reaping `comps` in all.
/// A window right after an ack spends one extra event restarting the measurement.
fn rdma_window(dim: &mut Dim, now: &mut u64, comps: u64) -> bool {
    let n = u64::from(DIM_NEVENTS);
    if dim.state() == DimState::StartMeasure {
        *now += 1_000;
        assert!(!dim.rdma_dim(*now, 0));
    }
    let mut changed = false;
    for i in 0..n {
        *now += 1_000_000 / n;
        let c = comps / n + if i == n - 1 { comps % n } else { 0 };
        changed |= dim.rdma_dim(*now, c);
    }
    if changed {
        dim.work_done();
    }
    changed
}

#[test]
fn rdma_dim_starts_at_level_zero_going_right_with_the_ib_table() {
    let dim = Dim::rdma();
    assert_eq!(dim.profile_ix(), 0);
    assert_eq!(dim.tune_state(), TuneState::GoingRight);
    assert_eq!(dim.profiles().len(), 9);
    assert_eq!(dim.profiles()[8], Profile::new(32, 32));
}

#[test]
fn rdma_dim_jumps_back_to_level_zero_when_completions_per_event_drop() {
    let mut dim = Dim::rdma();
    let mut now = 1_000_000_000;
    // First window: the reference is empty, SAME, cpe_ratio 400 > 50 × 0: stay.
    assert!(!rdma_window(&mut dim, &mut now, 256));
    // Completions/ms rise 25% per window: step right each time.
    let mut path = vec![];
    for comps in [320, 400, 500, 625] {
        assert!(rdma_window(&mut dim, &mut now, comps));
        path.push(dim.profile_ix());
    }
    assert_eq!(path, vec![1, 2, 3, 4]);
    // Load collapses to one completion per event: WORSE turns and steps left.
    assert!(rdma_window(&mut dim, &mut now, 64));
    assert_eq!(dim.profile_ix(), 3);
    assert_eq!(dim.tune_state(), TuneState::GoingLeft);
    // Same again: SAME with cpe_ratio 100 <= 50 × 3: straight to profile 0, no walking.
    assert!(rdma_window(&mut dim, &mut now, 64));
    assert_eq!(dim.profile_ix(), 0);
    assert_eq!(dim.prev_stats().cpe_ratio, 100);
}

#[test]
fn rdma_dim_stays_when_same_traffic_still_batches() {
    let mut dim = Dim::rdma();
    let mut now = 1_000_000_000;
    rdma_window(&mut dim, &mut now, 256);
    assert!(rdma_window(&mut dim, &mut now, 320));
    assert!(rdma_window(&mut dim, &mut now, 400));
    assert_eq!(dim.profile_ix(), 2);
    // SAME at 625% completions per event: 625 > 50 × 2, hold the level.
    assert!(!rdma_window(&mut dim, &mut now, 400));
    assert_eq!(dim.profile_ix(), 2);
}

#[test]
fn rdma_dim_turns_at_the_edge_and_never_parks() {
    let mut dim = Dim::rdma();
    let mut now = 1_000_000_000;
    let mut comps = 100u64;
    rdma_window(&mut dim, &mut now, comps);
    for _ in 0..12 {
        comps = comps * 5 / 4;
        rdma_window(&mut dim, &mut now, comps);
        assert!(!matches!(
            dim.tune_state(),
            TuneState::ParkingOnTop | TuneState::ParkingTired
        ));
    }
    // Reached 8 in eight BETTER windows; the ninth hit DIM_ON_EDGE and turned; ever
    // better traffic then walks it left.
    assert!(dim.profile_ix() < 8);
    assert_eq!(dim.tune_state(), TuneState::GoingLeft);
}

/// Feeds irq-am one window of `nr` events, one completion per event unless told otherwise.
fn am_window(am: &mut IrqAm, now: &mut u64, nr: u64, comps_per_event: u64) -> bool {
    let mut program = false;
    for _ in 0..nr {
        *now += 10_000;
        am.add_comps(comps_per_event);
        program |= am.add_event(*now);
    }
    program
}

#[test]
fn irq_am_one_completion_per_event_walks_moderation_down_to_zero() {
    let mut am = IrqAm::new(RDMA_DIM_PROFILES.to_vec(), 64, 3).expect("valid table");
    let mut now = 1_000_000_000;
    assert_eq!(am.tune_state(), IrqAmTuneState::GoingUp);
    // One START event, then the first window: empty reference → SAME, level 3 is no edge.
    assert!(!am_window(&mut am, &mut now, 65, 1));
    assert_eq!(am.prev_stats().cpe, 1);
    // cps and eps unchanged, cpe == 1 at level > 0 while going up: WORSE → turn and step.
    assert!(am_window(&mut am, &mut now, 64, 1));
    assert_eq!(
        (am.level(), am.tune_state()),
        (2, IrqAmTuneState::GoingDown)
    );
    am.program_done();
    // Going down, cpe == 1 counts as BETTER: keep stepping down.
    assert!(am_window(&mut am, &mut now, 65, 1));
    assert_eq!(am.level(), 1);
    am.program_done();
    assert!(am_window(&mut am, &mut now, 65, 1));
    assert_eq!(am.level(), 0);
    am.program_done();
    // At level 0 the rule is off (SAME), but on an edge the RFC re-programs anyway.
    assert!(am_window(&mut am, &mut now, 65, 1));
    assert_eq!(am.level(), 0);
    assert_eq!(am.counters().level_changes, 3);
    assert_eq!(am.programs(), 4);
}

/// One irq-am window of 64 events reaping `comps` in all (the remainder on the last event).
fn am_window_total(am: &mut IrqAm, now: &mut u64, comps: u64) -> bool {
    let mut program = false;
    for i in 0..64 {
        *now += 10_000;
        am.add_comps(comps / 64 + if i == 63 { comps % 64 } else { 0 });
        program |= am.add_event(*now);
    }
    program
}

#[test]
fn irq_am_needs_twenty_percent_and_keeps_its_reference_when_nothing_moves() {
    let mut am = IrqAm::new(RDMA_DIM_PROFILES.to_vec(), 64, 4).expect("valid table");
    let mut now = 0;
    assert!(
        !am.add_event(now),
        "START_MEASURING only takes the start sample"
    );
    assert!(!am_window_total(&mut am, &mut now, 256));
    let reference = am.prev_stats();
    assert_eq!(reference.cpe, 4);
    // +14.8% completions/s would be BETTER for lib/dim (10%), but is SAME for irq-am (20%);
    // level 4 is no edge, so nothing is programmed and prev_stats stays.
    assert!(!am_window_total(&mut am, &mut now, 294));
    assert_eq!((am.level(), am.prev_stats()), (4, reference));
    // +25% over that kept reference: BETTER, one level up, and the reference moves.
    assert!(am_window_total(&mut am, &mut now, 320));
    assert_eq!(am.level(), 5);
    assert_eq!(am.prev_stats().cpe, 5);
}

#[test]
fn irq_am_rejects_bad_configuration() {
    assert!(IrqAm::new(vec![], 64, 0).is_err());
    assert!(IrqAm::new(RDMA_DIM_PROFILES.to_vec(), 0, 0).is_err());
    assert!(IrqAm::new(RDMA_DIM_PROFILES.to_vec(), 64, 9).is_err());
}
