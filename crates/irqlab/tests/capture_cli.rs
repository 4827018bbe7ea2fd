//! `irqlab capture` and `irqlab hostbench` as a user meets them: --help, --show of a
//! capture, the messages for a directory that is not one and for a missing fio, and
//! hostbench's JSON.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn irqlab(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_irqlab"))
        .args(args)
        .output()
        .unwrap()
}

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../irqlab-capture/tests/fixtures")
        .join(name)
}

fn scratch(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("irqlab-capture-cli-{}-{tag}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

#[test]
fn help_says_what_a_capture_holds_and_how_to_lay_one_out_by_hand() {
    let out = irqlab(&["capture", "--help"]);
    assert!(out.status.success());
    let t = text(&out.stdout);
    for want in [
        "--show <DIR>",
        "--target <FILE|DEVICE>",
        "--no-fio",
        "--fio <PATH>",
        "manifest.json",
        "NAME.irq0",
        "laid out by hand",
        "qd1-hipri (only where the device has poll queues)",
    ] {
        assert!(t.contains(want), "no {want:?} in:\n{t}");
    }
    assert!(irqlab(&["hostbench", "--help"]).status.success());
}

#[test]
fn show_prints_the_host_devices_and_a_table_of_runs() {
    let dir = fixture("hand-made");
    let out = irqlab(&["capture", "--show", dir.to_str().unwrap()]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let t = text(&out.stdout);
    for want in [
        "laid out by hand",
        "4 CPUs",
        "nvme0: nvme",
        "vector 121 nvme0q1",
        "qd1 ",
        "qd32 ",
        "I/O/irq",
    ] {
        assert!(t.contains(want), "no {want:?} in:\n{t}");
    }
}

#[test]
fn bad_directories_and_options_get_a_message_and_exit_2() {
    let out = irqlab(&["capture", "--show", "/nonexistent/capture"]);
    assert_eq!(out.status.code(), Some(2));
    let e = text(&out.stderr);
    assert!(
        e.contains("irqlab: /nonexistent/capture: not a directory; expected a capture directory"),
        "{e}"
    );

    let out = irqlab(&["capture", "--show", "x", "--quick"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out.stderr).contains("cannot be used with"));

    let dir = scratch("no-fio-binary");
    let out = irqlab(&[
        "capture",
        "--fio",
        "/nonexistent/fio",
        "--out",
        dir.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(2));
    let e = text(&out.stderr);
    assert!(
        e.contains("--fio /nonexistent/fio: not an executable file") && e.contains("--no-fio"),
        "{e}"
    );
    assert!(!dir.exists(), "a refused capture wrote {}", dir.display());
}

#[test]
fn no_fio_records_the_machine_and_hostbench_writes_bench_json() {
    if !Path::new("/proc/interrupts").exists() {
        eprintln!("skipped: not Linux");
        return;
    }
    let dir = scratch("machine");
    let d = dir.to_str().unwrap();
    let out = irqlab(&["capture", "--no-fio", "--out", d]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(dir.join("manifest.json").exists() && dir.join("interrupts.txt").exists());
    let out = irqlab(&["hostbench", "--quick", "--json", "--out", d]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["schema"], "irqlab-hostbench/1");
    assert!(dir.join("bench.json").exists());
    let out = irqlab(&["capture", "--show", d]);
    let t = text(&out.stdout);
    assert!(
        out.status.success() && t.contains("hostbench (") && t.contains("syscall"),
        "{t}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
