//! `irqlab platform --from-capture` and `irqlab advise` as a user runs them: a capture
//! of a simulated machine becomes a platform that loads, runs and passes --check; runs
//! held out are predicted; what cannot be modelled is refused with what is missing;
//! advise prints its table or JSON and draws its chart.

use irqlab_fromcapture::synthetic::{self, Machine, Run};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn irqlab(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_irqlab"))
        .current_dir(repo())
        .args(args)
        .output()
        .unwrap()
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn scratch(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("irqlab-yourmachine-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A 4-CPU machine with one NVMe drive, captured: QD1, QD32 and 4 x QD32 runs.
fn capture(dir: &Path) {
    let m = Machine {
        hostname: "box".into(),
        cpus: 4,
        mhz: 2000.0,
        release: "6.8.0".into(),
        disks: 1,
        family: 6,
        model: 143,
    };
    let c = irqlab_capture::Capture {
        dir: dir.to_path_buf(),
        manifest: None,
        host: m.host(),
        at_rest: None,
        runs: Vec::new(),
        skipped: Vec::new(),
        bench: None,
    };
    let t = irqlab_fromcapture::template::build(&c, &repo().join("platforms")).unwrap();
    let p = irqlab_sim::Platform::from_toml(
        &t.doc.render(),
        "planted",
        &[
            "devices.0.read_ns=70000".into(),
            "devices.0.max_iops=250000".into(),
        ],
    )
    .unwrap();
    let job = |name: &str, opts: &str, runtime: &str| Run {
        name: name.into(),
        what: name.into(),
        job: format!(
            "[global]\nfilename=/dev/nvme0n1\nrw=randread\nbs=4k\ndirect=1\ntime_based=1\nruntime={runtime}\nramp_time=2ms\n\n[{name}]\n{opts}"
        ),
    };
    let runs = vec![
        job("qd1-psync", "ioengine=psync\n", "400ms"),
        job("qd32-libaio", "ioengine=libaio\niodepth=32\n", "100ms"),
        job(
            "qd32x4-libaio",
            "ioengine=libaio\niodepth=32\nnumjobs=4\n",
            "100ms",
        ),
    ];
    synthetic::write(dir, &m, &p, &runs, 3).unwrap();
}

#[test]
fn a_captured_machine_becomes_a_platform_that_loads_runs_and_checks() {
    let dir = scratch("build");
    let cap = dir.join("cap");
    capture(&cap);
    let out = dir.join("box.toml");
    let o = irqlab(&[
        "platform",
        "--from-capture",
        cap.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
        "--max-evals",
        "24",
        "--runs",
        "qd1-psync,qd32x4-libaio",
    ]);
    let t = text(&o);
    assert!(o.status.success(), "{t}");
    assert!(
        t.contains("devices.0.read_ns = ") && t.contains("qd1-psync:clat_mean_us ("),
        "{t}"
    );
    // qd32-libaio was held out: predicted, with its errors.
    assert!(t.contains("Held out") && t.contains("qd32-libaio"), "{t}");
    let platform = std::fs::read_to_string(&out).unwrap();
    assert!(
        platform.contains("source = \"fit\", machine = \"box (cap)\", pins = [\"qd1-psync:"),
        "{platform}"
    );
    let check = irqlab(&["platform", "--check", out.to_str().unwrap()]);
    assert!(check.status.success(), "{}", text(&check));
    let run = irqlab(&[
        "run",
        "examples/randread-libaio.fio",
        "--platform",
        out.to_str().unwrap(),
    ]);
    assert!(
        run.status.success() && text(&run).contains("IOPS="),
        "{}",
        text(&run)
    );
    let explain = irqlab(&["platform", "--explain", out.to_str().unwrap()]);
    assert!(
        text(&explain).contains("pinned by: qd1-psync:"),
        "{}",
        text(&explain)
    );
    // Without --out the platform goes to stdout, the report to stderr.
    let o = irqlab(&[
        "platform",
        "--from-capture",
        cap.to_str().unwrap(),
        "--max-evals",
        "8",
    ]);
    assert!(String::from_utf8_lossy(&o.stdout).starts_with("# Platform of box"));
    assert!(String::from_utf8_lossy(&o.stderr).contains("In sample"));
    let o = irqlab(&[
        "platform",
        "--from-capture",
        cap.to_str().unwrap(),
        "--runs",
        "nope",
    ]);
    assert!(
        text(&o).contains(
            "the capture has no run 'nope'; its runs: qd1-psync, qd32-libaio, qd32x4-libaio"
        ),
        "{}",
        text(&o)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn what_cannot_be_modelled_is_named() {
    let fixtures = repo().join("crates/irqlab-capture/tests/fixtures");
    // The hand-made example's JSON holds no job options and it has no NAME.fio.
    let o = irqlab(&[
        "platform",
        "--from-capture",
        fixtures.join("hand-made").to_str().unwrap(),
    ]);
    let t = text(&o);
    assert_eq!(o.status.code(), Some(2), "{t}");
    assert!(
        t.contains("no run of the capture can pin a cost")
            && t.contains("give the job file as qd1.fio"),
        "{t}"
    );
    // A SCSI disk.
    let dir = scratch("scsi");
    capture(&dir);
    let m = std::fs::read_to_string(dir.join("manifest.json")).unwrap();
    std::fs::write(
        dir.join("manifest.json"),
        m.replace("\"kind\": \"nvme\"", "\"kind\": \"scsi\""),
    )
    .unwrap();
    let o = irqlab(&["platform", "--from-capture", dir.to_str().unwrap()]);
    assert!(
        text(&o).contains("cannot model nvme0n1 (scsi") && text(&o).contains("SCSI or SATA"),
        "{}",
        text(&o)
    );
    let _ = std::fs::remove_dir_all(&dir);
    let o = irqlab(&["platform", "--from-capture", "/nonexistent/capture"]);
    assert!(text(&o).contains("not a directory"), "{}", text(&o));
}

#[test]
fn advise_prints_a_table_json_and_a_chart() {
    let dir = scratch("advise");
    let job = dir.join("j.fio");
    std::fs::write(&job, "[j]\nfilename=/data/f\nrw=randread\nbs=4k\ndirect=1\nioengine=io_uring\niodepth=16\ncpus_allowed=0\n").unwrap();
    let svg = dir.join("c.svg");
    let o = irqlab(&[
        "advise",
        job.to_str().unwrap(),
        "--platform",
        "example",
        "--window",
        "2ms",
        "--output-format",
        "json",
        "--chart",
        svg.to_str().unwrap(),
        "--candidates",
        "posted,polled",
    ]);
    assert!(o.status.success(), "{}", text(&o));
    let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    let rows = v["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 3);
    for r in rows {
        for k in [
            "name",
            "knob",
            "iops",
            "clat_p50_us",
            "clat_p99_us",
            "cpu_per_io_us",
            "interrupts_per_s",
            "tick_late_p99_us",
        ] {
            assert!(!r[k].is_null(), "{k} in {r}");
        }
    }
    assert!(v["recommendation"]["knob"].is_string());
    assert!(std::fs::read_to_string(&svg).unwrap().starts_with("<svg"));
    let o = irqlab(&[
        "advise",
        job.to_str().unwrap(),
        "--platform",
        "example",
        "--window",
        "2ms",
        "--max-p99",
        "1us",
    ]);
    assert!(
        text(&o).contains("no candidate meets the constraints"),
        "{}",
        text(&o)
    );
    let o = irqlab(&[
        "advise",
        job.to_str().unwrap(),
        "--platform",
        "example",
        "--max-cpu",
        "150",
    ]);
    assert!(text(&o).contains("at most 100"), "{}", text(&o));
    let _ = std::fs::remove_dir_all(&dir);
}
