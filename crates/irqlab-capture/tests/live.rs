//! On this host: recording without fio, the fio battery (skipped with a message where
//! fio is not installed: `make test` must pass without it), Ctrl-C during a run, a
//! mounted disk refused as a target, and a tiny hostbench.

mod common;

use common::Scratch;
use irqlab_capture::hostbench::{self, BenchOptions};
use irqlab_capture::{Capture, CaptureError, CaptureOptions, find_fio, record};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

fn linux() -> bool {
    Path::new("/proc/interrupts").exists()
}

fn fio_or_skip(test: &str) -> bool {
    match find_fio(None) {
        Ok(_) => true,
        Err(e) => {
            eprintln!("{test}: skipped, no fio here ({e})");
            false
        }
    }
}

/// Short runs on a small file in the scratch directory.
fn opts(s: &Scratch) -> CaptureOptions {
    CaptureOptions {
        target: Some(s.path("target.dat")),
        runtime_s: 1,
        file_bytes: 32 << 20,
        ..CaptureOptions::new(s.path("cap"), true)
    }
}

#[test]
fn recording_without_fio_describes_this_host_and_reads_back() {
    if !linux() {
        eprintln!("skipped: no /proc/interrupts");
        return;
    }
    let s = Scratch::new("no-fio");
    let o = CaptureOptions {
        no_fio: true,
        ..CaptureOptions::new(s.path("cap"), false)
    };
    let m = record(&o, &AtomicBool::new(false), &|_| {}).unwrap();
    assert!(m.runs.is_empty() && m.target.is_none());
    assert_eq!(
        m.host.topology.cpus(),
        std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .max(m.host.topology.cpus())
    );
    assert!(m.sources.read.contains(&"/proc/interrupts".to_string()));
    let c = Capture::open(&s.path("cap")).unwrap();
    assert!(c.runs.is_empty() && c.at_rest.is_some());
    assert_eq!(c.host, m.host);
    // A second capture into the same directory is refused, not mixed in.
    let e = record(&o, &AtomicBool::new(false), &|_| {}).unwrap_err();
    assert!(e.to_string().contains("exists and is not empty"), "{e}");
}

#[test]
fn the_fio_battery_runs_reads_back_and_removes_its_file() {
    if !linux() || !fio_or_skip("the_fio_battery_runs_reads_back_and_removes_its_file") {
        return;
    }
    let s = Scratch::new("battery");
    let lines = std::sync::Mutex::new(Vec::new());
    let m = record(&opts(&s), &AtomicBool::new(false), &|l| {
        lines.lock().unwrap().push(l.to_string())
    })
    .unwrap();
    assert!(!s.path("target.dat").exists(), "the laid-out file stays");
    assert!(m.runs.len() >= 3, "{:?}", m.runs);
    for r in &m.runs {
        assert!(r.failed.is_none(), "{} failed: {:?}", r.name, r.failed);
        for f in [&r.json, &r.irq_before, &r.irq_after, &r.job_file] {
            assert!(s.path("cap").join(f).exists(), "{f}");
        }
    }
    let progress = lines.into_inner().unwrap();
    assert!(progress.iter().any(|l| l.contains("[1/")), "{progress:?}");
    let c = Capture::open(&s.path("cap")).unwrap();
    assert_eq!(c.runs.len(), m.runs.len());
    for r in &c.runs {
        assert!(
            r.summary.total_ios > 0 && r.summary.iops > 0.0,
            "{}",
            r.name
        );
        // The snapshots bracket the run and share its boot.
        let w = r.delta.window_s.unwrap();
        assert!(
            w + 0.05 >= r.summary.runtime_s,
            "{}: {w} < {}",
            r.name,
            r.summary.runtime_s
        );
    }
    // Where the file sits on a disk whose vectors were found, the reads raised them.
    let dev = m
        .target
        .as_ref()
        .and_then(|t| t.device.clone())
        .and_then(|d| m.host.device(&d).cloned());
    match dev {
        Some(d) if !d.vectors.is_empty() => {
            for r in &c.runs {
                assert!(r.interrupts > 0, "{}: no interrupts on {}", r.name, d.name);
            }
        }
        _ => eprintln!(
            "the target's filesystem has no block device with vectors here: interrupts not checked"
        ),
    }
}

#[test]
fn ctrl_c_during_a_run_keeps_the_runs_so_far_and_removes_the_file() {
    if !linux() || !fio_or_skip("ctrl_c_during_a_run_keeps_the_runs_so_far_and_removes_the_file") {
        return;
    }
    let s = Scratch::new("ctrl-c");
    let stop = AtomicBool::new(false);
    let first = s.path("cap").join("qd1-psync.irq0");
    let r = std::thread::scope(|sc| {
        sc.spawn(|| {
            // Stop once the first run has begun.
            while !first.exists() {
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            std::thread::sleep(std::time::Duration::from_millis(300));
            stop.store(true, Ordering::Relaxed);
        });
        record(&opts(&s), &stop, &|_| {})
    });
    assert_eq!(r.unwrap_err(), CaptureError::Interrupted);
    assert!(
        !s.path("target.dat").exists(),
        "the laid-out file stays after Ctrl-C"
    );
    let c = Capture::open(&s.path("cap")).unwrap();
    assert!(
        c.runs.is_empty(),
        "{:?}",
        c.runs.iter().map(|r| &r.name).collect::<Vec<_>>()
    );
    assert_eq!(c.skipped.len(), 1);
    assert_eq!(c.skipped[0].why, "stopped by Ctrl-C");
}

#[test]
fn a_mounted_disk_is_refused_as_a_target() {
    if !linux() || !fio_or_skip("a_mounted_disk_is_refused_as_a_target") {
        return;
    }
    use std::os::unix::fs::MetadataExt;
    let dev = std::fs::metadata("/").unwrap().dev();
    let probe = irqlab_capture::probe::Probe::live();
    let name = probe
        .resolve(&format!(
            "/sys/dev/block/{}:{}",
            rustix::fs::major(dev),
            rustix::fs::minor(dev)
        ))
        .and_then(|p| p.rsplit('/').next().map(str::to_string));
    let Some(node) = name
        .map(|n| format!("/dev/{n}"))
        .filter(|n| Path::new(n).exists())
    else {
        eprintln!("skipped: / is on no block device node here");
        return;
    };
    let s = Scratch::new("mounted");
    let o = CaptureOptions {
        target: Some(node.clone().into()),
        ..opts(&s)
    };
    let e = record(&o, &AtomicBool::new(false), &|_| {}).unwrap_err();
    let msg = e.to_string();
    assert!(
        msg.starts_with(&format!("target {node}"))
            && (msg.contains("is mounted at") || msg.contains("is held by")),
        "{msg}"
    );
    assert!(
        !s.path("cap").exists(),
        "nothing written for a refused target"
    );
}

#[test]
fn hostbench_measures_every_cost_with_a_tiny_count() {
    let o = BenchOptions {
        trials: 3,
        syscalls_per_trial: 1000,
        round_trips_per_trial: 20,
        events: 5,
        idle_gap_us: 20,
        sleep_us: 20,
    };
    let r = hostbench::run(&o, "test", &|_| {}).unwrap();
    let mut want = vec!["syscall", "switch_same_cpu", "timer_overshoot"];
    if r.cpus_used.len() == 2 {
        want.extend(["wake_cross_cpu", "wake_idle_cpu", "waker_cost"]);
    }
    for k in want {
        let m = r.get(k).unwrap_or_else(|| panic!("{k} missing"));
        assert!(m.p10_ns <= m.median_ns && m.median_ns <= m.p90_ns, "{m:?}");
        assert!(m.median_ns > 0.0, "{m:?}");
    }
    assert_eq!(r.get("syscall").unwrap().samples, 3);
    // The report reads back as bench.json does.
    let back: hostbench::BenchReport =
        serde_json::from_str(&serde_json::to_string(&r).unwrap()).unwrap();
    assert_eq!(back, r);
    assert!(hostbench::render(&r).contains("syscall"));
}

#[test]
fn no_fio_where_one_is_asked_for_says_so_before_writing_anything() {
    let s = Scratch::new("fio-missing");
    let o = CaptureOptions {
        fio: Some(s.path("no-such-fio")),
        ..opts(&s)
    };
    let e = record(&o, &AtomicBool::new(false), &|_| {}).unwrap_err();
    assert!(matches!(e, CaptureError::NoFio(_)), "{e}");
    assert!(e.to_string().contains("--no-fio"), "{e}");
    assert!(!s.path("cap").exists() && !s.path("target.dat").exists());
}
