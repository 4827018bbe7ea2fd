//! Fuzzing that stays (issue 12): mutation fuzz targets for the fio parser, the platform
//! loader and whole simulations, driven by proptest on stable Rust, plus the harness
//! that bounds each case in time and the process in memory. `irqlab`'s own tests fuzz
//! the scenario loader and `irqlab run` through the command line with the same pieces.
//!
//! A target returns Ok for an accepted input and Err(message) for a refused one; the
//! harness fails on a panic, a case that runs past its time limit, a message that
//! shows a Rust type or a debug print instead of words, or (the process's address space
//! being capped) an allocation past the cap.

pub mod mutate;
pub mod seeds;
pub mod targets;

use proptest::strategy::Strategy;
use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestRng, TestRunner};
use std::fmt::Debug;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;

/// Cases the targets accepted (the rest were refused with a message): a fuzz run that
/// only ever hits refusals explores little, so the summary shows the share.
pub static ACCEPTED: AtomicU64 = AtomicU64::new(0);
use std::time::{Duration, Instant};

/// How a fuzz run is bounded: `FUZZ_SECS` (a time budget with fresh random seeds, for
/// `make fuzz`) or else `FUZZ_CASES` cases from a fixed seed (default 32, for
/// `make test`: the same cases every run).
#[derive(Clone, Copy, Debug)]
pub struct Plan {
    pub secs: Option<u64>,
    pub cases: u32,
    pub seed: u64,
    /// The longest one case may run before it counts as a hang.
    pub case_limit: Duration,
}

impl Plan {
    pub fn from_env() -> Plan {
        let var = |k: &str| std::env::var(k).ok().and_then(|v| v.parse::<u64>().ok());
        let secs = var("FUZZ_SECS");
        let seed = var("FUZZ_SEED").unwrap_or_else(|| {
            if secs.is_some() {
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(1, |d| d.as_nanos() as u64)
            } else {
                12
            }
        });
        Plan {
            secs,
            cases: var("FUZZ_CASES").map_or(32, |c| c as u32),
            seed,
            case_limit: Duration::from_secs(var("FUZZ_CASE_SECS").unwrap_or(60)),
        }
    }
}

/// Caps this process's address space (RLIMIT_AS) at `bytes`: a blow-up becomes a failed
/// allocation, not a machine out of memory.
pub fn cap_memory(bytes: u64) {
    use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};
    let cur = getrlimit(Resource::As);
    let limit = match cur.maximum {
        Some(max) => bytes.min(max),
        None => bytes,
    };
    let _ = setrlimit(
        Resource::As,
        Rlimit {
            current: Some(limit),
            maximum: cur.maximum,
        },
    );
}

/// Words that must never reach a user: Rust types and debug prints of library errors.
const NOT_FOR_USERS: &[&str] = &[
    "usize", "u64", "u32", "i64", "f64", "Os {", "{ kind:", "Error(", "Some(", "None", "panicked",
];

/// Checks a refusal reads as words: no Rust type, no debug print.
pub fn check_message(msg: &str) -> Result<(), String> {
    for w in NOT_FOR_USERS {
        if msg.contains(w) {
            return Err(format!("the message shows '{w}': {msg}"));
        }
    }
    if msg.trim().is_empty() {
        return Err("an empty error message".into());
    }
    Ok(())
}

/// Runs `case` on a thread of its own: a panic or a run past `limit` is an Err.
pub fn guarded<T: Send + 'static>(
    input: T,
    limit: Duration,
    case: fn(T) -> Result<(), String>,
) -> Result<(), String> {
    let (tx, rx) = mpsc::channel();
    let worker = std::thread::Builder::new()
        .name("fuzz-case".into())
        .spawn(move || {
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| case(input)));
            let _ = tx.send(r);
        })
        .map_err(|e| format!("cannot start a case: {e}"))?;
    match rx.recv_timeout(limit) {
        Ok(Ok(r)) => {
            let _ = worker.join();
            r
        }
        Ok(Err(p)) => {
            let _ = worker.join();
            let why = p
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_default();
            Err(format!("PANIC: {why}"))
        }
        // The worker is left behind; the failing test ends the process.
        Err(_) => Err(format!("HANG: the case ran past {} s", limit.as_secs())),
    }
}

/// Fuzzes `case` over `strategy` as `plan` says; panics with the smallest failing input.
pub fn fuzz<S>(name: &str, plan: Plan, strategy: S, case: fn(S::Value) -> Result<(), String>)
where
    S: Strategy,
    S::Value: Debug + Clone + Send + 'static,
{
    let start = Instant::now();
    let mut seed = plan.seed;
    let mut ran = 0u64;
    loop {
        let batch = if plan.secs.is_some() { 16 } else { plan.cases };
        let config = Config {
            cases: batch,
            failure_persistence: None,
            max_shrink_iters: 64,
            max_shrink_time: 60_000,
            ..Config::default()
        };
        let mut bytes = [0u8; 32];
        bytes[..8].copy_from_slice(&seed.to_le_bytes());
        let mut runner =
            TestRunner::new_with_rng(config, TestRng::from_seed(RngAlgorithm::ChaCha, &bytes));
        let limit = plan.case_limit;
        let result = runner.run(&strategy, |input| {
            guarded(input, limit, case).map_err(TestCaseError::fail)
        });
        if let Err(e) = result {
            panic!("fuzz target {name} (FUZZ_SEED={seed}) failed: {e}");
        }
        ran += u64::from(batch);
        seed = seed.wrapping_add(1);
        match plan.secs {
            Some(s) if start.elapsed().as_secs() < s => continue,
            _ => break,
        }
    }
    eprintln!(
        "fuzz {name}: {ran} cases in {:.1} s (seeds {}..{seed}; accepted by any target of this process so far: {}): no panic, hang or message in Rust's terms",
        start.elapsed().as_secs_f64(),
        plan.seed,
        ACCEPTED.load(Ordering::Relaxed)
    );
}
