//! `irqlab rt` watched while it runs: a monitor thread samples the runtime's live
//! counters and prints irqtop lines at wall-time intervals, or draws a progress bar on a
//! terminal for runs longer than a second; with irqtop the last, partial interval and the
//! run's /proc/interrupts table follow the run. The threads can also record what they
//! do for the tracers (see [`crate::rt_observers`]).

use crate::ObserveError;
use crate::irqtop::{IrqSnapshot, render_interval};
use crate::progress::Progress;
use irqlab_core::Policy;
use irqlab_fio::{JobSpec, RunPlan};
use irqlab_report::RunReport;
use irqlab_report::observe::Observer;
use irqlab_rt::{LiveCounters, LiveSnapshot, RtConfig};
use std::io::Write;
use std::ops::Range;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
use std::time::Duration;

/// Where the threads' records go after a run (`--trace`, `--timeline`).
pub struct Tracing<'a> {
    pub observer: &'a mut dyn Observer,
    /// The wall time the tracers look at (the threads record what it needs).
    pub window: Option<Range<u64>>,
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
) -> Result<RunReport, ObserveError> {
    let live = Arc::new(LiveCounters::new());
    cfg.live = Some(live.clone());
    let watch = Watch {
        irqtop_ns,
        total_ns: RunPlan::of(jobs).time_bound_ns,
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
        let printed = mon.join().map_err(|_| ObserveError::MonitorPanicked);
        (result, printed)
    });
    let report = result.map_err(ObserveError::Runtime)?;
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
        return Err(ObserveError::Print(e.to_string()));
    }
    out.write_all(table.as_bytes())
        .and_then(|()| out.flush())
        .map_err(|e| ObserveError::Print(e.to_string()))?;
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
}
