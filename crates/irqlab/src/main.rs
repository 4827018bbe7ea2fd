//! The `irqlab` command: argument parsing and printing over the library crates (inputs,
//! sim, rt, observe, sweep, calib, burst, report, plot).

mod cmd_advise;
mod cmd_calibrate;
mod cmd_capture;
mod cmd_demo;
mod cmd_hostbench;
mod cmd_platform;
mod cmd_reproduce;
mod cmd_rt;
mod cmd_run;
mod cmd_sweep;
mod output;
mod signals;
mod stdout;

/// What a command returns: any library error, or a message of the command's own.
type CmdResult = Result<(), Box<dyn std::error::Error>>;

/// How a run (`irqlab run`, `irqlab rt`) ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum RunEnd {
    Complete,
    /// A signal (SIGINT, SIGTERM, SIGHUP) stopped it; the report so far was written (or,
    /// stopped before any I/O ran, why not). Exit 128 + the signal, as a shell shows it.
    Interrupted(i32),
}

use clap::{Parser, Subcommand};
use std::process::ExitCode;

#[derive(Parser)]
#[command(
    name = "irqlab",
    version,
    about = "Interrupt delivery and moderation for fast I/O devices: simulate it, run it, see it"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Simulate a fio job on a platform and print what fio and /proc/interrupts would show.
    Run(cmd_run::RunArgs),
    /// Run a fio job on real threads on this host, with real wake-ups.
    Rt(cmd_rt::RtArgs),
    /// Simulate a grid of parameter values in parallel; write a CSV and a plot.
    Sweep(cmd_sweep::SweepArgs),
    /// Replay a burst of completions through remapped and posted delivery.
    Demo(cmd_demo::DemoArgs),
    /// Simulate every published experiment in scenarios/: published vs simulated.
    Reproduce(cmd_reproduce::ReproduceArgs),
    /// Fit platform parameters to measured values (Nelder–Mead within bounds).
    #[command(after_help = cmd_calibrate::TARGETS_HELP)]
    Calibrate(cmd_calibrate::CalibrateArgs),
    /// Where every value of a platform comes from: --explain one, --check them all.
    Platform(cmd_platform::PlatformArgs),
    /// Record this machine (topology, devices, vectors, a battery of fio runs with
    /// /proc/interrupts around each) into a directory, or show one (--show DIR).
    #[command(after_help = cmd_capture::CAPTURE_HELP)]
    Capture(cmd_capture::CaptureArgs),
    /// Measure this host's syscall, wake-up, context-switch and timer costs.
    Hostbench(cmd_hostbench::HostbenchArgs),
    /// Which interrupt policy helps a fio job on a platform: every one it allows,
    /// simulated and ranked, with the knob to turn and how sure the answer is.
    Advise(cmd_advise::AdviseArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let complete = |r: CmdResult| r.map(|()| RunEnd::Complete);
    let result = match cli.command {
        Command::Run(args) => cmd_run::main(args),
        Command::Rt(args) => cmd_rt::main(args),
        Command::Sweep(args) => complete(cmd_sweep::main(args)),
        Command::Demo(args) => complete(cmd_demo::main(args)),
        Command::Reproduce(args) => complete(cmd_reproduce::main(args)),
        Command::Calibrate(args) => complete(cmd_calibrate::main(args)),
        Command::Platform(args) => complete(cmd_platform::main(args)),
        Command::Capture(args) => cmd_capture::main(args),
        Command::Hostbench(args) => complete(cmd_hostbench::main(args)),
        Command::Advise(args) => complete(cmd_advise::main(args)),
    };
    // The reader of standard output went away (`| head`): end quietly, as SIGPIPE would.
    if stdout::broken_pipe() {
        return ExitCode::from(128 + 13);
    }
    match result {
        Ok(RunEnd::Complete) => ExitCode::SUCCESS,
        // The report so far was written: exit as a shell does on that signal.
        Ok(RunEnd::Interrupted(sig)) => ExitCode::from((128 + sig).clamp(0, 255) as u8),
        Err(msg) => {
            eprintln!("irqlab: {}", irqlab_fio::escape_controls(&msg.to_string()));
            ExitCode::from(2)
        }
    }
}
