//! Progress bars for long runs (sweeps, reproductions, simulations of many seconds, long
//! runtime jobs): drawn on stderr when it is a terminal, silent otherwise, so piped or
//! redirected output holds no escape codes.

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use irqlab_sim::{Observer, SliceKind};
use std::io::IsTerminal;

/// Whether a progress bar is drawn: only on a terminal. indicatif's stderr target also
/// hides itself off a terminal (and with TERM=dumb); checking here as well keeps the
/// decision in one visible place, which callers ask before they pay for a bar.
pub fn drawn() -> bool {
    std::io::stderr().is_terminal()
}

/// A progress bar over `len` units of work; cloning shares the bar, and every method
/// takes `&self`, so worker threads can advance it.
#[derive(Clone, Debug)]
pub struct Progress {
    bar: ProgressBar,
}

impl Progress {
    /// A bar over `len` units labelled `msg`; hidden unless stderr is a terminal.
    pub fn new(len: u64, msg: impl Into<String>) -> Progress {
        let target = if drawn() {
            ProgressDrawTarget::stderr()
        } else {
            ProgressDrawTarget::hidden()
        };
        let bar = ProgressBar::with_draw_target(Some(len), target);
        if let Ok(style) = ProgressStyle::with_template(
            "{msg} [{elapsed_precise}] [{wide_bar:.cyan/blue}] {pos}/{len} (eta {eta})",
        ) {
            bar.set_style(style.progress_chars("=> "));
        }
        bar.set_message(msg.into());
        Progress { bar }
    }

    /// A bar that never draws (tests, `--quiet`).
    pub fn hidden(len: u64) -> Progress {
        Progress {
            bar: ProgressBar::with_draw_target(Some(len), ProgressDrawTarget::hidden()),
        }
    }

    /// Whether anything is drawn.
    #[cfg(test)]
    pub fn is_visible(&self) -> bool {
        !self.bar.is_hidden()
    }

    pub fn inc(&self, n: u64) {
        self.bar.inc(n);
    }

    pub fn set_position(&self, pos: u64) {
        self.bar.set_position(pos);
    }

    #[cfg(test)]
    pub fn position(&self) -> u64 {
        self.bar.position()
    }

    /// Removes the bar from the terminal (results printed after it stay clean).
    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}

/// Simulated ms per progress unit of [`SimProgress`].
const NS_PER_UNIT: u64 = 1_000_000;

/// An [`Observer`] that advances a bar with simulated time, in ms, for simulations that
/// take long in wall time. Updates at most once per simulated ms.
#[derive(Debug)]
pub struct SimProgress {
    progress: Progress,
    next_ns: u64,
}

impl SimProgress {
    /// A bar over `total_ns` of simulated time (a plan's `time_bound_ns`).
    pub fn new(total_ns: u64, msg: impl Into<String>) -> SimProgress {
        SimProgress::with(Progress::new(total_ns.div_ceil(NS_PER_UNIT), msg))
    }

    pub fn with(progress: Progress) -> SimProgress {
        SimProgress {
            progress,
            next_ns: 0,
        }
    }

    #[cfg(test)]
    pub fn progress(&self) -> &Progress {
        &self.progress
    }

    #[inline]
    fn at(&mut self, now: u64) {
        if now >= self.next_ns {
            self.progress.set_position(now / NS_PER_UNIT);
            self.next_ns = (now / NS_PER_UNIT + 1) * NS_PER_UNIT;
        }
    }

    pub fn finish(&self) {
        self.progress.finish();
    }
}

impl Observer for SimProgress {
    #[inline]
    fn slice(&mut self, now: u64, _cpu: usize, _kind: SliceKind) {
        self.at(now);
    }

    #[inline]
    fn message(&mut self, now: u64, _vector: usize) {
        self.at(now);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hidden_bar_counts_without_drawing() {
        let p = Progress::hidden(10);
        assert!(!p.is_visible());
        p.inc(3);
        p.inc(4);
        assert_eq!(p.position(), 7);
        p.finish();
    }

    #[test]
    fn not_a_terminal_means_not_visible() {
        // Under `cargo test` stderr is captured or piped, never the terminal.
        if !std::io::stderr().is_terminal() {
            assert!(!Progress::new(5, "x").is_visible());
        }
    }

    #[test]
    fn sim_progress_follows_simulated_time_in_ms() {
        let mut s = SimProgress::with(Progress::hidden(10));
        s.slice(500_000, 0, SliceKind::Usr);
        assert_eq!(s.progress().position(), 0);
        s.message(2_300_000, 0);
        assert_eq!(s.progress().position(), 2);
        s.slice(2_900_000, 1, SliceKind::Idle);
        assert_eq!(s.progress().position(), 2, "updates at most once per ms");
        s.slice(7_000_000, 1, SliceKind::Idle);
        assert_eq!(s.progress().position(), 7);
    }
}
