//! `irqlab hostbench`: this host's syscall, wake-up, context-switch and timer costs with
//! pinned threads, the CPU-side costs the model's tables need (irqlab-capture's
//! hostbench does the work).

use crate::CmdResult;
use clap::Args;
use irqlab_capture::hostbench::{self, BenchOptions};
use std::path::PathBuf;

#[derive(Debug, Args)]
pub struct HostbenchArgs {
    /// Also write the results as DIR/bench.json (a capture directory, say; created if
    /// needed). `irqlab capture --show DIR` prints them with the capture.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Fewer trials and events (a fraction of a second, noisier).
    #[arg(long)]
    pub quick: bool,
    /// Print the JSON instead of the table.
    #[arg(long)]
    pub json: bool,
}

pub fn main(args: HostbenchArgs) -> CmdResult {
    let opts = if args.quick {
        BenchOptions::quick()
    } else {
        BenchOptions::standard()
    };
    let progress = |step: &str| eprintln!("hostbench: {step}");
    let report = hostbench::run(
        &opts,
        &format!("irqlab {}", env!("CARGO_PKG_VERSION")),
        &progress,
    )?;
    let json = serde_json::to_string_pretty(&report)? + "\n";
    if let Some(dir) = &args.out {
        std::fs::create_dir_all(dir)
            .map_err(|e| format!("{}: cannot create: {e}", dir.display()))?;
        let path = dir.join("bench.json");
        std::fs::write(&path, &json)
            .map_err(|e| format!("{}: cannot write: {e}", path.display()))?;
        eprintln!("hostbench: wrote {}", path.display());
    }
    if args.json {
        print!("{json}");
    } else {
        print!("{}", hostbench::render(&report));
    }
    Ok(())
}
