//! Ctrl-C on `irqlab rt` as a user sends it: SIGINT to a run that would last a minute.
//! The run stops, prints the report so far marked interrupted (text or JSON, as fio
//! prints its statistics after SIGINT) and exits 130; every I/O submitted was reaped once.

use rustix::process::{Pid, Signal, kill_process};
use serde_json::Value;
use std::io::{BufRead, BufReader, Read};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Two disks on two CPU threads for 60 s, no ramp (every I/O counts).
const JOB: &str = "[global]\nioengine=libaio\nrw=randread\nbs=4k\niodepth=32\n\
    iodepth_batch_submit=8\ntime_based\nruntime=60s\n[a]\nfilename=/dev/nvme0n1\n\
    [b]\nfilename=/dev/nvme1n1\n";

/// Generous: a loaded 2-CPU host may be slow to start the run or to drain it.
const PATIENCE: Duration = Duration::from_secs(120);

fn job_file(name: &str) -> PathBuf {
    let p = std::env::temp_dir().join(format!("irqlab-ctrl-c-{}-{name}.fio", std::process::id()));
    std::fs::write(&p, JOB).unwrap();
    p
}

/// Starts `irqlab rt JOB --irqtop 0.02 ARGS`, waits for its first irqtop line (on
/// `irqtop_on_stderr` or stdout: the run is under way), sends SIGINT, and returns the
/// exit code, stdout and stderr.
fn interrupt(name: &str, args: &[&str], irqtop_on_stderr: bool) -> (Option<i32>, String, String) {
    let job = job_file(name);
    let mut child = Command::new(env!("CARGO_BIN_EXE_irqlab"))
        .arg("rt")
        .arg(&job)
        .args([
            "--cpu-threads",
            "2",
            "--controllers",
            "2",
            "--irqtop",
            "0.02",
        ])
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Each stream is read to its end on its own thread; lines also go to `lines` so the
    // test sees the first irqtop line as it comes.
    let (tx, lines) = mpsc::channel::<String>();
    let reader = |stream: Box<dyn Read + Send>, watched: bool| {
        let tx = tx.clone();
        std::thread::spawn(move || {
            let mut all = String::new();
            for line in BufReader::new(stream).lines() {
                let Ok(line) = line else { break };
                if watched {
                    let _ = tx.send(line.clone());
                }
                all.push_str(&line);
                all.push('\n');
            }
            all
        })
    };
    let out = reader(Box::new(child.stdout.take().unwrap()), !irqtop_on_stderr);
    let err = reader(Box::new(child.stderr.take().unwrap()), irqtop_on_stderr);
    drop(tx);
    let started = Instant::now();
    loop {
        match lines.recv_timeout(PATIENCE.saturating_sub(started.elapsed())) {
            Ok(l) if l.starts_with("irqtop") => break,
            Ok(_) => {}
            Err(e) => fail(&mut child, &format!("no irqtop line: {e}")),
        }
    }
    kill_process(Pid::from_child(&child), Signal::INT).unwrap();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if started.elapsed() > PATIENCE {
            fail(&mut child, "the run did not stop after SIGINT");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let _ = std::fs::remove_file(&job);
    (status.code(), out.join().unwrap(), err.join().unwrap())
}

fn fail(child: &mut Child, why: &str) -> ! {
    let _ = child.kill();
    let _ = child.wait();
    panic!("{why}");
}

#[test]
fn ctrl_c_prints_the_text_report_so_far_and_exits_130() {
    let (code, out, err) = interrupt("text", &[], false);
    assert_eq!(code, Some(130), "stderr: {err}\nstdout: {out}");
    assert!(
        out.contains(
            "interrupted: the run was stopped (Ctrl-C); the figures cover the run up to then"
        ),
        "{out}"
    );
    assert!(out.contains("a: (groupid=0, jobs=1)"), "{out}");
    assert!(out.contains("read: IOPS="), "{out}");
    assert!(out.contains("  interrupted=1"), "{out}");
    assert!(
        err.contains("irqlab: interrupted (Ctrl-C) at ") && err.contains("ms of wall time"),
        "{err}"
    );
}

#[test]
fn ctrl_c_prints_the_json_report_so_far_with_every_io_reaped_once() {
    let (code, out, err) = interrupt("json", &["--output-format", "json"], true);
    assert_eq!(code, Some(130), "stderr: {err}");
    let v: Value = serde_json::from_str(&out).expect("one JSON document on stdout");
    let x = &v["x-irqlab"]["extra"];
    assert_eq!(x["interrupted"], 1.0, "{x}");
    let ios: u64 = v["jobs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|j| j["read"]["total_ios"].as_u64().unwrap())
        .sum();
    assert!(ios > 0);
    for j in v["jobs"].as_array().unwrap() {
        assert!(
            j["read"]["runtime"].as_u64().unwrap() < 60_000,
            "stopped early: {j}"
        );
    }
    assert_eq!(x["completions"].as_f64(), Some(ios as f64), "{x}");
    assert_eq!(x["unknown_cqes"], 0.0);
    assert_eq!(x["submit_overflow"], 0.0);
}
