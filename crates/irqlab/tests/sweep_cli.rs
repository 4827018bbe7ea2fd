//! `irqlab sweep` as a user runs it: files written, a table on stdout, and no progress
//! bar escape codes when stderr is not a terminal.

use std::path::{Path, PathBuf};
use std::process::Command;

const JOB: &str = "[global]\nioengine=io_uring\ndirect=1\nrw=randread\nbs=4k\niodepth=8\n\
    time_based\nruntime=1ms\n[a]\nfilename=/dev/nvme0n1\ncpus_allowed=0\n";

fn setup(name: &str) -> (PathBuf, PathBuf) {
    let dir = std::env::temp_dir().join(format!("irqlab-cli-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let job = dir.join("one.fio");
    std::fs::write(&job, JOB).unwrap();
    (dir, job)
}

fn platform() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../platforms/example.toml")
}

#[test]
fn sweep_writes_files_and_stays_quiet_off_a_terminal() {
    let (dir, job) = setup("ok");
    let out = Command::new(env!("CARGO_BIN_EXE_irqlab"))
        .arg("sweep")
        .arg(&job)
        .arg("--platform")
        .arg(platform())
        .args(["--set", "max_loop=1..2", "--set", "delivery=posted"])
        .arg("--csv")
        .arg(dir.join("r.csv"))
        .arg("--plot")
        .arg(dir.join("r.png"))
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(
        !out.stderr.contains(&0x1b),
        "escape codes on stderr: {stderr:?}"
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.starts_with("max_loop"), "{stdout}");
    assert_eq!(
        stdout.lines().count(),
        4,
        "header, two points, 'wrote': {stdout}"
    );
    let csv = std::fs::read_to_string(dir.join("r.csv")).unwrap();
    assert_eq!(csv.lines().count(), 3);
    for f in ["r.png", "r.svg"] {
        assert!(std::fs::metadata(dir.join(f)).unwrap().len() > 1000, "{f}");
    }
}

#[test]
fn sweep_errors_are_one_clear_line() {
    let (_dir, job) = setup("err");
    let out = Command::new(env!("CARGO_BIN_EXE_irqlab"))
        .arg("sweep")
        .arg(&job)
        .arg("--platform")
        .arg(platform())
        .args(["--set", "max_loop=8..1"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.starts_with("irqlab: --set 'max_loop=8..1': "),
        "{stderr}"
    );
    assert!(stderr.contains("before it starts"), "{stderr}");
}
