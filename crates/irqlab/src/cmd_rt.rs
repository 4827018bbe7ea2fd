//! `irqlab rt`: the same fio job on real threads on this host, with real wake-ups.
//! A monitor thread samples the run's live counters: `--irqtop` lines at wall-time
//! intervals, or a progress bar on a terminal for runs longer than a second.

use crate::irqtop::{IrqSnapshot, render_interval};
use crate::output::{OutputArgs, OutputFormat, emit};
use crate::policy_args::PolicyArgs;
use crate::progress::{Progress, sim_total_ns};
use crate::rt_observe::RtObserveArgs;
use clap::Args;
use irqlab_core::Policy;
use irqlab_fio::JobSpec;
use irqlab_report::RunReport;
use irqlab_report::observe::Observer;
use irqlab_rt::{LiveCounters, LiveSnapshot, Media, MediaModel, RtConfig};
use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::time::Duration;

#[derive(Debug, Args)]
pub struct RtArgs {
    /// The fio job file. `filename=/dev/nvmeXn1` names emulated controller X; other names
    /// get the next free controller numbers in the order they appear.
    pub job: PathBuf,
    #[command(flatten)]
    pub policy: PolicyArgs,
    /// Threads emulating CPUs: each receives interrupts and runs the job clones placed on it.
    #[arg(long, default_value_t = 1)]
    pub cpu_threads: usize,
    /// Threads running the emulated controllers (controller c on thread c % N).
    #[arg(long = "controllers", default_value_t = 1)]
    pub controller_threads: usize,
    /// Pin threads to host CPUs: "on" (CPU threads first, then controllers) or "off".
    #[arg(long, default_value = "on", value_parser = ["on", "off"])]
    pub pin: String,
    /// What serves the commands: "model" (the latency/rate model below) or "file:PATH"
    /// (real reads and writes through io_uring, O_DIRECT where the filesystem allows).
    #[arg(long, default_value = "model")]
    pub media: String,
    /// Size of the file `--media file:PATH` creates (and fills once) when PATH does not
    /// exist, e.g. 64m or 1g.
    #[arg(long, default_value = "64m", value_parser = parse_size)]
    pub media_size: u64,
    /// Model media: service latency of one command, in µs.
    #[arg(long, default_value_t = 10.0)]
    pub media_latency_us: f64,
    /// Model media: commands the controller can start per second.
    #[arg(long, default_value_t = 500_000)]
    pub media_iops: u64,
    /// Skip the futex call of a notification when the CPU thread is running (by default
    /// every notification is a futex wake, as every interrupt message costs the sender).
    #[arg(long)]
    pub lazy_wake: bool,
    /// Seed of the offset and read/write draws.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Print per-vector interrupt rates and PMN every SECONDS of wall time, like irqtop,
    /// then the run's /proc/interrupts table (to stderr when a JSON report goes to stdout).
    #[arg(long, value_name = "SECONDS", value_parser = parse_interval)]
    pub irqtop: Option<u64>,
    #[command(flatten)]
    pub observe: RtObserveArgs,
    #[command(flatten)]
    pub output: OutputArgs,
}

/// `--media-size`: bytes with an optional k/m/g suffix (powers of 1024).
fn parse_size(s: &str) -> Result<u64, String> {
    let t = s.trim().to_ascii_lowercase();
    let (digits, mult) = match t.strip_suffix(['k', 'm', 'g']) {
        Some(d) if t.ends_with('k') => (d, 1u64 << 10),
        Some(d) if t.ends_with('m') => (d, 1 << 20),
        Some(d) => (d, 1 << 30),
        None => (t.as_str(), 1),
    };
    digits
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(mult))
        .filter(|&n| n > 0)
        .ok_or_else(|| format!("'{s}': expected a size such as 64m, 1g or 1048576"))
}

/// `--irqtop` seconds (e.g. 0.5) as ns.
/// Wall-time intervals shorter than 1 ms would measure the monitor thread, not the run.
fn parse_interval(s: &str) -> Result<u64, String> {
    crate::irqtop::parse_seconds(s, 1e-3)
}

pub fn main(args: RtArgs) -> Result<(), String> {
    let jobs = irqlab_fio::parse_file(&args.job).map_err(|e| e.to_string())?;
    if !(args.media_latency_us.is_finite() && args.media_latency_us >= 0.0) {
        return Err(format!(
            "--media-latency-us {}: expected a non-negative number of µs",
            args.media_latency_us
        ));
    }
    let model = MediaModel::new(
        (args.media_latency_us * 1000.0).round() as u64,
        args.media_iops,
    )?;
    let cfg = RtConfig {
        controller_threads: args.controller_threads,
        cpu_threads: args.cpu_threads,
        pin: args.pin == "on",
        media: Media::parse(&args.media, model)?,
        seed: args.seed,
        lazy_wake: args.lazy_wake,
        media_size: args.media_size,
        ..RtConfig::default()
    };
    let policy = args.policy.policy();
    let mut observers = if args.observe.wanted() {
        Some(args.observe.observers(&jobs)?)
    } else {
        None
    };
    let tracing = observers.as_mut().map(|o| Tracing {
        observer: o,
        window: args.observe.record_window(&jobs),
    });
    // irqtop lines must not end up inside a JSON report on stdout.
    let json_on_stdout = args.output.output.is_none() && args.output.format != OutputFormat::Normal;
    let report = if json_on_stdout {
        run_watched(
            &jobs,
            &policy,
            cfg,
            args.irqtop,
            &mut std::io::stderr(),
            tracing,
        )?
    } else {
        run_watched(
            &jobs,
            &policy,
            cfg,
            args.irqtop,
            &mut std::io::stdout(),
            tracing,
        )?
    };
    if let Some(o) = observers {
        args.observe.finish(o, &report, &policy)?;
    }
    emit(&report, &args.output)
}

/// Where the threads' records go after a run (`--trace`, `--timeline`).
pub struct Tracing<'a> {
    pub observer: &'a mut dyn Observer,
    /// The wall time the tracers look at (the threads record what it needs).
    pub window: Option<std::ops::Range<u64>>,
}

/// The live counts as irqtop's engine-neutral snapshot.
fn irq_snapshot(s: &LiveSnapshot) -> IrqSnapshot {
    IrqSnapshot {
        at_ns: s.at_ns,
        vectors: s.vectors.clone(),
        pmn: s.pmn.clone(),
    }
}

/// How the monitor shows a run.
struct Watch {
    irqtop_ns: Option<u64>,
    /// Wall time the run lasts when every job is time-bounded.
    total_ns: Option<u64>,
}

/// What the monitor thread printed up to when it stopped.
struct Printed {
    prev: IrqSnapshot,
    error: Option<std::io::Error>,
}

/// Progress bars only for runs that last more than about this long.
const PROGRESS_AFTER_NS: u64 = 1_000_000_000;

/// Samples `live` until `done`: irqtop lines to `out` every interval, or a progress bar.
fn monitor(live: &LiveCounters, w: &Watch, out: &mut dyn Write, done: &AtomicBool) -> Printed {
    let mut printed = Printed {
        prev: IrqSnapshot::default(),
        error: None,
    };
    let mut names: Vec<String> = Vec::new();
    let mut bar: Option<Progress> = None;
    let mut next_ns = w.irqtop_ns.unwrap_or(u64::MAX);
    while !done.load(SeqCst) {
        let Some(snap) = live.snapshot() else {
            std::thread::park_timeout(Duration::from_millis(1));
            continue;
        };
        if let Some(iv) = w.irqtop_ns {
            if names.is_empty() {
                names = live.names().unwrap_or_default();
            }
            if snap.at_ns >= next_ns {
                let cur = irq_snapshot(&snap);
                let text = render_interval(&names, &printed.prev, &cur);
                if printed.error.is_none()
                    && let Err(e) = out.write_all(text.as_bytes()).and_then(|()| out.flush())
                {
                    printed.error = Some(e);
                }
                printed.prev = cur;
                next_ns = (snap.at_ns / iv + 1) * iv;
            }
        } else {
            // A bar by wall time when the end is known, else by I/Os once past a second.
            let len_pos = match (w.total_ns, live.expected_ios()) {
                (Some(t), _) if t >= PROGRESS_AFTER_NS => {
                    Some((t / 1_000_000, snap.at_ns / 1_000_000))
                }
                (None, Some(n)) if snap.at_ns >= PROGRESS_AFTER_NS => Some((n, snap.completions)),
                _ => None,
            };
            if let Some((len, pos)) = len_pos {
                let unit = if w.total_ns.is_some() {
                    "running (ms)"
                } else {
                    "running (I/Os)"
                };
                bar.get_or_insert_with(|| Progress::new(len, unit))
                    .set_position(pos.min(len));
            }
        }
        let wait_ns = next_ns.saturating_sub(snap.at_ns).min(100_000_000);
        std::thread::park_timeout(Duration::from_nanos(wait_ns.max(200_000)));
    }
    if let Some(b) = bar {
        b.finish();
    }
    printed
}

/// Runs on real threads while a monitor thread prints `--irqtop` lines (interval in ns)
/// to `out` or draws a progress bar; with `--irqtop` the last, partial interval and the
/// run's /proc/interrupts table follow the run. With `tracing`, the threads record what
/// they do and the observer sees it after the run.
pub fn run_watched(
    jobs: &[JobSpec],
    policy: &Policy,
    mut cfg: RtConfig,
    irqtop_ns: Option<u64>,
    out: &mut (dyn Write + Send),
    tracing: Option<Tracing<'_>>,
) -> Result<RunReport, String> {
    let live = Arc::new(LiveCounters::new());
    cfg.live = Some(live.clone());
    let watch = Watch {
        irqtop_ns,
        total_ns: sim_total_ns(jobs),
    };
    let done = AtomicBool::new(false);
    let (result, printed) = std::thread::scope(|s| {
        let mon = s.spawn(|| monitor(&live, &watch, &mut *out, &done));
        let result = match tracing {
            Some(t) => irqlab_rt::run_observed(jobs, policy, &cfg, t.window, t.observer),
            None => irqlab_rt::run(jobs, policy, &cfg),
        };
        done.store(true, SeqCst);
        mon.thread().unpark();
        let printed = mon
            .join()
            .map_err(|_| "the monitor thread panicked".to_string());
        (result, printed)
    });
    let report = result?;
    let mut printed = printed?;
    if irqtop_ns.is_none() {
        return Ok(report);
    }
    // The run is over: the final counts are the report's, at the end of the run.
    let names = live.names().unwrap_or_default();
    if let Some(last) = live.snapshot() {
        let cur = irq_snapshot(&last);
        if cur != printed.prev {
            let text = render_interval(&names, &printed.prev, &cur);
            if printed.error.is_none()
                && let Err(e) = out.write_all(text.as_bytes())
            {
                printed.error = Some(e);
            }
        }
    }
    let wall_ms = report.measured.as_ref().map_or(0, |m| m.wall_ns) as f64 / 1e6;
    let table = format!(
        "/proc/interrupts delta over the run ({wall_ms:.3} ms of wall time):\n{}",
        irqlab_report::proc_interrupts::render(&report)
    );
    if let Some(e) = printed.error {
        return Err(format!("cannot print irqtop lines: {e}"));
    }
    out.write_all(table.as_bytes())
        .and_then(|()| out.flush())
        .map_err(|e| format!("cannot print irqtop lines: {e}"))?;
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;
    use irqlab_core::Delivery;
    use irqlab_report::proc_interrupts::FIRST_IRQ;
    use std::collections::BTreeMap;

    /// DELTA per row (IRQ number or PMN) summed over every printed interval.
    fn sum_printed(text: &str) -> (BTreeMap<String, u64>, usize) {
        let mut sums = BTreeMap::new();
        let mut intervals = 0;
        for line in text.lines() {
            if line.starts_with("/proc/interrupts") {
                break;
            }
            let cols: Vec<&str> = line.split_whitespace().collect();
            match cols.first() {
                Some(&"irqtop") => intervals += 1,
                Some(&"IRQ") | None => {}
                Some(row) => {
                    *sums.entry(row.to_string()).or_insert(0) += cols[2].parse::<u64>().unwrap()
                }
            }
        }
        (sums, intervals)
    }

    #[test]
    fn interval_deltas_add_up_to_the_report() {
        let jobs = irqlab_fio::parse_str(
            "[global]\nioengine=libaio\nrw=randread\nbs=4k\niodepth=4\ntime_based\n\
             runtime=150ms\n[a]\nfilename=/dev/nvme0n1\n[b]\nfilename=/dev/nvme1n1\n",
            "t.fio".as_ref(),
        )
        .unwrap();
        for delivery in [Delivery::Remapped, Delivery::Posted { max_loop: 3 }] {
            let policy = Policy {
                delivery,
                ..Policy::default()
            };
            let cfg = RtConfig {
                pin: false,
                ..RtConfig::default()
            };
            let mut out = Vec::new();
            let report =
                run_watched(&jobs, &policy, cfg, Some(20_000_000), &mut out, None).unwrap();
            let text = String::from_utf8(out).unwrap();
            let (sums, intervals) = sum_printed(&text);
            assert!(intervals >= 3, "{text}");
            assert!(
                text.contains("/proc/interrupts delta over the run"),
                "{text}"
            );
            for (v, vr) in report.vectors.iter().enumerate() {
                let printed = sums.get(&(FIRST_IRQ + v).to_string()).copied().unwrap_or(0);
                assert_eq!(
                    printed,
                    vr.handled(),
                    "{} under {delivery:?}:\n{text}",
                    vr.name
                );
                assert!(printed > 0, "{}", vr.name);
                assert!(text.contains(&vr.name), "names shown: {text}");
            }
            let pmn: u64 = report.cpus.iter().map(|c| c.pmn).sum();
            assert_eq!(sums.get("PMN").copied().unwrap_or(0), pmn);
            assert_eq!(pmn > 0, matches!(delivery, Delivery::Posted { .. }));
        }
    }

    #[test]
    fn sizes_and_intervals_parse() {
        assert_eq!(parse_size("64m"), Ok(64 << 20));
        assert_eq!(parse_size("1G"), Ok(1 << 30));
        assert_eq!(parse_size("4096"), Ok(4096));
        assert!(parse_size("0").is_err());
        assert!(parse_size("lots").is_err());
        assert_eq!(parse_interval("0.5"), Ok(500_000_000));
        assert!(parse_interval("0").is_err());
    }
}
