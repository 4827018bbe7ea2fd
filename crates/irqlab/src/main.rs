//! The `irqlab` command.

mod cmd_demo;
mod cmd_rt;
mod cmd_run;
mod policy_args;

use clap::{Parser, Subcommand};
use std::process::ExitCode;

#[derive(Parser)]
#[command(name = "irqlab", version, about = "Interrupt delivery and moderation for fast I/O devices: simulate it, run it, see it")]
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
    /// Replay a burst of completions through remapped and posted delivery.
    Demo(cmd_demo::DemoArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let result = match cli.command {
        Command::Run(args) => cmd_run::main(args),
        Command::Rt(args) => cmd_rt::main(args),
        Command::Demo(args) => cmd_demo::main(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(msg) => {
            eprintln!("irqlab: {msg}");
            ExitCode::from(2)
        }
    }
}
