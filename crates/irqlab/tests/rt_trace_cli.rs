//! `irqlab rt --trace` and `--timeline` as a user runs them: the trace is Chrome
//! trace-event JSON with the schema `irqlab run --trace` writes (the same phases,
//! categories, slice names and track names), so Perfetto opens both alike.

use serde_json::Value;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Two disks, one CPU thread: a short interrupt-driven run.
const JOB: &str = "[global]\nioengine=libaio\ndirect=1\nrw=randread\nbs=4k\niodepth=16\n\
    iodepth_batch_submit=4\ntime_based\nruntime=30ms\n[a]\nfilename=/dev/nvme0n1\n\
    cpus_allowed=0\n[b]\nfilename=/dev/nvme1n1\ncpus_allowed=0\n";

fn dir(name: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("irqlab-rt-trace-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    std::fs::write(d.join("j.fio"), JOB).unwrap();
    d
}

fn irqlab(args: &[&str], cwd: &Path) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_irqlab"))
        .args(args)
        .current_dir(cwd)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(out.status.success(), "irqlab {args:?}: {stderr}");
    String::from_utf8_lossy(&out.stdout).to_string()
}

fn events(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap();
    let v: Value = serde_json::from_str(&text).expect("the trace is JSON");
    assert_eq!(v["displayTimeUnit"], "ns");
    v["traceEvents"].as_array().expect("traceEvents").clone()
}

/// What the schema is made of: (phase, category, name) of every event, with the names of
/// per-CPU counters and tracks generalised.
fn shapes(evs: &[Value]) -> BTreeSet<(String, String, String)> {
    evs.iter()
        .map(|e| {
            let s = |k: &str| e[k].as_str().unwrap_or("").to_string();
            let mut name = s("name");
            if name.starts_with("CPU ") {
                name = "CPU N ...".into();
            }
            (s("ph"), s("cat"), name)
        })
        .collect()
}

/// Every event has what Perfetto needs for its phase.
fn check_fields(evs: &[Value]) {
    for e in evs {
        assert!(e["pid"].is_u64(), "{e}");
        match e["ph"].as_str().expect("ph") {
            "M" => assert!(e["args"]["name"].is_string(), "{e}"),
            "X" => assert!(
                e["ts"].is_number() && e["dur"].is_number() && e["tid"].is_u64(),
                "{e}"
            ),
            "i" => assert!(e["ts"].is_number() && e["tid"].is_u64(), "{e}"),
            "C" => assert!(e["ts"].is_number() && e["args"].is_object(), "{e}"),
            other => panic!("unexpected phase {other}: {e}"),
        }
    }
}

fn track_names(evs: &[Value]) -> BTreeSet<String> {
    evs.iter()
        .filter(|e| e["ph"] == "M")
        .map(|e| {
            let n = e["args"]["name"].as_str().unwrap().to_string();
            if n.starts_with("host ") {
                "host ...".into()
            } else {
                n
            }
        })
        .collect()
}

#[test]
fn rt_trace_has_the_simulators_schema_and_the_timeline_is_drawn() {
    let d = dir("schema");
    let platform = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../platforms/example.toml");
    irqlab(
        &[
            "run",
            "j.fio",
            "--platform",
            platform.to_str().unwrap(),
            "--delivery",
            "posted",
            "--moderator",
            "net-dim",
            "--trace",
            "sim.json",
        ],
        &d,
    );
    let report = irqlab(
        &[
            "rt",
            "j.fio",
            "--output-format",
            "json",
            "--pin",
            "off",
            "--delivery",
            "posted",
            "--moderator",
            "net-dim",
            "--trace",
            "rt.json",
            "--timeline",
            "rt.svg",
            // Wide: on a loaded host the threads can be off the CPU for milliseconds.
            "--timeline-window",
            "5ms..15ms",
        ],
        &d,
    );
    let (sim, rt) = (events(&d.join("sim.json")), events(&d.join("rt.json")));
    check_fields(&sim);
    check_fields(&rt);
    // The runtime writes nothing the simulator's schema lacks ...
    let (s, r) = (shapes(&sim), shapes(&rt));
    let extra: Vec<_> = r.difference(&s).collect();
    assert!(extra.is_empty(), "only in the rt trace: {extra:?}");
    // ... and has the tracks, slices and instants a reader looks for.
    for want in [
        ("X", "cpu", "hardirq"),
        ("X", "cpu", "usr"),
        ("i", "msi", "MSI"),
        ("i", "notification", "PMN"),
        ("i", "handler", "handler"),
    ] {
        let w = (want.0.into(), want.1.into(), want.2.into());
        assert!(r.contains(&w), "rt trace lacks {want:?}");
    }
    // One moderation_level counter per level the kworker programmed.
    let report: Value = serde_json::from_str(&report).expect("the report is JSON");
    let programs = report["x-irqlab"]["extra"]["moderator_programs"]
        .as_f64()
        .unwrap();
    let levels = rt
        .iter()
        .filter(|e| e["name"] == "moderation_level")
        .count();
    assert_eq!(levels as f64, programs);
    assert_eq!(track_names(&rt), track_names(&sim));
    // Wall-clock time: slices of one CPU track never overlap.
    let mut slices: Vec<(f64, f64)> = rt
        .iter()
        .filter(|e| e["ph"] == "X" && e["tid"] == 1)
        .map(|e| (e["ts"].as_f64().unwrap(), e["dur"].as_f64().unwrap()))
        .collect();
    slices.sort_by(|a, b| a.0.total_cmp(&b.0));
    // A loaded host may leave the CPU thread few slices in 30 ms; two make the check real.
    assert!(
        slices.len() >= 2,
        "CPU 0's track has {} slices",
        slices.len()
    );
    for w in slices.windows(2) {
        assert!(w[0].0 + w[0].1 <= w[1].0 + 1e-3, "{w:?}");
    }
    let svg = std::fs::read_to_string(d.join("rt.svg")).unwrap();
    assert!(
        svg.contains("wall-clock time since the start"),
        "a wall-clock axis"
    );
    // The CPU's lane, unless the host stopped everything for the whole window.
    assert!(
        svg.contains("CPU 0") || svg.contains("no CPU did anything in this window"),
        "{svg}"
    );
    let _ = std::fs::remove_dir_all(&d);
}

#[test]
fn a_trace_window_keeps_the_file_inside_it() {
    let d = dir("window");
    irqlab(
        &[
            "rt",
            "j.fio",
            "--pin",
            "off",
            "--trace",
            "w.json",
            // Open-ended: the host may stop both vCPUs for longer than any short window.
            "--trace-window",
            "5ms..",
        ],
        &d,
    );
    let evs = events(&d.join("w.json"));
    check_fields(&evs);
    let ts: Vec<f64> = evs.iter().filter_map(|e| e["ts"].as_f64()).collect();
    assert!(!ts.is_empty());
    assert!(ts.iter().all(|&t| t >= 5_000.0), "µs before 5 ms");
    let _ = std::fs::remove_dir_all(&d);
}
