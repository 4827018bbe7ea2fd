//! Every reproducer of issue 12 (outside the runtime's internals) through the command, as
//! a user meets it: a clear error naming what to change, or a right answer, within
//! seconds, in a process capped at 1 GiB of address space.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// What one command did.
struct Ran {
    code: Option<i32>,
    stdout: String,
    stderr: String,
    took: Duration,
}

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("irqlab-hostile-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Runs irqlab in `dir` under `ulimit -v` (1 GiB) and a 60 s wall limit.
fn irqlab(dir: &Path, args: &[&str]) -> Ran {
    let t0 = Instant::now();
    let child = Command::new("sh")
        .arg("-c")
        .arg("ulimit -v 1048576; exec \"$0\" \"$@\"")
        .arg(env!("CARGO_BIN_EXE_irqlab"))
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // A watchdog kills a run past 60 s; output is read as it comes (a full pipe would
    // stall the child).
    let pid = child.id().to_string();
    let done = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let watchdog = {
        let done = done.clone();
        std::thread::spawn(move || {
            while t0.elapsed() < Duration::from_secs(60) {
                if done.load(std::sync::atomic::Ordering::Relaxed) {
                    return false;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = Command::new("kill").args(["-KILL", &pid]).status();
            true
        })
    };
    let out = child.wait_with_output().unwrap();
    done.store(true, std::sync::atomic::Ordering::Relaxed);
    assert!(!watchdog.join().unwrap(), "irqlab {args:?} ran past 60 s");
    Ran {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        took: t0.elapsed(),
    }
}

/// Refused with exit 2, a message containing `want`, in words, within seconds.
fn refused(dir: &Path, args: &[&str], want: &str) {
    let r = irqlab(dir, args);
    assert_eq!(r.code, Some(2), "irqlab {args:?}: {}{}", r.stdout, r.stderr);
    assert!(
        r.stderr.contains(want),
        "irqlab {args:?}: '{}' lacks '{want}'",
        r.stderr
    );
    irqlab_fuzz::check_message(&r.stderr).unwrap_or_else(|e| panic!("irqlab {args:?}: {e}"));
    assert!(
        r.took < Duration::from_secs(10),
        "irqlab {args:?} took {:?}",
        r.took
    );
}

const JOB: &str =
    "[j]\nioengine=libaio\nrw=randread\nbs=4k\niodepth=8\nfilename=/dev/nvme0n1\nruntime=2ms\n";

fn write(dir: &Path, name: &str, text: &str) -> String {
    std::fs::write(dir.join(name), text).unwrap();
    name.to_string()
}

fn example() -> String {
    root().join("platforms/example.toml").display().to_string()
}

#[test]
fn unbounded_memory_is_refused_before_it_is_taken() {
    let d = scratch("memory");
    let job = write(&d, "j.fio", JOB);
    let p = example();
    refused(
        &d,
        &[
            "run",
            &write(
                &d,
                "n.fio",
                &JOB.replace("runtime=2ms", "runtime=1ms\nnumjobs=100000000"),
            ),
            "--platform",
            &p,
        ],
        "numjobs=100000000 is out of range",
    );
    refused(
        &d,
        &[
            "run",
            &job,
            "--platform",
            &p,
            "--disks",
            "4096",
            "--jobs-per-disk",
            "4096",
        ],
        "16777216 jobs",
    );
    refused(
        &d,
        &[
            "run",
            &job,
            "--platform",
            &p,
            "--set",
            "cpu.count=4096",
            "--disks",
            "64",
        ],
        "of memory",
    );
    refused(
        &d,
        &[
            "run",
            &job,
            "--platform",
            &p,
            "--set",
            "devices.0.count=4294967296",
        ],
        "devices.0.count = 4294967296 is not in 1..=4096",
    );
    // Found by `make fuzz`: 2000 global options expanded over 4095 disks took 1.3 GB
    // before the simulator's budget was asked.
    let globals = "ioengine=libaio\n".repeat(2000);
    let long = write(&d, "long.fio", &format!("[global]\n{globals}{JOB}"));
    refused(
        &d,
        &["run", &long, "--platform", &p, "--disks", "4095"],
        "copy the job file's options",
    );
    // The budget is a setting: a smaller one refuses what the default runs.
    refused(
        &d,
        &["run", &job, "--platform", &p, "--max-events", "1000"],
        "--max-events",
    );
    // Output is bounded like memory: 1 µs irqtop intervals over a minute are refused.
    let minute = write(&d, "m.fio", &JOB.replace("runtime=2ms", "runtime=60s"));
    refused(
        &d,
        &["run", &minute, "--platform", &p, "--irqtop", "0.000001"],
        "--irqtop",
    );
    // A megabyte cpus_allowed list is a set of CPUs, not gigabytes.
    let list = vec!["0-15"; 120_000].join(",");
    let cpus = write(&d, "c.fio", &format!("{JOB}cpus_allowed={list}\n"));
    let r = irqlab(&d, &["run", &cpus, "--platform", &p]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
}

#[test]
fn every_run_ends() {
    let d = scratch("end");
    let p = example();
    for (option, want) in [
        ("size=1p", "over the 600 s limit"),
        ("number_ios=18446744073709551615", "over the 600 s limit"),
        ("size=4k\nloops=4294967295", "over the 600 s limit"),
        (
            "runtime=18446744073s\nramp_time=1s",
            "runtime + ramp_time is over 600 s",
        ),
    ] {
        let job = write(
            &d,
            "o.fio",
            &format!("[j]\nioengine=libaio\nfilename=/dev/nvme0n1\n{option}\n"),
        );
        refused(&d, &["run", &job, "--platform", &p], want);
    }
    // The runtime's clock is refused the sum it cannot hold, rather than wrapping it into a
    // run of no time that reports 0 I/O.
    let job = write(
        &d,
        "rt.fio",
        "[j]\nfilename=/dev/nvme0n1\ntime_based\nruntime=18446744073s\nramp_time=1s\n",
    );
    refused(
        &d,
        &["rt", &job],
        "rt.fio:4: job 'j': runtime + ramp_time is over 584 years",
    );
    // A run cut short says where its limit was: the 2 ms runtime plus 1 s to drain, not
    // the 600 s limit of count-bound jobs.
    let job = write(&d, "j.fio", JOB);
    let r = irqlab(
        &d,
        &[
            "run",
            &job,
            "--platform",
            &p,
            "--set",
            "devices.0.max_iops=1",
        ],
    );
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(
        r.stderr
            .contains("the run reached its time limit at 1.002 s of simulated time"),
        "{}",
        r.stderr
    );
}

#[test]
fn only_regular_files_are_read() {
    let d = scratch("files");
    let p = example();
    let job = write(&d, "j.fio", JOB);
    refused(
        &d,
        &["run", "/dev/zero", "--platform", &p],
        "/dev/zero: not a regular file (it is a character device)",
    );
    refused(
        &d,
        &["run", &job, "--platform", "/dev/zero"],
        "not a regular file",
    );
    if Command::new("mkfifo")
        .arg(d.join("fifo"))
        .status()
        .is_ok_and(|s| s.success())
    {
        refused(
            &d,
            &["run", "fifo", "--platform", &p],
            "fifo: not a regular file (it is a FIFO)",
        );
    }
    // A scenario whose job or platform is a device.
    std::fs::create_dir_all(d.join("sc")).unwrap();
    for (job, platform) in [("/dev/zero", p.as_str()), (job.as_str(), "/dev/zero")] {
        let job = if job.starts_with('/') {
            job.to_string()
        } else {
            d.join(job).display().to_string()
        };
        std::fs::write(
            d.join("sc/s.toml"),
            format!("experiment = \"E\"\nrow = \"r\"\njob = \"{job}\"\nplatform = \"{platform}\"\n[[target]]\nmetric = \"iops\"\npublished = 1\n"),
        )
        .unwrap();
        refused(
            &d,
            &["reproduce", "--scenarios", "sc"],
            "not a regular file",
        );
    }
}

#[test]
fn scenarios_are_capped_like_the_command_line_and_wide_rows_print() {
    let d = scratch("scenario");
    write(
        &d,
        "j.fio",
        &JOB.replace("filename", "cpus_allowed=0\nfilename"),
    );
    std::fs::create_dir_all(d.join("sc")).unwrap();
    let scenario = |row: &str, topology: &str| {
        format!(
            "experiment = \"E\"\nrow = \"{row}\"\njob = \"../j.fio\"\nplatform = \"{}\"\n{topology}[[target]]\nmetric = \"iops\"\npublished = 100000\n",
            example()
        )
    };
    std::fs::write(
        d.join("sc/big.toml"),
        scenario("r", "[topology]\ndisks = 1000000000\n"),
    )
    .unwrap();
    refused(
        &d,
        &["reproduce", "--scenarios", "sc"],
        "big.toml:6: topology.disks = 1000000000 is not in 1..=4096",
    );
    std::fs::write(
        d.join("sc/big.toml"),
        scenario("r", "[topology]\ndisks = 64\njobs_per_disk = 4096\n"),
    )
    .unwrap();
    refused(&d, &["reproduce", "--scenarios", "sc"], "262144 jobs");
    // Scenario runs take the budget flags their message names; a calibration whose
    // scenario cannot run is no fit, and writes no file.
    std::fs::write(d.join("sc/big.toml"), scenario("r", "")).unwrap();
    refused(
        &d,
        &["reproduce", "--scenarios", "sc", "--max-memory", "1m"],
        "over the budget of 1 MiB",
    );
    refused(
        &d,
        &[
            "calibrate",
            "--platform",
            &example(),
            "--param",
            "cpu.irq_entry_ns=100..600",
            "--scenarios",
            "sc",
            "--scenario",
            "E",
            "--max-evals",
            "2",
            "--max-memory",
            "1m",
            "--out",
            "fit.toml",
        ],
        "no fit: a target scenario cannot be simulated at the best values found (cpu.irq_entry_ns=250)",
    );
    assert!(!d.join("fit.toml").exists());
    // A row of 65,536 characters once panicked the table.
    let wide = "w".repeat(70_000);
    std::fs::write(d.join("sc/big.toml"), scenario(&wide, "")).unwrap();
    // More threads than scenarios start no more threads than scenarios.
    let r = irqlab(&d, &["reproduce", "--scenarios", "sc", "--threads", "1024"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(r.stdout.contains(&wide) && r.took < Duration::from_secs(30));
    refused(
        &d,
        &["reproduce", "--scenarios", "sc", "--threads", "0"],
        "0 is not in 1..=1024",
    );
}

#[test]
fn silent_wrong_answers_are_errors_or_right() {
    let d = scratch("wrong");
    let p = example();
    let job = write(&d, "j.fio", JOB);
    refused(
        &d,
        &[
            "run",
            &job,
            "--platform",
            &p,
            "--set",
            "devices.0.cqe_bytes=9223372036854775807",
        ],
        "devices.0.cqe_bytes",
    );
    // max_iops below one media unit's rate is the device's rate.
    let slow = write(&d, "s.fio", &JOB.replace("runtime=2ms", "runtime=200ms"));
    let r = irqlab(
        &d,
        &[
            "run",
            &slow,
            "--platform",
            &p,
            "--set",
            "devices.0.max_iops=1000",
            "--output-format",
            "json",
        ],
    );
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    let ios = v["jobs"][0]["read"]["total_ios"].as_f64().unwrap();
    // 200 ms at 1000 IOPS, and the 8 in flight drained after the runtime.
    assert!(
        (190.0..=212.0).contains(&ios),
        "{ios} I/Os in 200 ms at 1000 IOPS"
    );
    // Windows past the run's end are errors, and leave no file.
    refused(
        &d,
        &[
            "run",
            &job,
            "--platform",
            &p,
            "--trace",
            "t.json",
            "--trace-window",
            "5s..6s",
        ],
        "starts after the run ended",
    );
    assert!(!d.join("t.json").exists());
    refused(
        &d,
        &[
            "run",
            &job,
            "--platform",
            &p,
            "--timeline",
            "t.png",
            "--timeline-window",
            "5s..5001ms",
        ],
        "starts after the run ended",
    );
    assert!(!d.join("t.png").exists());
    // The same on real threads, whose windows are on wall time.
    for (flag, file, window) in [
        ("--trace", "r.json", ["--trace-window", "5s..6s"]),
        ("--timeline", "r.png", ["--timeline-window", "5s..5001ms"]),
    ] {
        refused(
            &d,
            &["rt", &job, flag, file, window[0], window[1]],
            "starts after the run ended",
        );
        assert!(!d.join(file).exists(), "{file}");
    }
}

#[test]
fn calibrate_and_rt_arguments_are_checked() {
    let d = scratch("args");
    let job = write(&d, "j.fio", JOB);
    let sc = root().join("scenarios").display().to_string();
    let cal = |extra: &[&str]| {
        let mut a = vec![
            "calibrate",
            "--platform",
            "example",
            "--scenarios",
            &sc,
            "--scenario",
            "C4",
        ];
        a.extend_from_slice(extra);
        a.iter().map(|s| s.to_string()).collect::<Vec<_>>()
    };
    let run = |a: Vec<String>, want: &str| {
        let a: Vec<&str> = a.iter().map(String::as_str).collect();
        refused(&root(), &a, want);
    };
    run(cal(&["--param", "X=NaN..50"]), "LO is not a finite number");
    run(
        cal(&[
            "--param",
            "cpu.irq_entry_ns=100..200",
            "--param",
            "cpu.irq_entry_ns=100..300",
        ]),
        "is already fitted",
    );
    run(
        cal(&["--param", "cpu.irq_entry_ns=100..200", "--max-evals", "0"]),
        "0 is not in 1..=100000",
    );
    run(
        cal(&["--param", "cpu.irq_entry_ns=100..200", "--max-evals", "1"]),
        "needs at least 2 evaluations",
    );
    refused(
        &d,
        &["rt", &job, "--cpu-threads", "256", "--controllers", "256"],
        "spinning threads",
    );
    refused(
        &d,
        &["rt", &job, "--media-latency-us", "18446744073709551"],
        "expected 0 to 1000000",
    );
    refused(
        &d,
        &["rt", &job, "--media-latency-us", "100000000"],
        "expected 0 to 1000000",
    );
    refused(
        &d,
        &[
            "rt",
            &job,
            "--media",
            "file:m.img",
            "--media-size",
            "1000000g",
        ],
        "does not fit",
    );
    assert!(!d.join("m.img").exists(), "no partial file is left behind");
    // fio's p suffix is a size (refused here for the room it needs, not its spelling).
    refused(
        &d,
        &["rt", &job, "--media", "file:m.img", "--media-size", "1p"],
        "does not fit",
    );
}

#[test]
fn errors_speak_the_users_terms() {
    let d = scratch("terms");
    let p = example();
    let job = write(&d, "j.fio", JOB);
    std::fs::write(d.join("bom.fio"), format!("\u{feff}{JOB}")).unwrap();
    let r = irqlab(&d, &["run", "bom.fio", "--platform", &p]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    std::fs::write(
        d.join("bad.fio"),
        b"[j]\nfilename=/dev/nvme0n1\nruntime=1ms\ndescription=caf\xe9\n",
    )
    .unwrap();
    refused(
        &d,
        &["run", "bad.fio", "--platform", &p],
        "bad.fio: line 4 is not valid UTF-8 text",
    );
    let text = std::fs::read_to_string(&p).unwrap();
    write(
        &d,
        "big.toml",
        &text.replacen(
            "cqe_ns = { value = 50,",
            "cqe_ns = { value = 18446744073709551615,",
            1,
        ),
    );
    let cqe_line = 1 + text.lines().position(|l| l.starts_with("cqe_ns")).unwrap();
    refused(
        &d,
        &["run", &job, "--platform", "big.toml"],
        &format!("big.toml:{cqe_line}: kernel.cqe_ns: the value is above"),
    );
    refused(
        &d,
        &[
            "run",
            &job,
            "--platform",
            &p,
            "--set",
            "devices.0.queues=-1",
        ],
        "--set 'devices.0.queues=-1': devices.0.queues: -1 is not a whole number (0 or more)",
    );
    let r = irqlab(
        &d,
        &[
            "run",
            &job,
            "--platform",
            &p,
            "--set",
            "devices.0.irq_cpu=3",
        ],
    );
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    refused(
        &d,
        &[
            "run",
            &job,
            "--platform",
            &p,
            "--timeline",
            "/nonexistent/x.png",
        ],
        "/nonexistent/x.png: cannot create the picture: No such file or directory",
    );
    // The runtime checks the picture's path before its threads start.
    refused(
        &d,
        &["rt", &job, "--timeline", "/nonexistent/x.png"],
        "/nonexistent/x.png: cannot create the picture: No such file or directory",
    );
    // A whole number past TOML's range is too large, in the file and under --set.
    write(
        &d,
        "huge.toml",
        &text.replacen(
            "read_ns = { value = 80000,",
            "read_ns = { value = 99999999999999999999,",
            1,
        ),
    );
    refused(
        &d,
        &["run", &job, "--platform", "huge.toml"],
        "devices.0.read_ns: 99999999999999999999 is too large; a TOML file holds whole numbers up to 9223372036854775807",
    );
    refused(
        &d,
        &[
            "run",
            &job,
            "--platform",
            &p,
            "--set",
            "devices.0.read_ns=99999999999999999999",
        ],
        "too large; a TOML file holds whole numbers up to 9223372036854775807",
    );
    // An optional table the file leaves out cannot be set one value at a time.
    refused(
        &d,
        &[
            "run",
            &job,
            "--platform",
            &p,
            "--set",
            "devices.0.submitter.submit_io_ns=100",
        ],
        "'devices.0' has no table 'submitter' in this file",
    );
}

#[test]
fn ctrl_c_prints_the_report_so_far() {
    let d = scratch("ctrlc");
    let job = write(
        &d,
        "long.fio",
        &JOB.replace("runtime=2ms", "time_based\nruntime=120s"),
    );
    let p = example();
    interrupted(&d, &["run", &job, "--platform", &p]);
    // A trace window the run never reached is no error once Ctrl-C stopped it: the
    // report so far still prints.
    interrupted(
        &d,
        &[
            "run",
            &job,
            "--platform",
            &p,
            "--trace",
            "t.json",
            "--trace-window",
            "100s..101s",
        ],
    );
}

/// Runs irqlab, sends SIGINT after 1.5 s and checks the report so far and exit 130.
fn interrupted(d: &Path, args: &[&str]) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_irqlab"))
        .args(args)
        .current_dir(d)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1500));
    let sent = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    let t0 = Instant::now();
    while child.try_wait().unwrap().is_none() {
        assert!(
            t0.elapsed() < Duration::from_secs(30),
            "Ctrl-C did not stop the run"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    assert!(
        stdout.contains("interrupted: the run was stopped (Ctrl-C)"),
        "{stdout}"
    );
    assert!(
        stdout.contains("read: IOPS="),
        "the figures so far: {stdout}"
    );
    assert!(stderr.contains("interrupted (Ctrl-C) at"), "{stderr}");
}

#[test]
fn an_unwritable_output_file_is_refused_before_the_run() {
    let d = scratch("output");
    let p = example();
    // A run of 60 s of simulated time would take minutes before the write failed.
    let long = JOB.replace("runtime=2ms", "time_based\nruntime=60s");
    let job = write(&d, "long.fio", &long);
    for engine in ["run", "rt"] {
        let mut args = vec![engine, &job, "--output", "no/such/dir/r.json"];
        if engine == "run" {
            args.extend(["--platform", &p]);
        }
        refused(&d, &args, "no/such/dir/r.json: cannot write the report");
    }
}

// ---------------------------------------------------------------- issue 23

/// Starts irqlab in `d`, sends `signals` (each after `after`), waits for the end and
/// returns (exit code, stdout, stderr).
fn signalled(d: &Path, args: &[&str], signals: &[&str], after: Duration) -> Ran {
    let t0 = Instant::now();
    let mut child = Command::new(env!("CARGO_BIN_EXE_irqlab"))
        .args(args)
        .current_dir(d)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    for sig in signals {
        std::thread::sleep(after);
        let sent = Command::new("kill")
            .args([&format!("-{sig}"), &child.id().to_string()])
            .status()
            .unwrap();
        assert!(sent.success());
    }
    while child.try_wait().unwrap().is_none() {
        assert!(
            t0.elapsed() < Duration::from_secs(60),
            "{signals:?} did not stop the run"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().unwrap();
    Ran {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        took: t0.elapsed(),
    }
}

#[test]
fn sigterm_and_sighup_stop_a_run_as_ctrl_c_does() {
    let d = scratch("sigterm");
    let job = write(
        &d,
        "long.fio",
        &JOB.replace("runtime=2ms", "time_based\nruntime=120s"),
    );
    let p = example();
    for (sig, code, name) in [("TERM", 143, "SIGTERM"), ("HUP", 129, "SIGHUP")] {
        let args = [
            "run",
            &job,
            "--platform",
            &p,
            "--output",
            "r.txt",
            "--trace",
            "t.json",
            "--trace-max-size",
            "4m",
        ];
        let r = signalled(&d, &args, &[sig], Duration::from_millis(1500));
        assert_eq!(r.code, Some(code), "{sig}: {}", r.stderr);
        assert!(
            r.stderr.contains(&format!("interrupted ({name}) at")),
            "{}",
            r.stderr
        );
        // Every output file is complete and valid: the report so far, and the trace.
        let report = std::fs::read_to_string(d.join("r.txt")).unwrap();
        assert!(
            report.contains(&format!("interrupted: the run was stopped ({name})"))
                && report.contains("read: IOPS="),
            "{report}"
        );
        let trace = std::fs::read(d.join("t.json")).unwrap();
        let v: serde_json::Value = serde_json::from_slice(&trace).expect("a valid trace");
        assert!(v["traceEvents"].as_array().is_some_and(|e| !e.is_empty()));
    }
    // A second signal ends the process at once and leaves no half-written file.
    let _ = std::fs::remove_file(d.join("r.txt"));
    let _ = std::fs::remove_file(d.join("t.json"));
    let r = signalled(
        &d,
        &[
            "run",
            &job,
            "--platform",
            &p,
            "--output",
            "r.txt",
            "--trace",
            "t.json",
        ],
        &["TERM", "TERM"],
        Duration::from_millis(800),
    );
    assert!(matches!(r.code, Some(143)), "{}", r.stderr);
    for f in ["r.txt", "t.json"] {
        let left = std::fs::read(d.join(f)).ok();
        assert!(
            left.is_none()
                || f != "t.json"
                || serde_json::from_slice::<serde_json::Value>(&left.unwrap()).is_ok(),
            "{f} was left half written"
        );
    }
}

#[test]
fn the_trace_has_a_size_cap_that_ends_it_validly() {
    let d = scratch("tracecap");
    let job = write(&d, "j.fio", &JOB.replace("runtime=2ms", "runtime=30ms"));
    let p = example();
    let r = irqlab(
        &d,
        &[
            "run",
            &job,
            "--platform",
            &p,
            "--trace",
            "t.json",
            "--trace-max-size",
            "256k",
        ],
    );
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(
        r.stderr.contains("reached --trace-max-size (262144 bytes)"),
        "{}",
        r.stderr
    );
    assert!(
        r.stdout.contains("trace: t.json reached --trace-max-size"),
        "{}",
        r.stdout
    );
    let bytes = std::fs::read(d.join("t.json")).unwrap();
    assert!(bytes.len() < 300 << 10, "{}", bytes.len());
    serde_json::from_slice::<serde_json::Value>(&bytes).expect("a valid trace");
    refused(
        &d,
        &[
            "run",
            &job,
            "--platform",
            &p,
            "--trace",
            "t.json",
            "--trace-max-size",
            "1",
        ],
        "at least 64k",
    );
}

#[test]
fn a_closed_or_broken_standard_output_is_not_a_silent_success() {
    let d = scratch("stdout");
    let job = write(&d, "j.fio", JOB);
    let p = example();
    // Closed: an error, exit 2, before the run.
    let out = Command::new("sh")
        .arg("-c")
        .arg("exec \"$0\" \"$@\" >&-")
        .arg(env!("CARGO_BIN_EXE_irqlab"))
        .args(["run", &job, "--platform", &p])
        .current_dir(&d)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("standard output is closed"), "{stderr}");
    // Redirected to /dev/null on purpose: that is an open output.
    let out = Command::new("sh")
        .arg("-c")
        .arg("exec \"$0\" \"$@\" >/dev/null")
        .arg(env!("CARGO_BIN_EXE_irqlab"))
        .args(["run", &job, "--platform", &p])
        .current_dir(&d)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    // A reader that goes away (| head -1) ends irqlab quietly, as SIGPIPE would.
    let long = write(&d, "l.fio", &JOB.replace("runtime=2ms", "runtime=200ms"));
    let out = Command::new("sh")
        .arg("-c")
        .arg("\"$0\" \"$@\" | head -1 >/dev/null; echo \"${PIPESTATUS:-x}\"")
        .arg(env!("CARGO_BIN_EXE_irqlab"))
        .args(["run", &long, "--platform", &p, "--irqtop", "0.00001"])
        .current_dir(&d)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !stderr.contains("irqlab:"),
        "no message for a closed pipe: {stderr}"
    );
}

#[test]
fn policy_options_that_contradict_are_refused_with_the_reason() {
    let d = scratch("contradict");
    let job = write(&d, "j.fio", &JOB.replace("libaio", "io_uring"));
    let p = example();
    let contradiction = [
        "--delivery",
        "polled",
        "--moderator",
        "net-dim",
        "--coalesce",
        "7,1",
        "--handler",
        "irq-poll",
        "--flood-detection",
    ];
    let mut run = vec!["run", &job, "--platform", &p];
    run.extend(contradiction);
    refused(
        &d,
        &run,
        "--delivery polled raises no interrupt for --coalesce to coalesce",
    );
    let mut rt = vec!["rt", &job];
    rt.extend(contradiction);
    refused(
        &d,
        &rt,
        "--delivery polled raises no interrupt for --moderator to moderate",
    );
    refused(
        &d,
        &[
            "sweep",
            &job,
            "--platform",
            &p,
            "--set",
            "delivery=remapped,polled",
            "--coalesce",
            "7,1",
            "--out",
            "s",
        ],
        "delivery=polled: policy options that contradict each other",
    );
    refused(
        &d,
        &["run", &job, "--platform", &p, "--max-loop", "5"],
        "--max-loop is posted MSI's",
    );
    // Plain polled prints a policy without options it did not use.
    let r = irqlab(&d, &["run", &job, "--platform", &p, "--delivery", "polled"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(
        r.stdout
            .contains("policy: delivery=polled, coalescing=off, moderator=none"),
        "{}",
        r.stdout
    );
}

#[test]
fn starvation_and_impossible_totals_are_reported() {
    let d = scratch("starve");
    let p = example();
    // Two pollers on one CPU for less than a scheduler slice: the second never runs.
    let starve = write(
        &d,
        "s.fio",
        "[global]\nioengine=io_uring\nhipri\nrw=randread\nbs=4k\niodepth=8\nruntime=300us\ncpus_allowed=0\n[a]\nfilename=/dev/nvme0n1\n[b]\nfilename=/dev/nvme1n1\n",
    );
    let r = irqlab(
        &d,
        &["run", &starve, "--platform", &p, "--delivery", "polled"],
    );
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(
        r.stdout.contains("warning: job 'b' completed no I/O"),
        "{}",
        r.stdout
    );
    let r = irqlab(
        &d,
        &[
            "run",
            &starve,
            "--platform",
            &p,
            "--delivery",
            "polled",
            "--output-format",
            "json",
        ],
    );
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    assert!(
        v["x-irqlab"]["warnings"][0]
            .as_str()
            .unwrap()
            .contains("job 'b'")
    );
    // rt over a 1 µs window: no more CPU than the window, and the empty job said.
    let tiny = write(&d, "t.fio", &JOB.replace("runtime=2ms", "runtime=1us"));
    let r = irqlab(&d, &["rt", &tiny, "--output-format", "json"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    let usr = v["jobs"][0]["usr_cpu"].as_f64().unwrap();
    let sys = v["jobs"][0]["sys_cpu"].as_f64().unwrap();
    assert!(usr + sys <= 100.0 + 1e-9, "{usr} + {sys}");
    assert!(
        v["x-irqlab"]["warnings"]
            .as_array()
            .is_some_and(|w| !w.is_empty()),
        "{}",
        r.stdout
    );
}

#[test]
fn rt_refuses_what_run_refuses_and_the_device_reaches_its_ceiling() {
    let d = scratch("rtpoll");
    let job = write(&d, "j.fio", JOB);
    refused(
        &d,
        &["rt", &job, "--delivery", "polled"],
        "libaio cannot poll for completions",
    );
    let p = example();
    let deep = write(
        &d,
        "deep.fio",
        &JOB.replace("iodepth=8", "iodepth=128")
            .replace("runtime=2ms", "runtime=100ms"),
    );
    let r = irqlab(
        &d,
        &[
            "run",
            &deep,
            "--platform",
            &p,
            "--set",
            "devices.0.max_iops=30000",
            "--output-format",
            "json",
        ],
    );
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    let v: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    let iops = v["x-irqlab"]["exact"][0]["read"]["iops"].as_f64().unwrap();
    assert!(
        (29_400.0..=30_300.0).contains(&iops),
        "30 K x 80 us must reach 30 K: {iops}"
    );
}

#[test]
fn ncpus_is_the_platforms_and_the_report_says_so() {
    let d = scratch("ncpus");
    let job = write(
        &d,
        "n.fio",
        &JOB.replace(
            "runtime=2ms",
            "runtime=1ms\nnumjobs=$ncpus\ngroup_reporting",
        ),
    );
    let p = example();
    let r = irqlab(&d, &["run", &job, "--platform", &p]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(
        r.stdout
            .contains("ncpus: $ncpus = 16 (the platform's CPUs)"),
        "{}",
        r.stdout
    );
    assert!(r.stdout.contains("(groupid=0, jobs=16)"), "{}", r.stdout);
    let r = irqlab(&d, &["run", &job, "--platform", &p, "--set", "cpu.count=8"]);
    assert!(r.stdout.contains("(groupid=0, jobs=8)"), "{}", r.stdout);
}

#[test]
fn a_users_own_files_map_onto_the_platform_and_long_jobs_cap() {
    let d = scratch("map");
    let p = example();
    let own = write(
        &d,
        "own.fio",
        "[global]\nioengine=libaio\nrw=randread\niodepth=4\nsize=10g\n[a]\nfilename=/dev/sdb\n[b]\ndirectory=/data\n[c]\nfilename=/dev/nvme0n1\n",
    );
    let r = irqlab(&d, &["run", &own, "--platform", &p, "--max-runtime", "2ms"]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(
        r.stdout
            .contains("files: /dev/sdb -> nvme1, /data/b.0.0 -> nvme2"),
        "the names the platform lacks take its free devices in order: {}",
        r.stdout
    );
    assert!(
        r.stdout
            .contains("capped: --max-runtime 2ms: 3 job(s) bounded by size"),
        "{}",
        r.stdout
    );
    let r = irqlab(
        &d,
        &[
            "run",
            &own,
            "--platform",
            &p,
            "--max-runtime",
            "2ms",
            "--map",
            "/dev/sd*=nvme3",
        ],
    );
    assert!(r.stdout.contains("/dev/sdb -> nvme3"), "{}", r.stdout);
    refused(
        &d,
        &["run", &own, "--platform", &p, "--map", "*=nvme9"],
        "'nvme9' is not a device of the platform",
    );
    // Without the cap, a 10 GiB job at this rate is refused as over the run's limit? It
    // runs within 600 s of simulated time: the cap is what makes it a one-second try.
    refused(
        &d,
        &["run", &own, "--platform", &p, "--max-runtime", "0"],
        "a duration above 0",
    );
    // rt maps the same way and says so.
    let rt = write(
        &d,
        "rt.fio",
        "[a]\nioengine=libaio\nrw=randread\niodepth=4\nfilename=/srv/x\nruntime=5ms\n",
    );
    let r = irqlab(&d, &["rt", &rt]);
    assert_eq!(r.code, Some(0), "{}", r.stderr);
    assert!(r.stdout.contains("files: /srv/x -> nvme0"), "{}", r.stdout);
}

#[test]
fn job_errors_point_at_the_option_and_show_control_characters_escaped() {
    let d = scratch("lines");
    let p = example();
    let cpus = write(
        &d,
        "c.fio",
        "[j]\nioengine=libaio\nrw=randread\nfilename=/dev/nvme0n1\nruntime=1ms\ncpus_allowed=99\n",
    );
    refused(
        &d,
        &["run", &cpus, "--platform", &p],
        "c.fio:6: job 'j': cpus_allowed names CPU 99",
    );
    let nul = write(
        &d,
        "n.fio",
        "[j]\nioengine=libaio\nruntime=1ms\nfilename=/dev/nvme0n1\nbs=4\u{0}k\n",
    );
    let r = irqlab(&d, &["run", &nul, "--platform", &p]);
    assert_eq!(r.code, Some(2));
    assert!(
        r.stderr.contains("n.fio:5: bs=4\\u{0}k is not a size"),
        "{:?}",
        r.stderr
    );
    assert!(!r.stderr.contains('\u{0}'), "a raw NUL in {:?}", r.stderr);
    let toml = std::fs::read_to_string(root().join("platforms/example.toml")).unwrap();
    let half = toml
        .lines()
        .map(|l| {
            if l.starts_with("irq_entry_ns") {
                "irq_entry_ns = 250.5"
            } else {
                l
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
    let plat = write(&d, "half.toml", &half);
    let job = write(&d, "j.fio", JOB);
    refused(
        &d,
        &["run", &job, "--platform", &plat],
        "cpu.irq_entry_ns: 250.5 is not a whole number",
    );
    let w = write(&d, "w.fio", &JOB.replace("rw=randread", "rw=write:4k"));
    let r = irqlab(&d, &["run", &w, "--platform", &p]);
    assert_eq!(
        r.code,
        Some(0),
        "rw=write:4k is fio's offset modifier: {}",
        r.stderr
    );
    let bad = write(&d, "b.fio", &JOB.replace("rw=randread", "rw=write:x"));
    refused(
        &d,
        &["run", &bad, "--platform", &p],
        "optionally with an offset modifier :N or :SIZE",
    );
}

#[test]
fn run_events_are_checked_before_the_run() {
    let d = scratch("events");
    let job = write(&d, "j.fio", &format!("{JOB}cpus_allowed=0\n"));
    let p = example();
    let run = |events: &[&str], want: &str| {
        let mut args = vec!["run", job.as_str(), "--platform", p.as_str()];
        for e in events {
            args.extend(["--event", e]);
        }
        refused(&d, &args, want);
    };
    run(
        &["1ms:migrate=nvme9q1:cpu1"],
        "the run has no queue nvme9q1",
    );
    run(&["1ms:migrate=nvme0q1:cpu64"], "the run has CPUs 0 to 15");
    run(&["5ms:offline=cpu1"], "expected a time before that");
    run(&["1ms:offline=cpu0"], "job 'j' runs on cpu0");
    run(
        &["1ms:offline=cpu1", "1ms:migrate=nvme0q1:cpu1"],
        "that CPU is offline by then",
    );
    run(&["1ms:reboot=cpu1"], "unknown change 'reboot'");
    refused(
        &d,
        &[
            "run",
            &job,
            "--platform",
            &p,
            "--set",
            "cpu.count=2",
            "--event",
            "1ms:offline=cpu1",
            "--event",
            "1ms:offline=cpu0",
        ],
        "it is the last online CPU",
    );
    refused(
        &d,
        &[
            "run",
            &job,
            "--platform",
            &p,
            "--handler",
            "threaded",
            "--event",
            "1ms:migrate=nvme0q1:cpu1",
        ],
        "--event with --handler threaded",
    );
}
