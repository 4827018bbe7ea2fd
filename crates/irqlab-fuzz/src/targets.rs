//! The fuzz targets: each takes an input as bytes (a file's contents) and returns
//! Ok(true) when irqlab accepts it, Ok(false) when it refuses it in the user's terms, and
//! Err(why) when the refusal does not read as words.

use crate::{Defect, check_message};
use irqlab_core::{Delivery, DeviceCoalescing, HandlerStyle, ModeratorKind, Policy};
use irqlab_sim::{Budget, SimOptions};
use std::path::Path;

/// A budget small enough that an accepted case takes a second or two at most (a debug
/// build, as `make test` runs, is ten times slower than a release one).
pub const CASE_BUDGET: Budget = Budget {
    max_memory_bytes: 256 << 20,
    max_events: if cfg!(debug_assertions) {
        300_000
    } else {
        3_000_000
    },
};

/// Text from a file's bytes, as the loaders read it (`input::read_text`: a file past
/// the size limit is refused before it is parsed).
fn text(bytes: &[u8]) -> Result<String, String> {
    let limit = irqlab_fio::input::MAX_INPUT_BYTES;
    if bytes.len() as u64 > limit {
        return Err(irqlab_fio::input::InputError::TooLarge {
            bytes: bytes.len() as u64,
            limit,
        }
        .to_string());
    }
    irqlab_fio::input::text(bytes.to_vec()).map_err(|e| format!("fuzz input: {e}"))
}

/// A refusal: its message must read as words. FUZZ_VERBOSE=1 prints it, to see what
/// keeps cases from running.
fn refused(msg: String) -> Result<bool, Defect> {
    check_message(&msg)?;
    if std::env::var_os("FUZZ_VERBOSE").is_some() {
        eprintln!("refused: {}", msg.lines().next().unwrap_or(""));
    }
    Ok(false)
}

/// The fio job-file parser.
pub fn fio_parser(bytes: Vec<u8>) -> Result<bool, Defect> {
    let t = match text(&bytes) {
        Ok(t) => t,
        Err(e) => return refused(e),
    };
    match irqlab_fio::parse_str(&t, Path::new("fuzz.fio")) {
        Err(e) => refused(e.to_string()),
        Ok(jobs) => {
            let clones: u64 = jobs.iter().map(|j| u64::from(j.numjobs)).sum();
            if clones > irqlab_fio::MAX_JOBS {
                return Err(Defect(format!("{clones} jobs accepted, past fio's limit")));
            }
            Ok(true)
        }
    }
}

/// The platform loader, with `--set` overrides.
pub fn platform_loader((bytes, sets): (Vec<u8>, Vec<String>)) -> Result<bool, Defect> {
    let t = match text(&bytes) {
        Ok(t) => t,
        Err(e) => return refused(e),
    };
    // Text that names a shared table finds it among the repository's platforms.
    let tables = crate::seeds::repo().join("platforms");
    match irqlab_sim::ledger::from_text(&t, "fuzz.toml", Some(&tables), &sets) {
        Err(e) => refused(e.to_string()),
        Ok(irqlab_sim::ledger::Resolved { platform: p, .. }) => {
            p.validate().map_err(|e| Defect(e.0))?;
            // What a model of it would take is computable, without building it.
            let job = irqlab_fio::parse_str(
                "[j]\nfilename=nvme0n1\nruntime=1ms\n",
                Path::new("fuzz.fio"),
            )
            .map_err(|e| e.to_string())?;
            if let Err(e) = irqlab_sim::estimate(&job, &p, &Policy::default()) {
                return refused(e.to_string());
            }
            Ok(true)
        }
    }
}

/// Policies a whole-run case may use.
pub fn policies() -> Vec<Policy> {
    let base = Policy::default();
    vec![
        base,
        Policy {
            delivery: Delivery::Posted { max_loop: 3 },
            ..base
        },
        Policy {
            delivery: Delivery::Polled,
            ..base
        },
        Policy {
            delivery: Delivery::Hybrid,
            ..base
        },
        Policy {
            coalescing: DeviceCoalescing::Calibrated,
            moderator: ModeratorKind::IrqAm,
            ..base
        },
        Policy {
            coalescing: DeviceCoalescing::Nvme {
                thr: 7,
                time_100us: 1,
            },
            moderator: ModeratorKind::NetDim,
            ..base
        },
        Policy {
            handler: HandlerStyle::IrqPoll {
                budget: 8,
                weight: 4,
            },
            flood_detection: true,
            ..base
        },
        Policy {
            handler: HandlerStyle::Threaded,
            moderator: ModeratorKind::Gsim,
            reap_after_submit: true,
            ..base
        },
    ]
}

/// A whole simulation: a job file and a platform, both mutated, under one policy, with a
/// small budget; an accepted run renders as fio text and JSON. The job is shaped as
/// `irqlab run` shapes it: its files mapped onto the platform's devices, and with `cap`
/// (ns) every runtime capped, as `--max-runtime` does for a user trying a file.
pub fn simulate(
    (job, platform, policy, cap): (Vec<u8>, Vec<u8>, usize, Option<u64>),
) -> Result<bool, Defect> {
    let (jt, pt) = match (text(&job), text(&platform)) {
        (Ok(j), Ok(p)) => (j, p),
        (Err(e), _) | (_, Err(e)) => return refused(e),
    };
    let tables = crate::seeds::repo().join("platforms");
    let p = match irqlab_sim::ledger::from_text(&pt, "fuzz.toml", Some(&tables), &[]) {
        Ok(r) => r.platform,
        Err(e) => return refused(e.to_string()),
    };
    let jobs = match irqlab_fio::parse_str_for(&jt, Path::new("fuzz.fio"), p.cpu.count) {
        Ok(j) => j,
        Err(e) => return refused(e.to_string()),
    };
    let shape = irqlab_inputs::RunShape {
        maps: Vec::new(),
        max_runtime_ns: cap,
    };
    let devices = irqlab_sim::device_names(&p);
    let jobs = match irqlab_inputs::shape_jobs(jobs, &devices, &shape, p.cpu.count, "fuzz") {
        Ok(s) => s.jobs,
        Err(e) => return refused(e.to_string()),
    };
    let policies = policies();
    let policy = policies[policy % policies.len()];
    let opts = SimOptions::overriding(1).with_budget(CASE_BUDGET);
    match irqlab_sim::simulate(&jobs, &p, &policy, &opts) {
        Err(e) => refused(e.to_string()),
        Ok(r) => {
            irqlab_report::text::render(&r);
            irqlab_report::fio_json::render(&r, true);
            irqlab_report::proc_interrupts::render(&r);
            Ok(true)
        }
    }
}
