//! Fuzzing that stays (issue 12): mutation fuzz targets for the fio parser, the platform
//! loader and whole simulations, driven by proptest on stable Rust, plus the harness
//! that bounds each case in time and the process in memory. `irqlab`'s own tests fuzz
//! the scenario loader and `irqlab run` through the command line with the same pieces.
//!
//! A target returns Ok(true) for an accepted input, Ok(false) for one refused in the
//! user's terms, and Err(why) for a failure; the harness also fails on a panic, a case that runs past its time limit, a message that
//! shows a Rust type or a debug print instead of words, or (the process's address space
//! being capped) an allocation past the cap.

pub mod grammar;
pub mod mutate;
pub mod seeds;
pub mod targets;

use proptest::strategy::Strategy;
use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestRng, TestRunner};
use std::fmt::Debug;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
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

/// Rust type names that must never reach a user, as whole words.
const RUST_TYPES: &[&str] = &[
    "usize", "u64", "u32", "u16", "u8", "i64", "i32", "f64", "f32",
];
/// Debug prints of library errors and panics.
const DEBUG_PRINTS: &[&str] = &["Os {", "{ kind:", "Error(", "Some(", "panicked"];

/// `msg` without what it quotes ('...' and "..."): the user's own text may hold any word.
fn unquoted(msg: &str) -> String {
    let mut out = String::with_capacity(msg.len());
    let mut quote: Option<char> = None;
    let mut prev = ' ';
    for c in msg.chars() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => {}
            // An apostrophe inside a word (fio's) opens no quote.
            None if c == '"' || (c == '\'' && !prev.is_alphanumeric()) => quote = Some(c),
            None => out.push(c),
        }
        prev = c;
    }
    out
}

/// What a fuzz case found wrong: a panic, a hang, a refusal that does not read as words,
/// or an accepted input whose output is malformed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Defect(pub String);

impl std::fmt::Display for Defect {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Defect {}

// Checks inside a case build their reason as text; `?` makes it a defect.
impl From<String> for Defect {
    fn from(s: String) -> Self {
        Defect(s)
    }
}

/// Checks a refusal reads as words: no Rust type, no debug print.
pub fn check_message(msg: &str) -> Result<(), Defect> {
    if msg.trim().is_empty() {
        return Err(Defect("an empty error message".into()));
    }
    let text = unquoted(msg);
    let is_word = |c: char| c.is_ascii_alphanumeric() || c == '_';
    for word in text.split(|c: char| !is_word(c)) {
        if RUST_TYPES.contains(&word) {
            return Err(Defect(format!(
                "the message shows the Rust type '{word}': {msg}"
            )));
        }
    }
    for p in DEBUG_PRINTS {
        if text.contains(p) {
            return Err(Defect(format!("the message shows '{p}': {msg}")));
        }
    }
    Ok(())
}

/// Runs `case` on a thread of its own: a panic or a run past `limit` is an Err.
pub fn guarded<T: Send + 'static>(
    input: T,
    limit: Duration,
    case: fn(T) -> Result<bool, Defect>,
) -> Result<bool, Defect> {
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
            Err(Defect(format!("PANIC: {why}")))
        }
        // The worker is left behind; the failing test ends the process.
        Err(_) => Err(Defect(format!(
            "HANG: the case ran past {} s",
            limit.as_secs()
        ))),
    }
}

/// Fuzzes `case` over `strategy` as `plan` says; panics with the smallest failing input.
pub fn fuzz<S>(name: &str, plan: Plan, strategy: S, case: fn(S::Value) -> Result<bool, Defect>)
where
    S: Strategy,
    S::Value: Debug + Clone + Send + 'static,
{
    let start = Instant::now();
    let mut seed = plan.seed;
    let mut ran = 0u64;
    // Accepted cases (the rest were refused): a run that only meets refusals explores
    // little, so the summary shows the share.
    let accepted = AtomicU64::new(0);
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
        // FUZZ_DUMP=1 writes each input before it runs: a case that aborts the process
        // (an allocation past the memory cap) leaves itself behind.
        let dump = std::env::var_os("FUZZ_DUMP")
            .map(|_| std::env::temp_dir().join(format!("irqlab-fuzz-{name}.last")));
        let result = runner.run(&strategy, |input| {
            if let Some(path) = &dump {
                let _ = std::fs::write(path, format!("{input:?}"));
            }
            let ok = guarded(input, limit, case).map_err(|d| TestCaseError::fail(d.0))?;
            accepted.fetch_add(u64::from(ok), Ordering::Relaxed);
            Ok(())
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
        "fuzz {name}: {ran} cases ({} accepted, the rest refused) in {:.1} s (seeds {}..{seed}): no panic, hang or message in Rust's terms",
        accepted.load(Ordering::Relaxed),
        start.elapsed().as_secs_f64(),
        plan.seed
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rust_terms_are_found_as_words_outside_quotes() {
        assert!(check_message("x: -1, expected usize").is_err());
        assert!(check_message("backend error: IoError(Os { code: 2 })").is_err());
        assert!(check_message("fuzz.fio:1: 'irq_cpusize' is outside of any [section]").is_ok());
        assert!(check_message("unknown option 'u64'").is_ok());
        assert!(check_message("fio's limit, expected u32").is_err());
        assert!(check_message("").is_err());
    }
}
