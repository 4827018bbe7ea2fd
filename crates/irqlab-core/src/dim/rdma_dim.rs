//! lib/dim/rdma_dim.c: every call is one event; completions per ms, then completions per
//! event; never parks; drops straight back to level 0 when batching stops paying.

use super::{
    DIM_NEVENTS, Dim, DimSample, DimState, DimStats, StatsCompare, TuneState, bit_gap_u16,
    is_significant_diff,
};

/// rdma_dim_stats_compare: the first window (prev cpms 0) is SAME.
pub(crate) fn rdma_dim_stats_compare(curr: &DimStats, prev: &DimStats) -> StatsCompare {
    if prev.cpms == 0 {
        return StatsCompare::Same;
    }
    if is_significant_diff(curr.cpms, prev.cpms) {
        return if curr.cpms > prev.cpms {
            StatsCompare::Better
        } else {
            StatsCompare::Worse
        };
    }
    if is_significant_diff(curr.cpe_ratio, prev.cpe_ratio) {
        return if curr.cpe_ratio > prev.cpe_ratio {
            StatsCompare::Better
        } else {
            StatsCompare::Worse
        };
    }
    StatsCompare::Same
}

/// rdma_dim_step's DIM_ON_EDGE.
struct OnEdge;

impl Dim {
    fn rdma_dim_step(&mut self) -> Result<(), OnEdge> {
        match self.tune_state {
            TuneState::GoingRight => {
                if self.profile_ix == self.num_profiles() - 1 {
                    return Err(OnEdge);
                }
                self.profile_ix += 1;
                self.steps_right = self.steps_right.saturating_add(1);
            }
            TuneState::GoingLeft => {
                if self.profile_ix == 0 {
                    return Err(OnEdge);
                }
                self.profile_ix -= 1;
                self.steps_left = self.steps_left.saturating_add(1);
            }
            TuneState::ParkingOnTop | TuneState::ParkingTired => {}
        }
        Ok(())
    }

    /// rdma_dim_decision: SAME with cpe_ratio <= 50 × prev_ix jumps to profile 0 (batching
    /// no longer pays, protect latency); WORSE turns then steps; BETTER steps; an edge
    /// turns. prev_stats always follows.
    fn rdma_dim_decision(&mut self, curr: &DimStats) -> bool {
        let prev_ix = self.profile_ix;
        if !matches!(
            self.tune_state,
            TuneState::ParkingOnTop | TuneState::ParkingTired
        ) {
            match rdma_dim_stats_compare(curr, &self.prev_stats) {
                StatsCompare::Same => {
                    let limit = 50 * i64::try_from(prev_ix).unwrap_or(i64::MAX / 64);
                    if i64::from(curr.cpe_ratio) <= limit {
                        self.profile_ix = 0;
                    }
                }
                cmp => {
                    if cmp == StatsCompare::Worse {
                        self.turn();
                    }
                    if self.rdma_dim_step().is_err() {
                        self.turn();
                    }
                }
            }
        }
        self.prev_stats = *curr;
        self.profile_ix != prev_ix
    }

    /// lib/dim/rdma_dim.c rdma_dim: one poll round that reaped `completions`. Returns true
    /// when the profile changed: program [`Dim::profile`] (modify_cq), then call
    /// [`Dim::work_done`]. Events during APPLY_NEW_PROFILE still count but decide nothing.
    pub fn rdma_dim(&mut self, now_ns: u64, completions: u64) -> bool {
        // The measuring sample advances on every call, whatever the state.
        let m = &mut self.measuring_sample;
        *m = DimSample {
            time_ns: now_ns,
            pkt_ctr: 0,
            byte_ctr: 0,
            event_ctr: m.event_ctr.wrapping_add(1),
            comp_ctr: m.comp_ctr.wrapping_add(completions as u32),
        };
        let curr = *m;
        match self.state {
            DimState::ApplyNewProfile => {
                self.counters.samples_ignored += 1;
                return false;
            }
            DimState::MeasureInProgress => {
                // The kernel subtracts the u16 counters as ints; BIT_GAP keeps the window
                // exact across the 65536-event wrap.
                if bit_gap_u16(curr.event_ctr, self.start_sample.event_ctr) < DIM_NEVENTS {
                    return false;
                }
                match self.finish_window(curr, Dim::rdma_dim_decision) {
                    None => return false,
                    Some(true) => return true,
                    Some(false) => {}
                }
            }
            DimState::StartMeasure => {}
        }
        self.state = DimState::MeasureInProgress;
        self.start_sample = curr;
        false
    }
}
