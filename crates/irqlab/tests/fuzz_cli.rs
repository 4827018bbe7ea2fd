//! Fuzz targets through the command (issue 12): the scenario loader (`irqlab reproduce`
//! on a mutated scenario) and a whole `irqlab run` with a mutated job and hostile
//! options. Each case is a process under `ulimit -v` (above its budget) and the
//! harness's time limit; a panic (exit 101), a signal, a hang or a message in Rust's terms fails.
//! `make test` runs a few fixed cases, `make fuzz` runs FUZZ_SECS seconds of fresh ones.

use irqlab_fuzz::grammar::{edit_job, job_edits};
use irqlab_fuzz::mutate::{HOSTILE_VALUES, apply, mutations};
use irqlab_fuzz::{Defect, Plan, check_message, fuzz, seeds};
use proptest::prelude::*;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};

/// A fresh directory per case.
fn case_dir() -> PathBuf {
    static N: AtomicU64 = AtomicU64::new(0);
    let d = std::env::temp_dir().join(format!(
        "irqlab-fuzz-cli-{}-{}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).expect("temp dir");
    d
}

/// Runs irqlab in `dir` capped at `cap_kib` KiB of address space: exit 0 is Ok(true), a
/// refusal (exit 2) is Ok(false) when it reads as words; anything else (a panic's 101, a
/// signal) is a failure.
fn irqlab(dir: &PathBuf, args: &[String], cap_kib: u64) -> Result<bool, Defect> {
    let out = Command::new("sh")
        .arg("-c")
        .arg(format!("ulimit -v {cap_kib}; exec \"$0\" \"$@\""))
        .arg(env!("CARGO_BIN_EXE_irqlab"))
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run irqlab: {e}"))?;
    let _ = std::fs::remove_dir_all(dir);
    let stderr = String::from_utf8_lossy(&out.stderr);
    match out.status.code() {
        Some(0) => Ok(true),
        Some(2) => {
            // FUZZ_VERBOSE=1 shows what keeps cases from running.
            if std::env::var_os("FUZZ_VERBOSE").is_some() {
                eprintln!("refused: {}", stderr.lines().next().unwrap_or(""));
            }
            check_message(&stderr).map(|()| false)
        }
        code => Err(Defect(format!(
            "irqlab {args:?} ended with {code:?}: {stderr}"
        ))),
    }
}

/// Cheap published scenarios (C2, C3, C4, C6) with their job and platform paths made
/// absolute, so a mutated copy elsewhere still finds them.
fn scenario_seeds() -> Vec<String> {
    seeds::scenarios()
        .into_iter()
        .filter(|p| {
            let s = p.to_string_lossy();
            ["/c2/", "/c3/", "/c4/", "/c6/"]
                .iter()
                .any(|e| s.contains(e))
        })
        .filter_map(|p| {
            let dir = p.parent()?.to_path_buf();
            let text = std::fs::read_to_string(&p).ok()?;
            let abs = |line: &str, key: &str| -> Option<String> {
                let rel = line.strip_prefix(key)?.trim().trim_matches('"');
                Some(format!("{key} \"{}\"", dir.join(rel).display()))
            };
            Some(
                text.lines()
                    .map(|l| {
                        abs(l, "job =")
                            .or_else(|| abs(l, "platform ="))
                            .unwrap_or_else(|| l.to_string())
                    })
                    .collect::<Vec<_>>()
                    .join("\n"),
            )
        })
        .collect()
}

fn scenario_case(text: Vec<u8>) -> Result<bool, Defect> {
    let d = case_dir();
    std::fs::create_dir_all(d.join("sc")).map_err(|e| e.to_string())?;
    std::fs::write(d.join("sc/s.toml"), &text).map_err(|e| e.to_string())?;
    let args = ["reproduce", "--scenarios", "sc", "--threads", "1"];
    // reproduce runs under the default budget (2 GiB): the cap leaves room above it, so
    // a failed allocation means the estimate was wrong, not the cap too tight.
    irqlab(&d, &args.map(String::from), 3 << 20)
}

#[test]
fn scenario_loader() {
    let mut plan = Plan::from_env();
    plan.cases = plan.cases.div_ceil(4);
    let strategy =
        (prop::sample::select(scenario_seeds()), mutations(4)).prop_map(|(s, m)| apply(&s, &m));
    fuzz("scenario_loader", plan, strategy, scenario_case);
}

/// Options of `irqlab run` with hostile values.
fn option() -> impl Strategy<Value = Vec<String>> {
    let value = prop::sample::select(HOSTILE_VALUES.to_vec());
    let flag = prop::sample::select(vec![
        "--disks",
        "--jobs-per-disk",
        "--vectors-per-cpu",
        "--max-loop",
        "--budget",
        "--weight",
        "--seed",
        "--irqtop",
        "--max-memory",
        "--max-events",
        "--trace-window",
        "--timeline-window",
        "--max-runtime",
        "--trace-max-size",
        "--map",
    ]);
    let key = prop::sample::select(vec![
        "cpu.count",
        "devices.0.count",
        "devices.0.queues",
        "devices.0.queue_depth",
        "devices.0.max_iops",
        "devices.0.irq_cpu",
        "kernel.cqe_ns",
        "uncore.ubox_ns",
    ]);
    let choice = prop::sample::select(vec![
        "--delivery posted",
        "--delivery polled",
        "--delivery hybrid",
        "--coalesce calibrated",
        "--coalesce 8,1",
        "--moderator net-dim",
        "--moderator gsim",
        "--handler irq-poll",
        "--handler threaded",
        "--reap-after-submit",
        "--flood-detection",
        "--output-format json+",
        "--interrupts",
        "--trace t.json",
        "--timeline t.svg",
    ]);
    prop_oneof![
        (flag, value.clone()).prop_map(|(f, v)| vec![f.to_string(), v.to_string()]),
        (key, value).prop_map(|(k, v)| vec!["--set".to_string(), format!("{k}={v}")]),
        choice.prop_map(|c| c.split(' ').map(String::from).collect()),
    ]
}

fn run_case((job, opts): (Vec<u8>, Vec<Vec<String>>)) -> Result<bool, Defect> {
    let d = case_dir();
    std::fs::write(d.join("j.fio"), &job).map_err(|e| e.to_string())?;
    let mut args: Vec<String> = ["run", "j.fio", "--platform"].map(String::from).to_vec();
    args.push(
        seeds::repo()
            .join("platforms/example.toml")
            .display()
            .to_string(),
    );
    // A small budget keeps accepted cases short and small: 512 MiB under a 1 GiB cap,
    // so a failed allocation means the estimate was off by half; the events let the
    // examples run in a release build, and fewer in the debug build `make test` uses.
    let events = if cfg!(debug_assertions) {
        "300000"
    } else {
        "5000000"
    };
    args.extend(["--max-events", events, "--max-memory", "512m"].map(String::from));
    // An argument cannot hold a NUL byte (the OS's argv): one becomes '?'.
    args.extend(opts.into_iter().flatten().map(|a| a.replace('\0', "?")));
    irqlab(&d, &args, 1 << 20)
}

/// Options a user would give together (issue 23: grammar-aware): one coherent policy,
/// a few output and topology options, and --max-runtime, so most cases run.
fn coherent_options() -> impl Strategy<Value = Vec<Vec<String>>> {
    // Polled delivery refuses libaio, most seeds' engine: one choice in twelve.
    let policy = prop::sample::select(vec![
        "",
        "--delivery posted",
        "--delivery posted --max-loop 5 --coalesce 8,1",
        "--delivery posted --max-loop 2",
        "--delivery hybrid",
        "--coalesce calibrated",
        "--moderator net-dim",
        "--moderator irq-am",
        "--moderator gsim --coalesce 8,1",
        "--handler irq-poll --budget 16 --weight 4",
        "--handler irq-poll --flood-detection",
        "--handler threaded --reap-after-submit",
    ]);
    let extra = prop::sample::select(vec![
        "--output-format json+",
        "--interrupts",
        "--trace t.json --trace-max-size 1m",
        "--timeline t.svg",
        "--seed 7",
        "--disks 2",
        "--jobs-per-disk 2",
        "--vectors-per-cpu 1",
        "--set devices.0.max_iops=300000",
        "--set cpu.irq_entry_ns=400",
        "--map *=nvme1",
        "--irqtop 0.0005",
    ]);
    // Scenario jobs are written for larger machines (CPUs past 15): half the cases run on
    // a 64-CPU example.
    let machine = prop::sample::select(vec!["", "--set cpu.count=64"]);
    let cap = prop::sample::select(vec!["500us", "1ms", "2ms"]);
    (policy, prop::collection::vec(extra, 0..3), machine, cap).prop_map(|(p, extras, m, cap)| {
        let words = |s: &str| s.split_whitespace().map(String::from).collect::<Vec<_>>();
        let mut out = vec![words(p), words(m)];
        out.extend(extras.into_iter().map(words));
        out.push(vec!["--max-runtime".into(), cap.into()]);
        out
    })
}

#[test]
fn run_command() {
    let mut plan = Plan::from_env();
    plan.cases = plan.cases.div_ceil(4);
    // Grammar-aware most of the time (jobs edited as a user edits them, coherent
    // options), the hostile mutations and options for the rest.
    let job = prop_oneof![
        1 => prop::sample::select(seeds::good_jobs()).prop_map(String::into_bytes),
        5 => (prop::sample::select(seeds::good_jobs()), job_edits(4)).prop_map(|(s, e)| edit_job(&s, &e)),
        2 => (prop::sample::select(seeds::jobs()), mutations(3)).prop_map(|(s, m)| apply(&s, &m)),
    ];
    let opts = prop_oneof![
        3 => coherent_options(),
        1 => prop::collection::vec(option(), 0..4),
    ];
    fuzz("run_command", plan, (job, opts), run_case);
}
