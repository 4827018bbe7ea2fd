//! Simulator speed: an 8-disk, 48-CPU scenario near 15 M IOPS, reported as simulated
//! I/Os per wall-clock second on one core, next to the events per second of a bare
//! `BinaryHeap<Reverse<(u64, u64, u32)>>` hold-model loop measured in the same run.
//!
//! `cargo bench -p irqlab-sim --bench sim_speed` (add `-- --quick` for a shorter run).

use irqlab_core::{Delivery, Policy};
use irqlab_sim::{Platform, SimOptions, simulate};
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::time::Instant;

/// A Sapphire-Rapids-like box: 48 CPUs, 8 Gen5 disks on one root port.
const PLATFORM: &str = r#"
name = "bench-48cpu-8disk"
[cpu]
count = 48
irq_entry_ns = 250
irq_exit_ns = 150
eoi_ns = 50
idle_exit_ns = 500
ctx_switch_ns = 1000
wakeup_ns = 400
ipi_ns = 1500
tick_hz = 1000
tick_ns = 4000
sched_slice_ns = 3000000
[kernel]
cqe_ns = 300
cq_doorbell_ns = 150
sq_doorbell_ns = 150
mmio_flight_ns = 500
poll_check_ns = 80
pir_round_ns = 100
irq_poll_call_ns = 100
softirq_ns = 200
irq_thread_ns = 500
hrtimer_ns = 400
[iommu]
dma_translate_ns = 2
[uncore]
stack_rtt_ns = 250
pid_ns = 130
[[root_ports]]
name = "rp0"
write_ns = 2
bytes_per_ns = 120.0
msi_ns = 5
[[devices]]
kind = "nvme"
prefix = "nvme"
count = 8
port = "rp0"
queues = 0
queue_depth = 1024
max_iops = 1900000.0
read_ns = 80000
write_ns = 20000
service_cv = 0.3
sqe_fetch_ns = 600
cqe_bytes = 16
"#;

fn job_file(dir: &std::path::Path, runtime_ms: u64) -> std::path::PathBuf {
    let mut s = format!(
        "[global]\nioengine=io_uring\nrw=randread\nbs=4k\ndirect=1\niodepth=64\n\
         iodepth_batch_submit=16\niodepth_batch_complete_min=8\ntime_based\n\
         runtime={runtime_ms}ms\nramp_time=1ms\n"
    );
    for cpu in 0..48 {
        s.push_str(&format!(
            "\n[j{cpu}]\nfilename=/dev/nvme{}n1\ncpus_allowed={cpu}\n",
            cpu % 8
        ));
    }
    let path = dir.join("bench.fio");
    std::fs::write(&path, s).expect("write the bench job file");
    path
}

/// Exponential gaps with a 1 µs mean from a xorshift64 stream: the hold model's clock.
fn exp_gaps() -> impl FnMut() -> u64 {
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let u = ((x >> 11) as f64 + 1.0) / (1u64 << 53) as f64;
        (-u.ln() * 1000.0) as u64
    }
}

/// The bare engine: pop the minimum, push it back at now + Exp(1 µs).
fn heap_hold_model(pending: usize, events: u64) -> f64 {
    let mut heap = BinaryHeap::with_capacity(pending);
    let mut next = exp_gaps();
    let mut seq = 0u64;
    for i in 0..pending {
        seq += 1;
        heap.push(Reverse((next(), seq, i as u32)));
    }
    let start = Instant::now();
    for _ in 0..events {
        let Reverse((t, _, id)) = heap.pop().expect("the heap never empties");
        seq += 1;
        heap.push(Reverse((t + next(), seq, id)));
    }
    std::hint::black_box(&heap);
    events as f64 / start.elapsed().as_secs_f64()
}

/// The same hold model on the simulator's own event queue.
fn engine_hold_model(pending: usize, events: u64) -> f64 {
    use irqlab_sim::engine::{CpuId, Event, EventQueue};
    let mut q = EventQueue::new();
    let mut next = exp_gaps();
    for i in 0..pending {
        q.push(next(), Event::Tick { cpu: CpuId::new(i) });
    }
    let start = Instant::now();
    for _ in 0..events {
        let (t, ev) = q.pop().expect("the queue never empties");
        q.push(t + next(), ev);
    }
    std::hint::black_box(&q);
    events as f64 / start.elapsed().as_secs_f64()
}

fn main() {
    let quick = std::env::args().any(|a| a == "--quick");
    let runtime_ms = if quick { 10 } else { 40 };
    let dir = std::env::temp_dir().join(format!("irqlab-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let jobs = irqlab_fio::parse_file(&job_file(&dir, runtime_ms)).expect("bench job parses");
    let platform = Platform::from_toml(PLATFORM, "bench", &[]).expect("bench platform");
    println!(
        "scenario: 48 CPUs, 8 NVMe disks (1.9 M IOPS each), 48 io_uring jobs QD64, {runtime_ms} ms simulated"
    );
    println!(
        "{:<10} {:>12} {:>12} {:>10} {:>14} {:>14} {:>12}",
        "delivery", "sim IOPS", "sim I/Os", "wall s", "sim I/O per s", "events/s", "events/I/O"
    );
    for (name, delivery) in [
        ("posted", Delivery::Posted { max_loop: 3 }),
        ("remapped", Delivery::Remapped),
    ] {
        let policy = Policy {
            delivery,
            ..Policy::default()
        };
        let start = Instant::now();
        let r =
            simulate(&jobs, &platform, &policy, &SimOptions::overriding(1)).expect("bench runs");
        let wall = start.elapsed().as_secs_f64();
        let extra = |k: &str| {
            r.extra
                .iter()
                .find(|(n, _)| n == k)
                .map_or(0.0, |(_, v)| *v)
        };
        let events = extra("events");
        let ios = extra("ios_completed");
        let iops: f64 = r.jobs.iter().map(|j| j.read.iops()).sum();
        println!(
            "{:<10} {:>12.0} {:>12.0} {:>10.3} {:>14.0} {:>14.0} {:>12.2}",
            name,
            iops,
            ios,
            wall,
            ios / wall,
            events / wall,
            events / ios
        );
    }
    if std::env::args().any(|a| a == "--sim-only") {
        return;
    }
    let heap_events = if quick { 5_000_000 } else { 20_000_000 };
    for pending in [4_096usize, 65_536] {
        let eps = heap_hold_model(pending, heap_events);
        println!(
            "bare BinaryHeap<Reverse<(u64,u64,u32)>> hold model, {pending} pending: {eps:.0} events/s"
        );
        let eps = engine_hold_model(pending, heap_events);
        println!("irqlab-sim EventQueue hold model, {pending} pending: {eps:.0} events/s");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
