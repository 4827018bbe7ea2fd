//! `irqlab platform` as a user runs it: --check over every shipped platform and table,
//! --explain as text and JSON, and range warnings on standard error, once each.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn irqlab(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_irqlab"))
        .current_dir(dir)
        .args(args)
        .output()
        .unwrap()
}

fn json(out: &Output) -> serde_json::Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

/// Every shipped platform and table has provenance, every fit its pins and range, every
/// pin a figure of a scenario that uses the value, every value inside its range, and no
/// fit rests on a single figure without an independent source: the check passes.
#[test]
fn shipped_platforms_have_provenance_for_every_value() {
    let out = irqlab(&repo(), &["platform", "--check", "--format", "json"]);
    let problems = json(&out);
    assert_eq!(problems.as_array().unwrap().len(), 0, "{problems}");
    assert_eq!(out.status.code(), Some(0));
    let text = irqlab(&repo(), &["platform", "--check"]);
    let stdout = String::from_utf8_lossy(&text.stdout);
    let shipped = std::fs::read_dir(repo().join("platforms"))
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .is_ok_and(|e| e.path().extension().is_some_and(|x| x == "toml"))
        })
        .count();
    assert!(
        stdout.contains(&format!(
            "0 problems in {shipped} platforms and their tables"
        )),
        "{stdout}"
    );
    assert_eq!(text.status.code(), Some(0));
}

#[test]
fn explain_gives_each_value_its_origin_and_source() {
    let out = irqlab(
        &repo(),
        &["platform", "--explain", "spr-gen5", "--format", "json"],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = json(&out);
    assert_eq!(v["ghz"], 3.8);
    let params = v["parameters"].as_array().unwrap();
    let get = |k: &str| params.iter().find(|p| p["key"] == k).unwrap().clone();
    let entry = get("cpu.irq_entry_ns");
    assert_eq!(
        (&entry["value"], &entry["cycles"], &entry["origin"]),
        (
            &serde_json::json!("145"),
            &serde_json::json!(550),
            &serde_json::json!("cpus/golden-cove")
        )
    );
    // The socket's router: one value for SPR and EMR, pinned by both machines' figures.
    let d = get("uncore.ubox_ns");
    assert_eq!(
        (&d["source"], &d["pins"][0], &d["origin"]),
        (
            &serde_json::json!("fit"),
            &serde_json::json!("c1/remapped-8-disks"),
            &serde_json::json!("uncores/sapphire-rapids")
        )
    );
    assert!(
        d["pins"]
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p.as_str().unwrap().starts_with("v2/")),
        "{d}"
    );
    assert!(params.iter().all(|p| {
        !p["source"].is_null()
            || ["name", "cpu.model", "kernel.version", "uncore.model"]
                .contains(&p["key"].as_str().unwrap())
            || p["key"].as_str().unwrap().ends_with(".stack")
            || p["key"].as_str().unwrap().ends_with(".name")
            || p["key"].as_str().unwrap().ends_with(".kind")
            || p["key"].as_str().unwrap().ends_with(".prefix")
            || p["key"].as_str().unwrap().ends_with(".port")
    }));
    // The same core at emr-gen5's 2.7 GHz gives emr-gen5's costs.
    let at = |plat: &str, sets: &[&str]| {
        let mut args = vec!["platform", "--explain", plat, "--format", "json"];
        for s in sets {
            args.extend(["--set", s]);
        }
        let v = json(&irqlab(&repo(), &args));
        v["parameters"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["key"] == "cpu.irq_entry_ns")
            .unwrap()["value"]
            .clone()
    };
    assert_eq!(at("spr-gen5", &["cpu.ghz=2.7"]), at("emr-gen5", &[]));
    assert_eq!(at("emr-gen5", &[]), "204");
    let text = irqlab(
        &repo(),
        &[
            "platform",
            "--explain",
            "spr-gen5",
            "--set",
            "uncore.ubox_ns=900",
        ],
    );
    let t = String::from_utf8_lossy(&text.stdout);
    assert!(
        t.lines().any(|l| l.starts_with("uncore.ubox_ns")
            && l.contains("--set")
            && l.ends_with("ABOVE ITS RANGE")),
        "{t}"
    );
    assert!(
        t.contains("overrides: uncores/sapphire-rapids 150, fit"),
        "{t}"
    );
    let r = irqlab(&repo(), &["platform", "--check", "--set", "cpu.ghz=3"]);
    assert_eq!(r.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&r.stderr).contains("--set goes with --explain"));
}

/// A value outside its range is warned about on stderr, once, whatever loads the
/// platform how many times; standard output stays the report.
#[test]
fn range_warnings_go_to_stderr_once() {
    let dir = std::env::temp_dir().join(format!("irqlab-range-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("sc")).unwrap();
    let example = std::fs::read_to_string(repo().join("platforms/example.toml")).unwrap();
    let text = example.replace(
        "stack_rtt_ns = { value = 65, source = \"estimate\",",
        "stack_rtt_ns = { value = 65, source = \"estimate\", range = [100, 200],",
    );
    assert_ne!(text, example);
    std::fs::write(dir.join("p.toml"), text).unwrap();
    std::fs::write(
        dir.join("j.fio"),
        "[j]\nioengine=libaio\niodepth=4\nfilename=/dev/nvme0n1\ncpus_allowed=0\nruntime=1ms\n",
    )
    .unwrap();
    for row in ["a", "b", "c"] {
        std::fs::write(
            dir.join(format!("sc/{row}.toml")),
            format!(
                "experiment = \"E\"\nrow = \"{row}\"\njob = \"../j.fio\"\nplatform = \"../p.toml\"\n[[target]]\nmetric = \"iops\"\npublished = 1000\n"
            ),
        )
        .unwrap();
    }
    let out = irqlab(
        &dir,
        &["reproduce", "--scenarios", "sc", "--format", "json"],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    json(&out);
    let err = String::from_utf8_lossy(&out.stderr);
    let warnings: Vec<&str> = err.lines().filter(|l| l.contains("warning")).collect();
    assert_eq!(warnings.len(), 1, "{err}");
    assert!(
        warnings[0].contains("p.toml:")
            && warnings[0]
                .contains("uncore.stack_rtt_ns = 65 is outside its plausible range 100..200"),
        "{err}"
    );
    let out = irqlab(
        &dir,
        &[
            "run",
            "j.fio",
            "--platform",
            "p.toml",
            "--set",
            "uncore.stack_rtt_ns=150",
            "--output-format",
            "json",
        ],
    );
    assert!(out.status.success());
    json(&out);
    assert!(!String::from_utf8_lossy(&out.stderr).contains("warning"));
    let _ = std::fs::remove_dir_all(&dir);
}
