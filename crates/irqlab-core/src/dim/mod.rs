//! lib/dim, Dynamic Interrupt Moderation (include/linux/dim.h, lib/dim/dim.c), plus the
//! net_dim and rdma_dim decision functions and Sagi Grimberg's 2018 irq-am proposal.
//!
//! A [`Dim`] is fed samples (`net_dim`) or events (`rdma_dim`); after `DIM_NEVENTS` events it
//! compares the window's stats with the previous window and may move `profile_ix`. When it
//! does, it enters `APPLY_NEW_PROFILE` and ignores samples until the consumer has
//! programmed the device and called [`Dim::work_done`] (the kernel's work item).

mod irq_am;
mod net_dim;
mod profiles;
mod rdma_dim;

pub use irq_am::{IRQ_AM_DEFAULT_NR_EVENTS, IrqAm, IrqAmState, IrqAmStats, IrqAmTuneState};
pub use profiles::{
    CqPeriodMode, NET_DIM_DEF_PROFILE_CQE, NET_DIM_DEF_PROFILE_EQE, NET_DIM_PARAMS_NUM_PROFILES,
    NET_DIM_RX_CQE_PROFILES, NET_DIM_RX_EQE_PROFILES, NET_DIM_TX_CQE_PROFILES,
    NET_DIM_TX_EQE_PROFILES, NetDirection, RDMA_DIM_PARAMS_NUM_PROFILES, RDMA_DIM_PROFILES,
    RDMA_DIM_START_PROFILE, net_dim_profiles,
};

use std::fmt;

/// include/linux/dim.h: one measurement window is 64 events.
pub const DIM_NEVENTS: u16 = 64;
const USEC_PER_MSEC: u64 = 1000;

/// One moderation level: the device's coalescing time and count. `count` is `pkts` for
/// net_dim tables and `comps` for rdma_dim and irq-am tables (`struct dim_cq_moder`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Profile {
    pub usec: u16,
    pub count: u16,
}

impl Profile {
    pub const fn new(usec: u16, count: u16) -> Self {
        Profile { usec, count }
    }
}

/// `struct dim_sample`: counters at one instant; all wrap (u16 events, u32 others).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DimSample {
    pub time_ns: u64,
    pub pkt_ctr: u32,
    pub byte_ctr: u32,
    pub event_ctr: u16,
    pub comp_ctr: u32,
}

/// `struct dim_stats`: per-millisecond rates of one window; `cpe_ratio` is completions per
/// event ×100.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DimStats {
    pub ppms: i32,
    pub bpms: i32,
    pub epms: i32,
    pub cpms: i32,
    pub cpe_ratio: i32,
}

/// BIT_GAP(16, end, start): wrap-safe delta of a u16 counter.
pub fn bit_gap_u16(end: u16, start: u16) -> u16 {
    end.wrapping_sub(start)
}

/// BIT_GAP(32, end, start): wrap-safe delta of a u32 counter.
pub fn bit_gap_u32(end: u32, start: u32) -> u32 {
    end.wrapping_sub(start)
}

/// IS_SIGNIFICANT_DIFF: more than 10% relative change; include/linux/dim.h guards `ref == 0`.
pub fn is_significant_diff(val: i32, reference: i32) -> bool {
    let (val, reference) = (i64::from(val), i64::from(reference));
    reference != 0 && 100 * (val - reference).abs() / reference.abs() > 10
}

fn div_round_up(n: u64, d: u64) -> u64 {
    n.div_ceil(d)
}

fn to_int(v: u64) -> i32 {
    i32::try_from(v).unwrap_or(i32::MAX)
}

/// lib/dim/dim.c dim_calc_stats: `None` when the window lasted under 1 µs (delta_us == 0).
/// `epms` uses the constant DIM_NEVENTS, not a measured event count.
pub fn dim_calc_stats(start: &DimSample, end: &DimSample) -> Option<DimStats> {
    // ktime_us_delta truncated to u32 ("u32 holds up to 71 minutes").
    let delta_us = (end.time_ns.saturating_sub(start.time_ns) / 1000) as u32;
    if delta_us == 0 {
        return None;
    }
    let d = u64::from(delta_us);
    let npkts = u64::from(bit_gap_u32(end.pkt_ctr, start.pkt_ctr));
    let nbytes = u64::from(bit_gap_u32(end.byte_ctr, start.byte_ctr));
    let ncomps = u64::from(bit_gap_u32(end.comp_ctr, start.comp_ctr));
    let ppms = to_int(div_round_up(npkts * USEC_PER_MSEC, d));
    let bpms = to_int(div_round_up(nbytes * USEC_PER_MSEC, d));
    let epms = to_int(div_round_up(u64::from(DIM_NEVENTS) * USEC_PER_MSEC, d));
    let cpms = to_int(div_round_up(ncomps * USEC_PER_MSEC, d));
    let cpe_ratio = if epms != 0 {
        to_int((i64::from(cpms) * 100 / i64::from(epms)) as u64)
    } else {
        0
    };
    Some(DimStats {
        ppms,
        bpms,
        epms,
        cpms,
        cpe_ratio,
    })
}

/// The outer state of a dim instance (DIM_START_MEASURE ...).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DimState {
    StartMeasure,
    MeasureInProgress,
    ApplyNewProfile,
}

/// The tune state (DIM_PARKING_ON_TOP ...). Zero in a kzalloc'd `struct dim` is PARKING_ON_TOP.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TuneState {
    ParkingOnTop,
    ParkingTired,
    GoingRight,
    GoingLeft,
}

impl TuneState {
    pub fn as_str(self) -> &'static str {
        match self {
            TuneState::ParkingOnTop => "parking_on_top",
            TuneState::ParkingTired => "parking_tired",
            TuneState::GoingRight => "going_right",
            TuneState::GoingLeft => "going_left",
        }
    }
}

/// Result of comparing a window's stats with the previous one (DIM_STATS_WORSE ...).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StatsCompare {
    Worse,
    Same,
    Better,
}

/// What happened over a moderator's life, as debugfs-style counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DimCounters {
    /// Windows that reached the event count (DIM_NEVENTS or irq-am's nr_events).
    pub windows: u64,
    /// Decision functions run (windows with a usable duration).
    pub decisions: u64,
    /// Decisions that moved the profile index.
    pub level_changes: u64,
    /// Samples or events dropped while a new profile was being applied.
    pub samples_ignored: u64,
}

/// A table or start index that cannot drive a moderator.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DimError {
    EmptyTable,
    TooManyLevels(usize),
    StartOutOfRange { start: usize, levels: usize },
    ZeroEvents,
}

impl fmt::Display for DimError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DimError::EmptyTable => {
                f.write_str("moderation table is empty: give at least one (usec, count) level")
            }
            DimError::TooManyLevels(n) => write!(
                f,
                "moderation table has {n} levels; at most 255 are supported (profile_ix is a u8)"
            ),
            DimError::StartOutOfRange { start, levels } => {
                write!(
                    f,
                    "start level {start} is outside the table's {levels} levels"
                )
            }
            DimError::ZeroEvents => f.write_str("nr_events must be at least 1"),
        }
    }
}

impl std::error::Error for DimError {}

pub(crate) fn check_table(profiles: &[Profile], start: usize) -> Result<(), DimError> {
    if profiles.is_empty() {
        return Err(DimError::EmptyTable);
    }
    if profiles.len() > usize::from(u8::MAX) {
        return Err(DimError::TooManyLevels(profiles.len()));
    }
    if start >= profiles.len() {
        return Err(DimError::StartOutOfRange {
            start,
            levels: profiles.len(),
        });
    }
    Ok(())
}

/// `struct dim`: one lib/dim instance, driven by [`Dim::net_dim`] or [`Dim::rdma_dim`].
#[derive(Clone, Debug)]
pub struct Dim {
    state: DimState,
    prev_stats: DimStats,
    start_sample: DimSample,
    measuring_sample: DimSample,
    profile_ix: usize,
    tune_state: TuneState,
    steps_right: u8,
    steps_left: u8,
    tired: u8,
    profiles: Vec<Profile>,
    counters: DimCounters,
}

impl Dim {
    /// A dim over `profiles`, starting at `start_ix` in `tune_state`.
    pub fn new(
        profiles: Vec<Profile>,
        start_ix: usize,
        tune_state: TuneState,
    ) -> Result<Dim, DimError> {
        check_table(&profiles, start_ix)?;
        Ok(Dim::build(profiles, start_ix, tune_state))
    }

    /// net_dim with a kernel table: default profile 1, tune_state zeroed (PARKING_ON_TOP)
    /// as in a kzalloc'd `struct dim`.
    pub fn net(dir: NetDirection, mode: CqPeriodMode) -> Dim {
        let def = match mode {
            CqPeriodMode::StartFromCqe => NET_DIM_DEF_PROFILE_CQE,
            CqPeriodMode::StartFromEqe => NET_DIM_DEF_PROFILE_EQE,
        };
        Dim::build(
            net_dim_profiles(dir, mode).to_vec(),
            def,
            TuneState::ParkingOnTop,
        )
    }

    /// rdma_dim as drivers/infiniband/core/cq.c rdma_dim_init sets it up: profile 0,
    /// GOING_RIGHT.
    pub fn rdma() -> Dim {
        Dim::build(
            RDMA_DIM_PROFILES.to_vec(),
            RDMA_DIM_START_PROFILE,
            TuneState::GoingRight,
        )
    }

    /// Callers guarantee a non-empty table and an in-range start (the kernel constants do).
    fn build(profiles: Vec<Profile>, start_ix: usize, tune_state: TuneState) -> Dim {
        Dim {
            state: DimState::StartMeasure,
            prev_stats: DimStats::default(),
            start_sample: DimSample::default(),
            measuring_sample: DimSample::default(),
            profile_ix: start_ix,
            tune_state,
            steps_right: 0,
            steps_left: 0,
            tired: 0,
            profiles,
            counters: DimCounters::default(),
        }
    }

    /// The consumer's work item ran (mlx5e_rx_dim_work, ib_cq_rdma_dim_work): the new
    /// profile is programmed, so measuring starts over.
    pub fn work_done(&mut self) {
        self.state = DimState::StartMeasure;
    }

    pub fn state(&self) -> DimState {
        self.state
    }
    pub fn tune_state(&self) -> TuneState {
        self.tune_state
    }
    pub fn profile_ix(&self) -> usize {
        self.profile_ix
    }
    pub fn profile(&self) -> Profile {
        self.profiles[self.profile_ix]
    }
    pub fn profiles(&self) -> &[Profile] {
        &self.profiles
    }
    pub fn steps_right(&self) -> u8 {
        self.steps_right
    }
    pub fn steps_left(&self) -> u8 {
        self.steps_left
    }
    pub fn tired(&self) -> u8 {
        self.tired
    }
    pub fn prev_stats(&self) -> DimStats {
        self.prev_stats
    }
    pub fn counters(&self) -> DimCounters {
        self.counters
    }

    fn num_profiles(&self) -> usize {
        self.profiles.len()
    }

    /// lib/dim/dim.c dim_on_top: parked, or a one-step reversal after a longer run
    /// (oscillation around a local optimum).
    fn on_top(&self) -> bool {
        match self.tune_state {
            TuneState::ParkingOnTop | TuneState::ParkingTired => true,
            TuneState::GoingRight => self.steps_left > 1 && self.steps_right == 1,
            TuneState::GoingLeft => self.steps_right > 1 && self.steps_left == 1,
        }
    }

    /// lib/dim/dim.c dim_turn: reverse and zero the new direction's step count.
    fn turn(&mut self) {
        match self.tune_state {
            TuneState::ParkingOnTop | TuneState::ParkingTired => {}
            TuneState::GoingRight => {
                self.tune_state = TuneState::GoingLeft;
                self.steps_left = 0;
            }
            TuneState::GoingLeft => {
                self.tune_state = TuneState::GoingRight;
                self.steps_right = 0;
            }
        }
    }

    fn park_on_top(&mut self) {
        self.steps_right = 0;
        self.steps_left = 0;
        self.tired = 0;
        self.tune_state = TuneState::ParkingOnTop;
    }

    /// dim_park_tired keeps `tired`, so the machine sits out that many windows.
    fn park_tired(&mut self) {
        self.steps_right = 0;
        self.steps_left = 0;
        self.tune_state = TuneState::ParkingTired;
    }

    /// Shared tail of net_dim/rdma_dim once a window is complete: run `decide`, then either
    /// enter APPLY_NEW_PROFILE (true) or start the next window back to back.
    fn finish_window(
        &mut self,
        end: DimSample,
        decide: fn(&mut Dim, &DimStats) -> bool,
    ) -> Option<bool> {
        self.counters.windows += 1;
        let stats = dim_calc_stats(&self.start_sample, &end)?;
        self.counters.decisions += 1;
        if decide(self, &stats) {
            self.counters.level_changes += 1;
            self.state = DimState::ApplyNewProfile;
            return Some(true);
        }
        Some(false)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calc_stats_rounds_up_per_ms_and_rejects_zero_duration() {
        let start = DimSample::default();
        let end = DimSample {
            time_ns: 3_000,
            pkt_ctr: 10,
            byte_ctr: 4096,
            event_ctr: 64,
            comp_ctr: 10,
        };
        let s = dim_calc_stats(&start, &end).expect("3 us window");
        assert_eq!(s.ppms, 3334); // DIV_ROUND_UP(10 * 1000, 3)
        assert_eq!(s.bpms, 1_365_334);
        assert_eq!(s.epms, 21_334); // from DIM_NEVENTS, not event_ctr
        assert_eq!(s.cpe_ratio, 3334 * 100 / 21_334);
        let short = DimSample {
            time_ns: 999,
            ..end
        };
        assert_eq!(dim_calc_stats(&start, &short), None);
    }

    #[test]
    fn counters_wrap_safely() {
        assert_eq!(bit_gap_u16(3, 65_530), 9);
        assert_eq!(bit_gap_u32(5, u32::MAX), 6);
        let start = DimSample {
            pkt_ctr: u32::MAX - 4,
            ..DimSample::default()
        };
        let end = DimSample {
            time_ns: 1_000_000,
            pkt_ctr: 5,
            ..DimSample::default()
        };
        assert_eq!(dim_calc_stats(&start, &end).map(|s| s.ppms), Some(10));
    }

    #[test]
    fn significance_is_strictly_more_than_ten_percent() {
        assert!(!is_significant_diff(110, 100));
        assert!(is_significant_diff(111, 100));
        assert!(is_significant_diff(89, 100));
        assert!(!is_significant_diff(5, 0));
    }

    #[test]
    fn bad_tables_are_errors() {
        assert_eq!(
            Dim::new(vec![], 0, TuneState::GoingRight).err(),
            Some(DimError::EmptyTable)
        );
        let one = vec![Profile::new(1, 1)];
        assert!(matches!(
            Dim::new(one, 1, TuneState::GoingRight),
            Err(DimError::StartOutOfRange { .. })
        ));
    }
}
