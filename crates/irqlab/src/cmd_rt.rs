//! `irqlab rt`: the same fio job on real threads on this host, with real wake-ups,
//! watched by irqlab-observe's monitor (`--irqtop` lines at wall-time intervals, or a
//! progress bar on a terminal for runs longer than a second) and traced by its tracers
//! (`--trace`, `--timeline`).

use crate::RunEnd;
use crate::output::{OutputArgs, OutputFormat, emit};
use clap::Args;
use irqlab_inputs::{EventArgs, PolicyArgs, ShapeArgs};
use irqlab_observe::{ObserveError, RtObserveArgs, dropped_events_warning, run_with_observers};
use irqlab_rt::{Media, MediaModel, RtConfig};
use std::path::PathBuf;

#[derive(Debug, Args)]
pub struct RtArgs {
    /// The fio job file. `filename=/dev/nvmeXn1` names emulated controller X; other names
    /// get the next free controller numbers in the order they appear.
    pub job: PathBuf,
    #[command(flatten)]
    pub policy: PolicyArgs,
    #[command(flatten)]
    pub shape: ShapeArgs,
    #[command(flatten)]
    pub events: EventArgs,
    /// Threads emulating CPUs: each receives interrupts and runs the job clones placed on it
    /// (1 to 256; with --controllers at most 8 threads per host CPU).
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=256))]
    pub cpu_threads: u16,
    /// Threads running the emulated controllers (controller c on thread c % N; 1 to 256).
    #[arg(long = "controllers", default_value_t = 1, value_parser = clap::value_parser!(u16).range(1..=256))]
    pub controller_threads: u16,
    /// Pin threads to host CPUs: "on" (CPU threads first, then controllers) or "off".
    #[arg(long, default_value = "on", value_parser = ["on", "off"])]
    pub pin: String,
    /// What serves the commands: "model" (the latency/rate model below) or "file:PATH"
    /// (real reads and writes through io_uring, O_DIRECT where the filesystem allows).
    #[arg(long, default_value = "model")]
    pub media: String,
    /// Size of the file `--media file:PATH` creates (and fills once) when PATH does not
    /// exist, with fio's suffixes, e.g. 64m, 1g or 1t; the filesystem must have the room.
    #[arg(long, default_value = "64m", value_parser = parse_size)]
    pub media_size: u64,
    /// Model media: service latency of one command, in µs (0 to 1000000, one second).
    #[arg(long, default_value_t = 10.0, value_parser = parse_latency_us)]
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

/// `--media-size`: bytes with fio's size suffixes (k, m, g, t, p: powers of 1024).
fn parse_size(s: &str) -> Result<u64, String> {
    irqlab_fio::parse_size(s)
        .ok()
        .filter(|&n| n > 0)
        .ok_or_else(|| format!("'{s}': expected a size such as 64m, 1g, 1t or 1048576"))
}

/// Threads per host CPU the runtime may start: spinning controllers and CPU threads past
/// this preempt each other until the run measures only the host's scheduler (measured on
/// 2 CPUs: 8+8 threads ran a 0.1 s job in 0.23 s, 64+64 in 12 s; issue 12: 256+256, 366 s).
const THREADS_PER_HOST_CPU: usize = 8;

/// The longest model media latency: a command of more than a second is no device irqlab
/// models, and the runtime stops a run where nothing completes for 10 s.
const MAX_MEDIA_LATENCY_US: f64 = 1_000_000.0;

/// `--media-latency-us`: 0 to [`MAX_MEDIA_LATENCY_US`], refused as the user wrote it.
fn parse_latency_us(s: &str) -> Result<f64, String> {
    s.trim()
        .parse::<f64>()
        .ok()
        .filter(|us| us.is_finite() && (0.0..=MAX_MEDIA_LATENCY_US).contains(us))
        .ok_or_else(|| "expected 0 to 1000000 µs (a command of at most a second)".to_string())
}

/// Checks what the runtime's own options ask of this host before any thread starts.
fn check_host(args: &RtArgs) -> Result<(), String> {
    let host = std::thread::available_parallelism().map_or(1, |n| n.get());
    let threads = usize::from(args.cpu_threads) + usize::from(args.controller_threads);
    if threads > THREADS_PER_HOST_CPU * host {
        return Err(format!(
            "--cpu-threads {} --controllers {}: {threads} spinning threads on this host's {host} CPU(s); at most {} ({THREADS_PER_HOST_CPU} per CPU), or the run measures the host's scheduler rather than the mechanism",
            args.cpu_threads,
            args.controller_threads,
            THREADS_PER_HOST_CPU * host
        ));
    }
    if let Some(path) = args.media.strip_prefix("file:")
        && !path.is_empty()
        && !std::path::Path::new(path).exists()
    {
        check_room(std::path::Path::new(path), args.media_size)?;
    }
    Ok(())
}

/// The filesystem that will hold a new `--media file:PATH` has `bytes` free for it.
fn check_room(path: &std::path::Path, bytes: u64) -> Result<(), String> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => std::path::Path::new("."),
    };
    let st = rustix::fs::statvfs(dir).map_err(|e| {
        format!(
            "--media file:{}: cannot inspect {}: {e}",
            path.display(),
            dir.display()
        )
    })?;
    let free = st.f_bavail.saturating_mul(st.f_frsize);
    if bytes > free {
        return Err(format!(
            "--media file:{}: --media-size {bytes} bytes does not fit: the filesystem of {} has {free} bytes free",
            path.display(),
            dir.display()
        ));
    }
    Ok(())
}

/// `--irqtop` seconds (e.g. 0.5) as ns.
/// Wall-time intervals shorter than 1 ms would measure the monitor thread, not the run.
fn parse_interval(s: &str) -> Result<u64, ObserveError> {
    irqlab_observe::parse_seconds(s, 1e-3)
}

pub fn main(args: RtArgs) -> Result<RunEnd, Box<dyn std::error::Error>> {
    args.output.discard_on_error(run(&args))
}

fn run(args: &RtArgs) -> Result<RunEnd, Box<dyn std::error::Error>> {
    let policy = args.policy.checked_policy()?;
    irqlab_inputs::policy::event_contradictions(&args.policy, &args.events)?;
    let ncpus = usize::from(args.cpu_threads);
    let jobs = irqlab_inputs::JobSource::Path(args.job.clone()).jobs_for(ncpus)?;
    let controllers = irqlab_rt::topology::controller_names(&jobs);
    let shaped = irqlab_inputs::shape_jobs(
        jobs,
        &controllers,
        &args.shape.shape(),
        ncpus,
        "the emulated CPUs, --cpu-threads",
    )?;
    let jobs = shaped.jobs;
    check_host(args)?;
    args.output.create()?;
    let model = MediaModel::new(
        (args.media_latency_us * 1000.0).round() as u64,
        args.media_iops,
    )?;
    let files: Vec<&std::path::Path> = [
        &args.output.output,
        &args.observe.trace,
        &args.observe.timeline,
    ]
    .into_iter()
    .flatten()
    .map(PathBuf::as_path)
    .collect();
    let signals = crate::signals::Stop::install(&files)?;
    let stop = signals.flag();
    let cfg = RtConfig {
        controller_threads: usize::from(args.controller_threads),
        cpu_threads: usize::from(args.cpu_threads),
        pin: args.pin == "on",
        media: Media::parse(&args.media, model)?,
        seed: args.seed,
        lazy_wake: args.lazy_wake,
        media_size: args.media_size,
        stop: stop.clone(),
        events: args.events.events.clone(),
        ..RtConfig::default()
    };
    // irqtop lines must not end up inside a JSON report on stdout.
    let json_on_stdout = args.output.output.is_none() && args.output.format != OutputFormat::Normal;
    // A media file this run creates is scratch: a failed run leaves none behind.
    let created = match &cfg.media {
        Media::File(p) if !p.exists() => Some(p.clone()),
        _ => None,
    };
    let mut out: Box<dyn std::io::Write + Send> = if json_on_stdout {
        Box::new(std::io::stderr())
    } else {
        Box::new(crate::stdout::Stdout)
    };
    let mut report =
        match run_with_observers(&jobs, &policy, cfg, args.irqtop, &args.observe, &mut out) {
            Ok(r) => r,
            Err(e) => {
                if let Some(p) = &created {
                    let _ = std::fs::remove_file(p);
                }
                // A signal before any I/O ran (while the media file was being filled).
                if stop.is_set() {
                    eprintln!("irqlab: {e}");
                    return Ok(RunEnd::Interrupted(
                        signals.signal().unwrap_or(signal_hook::consts::SIGINT),
                    ));
                }
                return Err(e.into());
            }
        };
    report.notes.extend(shaped.notes);
    let interrupted = report.flag(irqlab_report::EXTRA_INTERRUPTED);
    let sig = signals.signal().unwrap_or(signal_hook::consts::SIGINT);
    if interrupted && sig != signal_hook::consts::SIGINT {
        report.notes.push((
            irqlab_report::text::NOTE_STOPPED_BY.into(),
            crate::signals::name(sig).into(),
        ));
    }
    if let Some(warning) = dropped_events_warning(&report) {
        eprintln!("irqlab: {warning}");
    }
    emit(&report, &args.output)?;
    crate::signals::files_done();
    if interrupted {
        let wall_ms = report.measured.as_ref().map_or(0, |m| m.wall_ns) as f64 / 1e6;
        eprintln!(
            "irqlab: interrupted ({}) at {wall_ms:.3} ms of wall time: the report covers the run up to then",
            crate::signals::name(sig)
        );
        return Ok(RunEnd::Interrupted(sig));
    }
    Ok(RunEnd::Complete)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_intervals_parse() {
        assert_eq!(parse_size("64m"), Ok(64 << 20));
        assert_eq!(parse_size("1G"), Ok(1 << 30));
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size("1p"), Ok(1 << 50));
        assert_eq!(parse_size("2t"), Ok(2 << 40));
        assert!(parse_size("0").is_err());
        assert_eq!(parse_latency_us("10"), Ok(10.0));
        assert_eq!(parse_latency_us("1000000"), Ok(1e6));
        for bad in ["18446744073709551", "1000000.5", "NaN", "inf", "-1", "x"] {
            assert!(parse_latency_us(bad).is_err(), "{bad}");
        }
        assert!(parse_size("lots").is_err());
        assert_eq!(parse_interval("0.5").ok(), Some(500_000_000));
        assert!(parse_interval("0").is_err());
    }
}
