//! SIGINT, SIGTERM and SIGHUP stop a run the same way: the first sets the stop flag the
//! engines check, so the report so far is written, marked interrupted, and irqlab exits
//! with 128 + the signal (a batch scheduler's timeout and a plain `kill` are no harsher
//! than Ctrl-C). A second signal ends the process at once, first removing the output
//! files not yet complete, so none is left half written.

use irqlab_core::StopFlag;
use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
use std::ffi::CString;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

/// The signals that stop a run.
const STOPPING: [i32; 3] = [SIGINT, SIGTERM, SIGHUP];

/// Files a forced exit removes (set once, before the run; read in the handler, where
/// only an atomic load and unlink(2) run).
static UNFINISHED: OnceLock<Vec<CString>> = OnceLock::new();

/// Set once every output file is complete: a late second signal then removes none.
static FILES_DONE: AtomicBool = AtomicBool::new(false);

/// Every output file of the run is complete and valid.
pub(crate) fn files_done() {
    FILES_DONE.store(true, Ordering::SeqCst);
}

/// The installed handlers: the stop flag and the signal that set it.
pub(crate) struct Stop {
    flag: StopFlag,
    which: Arc<AtomicUsize>,
}

impl Stop {
    /// Installs the handlers; `unfinished` are the output files this run creates before
    /// it writes them (a second signal removes them).
    pub(crate) fn install(unfinished: &[&Path]) -> Result<Stop, String> {
        let names = unfinished
            .iter()
            .filter_map(|p| CString::new(p.as_os_str().as_encoded_bytes()).ok())
            .collect();
        let _ = UNFINISHED.set(names);
        let flag = Arc::new(AtomicBool::new(false));
        let which = Arc::new(AtomicUsize::new(0));
        for sig in STOPPING {
            let (flag, which) = (Arc::clone(&flag), Arc::clone(&which));
            let handler = move || {
                if flag.swap(true, Ordering::SeqCst) {
                    // The second signal: no report is coming, so no half-written file stays.
                    if !FILES_DONE.load(Ordering::SeqCst) {
                        for name in UNFINISHED.get().map_or(&[][..], Vec::as_slice) {
                            let _ = rustix::fs::unlink(name.as_c_str());
                        }
                    }
                    signal_hook::low_level::exit(128 + sig);
                }
                which.store(sig as usize, Ordering::SeqCst);
            };
            // SAFETY: the handler only swaps and stores atomics, loads a OnceLock that is
            // set before any handler is installed, and calls unlink(2) and _exit(2),
            // all async-signal-safe.
            unsafe { signal_hook::low_level::register(sig, handler) }
                .map_err(|e| format!("cannot handle signal {sig}: {e}"))?;
        }
        Ok(Stop {
            flag: StopFlag::new(flag),
            which,
        })
    }

    pub(crate) fn flag(&self) -> StopFlag {
        self.flag.clone()
    }

    /// The signal that stopped the run, if one did.
    pub(crate) fn signal(&self) -> Option<i32> {
        match self.which.load(Ordering::SeqCst) {
            0 => None,
            s => Some(s as i32),
        }
    }
}

/// A signal's name as the report and messages say it.
pub(crate) fn name(sig: i32) -> &'static str {
    match sig {
        SIGINT => "Ctrl-C",
        SIGTERM => "SIGTERM",
        SIGHUP => "SIGHUP",
        _ => "a signal",
    }
}
