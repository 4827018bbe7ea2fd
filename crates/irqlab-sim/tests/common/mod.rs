//! Shared helpers: the example platform, job files written to a temp dir, one run.
#![allow(dead_code)]

use irqlab_core::Policy;
use irqlab_fio::JobSpec;
use irqlab_report::RunReport;
use irqlab_sim::{Platform, SimOptions, simulate};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU32, Ordering};

pub fn example_path() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../platforms/example.toml")
}

pub fn platform(sets: &[&str]) -> Platform {
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    Platform::load(&example_path(), &sets).expect("example platform loads")
}

/// Writes `text` as a job file and parses it.
pub fn jobs(text: &str) -> Vec<JobSpec> {
    static N: AtomicU32 = AtomicU32::new(0);
    let dir = std::env::temp_dir().join(format!("irqlab-sim-tests-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let path = dir.join(format!("job{}.fio", N.fetch_add(1, Ordering::Relaxed)));
    std::fs::write(&path, text).expect("write job file");
    irqlab_fio::parse_file(&path).unwrap_or_else(|e| panic!("job file parses: {e}"))
}

pub fn run(text: &str, policy: Policy, sets: &[&str], seed: u64) -> RunReport {
    simulate(
        &jobs(text),
        &platform(sets),
        &policy,
        &SimOptions::overriding(seed),
    )
    .unwrap_or_else(|e| panic!("simulation runs: {e}"))
}

/// One run of `text` under the default policy and options (the default seed).
pub fn sim(text: &str, sets: &[&str]) -> RunReport {
    simulate(
        &jobs(text),
        &platform(sets),
        &Policy::default(),
        &SimOptions::default(),
    )
    .unwrap_or_else(|e| panic!("simulation runs: {e}"))
}

pub fn extra(r: &RunReport, key: &str) -> f64 {
    r.extra
        .iter()
        .find(|(k, _)| k == key)
        .map(|(_, v)| *v)
        .unwrap_or_else(|| panic!("no extra counter {key}"))
}

pub fn clat_mean(r: &RunReport) -> f64 {
    let n: u64 = r.jobs.iter().map(|j| j.read.clat.count()).sum();
    let s: f64 = r
        .jobs
        .iter()
        .map(|j| j.read.clat.mean() * j.read.clat.count() as f64)
        .sum();
    s / n as f64
}

/// Four libaio jobs on four disks, all on CPU 0..3, 20 ms.
pub const FOUR_DISKS: &str = "\
[global]
ioengine=libaio
rw=randread
bs=4k
iodepth=32
runtime=10ms
time_based
[a]
filename=/dev/nvme0n1
cpus_allowed=0
[b]
filename=/dev/nvme1n1
cpus_allowed=1
[c]
filename=/dev/nvme2n1
cpus_allowed=2
[d]
filename=/dev/nvme3n1
cpus_allowed=3
";

/// One queue shared by 15 submitting CPUs; its vector is on CPU 0.
pub const SHARED_QUEUE: &str = "\
[global]
ioengine=libaio
rw=randread
bs=4k
iodepth=64
filename=nvme0n1
runtime=5ms
time_based
[flood]
numjobs=15
cpus_allowed=1-15
cpus_allowed_policy=split
";
