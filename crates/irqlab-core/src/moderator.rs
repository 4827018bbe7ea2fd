//! One face for the per-queue adaptive moderators (net_dim, rdma_dim, irq-am), so the
//! engines drive them alike: feed each interrupt/poll round, program the level asked for
//! (asynchronously, like the kernel's work item), acknowledge, and read debugfs-style state.
//!
//! GSIM is not here: it is a per-CPU software delay, not a per-queue device setting, and
//! lives in [`crate::gsim`]. [`Moderator::new`] returns `None` for `ModeratorKind::None`
//! and `ModeratorKind::Gsim` alike; use [`is_per_cpu`] to tell them apart.

use std::fmt;

use crate::ModeratorKind;
use crate::dim::{
    CqPeriodMode, Dim, DimCounters, DimError, DimSample, IRQ_AM_DEFAULT_NR_EVENTS, IrqAm,
    NET_DIM_DEF_PROFILE_CQE, NET_DIM_DEF_PROFILE_EQE, NetDirection, Profile, RDMA_DIM_PROFILES,
    RDMA_DIM_START_PROFILE, TuneState,
};

/// "Program level `level` = `profile` into the device, then call [`Moderator::ack`]."
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LevelRequest {
    pub level: usize,
    pub profile: Profile,
}

/// Debugfs-style counters of one moderator.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ModerationCounters {
    pub events: u64,
    pub windows: u64,
    pub decisions: u64,
    pub level_changes: u64,
    pub samples_ignored: u64,
    /// Program requests handed out (irq-am also re-programs on an edge).
    pub programs: u64,
}

/// A custom table that no moderator can use.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModeratorError {
    pub kind: ModeratorKind,
    pub cause: DimError,
}

impl fmt::Display for ModeratorError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} moderator: {}", self.kind, self.cause)
    }
}

impl std::error::Error for ModeratorError {}

/// True for the per-CPU mechanism (GSIM) that [`Moderator`] does not cover.
pub fn is_per_cpu(kind: ModeratorKind) -> bool {
    kind == ModeratorKind::Gsim
}

#[derive(Clone, Debug)]
enum Engine {
    /// net_dim fed from running counters: packets = completions (NVMe has no packets).
    NetDim {
        dim: Dim,
        ctr: DimSample,
    },
    RdmaDim(Dim),
    IrqAm(IrqAm),
}

/// A per-queue adaptive moderator.
#[derive(Clone, Debug)]
pub struct Moderator {
    kind: ModeratorKind,
    engine: Engine,
    events: u64,
    /// The level the device runs: the start level, then each acknowledged request.
    applied: usize,
    /// Time at each applied level per interval of the run, booked between consecutive
    /// events: `course[i][level]` in [i, i+1) × `course_ns`.
    course: Vec<Vec<u64>>,
    course_ns: u64,
    last_event_ns: Option<u64>,
}

/// The first width of one interval of a moderator's course over time (the level
/// histogram of each millisecond of the run); it doubles whenever the run outgrows
/// [`LEVEL_COURSE_INTERVALS`] of them, so the course stays small on a long run.
pub const LEVEL_COURSE_NS: u64 = 1_000_000;
pub const LEVEL_COURSE_INTERVALS: usize = 1024;

impl Moderator {
    /// Build the moderator for `kind`. `table` replaces the kernel table (net_dim: the RX
    /// table for the device coalescer's period mode, [`crate::nvme::coalesce::PERIOD_MODE`],
    /// i.e. RX EQE; rdma_dim: rdma_dim_prof; irq-am, which had no table of its own:
    /// rdma_dim_prof). net_dim starts at profile 1 (0 for a one-level table), the others at
    /// level 0.
    pub fn new(
        kind: ModeratorKind,
        table: Option<&[Profile]>,
    ) -> Result<Option<Moderator>, ModeratorError> {
        let err = |cause| ModeratorError { kind, cause };
        let engine = match kind {
            ModeratorKind::None | ModeratorKind::Gsim => return Ok(None),
            ModeratorKind::NetDim => {
                let dim = match table {
                    None => Dim::net(NetDirection::Rx, crate::nvme::coalesce::PERIOD_MODE),
                    Some(t) => {
                        let def = match crate::nvme::coalesce::PERIOD_MODE {
                            CqPeriodMode::StartFromEqe => NET_DIM_DEF_PROFILE_EQE,
                            CqPeriodMode::StartFromCqe => NET_DIM_DEF_PROFILE_CQE,
                        };
                        let start = def.min(t.len().saturating_sub(1));
                        Dim::new(t.to_vec(), start, TuneState::ParkingOnTop).map_err(err)?
                    }
                };
                Engine::NetDim {
                    dim,
                    ctr: DimSample::default(),
                }
            }
            ModeratorKind::RdmaDim => Engine::RdmaDim(match table {
                None => Dim::rdma(),
                Some(t) => Dim::new(t.to_vec(), RDMA_DIM_START_PROFILE, TuneState::GoingRight)
                    .map_err(err)?,
            }),
            ModeratorKind::IrqAm => {
                let levels = table.unwrap_or(&RDMA_DIM_PROFILES).to_vec();
                Engine::IrqAm(IrqAm::new(levels, IRQ_AM_DEFAULT_NR_EVENTS, 0).map_err(err)?)
            }
        };
        let mut m = Moderator {
            kind,
            engine,
            events: 0,
            applied: 0,
            course: Vec::new(),
            course_ns: LEVEL_COURSE_NS,
            last_event_ns: None,
        };
        m.applied = m.level();
        Ok(Some(m))
    }

    /// irq-am with a measurement window of `nr_events` events (irq_am_init's argument: the
    /// RFC leaves it to the consumer); the other moderators keep theirs. A zero window is
    /// refused.
    pub fn with_nr_events(mut self, nr_events: u16) -> Result<Moderator, ModeratorError> {
        if let Engine::IrqAm(am) = &self.engine {
            let err = |cause| ModeratorError {
                kind: self.kind,
                cause,
            };
            let am = IrqAm::new(am.levels().to_vec(), nr_events, am.level()).map_err(err)?;
            self.engine = Engine::IrqAm(am);
        }
        Ok(self)
    }

    /// One interrupt or poll round at `now_ns` that reaped `completions` CQEs carrying
    /// `bytes`. Returns the level to program when the moderator decides to move.
    pub fn on_event(&mut self, now_ns: u64, completions: u32, bytes: u64) -> Option<LevelRequest> {
        self.events += 1;
        if let Some(last) = self.last_event_ns.replace(now_ns)
            && self.applied < self.levels().len()
        {
            self.book_course(last, now_ns);
        }
        let program = match &mut self.engine {
            Engine::NetDim { dim, ctr } => {
                // dim_update_sample(cq.event_ctr, packets, bytes): wrapping counters.
                ctr.time_ns = now_ns;
                ctr.event_ctr = ctr.event_ctr.wrapping_add(1);
                ctr.pkt_ctr = ctr.pkt_ctr.wrapping_add(completions);
                ctr.byte_ctr = ctr.byte_ctr.wrapping_add(bytes as u32);
                dim.net_dim(*ctr)
            }
            Engine::RdmaDim(dim) => dim.rdma_dim(now_ns, u64::from(completions)),
            Engine::IrqAm(am) => {
                am.add_comps(u64::from(completions));
                am.add_event(now_ns)
            }
        };
        program.then(|| LevelRequest {
            level: self.level(),
            profile: self.profile(),
        })
    }

    /// Books [from, to) at the applied level into the course's intervals it spans.
    fn book_course(&mut self, from: u64, to: u64) {
        let levels = self.levels().len();
        let mut at = from;
        while at < to {
            while at / self.course_ns >= LEVEL_COURSE_INTERVALS as u64 {
                self.widen_course();
            }
            let i = (at / self.course_ns) as usize;
            let end = to.min((i as u64 + 1) * self.course_ns);
            if self.course.len() <= i {
                self.course.resize(i + 1, vec![0; levels]);
            }
            self.course[i][self.applied] += end - at;
            at = end;
        }
    }

    /// Twice as wide intervals: each pair of intervals becomes one.
    fn widen_course(&mut self) {
        let pairs: Vec<Vec<u64>> = self
            .course
            .chunks(2)
            .map(|pair| {
                let mut sum = pair[0].clone();
                if let Some(second) = pair.get(1) {
                    sum.iter_mut().zip(second).for_each(|(a, b)| *a += b);
                }
                sum
            })
            .collect();
        self.course = pairs;
        self.course_ns *= 2;
    }

    /// The device now runs the requested level: measuring starts again.
    pub fn ack(&mut self) {
        match &mut self.engine {
            Engine::NetDim { dim, .. } | Engine::RdmaDim(dim) => dim.work_done(),
            Engine::IrqAm(am) => am.program_done(),
        }
        self.applied = self.level();
    }

    /// The level the device runs: the start level until the first [`Moderator::ack`],
    /// then the level of the last acknowledged request.
    pub fn applied_level(&self) -> usize {
        self.applied
    }

    /// Time at each level (indexed like [`Moderator::levels`]), booked between
    /// consecutive [`Moderator::on_event`] calls to the level the device ran.
    pub fn level_ns(&self) -> Vec<u64> {
        let mut total = vec![0; self.levels().len()];
        for interval in &self.course {
            total.iter_mut().zip(interval).for_each(|(t, x)| *t += x);
        }
        total
    }

    /// The level histogram over time: the intervals' width (ns) and the time at each
    /// level in each interval of the run, booked as [`Moderator::level_ns`] is.
    pub fn level_course(&self) -> (u64, &[Vec<u64>]) {
        (self.course_ns, &self.course)
    }

    pub fn kind(&self) -> ModeratorKind {
        self.kind
    }

    /// `curr_level` / `profile_ix`.
    pub fn level(&self) -> usize {
        match &self.engine {
            Engine::NetDim { dim, .. } | Engine::RdmaDim(dim) => dim.profile_ix(),
            Engine::IrqAm(am) => am.level(),
        }
    }

    pub fn profile(&self) -> Profile {
        match &self.engine {
            Engine::NetDim { dim, .. } | Engine::RdmaDim(dim) => dim.profile(),
            Engine::IrqAm(am) => am.profile(),
        }
    }

    pub fn levels(&self) -> &[Profile] {
        match &self.engine {
            Engine::NetDim { dim, .. } | Engine::RdmaDim(dim) => dim.profiles(),
            Engine::IrqAm(am) => am.levels(),
        }
    }

    /// The tune state as the debugfs file would name it.
    pub fn tune_state(&self) -> &'static str {
        match &self.engine {
            Engine::NetDim { dim, .. } | Engine::RdmaDim(dim) => dim.tune_state().as_str(),
            Engine::IrqAm(am) => am.tune_state().as_str(),
        }
    }

    /// True between a [`LevelRequest`] and its [`Moderator::ack`].
    pub fn awaiting_ack(&self) -> bool {
        match &self.engine {
            Engine::NetDim { dim, .. } | Engine::RdmaDim(dim) => {
                dim.state() == crate::dim::DimState::ApplyNewProfile
            }
            Engine::IrqAm(am) => am.state() == crate::dim::IrqAmState::ProgramModeration,
        }
    }

    pub fn counters(&self) -> ModerationCounters {
        let (c, programs): (DimCounters, u64) = match &self.engine {
            Engine::NetDim { dim, .. } | Engine::RdmaDim(dim) => {
                (dim.counters(), dim.counters().level_changes)
            }
            Engine::IrqAm(am) => (am.counters(), am.programs()),
        };
        ModerationCounters {
            events: self.events,
            windows: c.windows,
            decisions: c.decisions,
            level_changes: c.level_changes,
            samples_ignored: c.samples_ignored,
            programs,
        }
    }
}
