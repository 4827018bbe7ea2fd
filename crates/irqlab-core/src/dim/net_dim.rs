//! lib/dim/net_dim.c: the network decision (bytes, then packets, then fewer events), with
//! parking on top, tired parking and edge parking.

use super::{
    DIM_NEVENTS, Dim, DimSample, DimState, DimStats, StatsCompare, TuneState, bit_gap_u16,
    is_significant_diff,
};

/// net_dim_step's outcome (DIM_STEPPED, DIM_TOO_TIRED, DIM_ON_EDGE).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Step {
    Stepped,
    TooTired,
    OnEdge,
}

/// net_dim_stats_compare: lexicographic with the 10% rule; a zero reference makes any
/// traffic BETTER for bytes/packets and SAME for events.
pub(crate) fn net_dim_stats_compare(curr: &DimStats, prev: &DimStats) -> StatsCompare {
    let better_if = |higher: bool| {
        if higher {
            StatsCompare::Better
        } else {
            StatsCompare::Worse
        }
    };
    if prev.bpms == 0 {
        return if curr.bpms != 0 {
            StatsCompare::Better
        } else {
            StatsCompare::Same
        };
    }
    if is_significant_diff(curr.bpms, prev.bpms) {
        return better_if(curr.bpms > prev.bpms);
    }
    if prev.ppms == 0 {
        return if curr.ppms != 0 {
            StatsCompare::Better
        } else {
            StatsCompare::Same
        };
    }
    if is_significant_diff(curr.ppms, prev.ppms) {
        return better_if(curr.ppms > prev.ppms);
    }
    if prev.epms == 0 {
        return StatsCompare::Same;
    }
    if is_significant_diff(curr.epms, prev.epms) {
        // Fewer interrupts for the same traffic is better.
        return better_if(curr.epms < prev.epms);
    }
    StatsCompare::Same
}

impl Dim {
    /// net_dim_step: `tired` counts every step; 2 × the table size makes the machine rest.
    fn net_dim_step(&mut self) -> Step {
        if usize::from(self.tired) == 2 * self.num_profiles() {
            return Step::TooTired;
        }
        match self.tune_state {
            TuneState::ParkingOnTop | TuneState::ParkingTired => {}
            TuneState::GoingRight => {
                if self.profile_ix == self.num_profiles() - 1 {
                    return Step::OnEdge;
                }
                self.profile_ix += 1;
                self.steps_right = self.steps_right.saturating_add(1);
            }
            TuneState::GoingLeft => {
                if self.profile_ix == 0 {
                    return Step::OnEdge;
                }
                self.profile_ix -= 1;
                self.steps_left = self.steps_left.saturating_add(1);
            }
        }
        self.tired = self.tired.saturating_add(1);
        Step::Stepped
    }

    /// net_dim_exit_parking: head left unless already at profile 0, and step at once.
    fn net_dim_exit_parking(&mut self) {
        self.tune_state = if self.profile_ix > 0 {
            TuneState::GoingLeft
        } else {
            TuneState::GoingRight
        };
        self.net_dim_step();
    }

    /// net_dim_decision: true when profile_ix moved.
    fn net_dim_decision(&mut self, curr: &DimStats) -> bool {
        let prev_state = self.tune_state;
        let prev_ix = self.profile_ix;
        match self.tune_state {
            TuneState::ParkingOnTop => {
                if net_dim_stats_compare(curr, &self.prev_stats) != StatsCompare::Same {
                    self.net_dim_exit_parking();
                }
            }
            TuneState::ParkingTired => {
                self.tired = self.tired.saturating_sub(1);
                if self.tired == 0 {
                    self.net_dim_exit_parking();
                }
            }
            TuneState::GoingRight | TuneState::GoingLeft => {
                if net_dim_stats_compare(curr, &self.prev_stats) != StatsCompare::Better {
                    self.turn();
                }
                if self.on_top() {
                    self.park_on_top();
                } else {
                    match self.net_dim_step() {
                        Step::OnEdge => self.park_on_top(),
                        Step::TooTired => self.park_tired(),
                        Step::Stepped => {}
                    }
                }
            }
        }
        // While parked on top the reference stays the stats from when parking began.
        if prev_state != TuneState::ParkingOnTop || self.tune_state != TuneState::ParkingOnTop {
            self.prev_stats = *curr;
        }
        self.profile_ix != prev_ix
    }

    /// lib/dim/net_dim.c net_dim: feed the counters at the end of a NAPI/interrupt round.
    /// Returns true when the profile changed: program [`Dim::profile`], then call
    /// [`Dim::work_done`]. Samples are ignored until then.
    pub fn net_dim(&mut self, end: DimSample) -> bool {
        match self.state {
            DimState::ApplyNewProfile => {
                self.counters.samples_ignored += 1;
                return false;
            }
            DimState::MeasureInProgress => {
                let nevents = bit_gap_u16(end.event_ctr, self.start_sample.event_ctr);
                if nevents < DIM_NEVENTS {
                    return false;
                }
                match self.finish_window(end, Dim::net_dim_decision) {
                    // dim_calc_stats rejected a sub-microsecond window: keep measuring.
                    None => return false,
                    Some(true) => return true,
                    Some(false) => {}
                }
            }
            DimState::StartMeasure => {}
        }
        // dim_update_sample: the end of one window starts the next (no comp_ctr for net).
        self.start_sample = DimSample { comp_ctr: 0, ..end };
        self.state = DimState::MeasureInProgress;
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stats(bpms: i32, ppms: i32, epms: i32) -> DimStats {
        DimStats {
            bpms,
            ppms,
            epms,
            ..DimStats::default()
        }
    }

    #[test]
    fn compare_is_bytes_then_packets_then_fewer_events() {
        let prev = stats(1000, 100, 50);
        assert_eq!(
            net_dim_stats_compare(&stats(1200, 10, 99), &prev),
            StatsCompare::Better
        );
        assert_eq!(
            net_dim_stats_compare(&stats(800, 999, 1), &prev),
            StatsCompare::Worse
        );
        assert_eq!(
            net_dim_stats_compare(&stats(1050, 120, 99), &prev),
            StatsCompare::Better
        );
        assert_eq!(
            net_dim_stats_compare(&stats(1050, 100, 40), &prev),
            StatsCompare::Better
        );
        assert_eq!(
            net_dim_stats_compare(&stats(1050, 100, 60), &prev),
            StatsCompare::Worse
        );
        assert_eq!(
            net_dim_stats_compare(&stats(1050, 105, 54), &prev),
            StatsCompare::Same
        );
        assert_eq!(
            net_dim_stats_compare(&stats(1, 0, 0), &DimStats::default()),
            StatsCompare::Better
        );
        assert_eq!(
            net_dim_stats_compare(&DimStats::default(), &DimStats::default()),
            StatsCompare::Same
        );
    }
}
