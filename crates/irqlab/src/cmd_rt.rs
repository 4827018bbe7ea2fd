//! `irqlab rt`: the same fio job on real threads on this host, with real wake-ups.

use crate::output::{OutputArgs, emit};
use crate::policy_args::PolicyArgs;
use clap::Args;
use irqlab_rt::{Media, MediaModel, RtConfig};
use std::path::PathBuf;

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
    /// What serves the commands: "model" (the latency/rate model below) or "file:PATH".
    #[arg(long, default_value = "model")]
    pub media: String,
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
    #[command(flatten)]
    pub output: OutputArgs,
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
        ..RtConfig::default()
    };
    let report = irqlab_rt::run(&jobs, &args.policy.policy(), &cfg)?;
    emit(&report, &args.output)
}
