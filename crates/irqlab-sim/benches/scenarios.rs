//! Simulator speed per scenario class, with criterion: simulated I/Os per wall-clock
//! second for a few milliseconds of each calibration rig (docs/model.md "Speed" has the
//! numbers). Instructions per simulated I/O, which do not depend on the host's noise,
//! come from `make bench-instructions`.
//!
//! `cargo bench -p irqlab-sim --bench scenarios`

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use irqlab_core::{Delivery, HandlerStyle, ModeratorKind, Policy};
use irqlab_fio::JobSpec;
use irqlab_sim::{Platform, SimOptions, simulate, simulate_parallel};
use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn platform(name: &str) -> Platform {
    Platform::load(&repo().join(format!("platforms/{name}.toml")), &[]).expect("platform loads")
}

/// One job per drive, each on its own CPU, `runtime` long.
fn per_drive(dir: &Path, name: &str, global: &str, drives: usize, jobs_per: usize) -> Vec<JobSpec> {
    let mut text = format!("[global]\n{global}\ntime_based\nruntime=4ms\n");
    for d in 0..drives {
        for k in 0..jobs_per {
            let cpu = d * jobs_per + k;
            text.push_str(&format!(
                "[j{cpu}]\nfilename=/dev/nvme{d}n1\ncpus_allowed={cpu}\n"
            ));
        }
    }
    let path = dir.join(format!("{name}.fio"));
    std::fs::write(&path, text).expect("write the job file");
    irqlab_fio::parse_file(&path).expect("the job parses")
}

struct Case {
    name: &'static str,
    jobs: Vec<JobSpec>,
    platform: Platform,
    policy: Policy,
    threads: usize,
}

fn cases() -> Vec<Case> {
    let dir = std::env::temp_dir().join(format!("irqlab-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let c3 = "ioengine=io_uring\nrw=randread\nbs=512\niodepth=128\niodepth_batch_submit=32\n\
              iodepth_batch_complete_min=32";
    let c1 = "ioengine=libaio\nrw=randread\nbs=4k\niodepth=32\niodepth_batch_submit=8\n\
              iodepth_batch_complete_min=1";
    let qd1 = "ioengine=pvsync2\nrw=randread\nbs=4k\niodepth=1";
    let policy = |delivery, handler, moderator| Policy {
        delivery,
        handler,
        moderator,
        ..Policy::default()
    };
    let posted = Delivery::Posted { max_loop: 3 };
    let hard = HandlerStyle::Hardirq;
    let none = ModeratorKind::None;
    let mut v = vec![
        Case {
            name: "C3 remapped, 4 drives",
            jobs: per_drive(&dir, "c3", c3, 4, 1),
            platform: platform("optane-gen2"),
            policy: policy(Delivery::Remapped, hard, none),
            threads: 1,
        },
        Case {
            name: "C3 posted, 4 drives",
            jobs: per_drive(&dir, "c3", c3, 4, 1),
            platform: platform("optane-gen2"),
            policy: policy(posted, hard, none),
            threads: 1,
        },
        Case {
            name: "C1 remapped, 8 disks x 6 jobs",
            jobs: per_drive(&dir, "c1", c1, 8, 6),
            platform: platform("spr-gen5"),
            policy: policy(Delivery::Remapped, hard, none),
            threads: 1,
        },
        Case {
            name: "C4 QD1 interrupts",
            jobs: per_drive(&dir, "c4", qd1, 1, 1),
            platform: platform("p5800x-qd1"),
            policy: policy(Delivery::Remapped, hard, none),
            threads: 1,
        },
        Case {
            name: "C5 rdma_dim, NVMe-oF",
            jobs: per_drive(&dir, "c5", c1, 1, 1),
            platform: platform("nvmeof-rdma-cx5"),
            policy: policy(Delivery::Remapped, hard, ModeratorKind::RdmaDim),
            threads: 1,
        },
    ];
    for threads in [1, 2] {
        v.push(Case {
            name: if threads == 1 {
                "C3 polled, 4 drives, 1 thread"
            } else {
                "C3 polled, 4 drives, 2 threads"
            },
            jobs: per_drive(&dir, "c3p", &format!("{c3}\nhipri"), 4, 1),
            platform: platform("optane-gen2"),
            policy: policy(Delivery::Polled, hard, none),
            threads,
        });
    }
    let _ = std::fs::remove_dir_all(&dir);
    v
}

fn bench(c: &mut Criterion) {
    let mut g = c.benchmark_group("simulated I/Os");
    g.sample_size(10);
    let opts = SimOptions::overriding(1);
    for case in cases() {
        let run = || {
            simulate_parallel(
                &case.jobs,
                &case.platform,
                &case.policy,
                &opts,
                case.threads,
            )
            .expect("the case runs")
        };
        let ios = simulate(&case.jobs, &case.platform, &case.policy, &opts)
            .expect("the case runs")
            .total_ios();
        g.throughput(Throughput::Elements(ios));
        g.bench_function(case.name, |b| b.iter(run));
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
