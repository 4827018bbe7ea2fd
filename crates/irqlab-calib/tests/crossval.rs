//! Leave-one-experiment-out on a small case: a parameter pinned by two experiments is
//! refitted on the other's figure, one pinned by a single experiment leaves that
//! experiment's figures not cross-validated unless they do not move across its range,
//! and an experiment that pins nothing is predicted as it is. Tiny windows and a
//! handful of evaluations keep it fast.

use irqlab_calib::crossval::{CvSpec, Status, cross_validate};
use irqlab_calib::{Threads, crossval_table, load_dir};
use irqlab_sim::Budget;
use std::path::{Path, PathBuf};

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("irqlab-cv-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    for e in ["e1", "e2", "e3"] {
        std::fs::create_dir_all(dir.join("sc").join(e)).unwrap();
    }
    let example = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../platforms/example.toml"),
    )
    .unwrap();
    let text = example
        .replace(
            "stack_rtt_ns = { value = 65, source = \"estimate\",",
            "stack_rtt_ns = { value = 65, source = \"fit\", pins = [\"e1/a\", \"e2/b\"], range = [10, 3000],",
        )
        .replace(
            "read_ns = { value = 80000, source = \"estimate\",",
            "read_ns = { value = 80000, source = \"fit\", pins = [\"e2/b\"], range = [20000, 400000],",
        )
        // E1 runs remapped: the posted MSI's PID update cannot move its figure.
        .replace(
            "pid_ns = { value = 110, source = \"estimate\",",
            "pid_ns = { value = 110, source = \"fit\", pins = [\"e1/a\"], range = [6, 200],",
        );
    std::fs::write(dir.join("p.toml"), text).unwrap();
    std::fs::write(
        dir.join("sc/job.fio"),
        "[j]\nioengine=libaio\nrw=randread\nbs=4k\niodepth=16\nfilename=/dev/nvme0n1\n\
         cpus_allowed=0\ntime_based\nruntime=1ms\nramp_time=100us\n",
    )
    .unwrap();
    for (exp, stem, policy, published) in [
        ("E1", "e1/a", "--delivery remapped", 150000.0),
        ("E2", "e2/b", "--delivery posted", 150000.0),
        ("E3", "e3/c", "--delivery remapped --coalesce 3,1", 200000.0),
    ] {
        std::fs::write(
            dir.join("sc").join(format!("{stem}.toml")),
            format!(
                "experiment = \"{exp}\"\nrow = \"{stem}\"\njob = \"../job.fio\"\nplatform = \"../../p.toml\"\n\
                 policy = \"{policy}\"\n[[target]]\nmetric = \"iops\"\npublished = {published}\n"
            ),
        )
        .unwrap();
    }
    dir
}

fn spec(dir: &Path, experiments: &[&str]) -> CvSpec {
    CvSpec {
        scenarios_dir: dir.join("sc"),
        experiments: experiments.iter().map(|s| s.to_string()).collect(),
        max_evals: 4,
        seed: 1,
        budget: Budget::DEFAULT,
    }
}

#[test]
fn each_experiment_is_left_out_of_the_fits_it_pins() {
    let dir = scratch("small");
    let all = load_dir(&dir.join("sc")).unwrap();
    let mut evals = 0;
    let report =
        cross_validate(&all, &spec(&dir, &[]), &mut Threads(2), &mut |n| evals += n).unwrap();
    let status: Vec<(&str, Status)> = report
        .rows
        .iter()
        .map(|r| (r.experiment.as_str(), r.status))
        .collect();
    assert_eq!(
        status,
        vec![
            ("E1", Status::Refitted),
            ("E2", Status::NotCrossValidated),
            ("E3", Status::Predicted)
        ]
    );
    // E1 left out: stack_rtt_ns is refitted on E2's figure alone, within its range.
    assert_eq!(report.refits.len(), 1, "{:?}", report.refits);
    let refit = &report.refits[0];
    assert_eq!((refit.experiment.as_str(), refit.targets), ("E1", 1));
    assert!(refit.evals <= 4 && refit.evals >= 2, "{refit:?}");
    let v: i64 = refit.values[0]
        .strip_prefix("example:uncore.stack_rtt_ns=")
        .unwrap()
        .parse()
        .unwrap();
    assert!((10..=3000).contains(&v), "{refit:?}");
    let e1 = &report.rows[0];
    assert!(
        e1.out_of_sample.unwrap() > 0.0 && e1.in_sample > 0.0,
        "{e1:?}"
    );
    assert_eq!(e1.parameters, refit.values);
    assert_eq!(e1.unmoved, vec!["example:uncore.pid_ns".to_string()]);
    // E2: the media read time is pinned by E2 alone, and moves its figure.
    assert_eq!(
        report.rows[1].parameters,
        vec!["example:devices.0.read_ns".to_string()]
    );
    assert!(report.rows[1].unmoved.is_empty());
    assert_eq!(report.rows[1].out_of_sample, None);
    // E3 pins nothing: in sample is out of sample.
    assert_eq!(report.rows[2].out_of_sample, Some(report.rows[2].in_sample));
    let summary = crossval_table::summary(&report);
    assert!(
        summary.contains("of 2 cross-validated figures; 1 not cross-validated (example: devices.0.read_ns: pinned only by their own experiment's figures)"),
        "{summary}"
    );
    let text = crossval_table::text(&report);
    assert!(
        text.contains("E1: 1 figure unmoved across the range of example: uncore.pid_ns (within 1%), cross-validated without it"),
        "{text}"
    );
    // The same on one thread: nothing depends on where tasks run.
    let again = cross_validate(&all, &spec(&dir, &[]), &mut Threads(1), &mut |_| {}).unwrap();
    assert_eq!(again, report);
    // One experiment left out alone gives its rows only.
    let one = cross_validate(&all, &spec(&dir, &["e1"]), &mut Threads(2), &mut |_| {}).unwrap();
    assert_eq!(one.rows, report.rows[..1].to_vec());
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_fit_without_range_cannot_be_refitted() {
    let dir = scratch("norange");
    let text = std::fs::read_to_string(dir.join("p.toml"))
        .unwrap()
        .replace(", range = [20000, 400000],", ",");
    std::fs::write(dir.join("p.toml"), text).unwrap();
    let all = load_dir(&dir.join("sc")).unwrap();
    let e = cross_validate(&all, &spec(&dir, &[]), &mut Threads(1), &mut |_| {})
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("example:devices.0.read_ns")
            && e.contains("without a range")
            && e.contains("platform --check"),
        "{e}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
