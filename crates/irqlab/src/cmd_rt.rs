//! `irqlab rt`: the same fio job on real threads on this host, with real wake-ups,
//! watched by irqlab-observe's monitor (`--irqtop` lines at wall-time intervals, or a
//! progress bar on a terminal for runs longer than a second) and traced by its tracers
//! (`--trace`, `--timeline`).

use crate::output::{OutputArgs, OutputFormat, emit};
use clap::Args;
use irqlab_inputs::PolicyArgs;
use irqlab_observe::{ObserveError, RtObserveArgs, dropped_events_warning, run_with_observers};
use irqlab_rt::{Media, MediaModel, RtConfig, StopFlag};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

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

/// How a run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunEnd {
    Complete,
    /// Ctrl-C stopped it; the report so far was printed.
    Interrupted,
}

/// SIGINT sets the returned flag, which the CPU threads check between job steps (the
/// jobs then stop issuing and reap what is in flight); a second SIGINT ends the process
/// at once (exit 130), as an impatient user expects.
fn stop_on_ctrl_c() -> Result<StopFlag, String> {
    use signal_hook::consts::SIGINT;
    let flag = Arc::new(AtomicBool::new(false));
    signal_hook::flag::register_conditional_shutdown(SIGINT, 130, Arc::clone(&flag))
        .and_then(|_| signal_hook::flag::register(SIGINT, Arc::clone(&flag)))
        .map_err(|e| format!("cannot handle Ctrl-C: {e}"))?;
    Ok(StopFlag::new(flag))
}

/// `--irqtop` seconds (e.g. 0.5) as ns.
/// Wall-time intervals shorter than 1 ms would measure the monitor thread, not the run.
fn parse_interval(s: &str) -> Result<u64, ObserveError> {
    irqlab_observe::parse_seconds(s, 1e-3)
}

pub fn main(args: RtArgs) -> Result<RunEnd, Box<dyn std::error::Error>> {
    let jobs = irqlab_inputs::JobSource::Path(args.job.clone()).jobs()?;
    if !(args.media_latency_us.is_finite() && args.media_latency_us >= 0.0) {
        return Err(format!(
            "--media-latency-us {}: expected a non-negative number of µs",
            args.media_latency_us
        )
        .into());
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
        stop: stop_on_ctrl_c()?,
        ..RtConfig::default()
    };
    let policy = args.policy.policy();
    // irqtop lines must not end up inside a JSON report on stdout.
    let json_on_stdout = args.output.output.is_none() && args.output.format != OutputFormat::Normal;
    let mut out: Box<dyn std::io::Write + Send> = if json_on_stdout {
        Box::new(std::io::stderr())
    } else {
        Box::new(std::io::stdout())
    };
    let report = run_with_observers(&jobs, &policy, cfg, args.irqtop, &args.observe, &mut out)?;
    if let Some(warning) = dropped_events_warning(&report) {
        eprintln!("irqlab: {warning}");
    }
    emit(&report, &args.output)?;
    if report.flag(irqlab_report::EXTRA_INTERRUPTED) {
        let wall_ms = report.measured.as_ref().map_or(0, |m| m.wall_ns) as f64 / 1e6;
        eprintln!(
            "irqlab: interrupted (Ctrl-C) at {wall_ms:.3} ms of wall time: the report covers the run up to then"
        );
        return Ok(RunEnd::Interrupted);
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
        assert!(parse_size("0").is_err());
        assert!(parse_size("lots").is_err());
        assert_eq!(parse_interval("0.5").ok(), Some(500_000_000));
        assert!(parse_interval("0").is_err());
    }
}
