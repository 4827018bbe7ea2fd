//! The round trip: a platform with known costs is simulated, what its fio runs and
//! /proc/interrupts would have shown is written as a capture directory, a platform is
//! built from that capture, and the fit must recover the planted costs within 5%.

use irqlab_capture::Capture;
use irqlab_fromcapture::synthetic::{self, Machine, Run};
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn scratch(tag: &str) -> PathBuf {
    let d = std::env::temp_dir().join(format!("irqlab-roundtrip-{tag}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    d
}

fn job(name: &str, opts: &str, runtime: &str) -> Run {
    Run {
        name: name.into(),
        what: name.into(),
        job: format!(
            "[global]\nfilename=/dev/nvme0n1\nrw=randread\nbs=4k\ndirect=1\nnorandommap=1\ntime_based=1\nruntime={runtime}\nramp_time=5ms\n\n[{name}]\n{opts}"
        ),
    }
}

fn machine() -> Machine {
    Machine {
        hostname: "sim".into(),
        cpus: 4,
        mhz: 2000.0,
        release: "6.8.0-sim".into(),
        disks: 1,
        family: 6,
        model: 143,
    }
}

/// The platform `irqlab platform --from-capture` starts from for `m`, with `planted`.
fn planted(m: &Machine, planted: &[String]) -> irqlab_sim::Platform {
    let c = Capture {
        dir: PathBuf::from("sim"),
        manifest: None,
        host: m.host(),
        at_rest: None,
        runs: Vec::new(),
        skipped: Vec::new(),
        bench: None,
    };
    let t = irqlab_fromcapture::template::build(&c, &root().join("platforms")).unwrap();
    irqlab_sim::Platform::from_toml(&t.doc.render(), "planted", planted).unwrap()
}

#[test]
fn a_simulated_capture_gives_back_its_planted_costs() {
    let m = machine();
    let sets: Vec<String> = [
        "devices.0.read_ns=60000",
        "devices.0.max_iops=300000",
        "cpu.idle_exit_ns=4000",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let p = planted(&m, &sets);
    let dir = scratch("basic");
    let runs = vec![
        job("qd1-psync", "ioengine=psync\niodepth=1\n", "6s"),
        job("qd1-hipri", "ioengine=pvsync2\nhipri=1\niodepth=1\n", "6s"),
        job("qd32-libaio", "ioengine=libaio\niodepth=32\n", "1s"),
        job(
            "qd32x4-libaio",
            "ioengine=libaio\niodepth=32\nnumjobs=4\n",
            "1s",
        ),
    ];
    synthetic::write(&dir, &m, &p, &runs, 7).unwrap();
    let c = Capture::open(&dir).unwrap();
    let mut opts = irqlab_fromcapture::Options::new(root().join("platforms"));
    opts.max_evals = 70;
    let b =
        irqlab_fromcapture::build(&c, &opts, &mut irqlab_calib::Threads(2), &mut |_| {}).unwrap();
    println!("{}", irqlab_fromcapture::report(&b));
    for s in &sets {
        let (k, v) = s.split_once('=').unwrap();
        let want: f64 = v.parse().unwrap();
        let f = b
            .outcome
            .fitted
            .iter()
            .find(|f| f.param.key() == k)
            .unwrap_or_else(|| panic!("{k} not fitted"));
        let err = (f.value - want) / want;
        assert!(
            err.abs() < 0.05,
            "{k}: planted {want}, fitted {} ({:+.1}%)",
            f.value,
            err * 100.0
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

/// A device that aggregates its completions in time (Feature 08h set by someone) and a
/// CPU path that costs more than the tables say, with no polled run: the aggregation
/// time comes back from the I/Os per interrupt, the CPU path from the jobs' CPU time.
#[test]
fn a_device_that_aggregates_and_a_costlier_cpu_path_come_back() {
    let m = machine();
    let sets: Vec<String> = [
        "devices.0.read_ns=60000",
        "devices.0.max_iops=300000",
        "devices.0.coalesce_count=256",
        "devices.0.coalesce_time_ns=30000",
        "engine.pvsync2.submit_io_ns=4000",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let p = planted(&m, &sets);
    let dir = scratch("aggregating");
    let runs = vec![
        job("qd1-psync", "ioengine=psync\niodepth=1\n", "6s"),
        job("qd32-libaio", "ioengine=libaio\niodepth=32\n", "1s"),
        job(
            "qd32x4-libaio",
            "ioengine=libaio\niodepth=32\nnumjobs=4\n",
            "1s",
        ),
    ];
    synthetic::write(&dir, &m, &p, &runs, 7).unwrap();
    let c = Capture::open(&dir).unwrap();
    let mut opts = irqlab_fromcapture::Options::new(root().join("platforms"));
    opts.max_evals = 80;
    let b =
        irqlab_fromcapture::build(&c, &opts, &mut irqlab_calib::Threads(2), &mut |_| {}).unwrap();
    println!("{}", irqlab_fromcapture::report(&b));
    for s in &sets {
        let (k, v) = s.split_once('=').unwrap();
        if k.ends_with("coalesce_count") {
            continue;
        }
        let want: f64 = v.parse().unwrap();
        let f = b
            .outcome
            .fitted
            .iter()
            .find(|f| f.param.key() == k)
            .unwrap_or_else(|| panic!("{k} not fitted"));
        let err = (f.value - want) / want;
        assert!(
            err.abs() < 0.05,
            "{k}: planted {want}, fitted {} ({:+.1}%)",
            f.value,
            err * 100.0
        );
    }
    assert!(
        b.platform_text
            .contains("coalesce_count = { value = 256, source = \"measured\"")
    );
    let _ = std::fs::remove_dir_all(&dir);
}
