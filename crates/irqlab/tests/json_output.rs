//! A JSON report stays one JSON document whatever else is asked for: --interrupts,
//! --irqtop, traces, timelines and fio logs all go elsewhere (stderr, their files, or
//! "x-irqlab"), in `irqlab run` and `irqlab rt`, on stdout and in --output FILE.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

/// Every fio option that adds to the output, with text that needs escaping.
const JOB: &str = "[global]\nioengine=libaio\nrw=randrw\nbs=4k\niodepth=8\ntime_based\n\
    runtime=3ms\nramp_time=1ms\nwrite_lat_log=lat\nwrite_bw_log=bw\nwrite_iops_log=iops\n\
    log_avg_msec=1\n[mixed]\nfilename=/dev/nvme0n1\ncpus_allowed=0-1\nnumjobs=2\n\
    group_reporting\ndescription=a \"quoted\" job, tab\tand é\n";

const RT_JOB: &str = "[global]\nioengine=libaio\nrw=randread\nbs=4k\niodepth=4\n\
    time_based\nruntime=60ms\n[a]\nfilename=/dev/nvme0n1\ndescription=rt \"job\"\n\
    [b]\nfilename=/dev/nvme1n1\nnew_group\n";

fn setup(name: &str, text: &str) -> (PathBuf, PathBuf) {
    let dir = std::env::temp_dir().join(format!("irqlab-json-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let job = dir.join("job.fio");
    std::fs::write(&job, text).unwrap();
    (dir, job)
}

fn platform() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../platforms/example.toml")
}

/// The whole text must be exactly one JSON value (serde_json rejects trailing data).
fn one_json(bytes: &[u8], what: &str) -> Value {
    serde_json::from_slice(bytes).unwrap_or_else(|e| {
        panic!(
            "{what} is not one JSON document: {e}\n{}",
            String::from_utf8_lossy(bytes)
        )
    })
}

/// A second parser, when python3 is there: the file loads with `json.load`.
fn python_loads(path: &Path) {
    let Ok(out) = Command::new("python3")
        .args([
            "-c",
            "import json,sys; json.load(open(sys.argv[1])); print('ok')",
        ])
        .arg(path)
        .output()
    else {
        eprintln!("python3 not found: skipping the second parser");
        return;
    };
    assert!(
        out.status.success() && out.stdout.starts_with(b"ok"),
        "python's json rejects {}: {}",
        path.display(),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn run_json_with_every_output_flag_is_one_document() {
    let (dir, job) = setup("run", JOB);
    for format in ["json", "json+"] {
        let out = Command::new(env!("CARGO_BIN_EXE_irqlab"))
            .arg("run")
            .arg(&job)
            .arg("--platform")
            .arg(platform())
            .args([
                "--output-format",
                format,
                "--interrupts",
                "--irqtop",
                "0.0005",
            ])
            .arg("--trace")
            .arg(dir.join("trace.json"))
            .args(["--trace-window", "0..1ms"])
            .arg("--timeline")
            .arg(dir.join("timeline.svg"))
            .arg("--log-dir")
            .arg(&dir)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{stderr}");
        let v = one_json(&out.stdout, "stdout");
        let job = &v["jobs"][0];
        assert_eq!(job["jobname"], "mixed");
        assert_eq!(job["desc"], "a \"quoted\" job, tab\tand é");
        assert!(job["read"]["total_ios"].as_u64().unwrap() > 0);
        assert_eq!(
            job["read"]["clat_ns"].get("bins").is_some(),
            format == "json+"
        );
        let table = v["x-irqlab"]["proc_interrupts"].as_str().unwrap();
        assert!(table.contains("LOC:"), "{table}");
        // The extras went to stderr and to their files.
        assert!(
            stderr.contains("irqtop |") && stderr.contains("LOC:"),
            "{stderr}"
        );
        one_json(&std::fs::read(dir.join("trace.json")).unwrap(), "the trace");
        assert!(dir.join("timeline.svg").exists());
        for f in [
            "lat_lat.1.log",
            "lat_clat.2.log",
            "bw_bw.1.log",
            "iops_iops.2.log",
        ] {
            let text = std::fs::read_to_string(dir.join(f)).unwrap();
            assert!(text.lines().count() >= 2, "{f}: {text}");
        }
        let path = dir.join("stdout.json");
        std::fs::write(&path, &out.stdout).unwrap();
        python_loads(&path);
    }
    // --output FILE: the file is the JSON; stdout stays empty (irqtop goes to stderr).
    let file = dir.join("report.json");
    let out = Command::new(env!("CARGO_BIN_EXE_irqlab"))
        .arg("run")
        .arg(&job)
        .arg("--platform")
        .arg(platform())
        .args([
            "--output-format",
            "json+",
            "--interrupts",
            "--irqtop",
            "0.001",
        ])
        .arg("--output")
        .arg(&file)
        .arg("--log-dir")
        .arg(&dir)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    one_json(&std::fs::read(&file).unwrap(), "--output FILE");
    python_loads(&file);
    assert!(
        out.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
}

#[test]
fn rt_json_with_interrupts_and_irqtop_is_one_document() {
    let (dir, job) = setup("rt", RT_JOB);
    let out = Command::new(env!("CARGO_BIN_EXE_irqlab"))
        .arg("rt")
        .arg(&job)
        .args(["--pin", "off", "--output-format", "json+", "--interrupts"])
        .args(["--irqtop", "0.02", "--delivery", "posted"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    let v = one_json(&out.stdout, "rt stdout");
    let jobs = v["jobs"].as_array().unwrap();
    assert_eq!(jobs.len(), 2);
    assert_eq!(jobs[0]["desc"], "rt \"job\"");
    assert_eq!(
        (jobs[0]["groupid"].as_u64(), jobs[1]["groupid"].as_u64()),
        (Some(0), Some(1))
    );
    assert!(
        v["x-irqlab"]["proc_interrupts"]
            .as_str()
            .unwrap()
            .contains("PMN:")
    );
    assert!(stderr.contains("irqtop |"), "{stderr}");
    let path = dir.join("rt.json");
    std::fs::write(&path, &out.stdout).unwrap();
    python_loads(&path);
}
