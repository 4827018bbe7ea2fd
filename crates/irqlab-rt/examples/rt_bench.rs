//! Remapped, posted and polled delivery on real threads, at queue depth 1, at
//! saturation, and in the C1 shape (eight controllers, eight vectors on one CPU thread),
//! measured in one invocation and printed as a table of ratios.
//!
//! `cargo run --release -p irqlab-rt --example rt_bench -- [SECS] [REPS]`
//! Each case runs SECS seconds (default 2), REPS times (default 3), interleaved so that
//! background load hits every case alike; the median of each figure is reported.

use irqlab_core::{Delivery, Policy};
use irqlab_report::RunReport;
use irqlab_rt::{RtConfig, run};
use std::path::Path;

const QD1: &str = "[global]\nioengine=pvsync2\nfilename=/dev/nvme0n1\nrw=randread\nbs=4k\n\
                   direct=1\ntime_based\n[qd1]\n";
const SAT: &str = "[global]\nioengine=libaio\nfilename=/dev/nvme0n1\nrw=randread\nbs=4k\n\
                   direct=1\niodepth=128\niodepth_batch_submit=16\n\
                   iodepth_batch_complete_min=1\ntime_based\n[sat]\n";
/// C1: eight controllers, one job each, all on one CPU thread (eight vectors on one CPU).
const C1: &str = "[global]\nioengine=libaio\nrw=randread\nbs=4k\ndirect=1\niodepth=16\n\
                  iodepth_batch_submit=4\ntime_based\n\
                  [c0]\nfilename=/dev/nvme0n1\n[c1]\nfilename=/dev/nvme1n1\n\
                  [c2]\nfilename=/dev/nvme2n1\n[c3]\nfilename=/dev/nvme3n1\n\
                  [c4]\nfilename=/dev/nvme4n1\n[c5]\nfilename=/dev/nvme5n1\n\
                  [c6]\nfilename=/dev/nvme6n1\n[c7]\nfilename=/dev/nvme7n1\n";

#[derive(Clone, Copy, Default)]
struct Figures {
    iops: f64,
    cpu_ns_per_io: f64,
    clat_mean_ns: f64,
    notes_per_completion: f64,
    wakeups_per_completion: f64,
}

fn extra(r: &RunReport, key: &str) -> f64 {
    r.extra
        .iter()
        .find(|(k, _)| k == key)
        .map_or(0.0, |(_, v)| *v)
}

fn measure(job: &str, secs: u64, delivery: Delivery) -> Result<Figures, String> {
    // In [global], so that every job of the C1 shape gets it.
    let text = job.replacen("time_based\n", &format!("time_based\nruntime={secs}s\n"), 1);
    let jobs =
        irqlab_fio::parse_str(&text, Path::new("rt_bench.fio")).map_err(|e| e.to_string())?;
    let policy = Policy {
        delivery,
        ..Policy::default()
    };
    let r = run(&jobs, &policy, &RtConfig::default())?;
    // Several jobs (C1): IOPS add up, the mean latency is weighted by I/Os.
    let ios: u64 = r.jobs.iter().map(|j| j.read.total_ios).sum();
    let clat_sum: f64 = r
        .jobs
        .iter()
        .map(|j| j.read.clat.mean() * j.read.total_ios as f64)
        .sum();
    Ok(Figures {
        iops: r.jobs.iter().map(|j| j.read.iops()).sum(),
        cpu_ns_per_io: extra(&r, "cpu_ns_per_io"),
        clat_mean_ns: if ios == 0 { 0.0 } else { clat_sum / ios as f64 },
        notes_per_completion: extra(&r, "notifications_per_completion"),
        wakeups_per_completion: extra(&r, "wakeups_per_completion"),
    })
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() -> Result<(), String> {
    let mut args = std::env::args().skip(1);
    let secs: u64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(2);
    let reps: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(3).max(1);
    let deliveries = [
        ("remapped", Delivery::Remapped),
        ("posted", Delivery::Posted { max_loop: 3 }),
        ("polled", Delivery::Polled),
    ];
    let loads = [("QD1", QD1), ("saturation", SAT), ("C1", C1)];
    let cfg = RtConfig::default();
    println!(
        "rt_bench: media {}, {} s x {reps} per case, {} host CPUs",
        cfg.media.describe(),
        secs,
        irqlab_rt::pin::allowed_cpus().len()
    );
    let mut samples: Vec<Vec<Figures>> = vec![Vec::new(); 9];
    for rep in 0..reps {
        for (li, (_, job)) in loads.iter().enumerate() {
            // Rotate the order each repetition so no delivery always runs first.
            for k in 0..deliveries.len() {
                let di = (k + rep) % deliveries.len();
                samples[li * 3 + di].push(measure(job, secs, deliveries[di].1)?);
            }
        }
    }
    let med: Vec<Figures> = samples
        .iter()
        .map(|s| Figures {
            iops: median(s.iter().map(|f| f.iops).collect()),
            cpu_ns_per_io: median(s.iter().map(|f| f.cpu_ns_per_io).collect()),
            clat_mean_ns: median(s.iter().map(|f| f.clat_mean_ns).collect()),
            notes_per_completion: median(s.iter().map(|f| f.notes_per_completion).collect()),
            wakeups_per_completion: median(s.iter().map(|f| f.wakeups_per_completion).collect()),
        })
        .collect();
    println!(
        "\n{:<11} {:<9} {:>10} {:>12} {:>12} {:>13} {:>13}",
        "load", "delivery", "IOPS", "CPU ns/IO", "clat mean", "notif/compl", "wakeups/compl"
    );
    for (li, (lname, _)) in loads.iter().enumerate() {
        for (di, (dname, _)) in deliveries.iter().enumerate() {
            let f = med[li * 3 + di];
            println!(
                "{:<11} {:<9} {:>10.0} {:>12.0} {:>10.1}us {:>13.3} {:>13.3}",
                lname,
                dname,
                f.iops,
                f.cpu_ns_per_io,
                f.clat_mean_ns / 1000.0,
                f.notes_per_completion,
                f.wakeups_per_completion
            );
        }
    }
    let (q_rem, q_post, q_poll) = (med[0], med[1], med[2]);
    let (s_rem, s_post, s_poll) = (med[3], med[4], med[5]);
    let (c_rem, c_post, c_poll) = (med[6], med[7], med[8]);
    let r = |a: f64, b: f64| if b == 0.0 { 0.0 } else { a / b };
    println!("\nratios (goal in brackets):");
    println!(
        "  saturation IOPS posted/polled     {:.3}  [>= 0.90]",
        r(s_post.iops, s_poll.iops)
    );
    println!(
        "  saturation IOPS posted/remapped   {:.3}",
        r(s_post.iops, s_rem.iops)
    );
    println!(
        "  QD1 CPU per I/O posted/polled     {:.3}  [far below 1]",
        r(q_post.cpu_ns_per_io, q_poll.cpu_ns_per_io)
    );
    println!(
        "  saturation CPU per I/O posted/polled {:.3}",
        r(s_post.cpu_ns_per_io, s_poll.cpu_ns_per_io)
    );
    println!(
        "  QD1 latency posted/remapped       {:.3}  [<= 1.10]",
        r(q_post.clat_mean_ns, q_rem.clat_mean_ns)
    );
    println!(
        "  QD1 latency polled/remapped       {:.3}",
        r(q_poll.clat_mean_ns, q_rem.clat_mean_ns)
    );
    println!(
        "  notifications per completion at saturation: remapped {:.3}, posted {:.3}",
        s_rem.notes_per_completion, s_post.notes_per_completion
    );
    println!(
        "  C1 notifications per completion: remapped {:.3}, posted {:.3} (posted/remapped {:.3})",
        c_rem.notes_per_completion,
        c_post.notes_per_completion,
        r(c_post.notes_per_completion, c_rem.notes_per_completion)
    );
    println!(
        "  C1 IOPS posted/remapped {:.3}, posted/polled {:.3}; CPU per I/O posted/remapped {:.3}",
        r(c_post.iops, c_rem.iops),
        r(c_post.iops, c_poll.iops),
        r(c_post.cpu_ns_per_io, c_rem.cpu_ns_per_io)
    );
    Ok(())
}
