//! The glue that lets several observers watch one simulation: the observer options of
//! `irqlab run` ([`ObserveArgs`]), the composite [`Observers`], and
//! [`simulate_with_observers`], which attaches what the options ask for and writes the
//! trace, irqtop lines and timeline picture when the run ends.

use crate::ObserveError;
use crate::irqtop::IrqTop;
use crate::progress::{self, SimProgress};
use crate::timeline::{TimelineObserver, parse_timeline_window, timeline_window};
use crate::trace::{TraceObserver, parse_window};
use clap::Args;
use irqlab_core::{Delivery, Policy};
use irqlab_fio::{JobSpec, RunPlan};
use irqlab_inputs::DeliveryArg;
use irqlab_report::RunReport;
use irqlab_sim::{Observer, Platform, SimOptions, SliceKind};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

/// Observer options of `irqlab run`: flatten into its arguments.
#[derive(Clone, Debug, Default, Args)]
pub struct ObserveArgs {
    /// Write a Perfetto timeline (Chrome trace-event JSON; open it in ui.perfetto.dev).
    #[arg(long, value_name = "FILE.json")]
    pub trace: Option<PathBuf>,
    /// Only trace what happens in START..END of simulated time, e.g. 0..2ms or
    /// 100us..300us (keeps the file small); the default is the whole run.
    #[arg(long, value_name = "START..END", value_parser = parse_window, requires = "trace")]
    pub trace_window: Option<(u64, u64)>,
    /// The most the --trace file may hold (fio's sizes: 1g, 200m; default 1g): past it the
    /// trace ends there, still valid JSON, and irqlab says so.
    #[arg(long, value_name = "SIZE", value_parser = parse_trace_size)]
    pub trace_max_size: Option<u64>,
    /// Print per-vector interrupt rates and PMN every SECONDS of simulated time, like
    /// irqtop, then the run's /proc/interrupts table.
    #[arg(long, value_name = "SECONDS", value_parser = parse_interval)]
    pub irqtop: Option<u64>,
    /// Draw a picture (PNG or SVG, by the extension) of a short window of the run: one
    /// lane per CPU with its usr, sys, hardirq, softirq, ksoftirqd and irq thread slices,
    /// CPU notifications as triangles (posted PMN and remapped in two colours) and MSI
    /// messages as ticks, with counts and the messages-per-notification ratio.
    #[arg(long, value_name = "FILE.png|FILE.svg")]
    pub timeline: Option<PathBuf>,
    /// The --timeline window START..END of simulated time, on the --trace-window clock
    /// (ramp_time included), e.g. 2ms..2050us; END left out means START+200us; at most
    /// 10ms. Default: the first 200 µs after the longest ramp_time (of the measured run).
    #[arg(long, value_name = "START..END", value_parser = parse_timeline_window,
          requires = "timeline")]
    pub timeline_window: Option<(u64, u64)>,
    /// Also simulate the same job with this delivery and stack its timeline under this
    /// run's in the --timeline picture (e.g. --delivery remapped --timeline-compare
    /// posted); the printed report is this run's.
    #[arg(long, value_enum, value_name = "DELIVERY", requires = "timeline")]
    pub timeline_compare: Option<DeliveryArg>,
    /// Simulate independent parts of the machine (drives that share no CPU, queue, root
    /// port or delivery unit) on up to N threads; the report is the same for every N.
    /// Default: the host's cores. Runs with --trace, --irqtop or --timeline use one.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u16).range(1..=1024))]
    pub threads: Option<u16>,
}

/// `--trace-max-size` when it is not given: 1 GiB.
pub const DEFAULT_TRACE_MAX: u64 = 1 << 30;

/// `--trace-max-size`: bytes with fio's size suffixes, at least 64 KiB (room for the
/// track names that close a trace).
pub fn parse_trace_size(s: &str) -> Result<u64, ObserveError> {
    match irqlab_fio::parse_size(s) {
        Ok(n) if n >= 64 << 10 => Ok(n),
        _ => Err(ObserveError::Option(format!(
            "'{s}': expected a size of at least 64k, e.g. 200m or 1g"
        ))),
    }
}

/// What to say when `--trace-max-size` cut a trace short, or None.
pub(crate) fn trace_cut_note(path: &Path, max: u64, dropped: (u64, Option<u64>)) -> Option<String> {
    let (n, at) = dropped;
    (n > 0).then(|| {
        format!(
            "{} reached --trace-max-size ({max} bytes) at {}: the trace ends there, valid; {n} later events were left out",
            path.display(),
            at.map_or_else(
                || "its start".to_string(),
                |ns| format!("{:.3} ms", ns as f64 / 1e6)
            )
        )
    })
}

/// `--irqtop` seconds (e.g. 0.001) as ns.
fn parse_interval(s: &str) -> Result<u64, ObserveError> {
    parse_seconds(s, 1e-6)
}

/// An --irqtop interval: a decimal number of seconds between `min_secs` and one hour,
/// returned in ns.
pub fn parse_seconds(s: &str, min_secs: f64) -> Result<u64, ObserveError> {
    let secs: f64 = s.trim().parse().map_err(|_| {
        ObserveError::Option(format!(
            "'{s}' is not a number of seconds (e.g. 0.001 for 1 ms)"
        ))
    })?;
    if !(secs.is_finite() && (min_secs..=3600.0).contains(&secs)) {
        return Err(ObserveError::Option(format!(
            "'{s}': the interval must be between {min_secs} and 3600 seconds"
        )));
    }
    Ok((secs * 1e9).round() as u64)
}

/// Every observer `irqlab run` may attach; absent ones cost a branch per event.
pub struct Observers<'a> {
    pub trace: Option<TraceObserver<BufWriter<std::fs::File>>>,
    pub irqtop: Option<IrqTop<&'a mut dyn Write>>,
    pub progress: Option<SimProgress>,
    pub timeline: Option<TimelineObserver>,
}

impl Observer for Observers<'_> {
    fn start(&mut self, vector_names: &[String], ncpus: usize) {
        if let Some(o) = &mut self.trace {
            o.start(vector_names, ncpus);
        }
        if let Some(o) = &mut self.irqtop {
            o.start(vector_names, ncpus);
        }
        if let Some(o) = &mut self.timeline {
            o.start(vector_names, ncpus);
        }
    }

    fn wants_counters(&self) -> bool {
        self.trace.is_some()
    }

    #[inline]
    fn slice(&mut self, now: u64, cpu: usize, kind: SliceKind) {
        if let Some(o) = &mut self.trace {
            o.slice(now, cpu, kind);
        }
        if let Some(o) = &mut self.irqtop {
            o.slice(now, cpu, kind);
        }
        if let Some(o) = &mut self.timeline {
            o.slice(now, cpu, kind);
        }
        if let Some(o) = &mut self.progress {
            o.slice(now, cpu, kind);
        }
    }

    #[inline]
    fn message(&mut self, now: u64, vector: usize) {
        if let Some(o) = &mut self.trace {
            o.message(now, vector);
        }
        if let Some(o) = &mut self.irqtop {
            o.message(now, vector);
        }
        if let Some(o) = &mut self.timeline {
            o.message(now, vector);
        }
        if let Some(o) = &mut self.progress {
            o.message(now, vector);
        }
    }

    #[inline]
    fn notification(&mut self, now: u64, cpu: usize, pmn: bool) {
        if let Some(o) = &mut self.trace {
            o.notification(now, cpu, pmn);
        }
        if let Some(o) = &mut self.irqtop {
            o.notification(now, cpu, pmn);
        }
        if let Some(o) = &mut self.timeline {
            o.notification(now, cpu, pmn);
        }
    }

    #[inline]
    fn handler(&mut self, now: u64, cpu: usize, vector: usize, cqes: u32) {
        if let Some(o) = &mut self.trace {
            o.handler(now, cpu, vector, cqes);
        }
        if let Some(o) = &mut self.irqtop {
            o.handler(now, cpu, vector, cqes);
        }
        if let Some(o) = &mut self.timeline {
            o.handler(now, cpu, vector, cqes);
        }
    }

    #[inline]
    fn counter(&mut self, now: u64, name: &str, index: usize, value: f64) {
        if let Some(o) = &mut self.trace {
            o.counter(now, name, index, value);
        }
        if let Some(o) = &mut self.irqtop {
            o.counter(now, name, index, value);
        }
    }

    fn window(&mut self, now: u64, open: bool) {
        if let Some(o) = &mut self.irqtop {
            o.window(now, open);
        }
    }

    #[inline]
    fn irq_counted(&mut self, now: u64, cpu: usize, vector: Option<usize>) {
        if let Some(o) = &mut self.irqtop {
            o.irq_counted(now, cpu, vector);
        }
    }
}

/// Simulates with the observers `observe` asks for, plus a progress bar of simulated
/// time on a terminal (not with `--irqtop`, whose lines already show progress).
/// irqtop lines go to `irqtop_out`; the trace file is complete when this returns.
pub fn simulate_with_observers(
    jobs: &[JobSpec],
    platform: &Platform,
    policy: &Policy,
    opts: &SimOptions,
    observe: &ObserveArgs,
    irqtop_out: &mut dyn Write,
) -> Result<RunReport, ObserveError> {
    let threads = observe.threads.map_or_else(
        || std::thread::available_parallelism().map_or(1, |n| n.get()),
        usize::from,
    );
    let watched = observe.trace.is_some() || observe.irqtop.is_some() || observe.timeline.is_some();
    let plan = RunPlan::of(jobs);
    let total = plan
        .time_bound_ns
        .filter(|_| observe.irqtop.is_none() && progress::drawn());
    // Unwatched, the simulator runs without an observer (every observer call compiles
    // away): no bar to draw, or parts side by side (a bar would need one clock across
    // them).
    if !watched
        && (total.is_none()
            || threads > 1 && irqlab_sim::independent_parts(jobs, platform, policy, opts)? > 1)
    {
        return Ok(irqlab_sim::simulate_parallel(
            jobs, platform, policy, opts, threads,
        )?);
    }
    let progress = total.map(|t| SimProgress::new(t, "simulating (ms)"));
    let trace = match &observe.trace {
        None => None,
        Some(path) => Some(create_trace(
            path,
            observe.trace_window,
            observe.trace_max_size.unwrap_or(DEFAULT_TRACE_MAX),
        )?),
    };
    let timeline = match &observe.timeline {
        None => None,
        Some(path) => {
            create_picture(path)?;
            let (a, b) = timeline_window(&plan, observe.timeline_window);
            Some(TimelineObserver::new(a, b))
        }
    };
    let mut obs = Observers {
        trace,
        irqtop: observe.irqtop.map(|ns| IrqTop::new(ns, irqtop_out)),
        progress,
        timeline,
    };
    let result = irqlab_sim::simulate_observed(jobs, platform, policy, opts, &mut obs);
    if let Some(p) = &obs.progress {
        p.finish();
    }
    // A run that fails leaves no partial trace or picture behind.
    let mut report = result.inspect_err(|_| {
        for path in [&observe.trace, &observe.timeline].into_iter().flatten() {
            let _ = std::fs::remove_file(path);
        }
    })?;
    if let (Some(t), Some(path)) = (obs.trace, &observe.trace) {
        let max = observe.trace_max_size.unwrap_or(DEFAULT_TRACE_MAX);
        if let Some(note) = trace_cut_note(path, max, t.dropped()) {
            eprintln!("irqlab: {note}");
            report.notes.push(("trace".to_string(), note));
        }
        t.finish(&report).map_err(|e| trace_write_error(path, e))?;
        if let Some((a, b)) = observe.trace_window {
            check_window("--trace-window", (a, b), report.end_ns, &report).inspect_err(|_| {
                let _ = std::fs::remove_file(path);
            })?;
        }
    }
    if let Some(top) = obs.irqtop {
        top.finish(&report)
            .map_err(|e| ObserveError::Print(e.to_string()))?;
    }
    if let (Some(t), Some(path)) = (obs.timeline, &observe.timeline) {
        let (a, b) = timeline_window(&plan, observe.timeline_window);
        check_window("--timeline-window", (a, b), report.end_ns, &report).inspect_err(|_| {
            let _ = std::fs::remove_file(path);
        })?;
        let mut pictures = vec![t.finish(timeline_title(&report.platform, policy))];
        if let Some(other) = observe.timeline_compare {
            let policy = Policy {
                delivery: compare_delivery(other, policy.delivery),
                ..*policy
            };
            let mut t = TimelineObserver::new(a, b);
            let r = irqlab_sim::simulate_observed(jobs, platform, &policy, opts, &mut t)
                .map_err(ObserveError::Compare)?;
            pictures.push(t.finish(timeline_title(&r.platform, &policy)));
        }
        irqlab_plot::timeline::write_stacked(&pictures, path).map_err(ObserveError::Plot)?;
    }
    Ok(report)
}

/// A window that starts after the run ended (at `ended_ns` on the window's clock) holds
/// nothing: an error, not an empty file. A run stopped by Ctrl-C is reported as far as it
/// got, its files with it.
pub(crate) fn check_window(
    flag: &str,
    (start, end): (u64, u64),
    ended_ns: u64,
    report: &RunReport,
) -> Result<(), ObserveError> {
    // As the options write times: whole µs at least.
    let ended_ns = ended_ns.div_ceil(1_000).saturating_mul(1_000);
    if start >= ended_ns && !report.flag(irqlab_report::EXTRA_INTERRUPTED) {
        return Err(ObserveError::Option(format!(
            "{flag} {}..{} starts after the run ended at {}: nothing happened in it; expected a window within 0..{}",
            ns_text(start),
            ns_text(end),
            ns_text(ended_ns),
            ns_text(ended_ns)
        )));
    }
    Ok(())
}

/// ns as the window options write them: "1500us", "2ms".
fn ns_text(ns: u64) -> String {
    if ns.is_multiple_of(1_000_000) {
        format!("{}ms", ns / 1_000_000)
    } else if ns.is_multiple_of(1_000) {
        format!("{}us", ns / 1_000)
    } else {
        format!("{ns}ns")
    }
}

/// The trace file `--trace` names, created (so a bad path fails before the run), with
/// the events of `window` (ns) or of the whole run.
pub(crate) fn create_trace(
    path: &Path,
    window: Option<(u64, u64)>,
    max_bytes: u64,
) -> Result<TraceObserver<BufWriter<std::fs::File>>, ObserveError> {
    let file = std::fs::File::create(path).map_err(|e| ObserveError::Create {
        path: path.to_path_buf(),
        what: "trace",
        message: irqlab_fio::input::io_reason(&e),
    })?;
    TraceObserver::new(BufWriter::new(file), window.map(|(a, b)| a..b))
        .map(|t| t.with_max_bytes(max_bytes))
        .map_err(|e| trace_write_error(path, e))
}

pub(crate) fn trace_write_error(path: &Path, e: std::io::Error) -> ObserveError {
    ObserveError::File {
        path: path.to_path_buf(),
        what: "trace",
        message: e.to_string(),
    }
}

/// The `--timeline` picture, named and created before the run, so a bad name or
/// directory does not cost a run.
pub(crate) fn create_picture(path: &Path) -> Result<(), ObserveError> {
    check_timeline_name(path)?;
    std::fs::File::create(path)
        .map(drop)
        .map_err(|e| ObserveError::Create {
            path: path.to_path_buf(),
            what: "picture",
            message: irqlab_fio::input::io_reason(&e),
        })
}

/// `--timeline` must name a picture format before the run starts.
fn check_timeline_name(path: &Path) -> Result<(), ObserveError> {
    match irqlab_plot::timeline::image_format(path) {
        Some(_) => Ok(()),
        None => Err(ObserveError::TimelineName(path.to_path_buf())),
    }
}

/// The delivery `--timeline-compare` asks for; posted keeps this run's max_loop when it
/// has one, else the kernel's MAX_POSTED_MSI_COALESCING_LOOP (arch/x86/kernel/irq.c: 3).
fn compare_delivery(arg: DeliveryArg, this: Delivery) -> Delivery {
    match arg {
        DeliveryArg::Remapped => Delivery::Remapped,
        DeliveryArg::Posted => match this {
            Delivery::Posted { max_loop } => Delivery::Posted { max_loop },
            _ => Delivery::Posted { max_loop: 3 },
        },
        DeliveryArg::Polled => Delivery::Polled,
        DeliveryArg::Hybrid => Delivery::Hybrid,
    }
}

/// "example: delivery=posted max_loop=3", plus the choices that differ from the stock
/// kernel's.
pub(crate) fn timeline_title(platform: &str, policy: &Policy) -> String {
    let stock = Policy::default().describe();
    let parts: Vec<String> = policy
        .describe()
        .into_iter()
        .filter(|(k, v)| {
            k == "delivery" || k == "max_loop" || !stock.iter().any(|(sk, sv)| sk == k && sv == v)
        })
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    format!("{platform}: {}", parts.join(" "))
}
