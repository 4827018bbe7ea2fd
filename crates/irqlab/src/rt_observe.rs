//! `irqlab rt --trace` and `--timeline`: the simulator's tracers (the Perfetto trace and
//! the timeline picture) fed from what the runtime's threads recorded, on wall-clock time
//! since the run's threads started.

use crate::irqtop::{Observers, timeline_title};
use crate::timeline_observer::{DEFAULT_SPAN_NS, TimelineObserver, parse_timeline_window};
use crate::trace_observer::{TraceObserver, parse_window};
use clap::Args;
use irqlab_core::Policy;
use irqlab_report::RunReport;
use std::io::BufWriter;
use std::ops::Range;
use std::path::PathBuf;

/// Observer options of `irqlab rt`: flatten into its arguments.
#[derive(Clone, Debug, Default, Args)]
pub struct RtObserveArgs {
    /// Write a Perfetto timeline of the run (Chrome trace-event JSON, the schema of
    /// `irqlab run --trace`): a track per emulated CPU with its hardirq, softirq,
    /// ksoftirqd, irq-thread, usr and sys slices, MSI and notification instants, handler
    /// runs and moderation levels, on wall-clock time since the threads started.
    #[arg(long, value_name = "FILE.json")]
    pub trace: Option<PathBuf>,
    /// Only trace START..END of wall time since the start, e.g. 0..20ms (the threads stop
    /// recording at END, which bounds their memory); the default is the whole run.
    #[arg(long, value_name = "START..END", value_parser = parse_window, requires = "trace")]
    pub trace_window: Option<(u64, u64)>,
    /// Draw a picture (PNG or SVG, by the extension) of a short window of the run: one
    /// lane per emulated CPU, notifications and MSI messages as marks.
    #[arg(long, value_name = "FILE.png|FILE.svg")]
    pub timeline: Option<PathBuf>,
    /// The --timeline window START..END of wall time since the start, e.g. 10ms..10200us;
    /// END left out means START+200us; at most 10ms. Default: the first 200 µs after the
    /// longest ramp_time.
    #[arg(long, value_name = "START..END", value_parser = parse_timeline_window,
          requires = "timeline")]
    pub timeline_window: Option<(u64, u64)>,
}

impl RtObserveArgs {
    pub fn wanted(&self) -> bool {
        self.trace.is_some() || self.timeline.is_some()
    }

    /// The --timeline window, or the first [`DEFAULT_SPAN_NS`] after the longest ramp.
    fn timeline_window(&self, jobs: &[irqlab_fio::JobSpec]) -> (u64, u64) {
        self.timeline_window.unwrap_or_else(|| {
            let start = jobs.iter().map(|j| j.ramp_time_ns).max().unwrap_or(0);
            (start, start.saturating_add(DEFAULT_SPAN_NS))
        })
    }

    /// The wall time the tracers look at: the span of the requested windows, or None
    /// (the whole run) when a trace has no window.
    pub fn record_window(&self, jobs: &[irqlab_fio::JobSpec]) -> Option<Range<u64>> {
        let mut windows = Vec::new();
        if self.trace.is_some() {
            windows.push(self.trace_window?);
        }
        if self.timeline.is_some() {
            windows.push(self.timeline_window(jobs));
        }
        let start = windows.iter().map(|w| w.0).min()?;
        let end = windows.iter().map(|w| w.1).max()?;
        Some(start..end)
    }

    /// The observers asked for, with their files created (so a bad path fails before the
    /// run).
    pub fn observers(&self, jobs: &[irqlab_fio::JobSpec]) -> Result<Observers<'static>, String> {
        let trace = match &self.trace {
            None => None,
            Some(path) => {
                let file = std::fs::File::create(path)
                    .map_err(|e| format!("{}: cannot create the trace: {e}", path.display()))?;
                let window = self.trace_window.map(|(a, b)| a..b);
                Some(
                    TraceObserver::new(BufWriter::new(file), window)
                        .map_err(|e| format!("{}: cannot write the trace: {e}", path.display()))?,
                )
            }
        };
        let timeline = match &self.timeline {
            None => None,
            Some(path) => {
                if irqlab_plot::timeline::image_format(path).is_none() {
                    return Err(format!(
                        "{}: the --timeline file name must end in .png or .svg",
                        path.display()
                    ));
                }
                let (a, b) = self.timeline_window(jobs);
                Some(TimelineObserver::new(a, b).on_wall_clock())
            }
        };
        Ok(Observers {
            trace,
            irqtop: None,
            progress: None,
            timeline,
        })
    }

    /// Ends the trace file and draws the picture; says so on stderr when the threads
    /// recorded more than their buffers hold.
    pub fn finish(
        &self,
        obs: Observers<'_>,
        report: &RunReport,
        policy: &Policy,
    ) -> Result<(), String> {
        let dropped = report
            .extra
            .iter()
            .find(|(k, _)| k == "trace_events_dropped")
            .map_or(0.0, |(_, v)| *v);
        if dropped > 0.0 {
            eprintln!(
                "irqlab: the trace lacks {dropped} events past the {} per thread the \
                 runtime keeps; --trace-window records less",
                irqlab_rt::trace::DEFAULT_EVENT_LIMIT
            );
        }
        if let (Some(t), Some(path)) = (obs.trace, &self.trace) {
            t.finish(report)
                .map_err(|e| format!("{}: cannot write the trace: {e}", path.display()))?;
        }
        if let (Some(t), Some(path)) = (obs.timeline, &self.timeline) {
            let picture = t.finish(timeline_title(&report.platform, policy));
            irqlab_plot::timeline::write_stacked(&[picture], path).map_err(|e| e.to_string())?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_threads_record_the_span_of_the_windows_asked_for() {
        let jobs = irqlab_fio::parse_str(
            "[a]\nfilename=/dev/nvme0n1\nramp_time=1ms\n",
            "t.fio".as_ref(),
        )
        .unwrap();
        let trace = |w| RtObserveArgs {
            trace: Some("t.json".into()),
            trace_window: w,
            ..RtObserveArgs::default()
        };
        assert_eq!(trace(None).record_window(&jobs), None, "the whole run");
        assert_eq!(
            trace(Some((2_000_000, 4_000_000))).record_window(&jobs),
            Some(2_000_000..4_000_000)
        );
        let both = RtObserveArgs {
            timeline: Some("t.png".into()),
            ..trace(Some((2_000_000, 4_000_000)))
        };
        // The timeline's default window: 200 µs after the longest ramp_time.
        assert_eq!(both.record_window(&jobs), Some(1_000_000..4_000_000));
        assert!(!RtObserveArgs::default().wanted());
    }
}
