//! The discrete-event model of the completion path: a fio job on a platform, under a
//! delivery and moderation policy, simulated down to MSI writes, IOMMU handling, CPU
//! notifications, handlers, softirqs, wake-ups and context switches.
//!
//! ```no_run
//! # use irqlab_sim::{simulate, Platform, SimOptions};
//! # fn f(jobs: &[irqlab_fio::JobSpec]) -> Result<(), Box<dyn std::error::Error>> {
//! let platform = Platform::load("platforms/example.toml".as_ref(), &[])?;
//! let report = simulate(jobs, &platform, &irqlab_core::Policy::default(), &SimOptions::default())?;
//! println!("{} I/Os", report.total_ios());
//! # Ok(()) }
//! ```
//!
//! The mechanisms themselves (posted descriptor and demux, NVMe queue pairs and phase
//! tags, coalescing, the vector gate, irq_poll, softirq limits) come from `irqlab-core`;
//! this crate supplies time, topology and costs. docs/model.md describes the model.

// Public for the benchmark (benches/sim_speed.rs times the bare event queue).
pub mod engine;
pub mod guest;
pub mod ledger;
pub mod platform;
pub mod toml_input;

mod observer;

mod model;
mod rng;

pub use guest::{Hypervisor, PolicyRefused};
pub use observer::{NoObserver, Observer, SliceKind};
pub use platform::{Platform, PlatformError};

use irqlab_core::Policy;
use irqlab_core::delivery::AffinityEvent;
use irqlab_fio::{JobSpec, RunPlan};
use irqlab_report::RunReport;
use std::fmt;

/// Limits a simulation is checked against before its model is built (see [`estimate`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Budget {
    /// Memory the model (and its report) may take, bytes.
    pub max_memory_bytes: u64,
    /// Events the run may process: about a second of wall time per few million.
    pub max_events: u64,
}

impl Budget {
    /// 2 GiB and 10^10 events (tens of minutes of wall time): every scenario and example
    /// fits with room to spare, and a minute of a busy disk's simulated time does too.
    pub const DEFAULT: Budget = Budget {
        max_memory_bytes: 2 << 30,
        max_events: 10_000_000_000,
    };
}

impl Default for Budget {
    fn default() -> Self {
        Budget::DEFAULT
    }
}

/// What a simulation is expected to take, from the topology and jobs alone.
#[derive(Clone, Debug, PartialEq)]
pub struct Estimate {
    pub memory_bytes: u64,
    pub events: u64,
    /// Simulated time the run may last, ns.
    pub simulated_ns: u64,
    /// I/Os it may complete and timer ticks it fires.
    pub ios: u64,
    pub ticks: u64,
    /// Where the memory goes, largest first: (what, bytes).
    pub memory_parts: Vec<(String, u64)>,
}

pub use irqlab_core::StopFlag;

/// Options of one simulation run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SimOptions {
    /// Seed of the model's own streams (device service times); the same inputs and seed
    /// give the same report.
    pub seed: u64,
    /// Seed the jobs' streams (block sizes, read/write mix, rate gaps, start delays) from
    /// `seed` instead of each job's randseed, as the command line's --seed does. Without
    /// it, jobs seed as fio does: randseed, or fio's default 0x89 with randrepeat=1, or
    /// `seed` where fio would read /dev/urandom (randrepeat=0).
    pub override_randseed: bool,
    /// The resource budget the run is checked against before it is built.
    pub budget: Budget,
    /// Set from another thread to stop the run early (its report says so).
    pub stop: StopFlag,
    /// `--event`: vectors moved and CPUs taken offline at given times of the run
    /// (docs/model.md "Moving interrupts during a run").
    pub events: Vec<AffinityEvent>,
}

impl SimOptions {
    /// Jobs seed from their own randseed; `seed` drives the model's streams.
    pub fn with_seed(seed: u64) -> Self {
        SimOptions {
            seed,
            override_randseed: false,
            budget: Budget::DEFAULT,
            stop: StopFlag::default(),
            events: Vec::new(),
        }
    }

    /// `seed` drives every stream, the jobs' included.
    pub fn overriding(seed: u64) -> Self {
        SimOptions {
            override_randseed: true,
            ..SimOptions::with_seed(seed)
        }
    }

    /// The same options under another budget.
    pub fn with_budget(self, budget: Budget) -> Self {
        SimOptions { budget, ..self }
    }

    /// The same options, stopped when `flag` is set.
    pub fn stopped_by(self, flag: StopFlag) -> Self {
        SimOptions { stop: flag, ..self }
    }

    /// The same options with `events` carried out during the run.
    pub fn with_events(self, events: Vec<AffinityEvent>) -> Self {
        SimOptions { events, ..self }
    }
}

impl Default for SimOptions {
    fn default() -> Self {
        SimOptions::with_seed(1)
    }
}

/// Why a simulation could not run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SimError {
    /// A job asks for something the platform does not have or fio would refuse.
    Job {
        file: String,
        line: usize,
        job: String,
        msg: String,
    },
    /// The platform is inconsistent.
    Platform(String),
    /// The combination of jobs, platform and policy cannot be modelled.
    Config(String),
    /// A policy the simulator does not model yet.
    Unsupported(String),
    /// A policy the platform cannot run (posted MSI on a guest).
    Refused(PolicyRefused),
    /// The run's estimated memory or events exceed its [`Budget`]; the message says what
    /// to shrink.
    OverBudget(String),
}

impl fmt::Display for SimError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SimError::Job {
                file,
                line,
                job,
                msg,
            } => write!(
                f,
                "{}:{line}: job '{}': {}",
                irqlab_fio::escape_controls(file),
                irqlab_fio::escape_controls(job),
                irqlab_fio::escape_controls(msg)
            ),
            SimError::Platform(m) => write!(f, "platform: {m}"),
            SimError::Config(m) => f.write_str(m),
            SimError::Unsupported(m) => write!(f, "not supported by the simulator: {m}"),
            SimError::Refused(r) => write!(f, "{r}"),
            SimError::OverBudget(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for SimError {}

/// Simulates `jobs` on `platform` under `policy`.
pub fn simulate(
    jobs: &[JobSpec],
    platform: &Platform,
    policy: &Policy,
    opts: &SimOptions,
) -> Result<RunReport, SimError> {
    simulate_observed(jobs, platform, policy, opts, &mut NoObserver)
}

/// [`simulate`] on up to `threads` threads. A machine that splits into parts sharing no
/// CPU, queue, root port or delivery unit (C3's drives, each with its own CPU and port,
/// polled or with an instant delivery path) runs its parts side by side and merges them;
/// the report is byte-identical to [`simulate`]'s. A machine that does not split runs on
/// one thread. docs/model.md ("Speed") has the measured speed-ups.
pub fn simulate_parallel(
    jobs: &[JobSpec],
    platform: &Platform,
    policy: &Policy,
    opts: &SimOptions,
    threads: usize,
) -> Result<RunReport, SimError> {
    let mut obs = NoObserver;
    let plan = RunPlan::of(jobs);
    let mut whole = model::build(jobs, &plan, platform, policy, opts, &mut obs)?;
    match model::Partition::of(&whole).filter(|_| threads > 1) {
        Some(partition) => {
            let built = || {
                model::build(
                    jobs,
                    &plan,
                    platform,
                    policy,
                    opts,
                    Box::leak(Box::new(NoObserver)),
                )
            };
            match model::run_parts(&partition, threads, built, &mut whole)? {
                true => Ok(whole.report()),
                // A part ran into the time bound: the whole machine's bound decides.
                false => simulate(jobs, platform, policy, opts),
            }
        }
        None => {
            whole.run();
            Ok(whole.report())
        }
    }
}

/// How many independent parts the machine of a run splits into (1: it does not split),
/// as [`simulate_parallel`] would run them.
pub fn independent_parts(
    jobs: &[JobSpec],
    platform: &Platform,
    policy: &Policy,
    opts: &SimOptions,
) -> Result<usize, SimError> {
    let mut obs = NoObserver;
    let whole = model::build(jobs, &RunPlan::of(jobs), platform, policy, opts, &mut obs)?;
    Ok(model::Partition::of(&whole).map_or(1, |p| p.parts()))
}

/// [`simulate`] with an observer that sees every CPU slice, message and notification.
pub fn simulate_observed<O: Observer>(
    jobs: &[JobSpec],
    platform: &Platform,
    policy: &Policy,
    opts: &SimOptions,
    observer: &mut O,
) -> Result<RunReport, SimError> {
    let mut sim = model::build(jobs, &RunPlan::of(jobs), platform, policy, opts, observer)?;
    sim.run();
    Ok(sim.report())
}

/// The platform's device names in order (`nvme0`, `nvme1`, ...), as job files name them.
pub fn device_names(p: &Platform) -> Vec<String> {
    model::device_names(p)
}

/// The index in `names` of the device `file` names (`/dev/nvme0n1`, `nvme0n1` and
/// `nvme0` all name `nvme0`), if any.
pub fn device_of(file: &str, names: &[String]) -> Option<usize> {
    model::resolve_file(file, names)
}

/// What simulating `jobs` would take, from the topology and jobs alone: checked against
/// a [`Budget`] before every run, and public so a caller can show it.
pub fn estimate(
    jobs: &[JobSpec],
    platform: &Platform,
    policy: &Policy,
) -> Result<Estimate, SimError> {
    model::estimate(jobs, &RunPlan::of(jobs), platform, policy)
}
