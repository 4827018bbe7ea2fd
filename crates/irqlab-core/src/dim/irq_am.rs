//! Sagi Grimberg's 2018 "irq-am" RFC (lib/irq-am.c, include/linux/irq-am.h; Lightbits
//! Labs, never merged): adaptive moderation over consumer-supplied levels with a 20% rule,
//! two directions and no parking.

use super::{DimCounters, DimError, Profile, check_table};

/// The RFC leaves `nr_events` to the consumer; 64 matches lib/dim's DIM_NEVENTS.
pub const IRQ_AM_DEFAULT_NR_EVENTS: u16 = 64;
const USEC_PER_SEC: u64 = 1_000_000;

/// `enum irq_am_state`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IrqAmState {
    StartMeasuring,
    Measuring,
    ProgramModeration,
}

/// `enum irq_am_tune_state`; irq_am_init starts GOING_UP.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IrqAmTuneState {
    GoingUp,
    GoingDown,
}

impl IrqAmTuneState {
    pub fn as_str(self) -> &'static str {
        match self {
            IrqAmTuneState::GoingUp => "going_up",
            IrqAmTuneState::GoingDown => "going_down",
        }
    }
}

/// `struct irq_am_sample_stats`: per-second rates and completions per event (rounded up).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IrqAmStats {
    pub cps: u32,
    pub eps: u32,
    pub cpe: u32,
}

#[derive(Clone, Copy, Debug, Default)]
struct AmSample {
    time_ns: u64,
    comps: u64,
    events: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Diff {
    Worse,
    Same,
    Better,
}

/// IRQ_AM_SIGNIFICANT_DIFF: more than 20% (`abs((val) - (ref))`: the kernel's abs() takes
/// the u32 difference as signed, so a drop counts like a rise).
fn significant(val: u32, reference: u32) -> bool {
    reference != 0 && 100 * u64::from(val.abs_diff(reference)) / u64::from(reference) > 20
}

/// `struct irq_am`: one adaptive-moderation monitor.
#[derive(Clone, Debug)]
pub struct IrqAm {
    state: IrqAmState,
    tune_state: IrqAmTuneState,
    events: u64,
    comps: u64,
    start_sample: AmSample,
    prev_stats: IrqAmStats,
    nr_events: u16,
    levels: Vec<Profile>,
    curr_level: usize,
    counters: DimCounters,
    programs: u64,
}

impl IrqAm {
    /// irq_am_init(am, nr_events, nr_levels, start_level, program).
    pub fn new(
        levels: Vec<Profile>,
        nr_events: u16,
        start_level: usize,
    ) -> Result<IrqAm, DimError> {
        check_table(&levels, start_level)?;
        if nr_events == 0 {
            return Err(DimError::ZeroEvents);
        }
        Ok(IrqAm {
            state: IrqAmState::StartMeasuring,
            tune_state: IrqAmTuneState::GoingUp,
            events: 0,
            comps: 0,
            start_sample: AmSample::default(),
            prev_stats: IrqAmStats::default(),
            nr_events,
            levels,
            curr_level: start_level,
            counters: DimCounters::default(),
            programs: 0,
        })
    }

    /// irq_am_add_comps: completions reaped, counted separately from events.
    pub fn add_comps(&mut self, n: u64) {
        self.comps = self.comps.wrapping_add(n);
    }

    /// irq_am_add_event: one interrupt / poll round. True means "program `level()` now",
    /// then call [`IrqAm::program_done`]. On an edge this fires even when the level did not
    /// move (the RFC's `changed` includes irq_am_on_edge).
    pub fn add_event(&mut self, now_ns: u64) -> bool {
        self.events = self.events.wrapping_add(1);
        match self.state {
            IrqAmState::ProgramModeration => {
                self.counters.samples_ignored += 1;
                return false;
            }
            IrqAmState::Measuring => {
                // u16 nr_events = am_stats.events - start_sample.events
                let n = self.events.wrapping_sub(self.start_sample.events) as u16;
                if n < self.nr_events {
                    return false;
                }
                self.counters.windows += 1;
                let end = self.sample(now_ns);
                // The RFC leaves curr_stats uninitialised on a zero-length window; skip it.
                let Some(stats) = self.calc_stats(&end) else {
                    return false;
                };
                self.counters.decisions += 1;
                if self.decision(&stats) {
                    self.programs += 1;
                    self.state = IrqAmState::ProgramModeration;
                    return true;
                }
            }
            IrqAmState::StartMeasuring => {}
        }
        self.start_sample = self.sample(now_ns);
        self.state = IrqAmState::Measuring;
        false
    }

    /// irq_am_program_moderation_work: the level is programmed, measure again.
    pub fn program_done(&mut self) {
        self.state = IrqAmState::StartMeasuring;
    }

    pub fn level(&self) -> usize {
        self.curr_level
    }
    pub fn profile(&self) -> Profile {
        self.levels[self.curr_level]
    }
    pub fn levels(&self) -> &[Profile] {
        &self.levels
    }
    pub fn state(&self) -> IrqAmState {
        self.state
    }
    pub fn tune_state(&self) -> IrqAmTuneState {
        self.tune_state
    }
    pub fn prev_stats(&self) -> IrqAmStats {
        self.prev_stats
    }
    pub fn counters(&self) -> DimCounters {
        self.counters
    }
    /// How many program requests were issued (level changes plus edge re-programs).
    pub fn programs(&self) -> u64 {
        self.programs
    }

    fn sample(&self, now_ns: u64) -> AmSample {
        AmSample {
            time_ns: now_ns,
            comps: self.comps,
            events: self.events,
        }
    }

    /// irq_am_calc_stats.
    fn calc_stats(&self, end: &AmSample) -> Option<IrqAmStats> {
        let delta_us =
            u64::from((end.time_ns.saturating_sub(self.start_sample.time_ns) / 1000) as u32);
        if delta_us == 0 {
            return None;
        }
        let ncomps = u64::from(end.comps.wrapping_sub(self.start_sample.comps) as u32);
        let nr_events = u64::from(self.nr_events);
        let sat = |v: u64| u32::try_from(v).unwrap_or(u32::MAX);
        Some(IrqAmStats {
            cps: sat((ncomps * USEC_PER_SEC).div_ceil(delta_us)),
            eps: sat((nr_events * USEC_PER_SEC).div_ceil(delta_us)),
            cpe: sat(ncomps.div_ceil(nr_events)),
        })
    }

    fn on_edge(&self) -> bool {
        self.curr_level == 0 || self.curr_level == self.levels.len() - 1
    }

    /// irq_am_try_step: move one level in the current direction unless at the end.
    fn try_step(&mut self) {
        match self.tune_state {
            IrqAmTuneState::GoingUp if self.curr_level != self.levels.len() - 1 => {
                self.curr_level += 1
            }
            IrqAmTuneState::GoingDown if self.curr_level != 0 => self.curr_level -= 1,
            _ => {}
        }
    }

    /// irq_am_turn: reverse, then try a step.
    fn turn(&mut self) {
        self.tune_state = match self.tune_state {
            IrqAmTuneState::GoingUp => IrqAmTuneState::GoingDown,
            IrqAmTuneState::GoingDown => IrqAmTuneState::GoingUp,
        };
        self.try_step();
    }

    /// irq_am_stats_compare: more completions/s, then fewer events/s; with one completion
    /// per event at a level above 0, force the move toward less moderation.
    fn compare(&self, curr: &IrqAmStats) -> Diff {
        let prev = &self.prev_stats;
        if prev.cps == 0 {
            return Diff::Same;
        }
        if significant(curr.cps, prev.cps) {
            return if curr.cps > prev.cps {
                Diff::Better
            } else {
                Diff::Worse
            };
        }
        if significant(curr.eps, prev.eps) {
            return if curr.eps < prev.eps {
                Diff::Better
            } else {
                Diff::Worse
            };
        }
        if curr.cpe == 1 && self.curr_level > 0 {
            // Nothing left to aggregate: WORSE turns an upward search, BETTER continues down.
            return match self.tune_state {
                IrqAmTuneState::GoingUp => Diff::Worse,
                IrqAmTuneState::GoingDown => Diff::Better,
            };
        }
        Diff::Same
    }

    /// irq_am_decision: prev_stats moves only when the level changed, on an edge, or for
    /// the very first window.
    fn decision(&mut self, curr: &IrqAmStats) -> bool {
        let prev_level = self.curr_level;
        match self.compare(curr) {
            Diff::Same => {}
            Diff::Worse => self.turn(),
            Diff::Better => self.try_step(),
        }
        if self.curr_level != prev_level {
            self.counters.level_changes += 1;
        }
        let changed = self.curr_level != prev_level || self.on_edge();
        if changed || self.prev_stats.cps == 0 {
            self.prev_stats = *curr;
        }
        changed
    }
}
