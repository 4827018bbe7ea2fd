//! fio-plot draws every graph type it has from an irqlab sweep: `irqlab sweep --fio-dir`
//! writes a benchmark folder as fio-plot's bench-fio does (fio JSON per point and fio log
//! files), and fio-plot's -l, -N, -L, -H, -C and -g read it. The folder is always built
//! and checked; the drawing needs fio-plot (PyPI `fio-plot`), found as $FIO_PLOT, on the
//! PATH, or in target/fioplot-venv (`python3 -m venv target/fioplot-venv &&
//! target/fioplot-venv/bin/pip install fio-plot`), and is skipped without it.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

/// fio-plot merges "global options" over "job options", so the swept iodepth and numjobs
/// must not also be set in [global].
const JOB: &str = "[global]\nioengine=libaio\ndirect=1\nrw=randread\nbs=4k\n\
    time_based\nruntime=10ms\nlog_avg_msec=1\n[nvme0]\nfilename=/dev/nvme0n1\n\
    cpus_allowed=0-3\ncpus_allowed_policy=split\n";

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn sweep(dir: &Path, sets: &[&str]) {
    let job = dir.join("bench.fio");
    std::fs::write(&job, JOB).unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_irqlab"));
    cmd.arg("sweep")
        .arg(&job)
        .arg("--platform")
        .arg(workspace().join("platforms/example.toml"))
        .arg("--out")
        .arg(dir.join("sweep"))
        .arg("--fio-dir")
        .arg(dir.join("bench"));
    for s in sets {
        cmd.args(["--set", s]);
    }
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// fio-plot's executable, if installed.
fn fio_plot() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("FIO_PLOT") {
        return Some(PathBuf::from(p));
    }
    let on_path = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|d| d.join("fio-plot"))
            .find(|p| p.is_file())
    });
    on_path.or_else(|| {
        let venv = workspace().join("target/fioplot-venv/bin/fio-plot");
        venv.is_file().then_some(venv)
    })
}

#[test]
fn fio_plot_draws_every_graph_from_a_sweep() {
    let dir = std::env::temp_dir().join(format!("irqlab-fioplot-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    sweep(&dir, &["job.iodepth=1,2,4,8", "job.numjobs=1,2"]);
    let bench = dir.join("bench");
    // Compare graphs need two runs of the same job: remapped and posted delivery.
    let cmp = dir.join("cmp");
    std::fs::create_dir_all(&cmp).unwrap();
    sweep(
        &cmp,
        &["delivery=remapped,posted", "job.iodepth=8", "job.numjobs=1"],
    );

    // The folder: a fio JSON per point whose options fio-plot finds, and fio's logs.
    for (d, n) in [(1, 1), (8, 2)] {
        let prefix = format!("randread-iodepth-{d}-numjobs-{n}");
        let v: Value =
            serde_json::from_slice(&std::fs::read(bench.join(format!("{prefix}.json"))).unwrap())
                .unwrap();
        let mut opts = v["global options"].as_object().unwrap().clone();
        opts.extend(v["jobs"][0]["job options"].as_object().unwrap().clone());
        assert_eq!(opts["rw"], "randread");
        assert_eq!(opts["iodepth"], d.to_string());
        assert_eq!(opts["numjobs"], n.to_string());
        assert_eq!(opts["bs"], "4k");
        assert!(v["jobs"][0]["read"]["iops_stddev"].as_f64().unwrap() > 0.0);
        for kind in ["lat", "clat", "slat", "bw", "iops"] {
            for clone in 1..=n {
                let log = bench.join(format!("{prefix}_{kind}.{clone}.log"));
                let text = std::fs::read_to_string(&log).unwrap();
                assert!(text.lines().count() >= 8, "{}", log.display());
                for line in text.lines() {
                    let cols: Vec<&str> = line.split(", ").collect();
                    assert_eq!(cols.len(), 5, "{line}");
                    assert!(cols.iter().all(|c| c.parse::<u64>().is_ok()), "{line}");
                }
            }
        }
    }
    for sub in ["delivery=remapped", "delivery=posted"] {
        assert!(
            cmp.join("bench")
                .join(sub)
                .join("randread-iodepth-8-numjobs-1.json")
                .is_file()
        );
    }

    let Some(fio_plot) = fio_plot() else {
        eprintln!("fio-plot not found ($FIO_PLOT, PATH, target/fioplot-venv): not drawing");
        return;
    };
    let b = bench.display().to_string();
    let remapped = cmp.join("bench/delivery=remapped").display().to_string();
    let posted = cmp.join("bench/delivery=posted").display().to_string();
    let graphs: Vec<(&str, Vec<&str>)> = vec![
        (
            "l",
            vec!["-i", &b, "-l", "-d", "1", "2", "4", "8", "-n", "1"],
        ),
        ("N", vec!["-i", &b, "-N", "-d", "8", "-n", "1", "2"]),
        (
            "L",
            vec![
                "-i", &b, "-L", "-t", "iops", "-d", "1", "2", "4", "8", "-n", "1", "2",
            ],
        ),
        ("H", vec!["-i", &b, "-H", "-d", "8", "-n", "1"]),
        (
            "C",
            vec!["-i", &remapped, &posted, "-C", "-d", "8", "-n", "1"],
        ),
        (
            "g",
            vec![
                "-i", &b, "-g", "-t", "iops", "lat", "bw", "-d", "8", "-n", "2",
            ],
        ),
        (
            "g-clat",
            vec!["-i", &b, "-g", "-t", "clat", "slat", "-d", "1", "-n", "1"],
        ),
    ];
    for (name, args) in graphs {
        let png = dir.join(format!("graph-{name}.png"));
        let out = Command::new(&fio_plot)
            .env("MPLBACKEND", "Agg")
            .args(&args)
            .args(["-T", "irqlab", "-r", "randread", "-o"])
            .arg(&png)
            .output()
            .unwrap();
        let size = std::fs::metadata(&png).map_or(0, |m| m.len());
        assert!(
            out.status.success() && size > 20_000,
            "fio-plot -{name}: status {:?}, {size} bytes\n{}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
    }
}
