//! `irqlab capture`: record this machine (topology, kernel options, block devices,
//! vectors and their CPUs, a battery of fio runs with /proc/interrupts around each) into
//! a directory, or show one. irqlab-capture does the work.

use crate::RunEnd;
use clap::Args;
use irqlab_capture::{Capture, CaptureError, CaptureOptions};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

pub const CAPTURE_HELP: &str = "\
The directory holds manifest.json (schema, host, date, what was read from where, the
target and each run's fio arguments), interrupts.txt (/proc/interrupts at rest), and per
run NAME.fio (the job), NAME.json (fio --output-format=json+), NAME.irq0 and NAME.irq1
(/proc/interrupts just before and after). The runs are 4 KiB random reads with O_DIRECT:
qd1-psync, qd1-hipri (only where the device has poll queues), qd32-libaio, qd32xN-libaio
(N = min(4, CPUs) jobs) and qd32-uring-batch; 10 s each (3 s with --quick).

Without --target the runs read a file laid out in the current directory (1 GiB, 256 MiB
with --quick) and removed afterwards, Ctrl-C included. A block device is read whole and
only read; one that is mounted, has a mounted partition, is swap or is held by device
mapper is refused. No root is needed.

A directory laid out by hand is read too (see crates/irqlab-capture/README.md):
lscpu.txt, and per run NAME.json, NAME.irq0 and NAME.irq1.

Examples:
  irqlab capture --quick --out mybox        # about 20 s of fio
  irqlab capture --no-fio --out mybox       # the machine only
  irqlab capture --show mybox";

#[derive(Debug, Args)]
pub struct CaptureArgs {
    /// Print a summary of the capture in DIR (topology, devices, vectors, a table of the
    /// runs) instead of recording one.
    #[arg(long, value_name = "DIR", conflicts_with_all = ["out", "target", "quick", "no_fio", "fio"])]
    pub show: Option<PathBuf>,
    /// The directory to write, new or empty [default: capture-HOST-YYYYMMDD-HHMMSS].
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// What the fio runs read: a file (created and removed if it does not exist) or an
    /// unused block device [default: a new file in the current directory].
    #[arg(long, value_name = "FILE|DEVICE")]
    pub target: Option<PathBuf>,
    /// 3 s runs on a 256 MiB file instead of 10 s on 1 GiB.
    #[arg(long)]
    pub quick: bool,
    /// Record the machine only; no fio runs.
    #[arg(long)]
    pub no_fio: bool,
    /// The fio to run [default: fio on PATH].
    #[arg(long, value_name = "PATH")]
    pub fio: Option<PathBuf>,
}

/// SIGINT and SIGTERM set the flag and nothing else, so the target file is always
/// removed (the other commands' second Ctrl-C exits at once, which would leave it).
/// The stop flag the capture watches, and the signal that set it: SIGINT, SIGTERM and
/// SIGHUP stop a capture as they stop a run (the runs so far are kept; exit 128 + signal).
fn stop_flag() -> Result<(Arc<AtomicBool>, Arc<AtomicUsize>), String> {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    let flag = Arc::new(AtomicBool::new(false));
    let which = Arc::new(AtomicUsize::new(0));
    for sig in [SIGINT, SIGTERM, SIGHUP] {
        signal_hook::flag::register_usize(sig, Arc::clone(&which), sig as usize)
            .and_then(|_| signal_hook::flag::register(sig, Arc::clone(&flag)))
            .map_err(|e| format!("cannot handle signal {sig}: {e}"))?;
    }
    Ok((flag, which))
}

pub fn main(args: CaptureArgs) -> Result<RunEnd, Box<dyn std::error::Error>> {
    if let Some(dir) = &args.show {
        let c = Capture::open(dir)?;
        print!("{}", irqlab_capture::show(&c));
        return Ok(RunEnd::Complete);
    }
    let opts = CaptureOptions {
        target: args.target,
        no_fio: args.no_fio,
        fio: args.fio,
        tool: format!("irqlab {}", env!("CARGO_PKG_VERSION")),
        ..CaptureOptions::new(
            args.out.unwrap_or_else(irqlab_capture::default_out),
            args.quick,
        )
    };
    let (stop, which) = stop_flag()?;
    let progress = |line: &str| eprintln!("capture: {line}");
    match irqlab_capture::record(&opts, &stop, &progress) {
        Ok(m) => {
            eprintln!(
                "capture: {} run(s) in {}; irqlab capture --show {} prints them",
                m.runs.len(),
                opts.out.display(),
                opts.out.display()
            );
            Ok(RunEnd::Complete)
        }
        Err(CaptureError::Interrupted) => {
            eprintln!("capture: {}", CaptureError::Interrupted);
            let sig = which.load(Ordering::SeqCst) as i32;
            Ok(RunEnd::Interrupted(if sig == 0 {
                signal_hook::consts::SIGINT
            } else {
                sig
            }))
        }
        Err(e) => Err(e.into()),
    }
}
