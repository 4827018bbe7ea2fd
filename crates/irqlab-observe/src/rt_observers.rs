//! `irqlab rt --trace` and `--timeline`: the simulator's tracers (the Perfetto trace and
//! the timeline picture) fed from what the runtime's threads recorded, on wall-clock time
//! since the run's threads started. [`RtObserveArgs`] are the options;
//! [`run_with_observers`] runs watched by the monitor and writes the files.

use crate::ObserveError;
use crate::observers::{
    Observers, check_window, create_picture, create_trace, timeline_title, trace_write_error,
};
use crate::rt_watch::{Tracing, run_watched};
use crate::timeline::{TimelineObserver, parse_timeline_window, timeline_window};
use crate::trace::parse_window;
use clap::Args;
use irqlab_core::Policy;
use irqlab_fio::{JobSpec, RunPlan};
use irqlab_report::RunReport;
use irqlab_rt::RtConfig;
use std::io::Write;
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
    /// The most the --trace file may hold (fio's sizes: 1g, 200m; default 1g): past it the
    /// trace ends there, still valid JSON, and irqlab says so.
    #[arg(long, value_name = "SIZE", value_parser = crate::observers::parse_trace_size)]
    pub trace_max_size: Option<u64>,
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
    /// Whether any tracer is asked for (else the threads record nothing).
    pub fn wanted(&self) -> bool {
        self.trace.is_some() || self.timeline.is_some()
    }

    /// The wall time the tracers look at: the span of the requested windows, or None
    /// (the whole run) when a trace has no window.
    pub fn record_window(&self, plan: &RunPlan) -> Option<Range<u64>> {
        let mut windows = Vec::new();
        if self.trace.is_some() {
            windows.push(self.trace_window?);
        }
        if self.timeline.is_some() {
            windows.push(timeline_window(plan, self.timeline_window));
        }
        let start = windows.iter().map(|w| w.0).min()?;
        let end = windows.iter().map(|w| w.1).max()?;
        Some(start..end)
    }

    /// The observers asked for, with their files created (so a bad path fails before the
    /// run).
    fn observers(&self, plan: &RunPlan) -> Result<Observers<'static>, ObserveError> {
        let trace = match &self.trace {
            None => None,
            Some(path) => Some(create_trace(
                path,
                self.trace_window,
                self.trace_max_size
                    .unwrap_or(crate::observers::DEFAULT_TRACE_MAX),
            )?),
        };
        let timeline = match &self.timeline {
            None => None,
            Some(path) => {
                create_picture(path)?;
                let (a, b) = timeline_window(plan, self.timeline_window);
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

    /// Ends the trace file and draws the picture; a window that starts after the run
    /// ended is an error.
    fn finish(
        &self,
        plan: &RunPlan,
        obs: Observers<'_>,
        report: &mut RunReport,
        policy: &Policy,
    ) -> Result<(), ObserveError> {
        // The windows are on wall time since the threads started; the run lasted this long.
        let ended_ns = report.measured.as_ref().map_or(u64::MAX, |m| m.wall_ns);
        if let (Some(t), Some(path)) = (obs.trace, &self.trace) {
            let max = self
                .trace_max_size
                .unwrap_or(crate::observers::DEFAULT_TRACE_MAX);
            if let Some(note) = crate::observers::trace_cut_note(path, max, t.dropped()) {
                eprintln!("irqlab: {note}");
                report.notes.push(("trace".to_string(), note));
            }
            t.finish(report).map_err(|e| trace_write_error(path, e))?;
            if let Some((a, b)) = self.trace_window {
                check_window("--trace-window", (a, b), ended_ns, report)?;
            }
        }
        if let (Some(t), Some(path)) = (obs.timeline, &self.timeline) {
            let (a, b) = timeline_window(plan, self.timeline_window);
            check_window("--timeline-window", (a, b), ended_ns, report)?;
            let picture = t.finish(timeline_title(&report.platform, policy));
            irqlab_plot::timeline::write_stacked(&[picture], path).map_err(ObserveError::Plot)?;
        }
        Ok(())
    }
}

/// Runs on real threads watched as [`run_watched`] watches them (irqtop lines or a
/// progress bar to `out`), with the tracers `observe` asks for: their files are complete
/// when this returns.
pub fn run_with_observers(
    jobs: &[JobSpec],
    policy: &Policy,
    cfg: RtConfig,
    irqtop_ns: Option<u64>,
    observe: &RtObserveArgs,
    out: &mut (dyn Write + Send),
) -> Result<RunReport, ObserveError> {
    if !observe.wanted() {
        return run_watched(jobs, policy, cfg, irqtop_ns, out, None);
    }
    let plan = RunPlan::of(jobs);
    let mut obs = observe.observers(&plan)?;
    let tracing = Tracing {
        observer: &mut obs,
        window: observe.record_window(&plan),
    };
    // A run that fails leaves no empty or partial trace and picture behind.
    let remove_files = |_: &ObserveError| {
        for path in [&observe.trace, &observe.timeline].into_iter().flatten() {
            let _ = std::fs::remove_file(path);
        }
    };
    let mut report =
        run_watched(jobs, policy, cfg, irqtop_ns, out, Some(tracing)).inspect_err(remove_files)?;
    observe
        .finish(&plan, obs, &mut report, policy)
        .inspect_err(remove_files)?;
    Ok(report)
}

/// What to tell the user when the threads recorded more than their buffers hold (the
/// trace then lacks events), or None.
pub fn dropped_events_warning(report: &RunReport) -> Option<String> {
    let dropped = report
        .extra
        .iter()
        .find(|(k, _)| k == "trace_events_dropped")
        .map_or(0.0, |(_, v)| *v);
    (dropped > 0.0).then(|| {
        format!(
            "the trace lacks {dropped} events past the {} per thread the runtime keeps; \
             --trace-window records less",
            irqlab_rt::TRACE_EVENT_LIMIT
        )
    })
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
        assert_eq!(
            trace(None).record_window(&RunPlan::of(&jobs)),
            None,
            "the whole run"
        );
        assert_eq!(
            trace(Some((2_000_000, 4_000_000))).record_window(&RunPlan::of(&jobs)),
            Some(2_000_000..4_000_000)
        );
        let both = RtObserveArgs {
            timeline: Some("t.png".into()),
            ..trace(Some((2_000_000, 4_000_000)))
        };
        // The timeline's default window: 200 µs after the longest ramp_time.
        assert_eq!(
            both.record_window(&RunPlan::of(&jobs)),
            Some(1_000_000..4_000_000)
        );
        assert!(!RtObserveArgs::default().wanted());
    }

    #[test]
    fn a_bad_timeline_name_or_trace_path_fails_before_the_run() {
        let jobs = irqlab_fio::parse_str("[a]\nfilename=/dev/nvme0n1\n", "t.fio".as_ref()).unwrap();
        let named = |trace: Option<&str>, timeline: Option<&str>| RtObserveArgs {
            trace: trace.map(PathBuf::from),
            timeline: timeline.map(PathBuf::from),
            ..RtObserveArgs::default()
        };
        let err = |o: RtObserveArgs| {
            o.observers(&RunPlan::of(&jobs))
                .err()
                .map(|e| e.to_string())
        };
        assert_eq!(
            err(named(None, Some("t.jpg"))).as_deref(),
            Some("t.jpg: the --timeline file name must end in .png or .svg")
        );
        let missing = "/nonexistent-irqlab-dir/t.json";
        let msg = err(named(Some(missing), None)).expect("the trace cannot be created");
        assert!(
            msg.starts_with(&format!("{missing}: cannot create the trace: ")),
            "{msg}"
        );
    }
}
