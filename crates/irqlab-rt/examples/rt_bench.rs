//! The runtime benchmark: remapped, posted, polled and hybrid delivery at queue depth 1,
//! at saturation, and in the C1 shape (eight controllers, eight vectors on one CPU
//! thread, where notifications are what the sender pays for) at QD16 and QD1 per
//! controller, then the hardirq, threaded and irq_poll handlers at QD1 and saturation. Measured in one invocation,
//! interleaved (the order rotates each repetition) so background load hits every case
//! alike; medians are printed as markdown tables, then ratios taken from them.
//!
//! `cargo run --release -p irqlab-rt --example rt_bench -- [SECS] [REPS]`
//! Each case runs SECS seconds (default 2), REPS times (default 3); a run in which the
//! host kept the spinning controller off its CPU for more than 10% of the time is run
//! again (up to 5 times), and rows whose runs never came clean say so.

use irqlab_core::{Delivery, HandlerStyle, Policy};
use irqlab_report::RunReport;
use irqlab_rt::{RtConfig, run};
use std::path::Path;

const QD1: &str = "[global]\nioengine=pvsync2\nfilename=/dev/nvme0n1\nrw=randread\nbs=4k\n\
                   direct=1\ntime_based\n[qd1]\n";
const SAT: &str = "[global]\nioengine=io_uring\nfilename=/dev/nvme0n1\nrw=randread\nbs=4k\n\
                   direct=1\niodepth=128\niodepth_batch_submit=16\n\
                   iodepth_batch_complete_min=1\ntime_based\n[sat]\n";
/// C1: eight controllers, one job each, all on one CPU thread (eight vectors on one CPU).
const C1: &str = "[global]\nioengine=io_uring\nrw=randread\nbs=4k\ndirect=1\niodepth=16\n\
                  iodepth_batch_submit=4\ntime_based\n\
                  [c0]\nfilename=/dev/nvme0n1\n[c1]\nfilename=/dev/nvme1n1\n\
                  [c2]\nfilename=/dev/nvme2n1\n[c3]\nfilename=/dev/nvme3n1\n\
                  [c4]\nfilename=/dev/nvme4n1\n[c5]\nfilename=/dev/nvme5n1\n\
                  [c6]\nfilename=/dev/nvme6n1\n[c7]\nfilename=/dev/nvme7n1\n";
/// C1 at queue depth 1: every completion raises a message, and the CPU thread halts
/// between them, so notifications (the senders' futex calls, the wake-ups) are the work.
const C1_QD1: &str = "[global]\nioengine=io_uring\nrw=randread\nbs=4k\ndirect=1\niodepth=1\n\
                      time_based\n\
                      [c0]\nfilename=/dev/nvme0n1\n[c1]\nfilename=/dev/nvme1n1\n\
                      [c2]\nfilename=/dev/nvme2n1\n[c3]\nfilename=/dev/nvme3n1\n\
                      [c4]\nfilename=/dev/nvme4n1\n[c5]\nfilename=/dev/nvme5n1\n\
                      [c6]\nfilename=/dev/nvme6n1\n[c7]\nfilename=/dev/nvme7n1\n";

/// What one run measured.
#[derive(Clone, Copy, Default)]
struct Figures {
    iops: f64,
    cpu_ns_per_io: f64,
    clat_mean_ns: f64,
    notes_per_completion: f64,
    wakeups_per_sec: f64,
    wakeups_per_completion: f64,
    ctx_per_io: f64,
    /// Share of the run the spinning controller thread was off its CPU.
    ctrl_off_cpu_pct: f64,
    /// Share of the run in ksoftirqd and in irq threads (summed over CPU threads).
    ksoftirqd_pct: f64,
    irq_thread_pct: f64,
}

fn extra(r: &RunReport, key: &str) -> f64 {
    r.extra
        .iter()
        .find(|(k, _)| k == key)
        .map_or(0.0, |(_, v)| *v)
}

fn measure(job: &str, secs: u64, policy: &Policy) -> Result<Figures, String> {
    // In [global], so that every job of the C1 shape gets it.
    let text = job.replacen("time_based\n", &format!("time_based\nruntime={secs}s\n"), 1);
    let jobs =
        irqlab_fio::parse_str(&text, Path::new("rt_bench.fio")).map_err(|e| e.to_string())?;
    let r = run(&jobs, policy, &RtConfig::default()).map_err(|e| e.to_string())?;
    let ios: u64 = r.jobs.iter().map(|j| j.read.total_ios).sum();
    // Several jobs (C1): IOPS add up, the mean latency is weighted by I/Os.
    let clat_sum: f64 = r
        .jobs
        .iter()
        .map(|j| j.read.clat.mean() * j.read.total_ios as f64)
        .sum();
    let m = r.measured.clone().unwrap_or_default();
    let per = |x: u64| if ios == 0 { 0.0 } else { x as f64 / ios as f64 };
    let share = |x: u64| 100.0 * x as f64 / r.duration_ns.max(1) as f64;
    Ok(Figures {
        iops: r.jobs.iter().map(|j| j.read.iops()).sum(),
        cpu_ns_per_io: extra(&r, "cpu_ns_per_io"),
        clat_mean_ns: if ios == 0 { 0.0 } else { clat_sum / ios as f64 },
        notes_per_completion: extra(&r, "notifications_per_completion"),
        wakeups_per_sec: m.wakeups as f64 * 1e9 / m.wall_ns.max(1) as f64,
        wakeups_per_completion: extra(&r, "wakeups_per_completion"),
        ctx_per_io: per(r.cpus.iter().map(|c| c.ctx_switches).sum()),
        ctrl_off_cpu_pct: extra(&r, "controller_off_cpu_pct"),
        ksoftirqd_pct: share(r.cpus.iter().map(|c| c.ksoftirqd_ns).sum()),
        irq_thread_pct: share(r.cpus.iter().map(|c| c.irq_thread_ns).sum()),
    })
}

/// A run whose spinning controller was off its CPU longer than this share of the run
/// measured the host (on this VM its hypervisor takes vCPUs away for milliseconds at a
/// time), not the delivery: it is run again, up to [`TRIES`] times, and the cleanest
/// run is kept.
const CLEAN_OFF_CPU_PCT: f64 = 10.0;
const TRIES: usize = 5;

/// One sample of a case: the first clean run, or the cleanest of [`TRIES`].
fn sample(c: &Case, secs: u64) -> Result<(Figures, bool), String> {
    let mut best: Option<Figures> = None;
    for _ in 0..TRIES {
        let f = measure(c.job, secs, &c.policy)?;
        if f.ctrl_off_cpu_pct <= CLEAN_OFF_CPU_PCT {
            return Ok((f, true));
        }
        if best.is_none_or(|b| f.ctrl_off_cpu_pct < b.ctrl_off_cpu_pct) {
            best = Some(f);
        }
    }
    Ok((best.unwrap_or_default(), false))
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn medians(s: &[Figures]) -> Figures {
    let m = |f: fn(&Figures) -> f64| median(s.iter().map(f).collect());
    Figures {
        iops: m(|f| f.iops),
        cpu_ns_per_io: m(|f| f.cpu_ns_per_io),
        clat_mean_ns: m(|f| f.clat_mean_ns),
        notes_per_completion: m(|f| f.notes_per_completion),
        wakeups_per_sec: m(|f| f.wakeups_per_sec),
        wakeups_per_completion: m(|f| f.wakeups_per_completion),
        ctx_per_io: m(|f| f.ctx_per_io),
        ctrl_off_cpu_pct: m(|f| f.ctrl_off_cpu_pct),
        ksoftirqd_pct: m(|f| f.ksoftirqd_pct),
        irq_thread_pct: m(|f| f.irq_thread_pct),
    }
}

/// One benchmark case: a load under a policy, with the labels of its table row.
struct Case {
    load: &'static str,
    job: &'static str,
    label: &'static str,
    policy: Policy,
}

fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "?".into())
}

fn main() -> Result<(), String> {
    let mut args = std::env::args().skip(1);
    let secs: u64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(2);
    let reps: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(3).max(1);
    let delivery = |d| Policy {
        delivery: d,
        ..Policy::default()
    };
    let handler = |h| Policy {
        handler: h,
        ..Policy::default()
    };
    let deliveries = [
        ("remapped", Delivery::Remapped),
        ("posted", Delivery::Posted { max_loop: 3 }),
        ("polled", Delivery::Polled),
        ("hybrid", Delivery::Hybrid),
    ];
    let handlers = [
        ("hardirq", HandlerStyle::Hardirq),
        ("threaded", HandlerStyle::Threaded),
        (
            "irq-poll",
            HandlerStyle::IrqPoll {
                budget: 256,
                weight: 64,
            },
        ),
    ];
    // Groups of cases whose order rotates together.
    let mut groups: Vec<Vec<Case>> = Vec::new();
    for (load, job) in [
        ("QD1", QD1),
        ("saturation", SAT),
        ("C1 (8x QD16)", C1),
        ("C1 (8x QD1)", C1_QD1),
    ] {
        groups.push(
            deliveries
                .iter()
                .map(|&(label, d)| Case {
                    load,
                    job,
                    label,
                    policy: delivery(d),
                })
                .collect(),
        );
    }
    for (load, job) in [("QD1", QD1), ("saturation", SAT)] {
        groups.push(
            handlers
                .iter()
                .map(|&(label, h)| Case {
                    load,
                    job,
                    label,
                    policy: handler(h),
                })
                .collect(),
        );
    }
    let cfg = RtConfig::default();
    println!(
        "rt_bench: media {}, {secs} s x {reps} per case, {} host CPUs, load average {}; \
         a run is repeated (up to {TRIES} times) while its controller was off-CPU over \
         {CLEAN_OFF_CPU_PCT}% of it",
        cfg.media.describe(),
        irqlab_rt::pin::allowed_cpus().len(),
        loadavg()
    );
    let mut samples: Vec<Vec<Vec<Figures>>> =
        groups.iter().map(|g| vec![Vec::new(); g.len()]).collect();
    let mut clean: Vec<Vec<usize>> = groups.iter().map(|g| vec![0; g.len()]).collect();
    for rep in 0..reps {
        for (gi, g) in groups.iter().enumerate() {
            for k in 0..g.len() {
                let ci = (k + rep) % g.len();
                let (f, ok) = sample(&g[ci], secs)?;
                samples[gi][ci].push(f);
                clean[gi][ci] += usize::from(ok);
            }
        }
    }
    let med: Vec<Vec<Figures>> = samples
        .iter()
        .map(|g| g.iter().map(|s| medians(s)).collect())
        .collect();
    // A case with runs that stayed unclean is marked in its row.
    let mark = |gi: usize, ci: usize| {
        if clean[gi][ci] == reps {
            String::new()
        } else {
            format!(" ({}/{reps} clean)", clean[gi][ci])
        }
    };
    println!("load average at the end: {}", loadavg());

    println!("\nDelivery (hardirq handler):\n");
    println!(
        "| load | delivery | IOPS | CPU ns/IO | clat mean | notif/compl | wake-ups/s | ctx/IO | controller off-CPU |"
    );
    println!("|---|---|---:|---:|---:|---:|---:|---:|---:|");
    for (gi, g) in groups.iter().enumerate().take(4) {
        for (ci, c) in g.iter().enumerate() {
            let f = med[gi][ci];
            println!(
                "| {} | {}{} | {:.0} | {:.0} | {:.1} µs | {:.3} | {:.0} | {:.2} | {:.0}% |",
                c.load,
                c.label,
                mark(gi, ci),
                f.iops,
                f.cpu_ns_per_io,
                f.clat_mean_ns / 1000.0,
                f.notes_per_completion,
                f.wakeups_per_sec,
                f.ctx_per_io,
                f.ctrl_off_cpu_pct
            );
        }
    }
    println!("\nHandlers (remapped delivery):\n");
    println!(
        "| load | handler | IOPS | CPU ns/IO | clat mean | wake-ups/compl | ctx/IO | irq thread | ksoftirqd | controller off-CPU |"
    );
    println!("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    for (gi, g) in groups.iter().enumerate().skip(4) {
        for (ci, c) in g.iter().enumerate() {
            let f = med[gi][ci];
            println!(
                "| {} | {}{} | {:.0} | {:.0} | {:.1} µs | {:.2} | {:.2} | {:.1}% | {:.1}% | {:.0}% |",
                c.load,
                c.label,
                mark(gi, ci),
                f.iops,
                f.cpu_ns_per_io,
                f.clat_mean_ns / 1000.0,
                f.wakeups_per_completion,
                f.ctx_per_io,
                f.irq_thread_pct,
                f.ksoftirqd_pct,
                f.ctrl_off_cpu_pct
            );
        }
    }
    let r = |a: f64, b: f64| if b == 0.0 { 0.0 } else { a / b };
    let (q, s) = (&med[0], &med[1]);
    let (hq, hs) = (&med[4], &med[5]);
    println!("\nRatios (of the medians):");
    for (name, c1) in [("C1 (8x QD16)", &med[2]), ("C1 (8x QD1)", &med[3])] {
        println!(
            "  {name} posted/remapped: notifications per completion {:.3}, IOPS {:.3}, CPU per I/O {:.3}, wake-ups/s {:.3}",
            r(c1[1].notes_per_completion, c1[0].notes_per_completion),
            r(c1[1].iops, c1[0].iops),
            r(c1[1].cpu_ns_per_io, c1[0].cpu_ns_per_io),
            r(c1[1].wakeups_per_sec, c1[0].wakeups_per_sec)
        );
    }
    println!(
        "  saturation posted/remapped: notifications per completion {:.3}, IOPS {:.3}",
        r(s[1].notes_per_completion, s[0].notes_per_completion),
        r(s[1].iops, s[0].iops)
    );
    println!(
        "  QD1 CPU per I/O: polled/remapped {:.3}, hybrid/polled {:.3}; QD1 latency posted/remapped {:.3}",
        r(q[2].cpu_ns_per_io, q[0].cpu_ns_per_io),
        r(q[3].cpu_ns_per_io, q[2].cpu_ns_per_io),
        r(q[1].clat_mean_ns, q[0].clat_mean_ns)
    );
    println!(
        "  threaded/hardirq: QD1 CPU per I/O {:.3}, ctx per I/O {:.3}; saturation CPU per I/O {:.3}, ctx per I/O {:.3}, IOPS {:.3}",
        r(hq[1].cpu_ns_per_io, hq[0].cpu_ns_per_io),
        r(hq[1].ctx_per_io, hq[0].ctx_per_io),
        r(hs[1].cpu_ns_per_io, hs[0].cpu_ns_per_io),
        r(hs[1].ctx_per_io, hs[0].ctx_per_io),
        r(hs[1].iops, hs[0].iops)
    );
    Ok(())
}
