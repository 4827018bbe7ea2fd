//! Hostile input to the simulator (issue 12): the resource budget refuses a model before
//! it is built, every run ends, the silent wrong answers are errors or right answers, and
//! platform errors name the file, line and key.

mod common;
use common::*;
use irqlab_core::Policy;
use irqlab_sim::{Budget, Platform, SimError, SimOptions, StopFlag, estimate, simulate};
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

fn sim(job: &str, sets: &[&str], opts: &SimOptions) -> Result<irqlab_report::RunReport, SimError> {
    simulate(&jobs(job), &platform(sets), &Policy::default(), opts)
}

const JOB: &str =
    "[j]\nioengine=libaio\nrw=randread\nbs=4k\niodepth=8\nfilename=nvme0n1\nruntime=2ms\n";

#[test]
fn a_model_past_the_memory_budget_is_refused_before_it_is_built() {
    // 4096 CPUs, 64 disks: 262144 queues and vectors with a counter per CPU each.
    let sets = ["cpu.count=4096", "devices.0.count=64"];
    let files: Vec<String> = (0..64).map(|d| format!("nvme{d}n1")).collect();
    let job = JOB.replace("filename=nvme0n1", &format!("filename={}", files.join(":")));
    let e = match sim(&job, &sets, &SimOptions::default()) {
        Ok(_) => panic!("a 37 GiB model ran"),
        Err(e) => e,
    };
    assert!(matches!(e, SimError::OverBudget(_)), "{e}");
    let msg = e.to_string();
    assert!(
        msg.contains("GiB of memory") && msg.contains("cpu.count"),
        "{msg}"
    );
    assert!(msg.contains("--max-memory"), "{msg}");
    let est = estimate(&jobs(&job), &platform(&sets), &Policy::default()).unwrap();
    assert!(est.memory_bytes > 8 << 30, "{} bytes", est.memory_bytes);
}

#[test]
fn events_past_the_budget_are_refused_and_the_budget_is_a_setting() {
    let long = JOB.replace("runtime=2ms", "runtime=60s");
    let tight = Budget {
        max_events: 1_000_000,
        ..Budget::DEFAULT
    };
    let e = sim(&long, &[], &SimOptions::default().with_budget(tight)).unwrap_err();
    assert!(
        e.to_string().contains("events") && e.to_string().contains("--max-events"),
        "{e}"
    );
    // The same tight budget runs a short job.
    sim(JOB, &[], &SimOptions::default().with_budget(tight)).unwrap();
}

#[test]
fn every_example_fits_the_default_budget() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let p = Platform::load(&root.join("platforms/example.toml"), &[]).unwrap();
    for entry in std::fs::read_dir(root.join("examples")).unwrap() {
        let path = entry.unwrap().path();
        let js = irqlab_fio::parse_file(&path).unwrap();
        let Ok(e) = estimate(&js, &p, &Policy::default()) else {
            continue;
        };
        assert!(
            e.memory_bytes < Budget::DEFAULT.max_memory_bytes / 8
                && e.events < Budget::DEFAULT.max_events / 8,
            "{}: {e:?}",
            path.display()
        );
    }
}

#[test]
fn counts_that_cannot_finish_within_the_run_limit_are_refused() {
    // The error is at the line of the option that sets the count (the last one).
    for (option, line) in [
        ("size=1p", 4),
        ("number_ios=18446744073709551615", 4),
        ("size=4k\nloops=4294967295", 5),
    ] {
        let text = format!("[j]\nioengine=libaio\nfilename=nvme0n1\n{option}\n");
        let e = sim(&text, &[], &SimOptions::default())
            .unwrap_err()
            .to_string();
        assert!(e.contains("over the 600 s limit"), "{option}: {e}");
        assert!(e.contains(&format!(":{line}: job 'j'")), "{option}: {e}");
    }
    // A count that fits ends by itself.
    let r = sim(
        "[j]\nioengine=libaio\niodepth=8\nfilename=nvme0n1\nnumber_ios=500\n",
        &[],
        &SimOptions::default(),
    )
    .unwrap();
    assert_eq!(r.total_ios(), 500);
}

#[test]
fn times_that_would_wrap_are_refused() {
    let e = sim(
        "[j]\nfilename=nvme0n1\nruntime=18446744073s\nramp_time=1s\n",
        &[],
        &SimOptions::default(),
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("over 600 s"), "{e}");
    let e = sim(
        "[j]\nfilename=nvme0n1\nruntime=1ms\nstartdelay=100000d\n",
        &[],
        &SimOptions::default(),
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("startdelay"), "{e}");
}

#[test]
fn max_iops_below_one_media_unit_is_honoured() {
    // 80 us reads could give 12.5 K IOPS per unit; the device says 1000.
    let r = sim(
        &JOB.replace("runtime=2ms", "runtime=200ms"),
        &["devices.0.max_iops=1000"],
        &SimOptions::default(),
    )
    .unwrap();
    let iops = r.total_ios() as f64 * 1e9 / r.duration_ns as f64;
    assert!((950.0..=1015.0).contains(&iops), "{iops} IOPS");
    // 1.5 units round to 2: still never faster than max_iops.
    let r = sim(
        &JOB.replace("runtime=2ms", "runtime=40ms")
            .replace("iodepth=8", "iodepth=64"),
        &["devices.0.max_iops=18750"],
        &SimOptions::default(),
    )
    .unwrap();
    let iops = r.total_ios() as f64 * 1e9 / r.duration_ns as f64;
    assert!(iops <= 18_750.0 * 1.02, "{iops} IOPS");
}

#[test]
fn absurd_counts_and_sizes_are_refused_with_their_key() {
    for (set, want) in [
        (
            "devices.0.count=4294967296",
            "devices.0.count = 4294967296 is not in 1..=4096",
        ),
        (
            "devices.0.cqe_bytes=9223372036854775807",
            "devices.0.cqe_bytes",
        ),
        ("devices.0.queues=70000", "devices.0.queues = 70000"),
        (
            "devices.0.queues=-1",
            "--set 'devices.0.queues=-1': devices.0.queues: -1 is not a whole number",
        ),
    ] {
        let e = Platform::load(&example_path(), &[set.to_string()])
            .map(|_| ())
            .unwrap_err()
            .to_string();
        assert!(e.contains(want), "--set {set}: {e}");
        assert!(!e.contains("usize") && !e.contains("u64"), "{e}");
    }
    // Optional keys the file leaves out can be set.
    let p = Platform::load(&example_path(), &["devices.0.irq_cpu=3".to_string()]).unwrap();
    assert_eq!(p.devices[0].irq_cpu, Some(3));
}

#[test]
fn platform_file_errors_name_file_line_and_key() {
    let text = std::fs::read_to_string(example_path()).unwrap();
    let line_of = |key: &str| 1 + text.lines().position(|l| l.starts_with(key)).unwrap();
    let big = text.replacen(
        "cqe_ns = { value = 50,",
        "cqe_ns = { value = 18446744073709551615,",
        1,
    );
    let e = Platform::from_toml(&big, "p.toml", &[])
        .unwrap_err()
        .to_string();
    let want = format!(
        "p.toml:{}: kernel.cqe_ns: the value is above",
        line_of("cqe_ns")
    );
    assert!(e.starts_with(&want), "{e}");
    let neg = text.replacen("queues = { value = 0,", "queues = { value = -1,", 1);
    let e = Platform::from_toml(&neg, "p.toml", &[])
        .unwrap_err()
        .to_string();
    let want = format!(
        "p.toml:{}: devices.0.queues: -1 is not a whole number (0 or more)",
        line_of("queues")
    );
    assert_eq!(e, want);
    let zero = text.replacen("count = { value = 16,", "count = { value = 0,", 1);
    let e = Platform::from_toml(&zero, "p.toml", &[])
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        format!(
            "p.toml:{}: cpu.count = 0 is not in 1..=4096",
            line_of("count")
        )
    );
    let e = Platform::load(Path::new("/dev/zero"), &[])
        .unwrap_err()
        .to_string();
    assert!(e.contains("not a regular file"), "{e}");
}

/// Sets the stop flag at its `after`-th handler run, as a signal would arrive mid-run: the
/// stop lands after I/O has completed however slowly the host builds the model.
struct StopAfterHandlers {
    flag: Arc<AtomicBool>,
    after: u32,
}

impl irqlab_sim::Observer for StopAfterHandlers {
    fn handler(&mut self, _now: u64, _cpu: usize, _vector: usize, _cqes: u32) {
        self.after = self.after.saturating_sub(1);
        if self.after == 0 {
            self.flag.store(true, Ordering::Relaxed);
        }
    }
}

#[test]
fn a_stop_flag_ends_the_run_with_a_report_marked_interrupted() {
    let flag = Arc::new(AtomicBool::new(false));
    let opts = SimOptions::default().stopped_by(StopFlag::new(flag.clone()));
    let mut stopper = StopAfterHandlers { flag, after: 50 };
    let long = JOB.replace("runtime=2ms", "time_based\nruntime=300s");
    let t0 = std::time::Instant::now();
    let r = irqlab_sim::simulate_observed(
        &jobs(&long),
        &platform(&[]),
        &Policy::default(),
        &opts,
        &mut stopper,
    )
    .unwrap();
    assert!(t0.elapsed().as_secs() < 60, "stopped promptly");
    assert!(r.flag(irqlab_report::EXTRA_INTERRUPTED));
    assert!(r.end_ns < 300_000_000_000, "stopped before its end");
    // The figures cover the run so far: the job ran, with a runtime.
    assert!(r.total_ios() > 0);
    assert!(r.jobs[0].runtime_ns > 0 && r.jobs[0].read.total_ios > 0);
    let text = irqlab_report::text::render(&r);
    assert!(text.contains("interrupted: the run was stopped"), "{text}");
}
