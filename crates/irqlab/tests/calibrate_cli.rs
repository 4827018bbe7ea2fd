//! `irqlab calibrate` as a user meets it: the targets-file format is in --help, and a
//! bad --param names --param.

use std::path::Path;
use std::process::Command;

#[test]
fn help_shows_the_targets_file_format_with_an_example() {
    let out = Command::new(env!("CARGO_BIN_EXE_irqlab"))
        .args(["calibrate", "--help"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success());
    for want in [
        "[[target]]",
        "scenario = ",
        "metric = ",
        "fio_json = ",
        "interrupts_before = ",
        "Example:",
        "--seed <SEED>            Seed of the model's random streams",
        "--threads <THREADS>      Scenarios simulated at once",
    ] {
        assert!(text.contains(want), "no {want:?} in:\n{text}");
    }
}

#[test]
fn a_bad_param_is_reported_as_a_param() {
    let out = Command::new(env!("CARGO_BIN_EXE_irqlab"))
        .current_dir(Path::new(env!("CARGO_MANIFEST_DIR")).join("../.."))
        .args([
            "calibrate",
            "--platform",
            "example",
            "--param",
            "iommu.nope=1..2",
        ])
        .args(["--scenario", "C4"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success());
    assert!(
        err.starts_with("irqlab: --param 'iommu.nope=1..2': unknown key 'nope'"),
        "{err}"
    );
    assert!(!err.contains("--set"), "{err}");
}
