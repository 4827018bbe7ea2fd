//! `irqlab reproduce --cross-validate` as a user runs it, on a small case: one experiment
//! left out, a handful of evaluations, tiny windows.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn scratch() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("irqlab-cv-cli-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("sc/e1")).unwrap();
    std::fs::create_dir_all(dir.join("sc/e2")).unwrap();
    let example = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../platforms/example.toml"),
    )
    .unwrap();
    let text = example.replace(
        "stack_rtt_ns = { value = 65, source = \"estimate\",",
        "stack_rtt_ns = { value = 65, source = \"fit\", pins = [\"e1/a\", \"e2/b\"], range = [10, 3000],",
    );
    assert_ne!(text, example);
    std::fs::write(dir.join("p.toml"), text).unwrap();
    std::fs::write(
        dir.join("sc/job.fio"),
        "[j]\nioengine=libaio\nrw=randread\nbs=4k\niodepth=16\nfilename=/dev/nvme0n1\n\
         cpus_allowed=0\ntime_based\nruntime=1ms\nramp_time=100us\n",
    )
    .unwrap();
    for (exp, stem, policy) in [
        ("E1", "e1/a", "--delivery remapped"),
        ("E2", "e2/b", "--delivery posted"),
    ] {
        std::fs::write(
            dir.join("sc").join(format!("{stem}.toml")),
            format!(
                "experiment = \"{exp}\"\nrow = \"{stem}\"\njob = \"../job.fio\"\nplatform = \"../../p.toml\"\n\
                 policy = \"{policy}\"\n[[target]]\nmetric = \"iops\"\npublished = 150000\n"
            ),
        )
        .unwrap();
    }
    dir
}

fn irqlab(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_irqlab"))
        .current_dir(dir)
        .args(args)
        .output()
        .unwrap()
}

#[test]
fn one_experiment_left_out_prints_both_tables_and_the_summary() {
    let dir = scratch();
    let args = [
        "reproduce",
        "E1",
        "--cross-validate",
        "--scenarios",
        "sc",
        "--max-evals",
        "3",
    ];
    let out = irqlab(&dir, &args);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines[0].starts_with("experiment")
            && lines[0].contains("in sample")
            && lines[0].contains("out of sample"),
        "{text}"
    );
    assert!(
        lines[2].starts_with("E1") && lines[2].contains("refit: example:uncore.stack_rtt_ns="),
        "{text}"
    );
    assert!(
        text.contains("without E1: example:uncore.stack_rtt_ns="),
        "{text}"
    );
    let evals: usize = text
        .split("(fitted to 1 figure of other experiments, ")
        .nth(1)
        .and_then(|r| r.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{text}"));
    assert!((2..=3).contains(&evals), "{text}");
    assert!(
        text.lines()
            .last()
            .unwrap()
            .contains("of 1 cross-validated figures; 0 not cross-validated"),
        "{text}"
    );
    // Deterministic, and JSON with the same numbers.
    assert_eq!(irqlab(&dir, &args).stdout, out.stdout);
    let mut json_args = args.to_vec();
    json_args.extend(["--format", "json"]);
    let j: serde_json::Value = serde_json::from_slice(&irqlab(&dir, &json_args).stdout).unwrap();
    assert_eq!(j["rows"][0]["status"], "refitted");
    assert_eq!(j["refits"][0]["experiment"], "E1");
    // --check judges in-sample figures; it does not go with --cross-validate.
    let r = irqlab(
        &dir,
        &[
            "reproduce",
            "--cross-validate",
            "--check",
            "10",
            "--scenarios",
            "sc",
        ],
    );
    assert_eq!(r.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&r.stderr).contains("cannot be used with"));
    let _ = std::fs::remove_dir_all(&dir);
}
