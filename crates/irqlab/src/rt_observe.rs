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

    /// Wall time after which nothing needs recording: the latest window end, or None
    /// (the whole run) when a trace has no window.
    pub fn record_until(&self, jobs: &[irqlab_fio::JobSpec]) -> Option<u64> {
        let trace_end = match (&self.trace, self.trace_window) {
            (None, _) => Some(0),
            (Some(_), Some((_, end))) => Some(end),
            (Some(_), None) => None,
        };
        let timeline_end = self
            .timeline
            .as_ref()
            .map_or(0, |_| self.timeline_window(jobs).1);
        trace_end.map(|t| t.max(timeline_end))
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

    /// Ends the trace file and draws the picture.
    pub fn finish(
        &self,
        obs: Observers<'_>,
        report: &RunReport,
        policy: &Policy,
    ) -> Result<(), String> {
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
