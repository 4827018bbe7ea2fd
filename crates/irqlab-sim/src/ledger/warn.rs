//! Range warnings on standard error, each at most once per process: a sweep or a
//! calibration loads the same platform thousands of times and must not repeat itself.
//! Every front end (run, rt, sweep, reproduce, calibrate, the Python package) loads
//! platforms through the loader, so the loader is the one place that says it.

use std::collections::BTreeSet;
use std::sync::Mutex;

/// Distinct warnings printed before the rest are counted only (a fuzzer's mutated
/// ranges would otherwise fill the terminal).
const MAX_WARNINGS: usize = 20;

static SEEN: Mutex<(BTreeSet<String>, usize)> = Mutex::new((BTreeSet::new(), 0));

/// Prints `irqlab: warning: MSG` on standard error unless it was printed before; never
/// on standard output, so a JSON report stays one document.
pub fn warn_once(msg: &str) {
    let Ok(mut seen) = SEEN.lock() else {
        return;
    };
    if seen.0.contains(msg) {
        return;
    }
    if seen.0.len() < MAX_WARNINGS {
        seen.0.insert(msg.to_string());
        eprintln!("irqlab: warning: {msg}");
    } else {
        seen.1 += 1;
        if seen.1 == 1 {
            eprintln!("irqlab: warning: further range warnings are not shown");
        }
    }
}
