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
pub mod platform;

mod observer;

mod model;
mod rng;

pub use observer::{NoObserver, Observer, SliceKind};
pub use platform::{Platform, PlatformError};

use irqlab_core::Policy;
use irqlab_fio::JobSpec;
use irqlab_report::RunReport;
use std::fmt;

/// Options of one simulation run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SimOptions {
    /// Seed of the model's own streams (device service times); the same inputs and seed
    /// give the same report.
    pub seed: u64,
    /// Seed the jobs' streams (block sizes, read/write mix, rate gaps, start delays) from
    /// `seed` instead of each job's randseed, as the command line's --seed does. Without
    /// it, jobs seed as fio does: randseed, or fio's default 0x89 with randrepeat=1, or
    /// `seed` where fio would read /dev/urandom (randrepeat=0).
    pub override_randseed: bool,
}

impl SimOptions {
    /// Jobs seed from their own randseed; `seed` drives the model's streams.
    pub fn with_seed(seed: u64) -> Self {
        SimOptions {
            seed,
            override_randseed: false,
        }
    }

    /// `seed` drives every stream, the jobs' included.
    pub fn overriding(seed: u64) -> Self {
        SimOptions {
            seed,
            override_randseed: true,
        }
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
}

impl fmt::Display for SimError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SimError::Job {
                file,
                line,
                job,
                msg,
            } => write!(f, "{file}:{line}: job '{job}': {msg}"),
            SimError::Platform(m) => write!(f, "platform: {m}"),
            SimError::Config(m) => f.write_str(m),
            SimError::Unsupported(m) => write!(f, "not supported by the simulator: {m}"),
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
    let mut whole = model::build(jobs, platform, policy, opts, &mut obs)?;
    match model::Partition::of(&whole).filter(|_| threads > 1) {
        Some(partition) => {
            let built = || {
                model::build(
                    jobs,
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
    let whole = model::build(jobs, platform, policy, opts, &mut obs)?;
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
    let mut sim = model::build(jobs, platform, policy, opts, observer)?;
    sim.run();
    Ok(sim.report())
}
