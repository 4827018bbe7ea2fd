//! `--timeline FILE.png|FILE.svg`: a picture of CPU lanes over a short window of a
//! simulated run (see [`irqlab_plot::timeline`]). The observer keeps only what falls in
//! the window, so its memory is bounded by the window, not by the run.

use crate::ObserveError;
use irqlab_fio::RunPlan;
use irqlab_plot::timeline::{Activity, Lane, Mark, MarkKind, Slice, Timeline};
use irqlab_sim::{Observer, SliceKind};

/// The window drawn when `--timeline-window` leaves out its end (or is not given).
pub const DEFAULT_SPAN_NS: u64 = 200_000;
/// The longest window drawn: a wider one is a smear of sub-pixel slices.
pub const MAX_SPAN_NS: u64 = 10_000_000;

/// What one CPU is doing since when.
#[derive(Clone, Copy, Debug)]
struct Open {
    kind: SliceKind,
    since: u64,
}

/// An [`Observer`] that collects, within `start..end` ns of simulated time, each CPU's
/// slices (idle included, clipped to the window), CPU notifications and the MSI
/// messages of the vectors each CPU handles.
#[derive(Debug)]
pub struct TimelineObserver {
    start: u64,
    end: u64,
    open: Vec<Open>,
    lanes: Vec<Lane>,
    /// The CPU each vector's handler last ran on: where its messages are drawn.
    vector_cpu: Vec<Option<usize>>,
    /// Messages in the window of vectors whose handler has not run yet.
    unplaced: Vec<(u64, usize)>,
    last_now: u64,
    /// Times are wall-clock time (a real-thread run).
    wall_clock: bool,
}

fn activity(kind: SliceKind) -> Activity {
    match kind {
        SliceKind::Idle => Activity::Idle,
        SliceKind::Usr => Activity::Usr,
        SliceKind::Sys => Activity::Sys,
        SliceKind::HardIrq => Activity::HardIrq,
        SliceKind::SoftIrq => Activity::SoftIrq,
        SliceKind::Ksoftirqd => Activity::Ksoftirqd,
        SliceKind::IrqThread => Activity::IrqThread,
    }
}

impl TimelineObserver {
    /// Collects `start..end` ns (`end` > `start`).
    pub fn new(start: u64, end: u64) -> TimelineObserver {
        TimelineObserver {
            start,
            end: end.max(start + 1),
            open: Vec::new(),
            lanes: Vec::new(),
            vector_cpu: Vec::new(),
            unplaced: Vec::new(),
            last_now: 0,
            wall_clock: false,
        }
    }

    /// The times it sees are wall-clock time (`irqlab rt`): the picture says so.
    pub fn on_wall_clock(mut self) -> TimelineObserver {
        self.wall_clock = true;
        self
    }

    fn inside(&self, now: u64) -> bool {
        (self.start..self.end).contains(&now)
    }

    /// A CPU not mentioned yet has been idle since time 0.
    fn cpu(&mut self, cpu: usize) {
        if self.open.len() <= cpu {
            self.open.resize(
                cpu + 1,
                Open {
                    kind: SliceKind::Idle,
                    since: 0,
                },
            );
            self.lanes.resize_with(cpu + 1, Lane::default);
        }
    }

    /// Ends `cpu`'s open slice at `now`, keeping its part inside the window.
    fn close(&mut self, cpu: usize, now: u64) {
        let Open { kind, since } = self.open[cpu];
        let (a, b) = (since.max(self.start), now.min(self.end));
        if a < b {
            self.lanes[cpu].slices.push(Slice {
                start_ns: a,
                end_ns: b,
                activity: activity(kind),
            });
        }
    }

    fn mark(&mut self, cpu: usize, at_ns: u64, kind: MarkKind) {
        self.cpu(cpu);
        self.lanes[cpu].marks.push(Mark { at_ns, kind });
    }

    /// The collected window, titled `title`. The window ends at the run's last event
    /// when the run ended inside it.
    pub fn finish(mut self, title: String) -> Timeline {
        let end = self.end.min(self.last_now.max(self.start + 1));
        self.end = end;
        for cpu in 0..self.open.len() {
            self.close(cpu, end);
        }
        for (at, v) in std::mem::take(&mut self.unplaced) {
            if let Some(Some(cpu)) = self.vector_cpu.get(v).copied() {
                self.mark(cpu, at, MarkKind::Msi);
            }
        }
        for (cpu, lane) in self.lanes.iter_mut().enumerate() {
            lane.label = format!("CPU {cpu}");
            lane.marks.retain(|m| m.at_ns < end);
            // Late-placed messages go back in time order (ties: a stable order by kind).
            lane.marks.sort_by_key(|m| (m.at_ns, m.kind));
        }
        Timeline {
            title,
            window_ns: (self.start, end),
            lanes: self.lanes,
            wall_clock: self.wall_clock,
        }
    }
}

impl Observer for TimelineObserver {
    fn start(&mut self, _vector_names: &[String], ncpus: usize) {
        if ncpus > 0 {
            self.cpu(ncpus - 1);
        }
    }

    fn slice(&mut self, now: u64, cpu: usize, kind: SliceKind) {
        self.last_now = self.last_now.max(now);
        self.cpu(cpu);
        self.close(cpu, now);
        self.open[cpu] = Open { kind, since: now };
    }

    fn message(&mut self, now: u64, vector: usize) {
        self.last_now = self.last_now.max(now);
        if !self.inside(now) {
            return;
        }
        match self.vector_cpu.get(vector).copied().flatten() {
            Some(cpu) => self.mark(cpu, now, MarkKind::Msi),
            None => self.unplaced.push((now, vector)),
        }
    }

    fn notification(&mut self, now: u64, cpu: usize, pmn: bool) {
        self.last_now = self.last_now.max(now);
        if self.inside(now) {
            let kind = if pmn {
                MarkKind::Pmn
            } else {
                MarkKind::Notification
            };
            self.mark(cpu, now, kind);
        }
    }

    fn handler(&mut self, now: u64, cpu: usize, vector: usize, _cqes: u32) {
        self.last_now = self.last_now.max(now);
        if self.vector_cpu.len() <= vector {
            self.vector_cpu.resize(vector + 1, None);
        }
        self.vector_cpu[vector] = Some(cpu);
    }
}

/// `--timeline-window` when given, else the first [`DEFAULT_SPAN_NS`] after the longest
/// ramp_time of the run's `plan` (where the measured run starts, in both engines).
pub fn timeline_window(plan: &RunPlan, asked: Option<(u64, u64)>) -> (u64, u64) {
    asked.unwrap_or_else(|| {
        let start = plan.longest_ramp_ns;
        (start, start.saturating_add(DEFAULT_SPAN_NS))
    })
}

/// Parses `--timeline-window START..END` like `--trace-window` (whole numbers with a
/// unit: `1000us..1200us`, not `1ms..1.2ms`); END left out means START + 200 µs. Windows
/// longer than [`MAX_SPAN_NS`] are refused.
pub fn parse_timeline_window(s: &str) -> Result<(u64, u64), ObserveError> {
    let (start, end) = crate::trace::parse_window(s)?;
    let open_end = s.trim_end().ends_with("..");
    let end = if open_end {
        start.saturating_add(DEFAULT_SPAN_NS)
    } else {
        end
    };
    if end - start > MAX_SPAN_NS {
        return Err(ObserveError::Option(format!(
            "'{s}': a timeline window is at most 10ms long (slices would be narrower than a \
             pixel); use --trace for longer spans"
        )));
    }
    Ok((start, end))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn feed(obs: &mut TimelineObserver) {
        obs.start(&["nvme0q1".into(), "nvme1q1".into()], 3);
        obs.slice(500, 0, SliceKind::Usr);
        obs.slice(900, 1, SliceKind::Sys);
        obs.message(1_100, 0); // before vector 0's first handler: placed at the end
        obs.notification(1_150, 0, false);
        obs.slice(1_200, 0, SliceKind::HardIrq);
        obs.handler(1_300, 0, 0, 2);
        obs.slice(1_600, 0, SliceKind::SoftIrq);
        obs.message(1_700, 0);
        obs.message(1_800, 1); // vector 1 never runs a handler: not drawn
        obs.slice(1_900, 0, SliceKind::Usr);
        obs.message(2_500, 0); // after the window
        obs.slice(3_000, 1, SliceKind::Idle);
    }

    fn sum(lane: &Lane) -> u64 {
        lane.slices.iter().map(|s| s.end_ns - s.start_ns).sum()
    }

    #[test]
    fn slices_are_clipped_and_fill_the_window() {
        let mut obs = TimelineObserver::new(1_000, 2_000);
        feed(&mut obs);
        let t = obs.finish("t".into());
        assert_eq!(t.window_ns, (1_000, 2_000));
        assert_eq!(t.lanes.len(), 3);
        for lane in &t.lanes {
            assert_eq!(sum(lane), 1_000, "{lane:?}");
            for pair in lane.slices.windows(2) {
                assert_eq!(pair[0].end_ns, pair[1].start_ns, "gap or overlap");
            }
        }
        let cpu0: Vec<(u64, u64, Activity)> = t.lanes[0]
            .slices
            .iter()
            .map(|s| (s.start_ns, s.end_ns, s.activity))
            .collect();
        assert_eq!(
            cpu0,
            [
                (1_000, 1_200, Activity::Usr),
                (1_200, 1_600, Activity::HardIrq),
                (1_600, 1_900, Activity::SoftIrq),
                (1_900, 2_000, Activity::Usr),
            ]
        );
        assert_eq!(t.lanes[1].slices[0].activity, Activity::Sys);
        assert_eq!(t.lanes[2].slices[0].activity, Activity::Idle);
        assert_eq!(t.lanes[1].label, "CPU 1");
    }

    #[test]
    fn marks_inside_the_window_land_on_the_handling_cpu() {
        let mut obs = TimelineObserver::new(1_000, 2_000);
        feed(&mut obs);
        let t = obs.finish("t".into());
        let marks: Vec<(u64, MarkKind)> =
            t.lanes[0].marks.iter().map(|m| (m.at_ns, m.kind)).collect();
        assert_eq!(
            marks,
            [
                (1_100, MarkKind::Msi),
                (1_150, MarkKind::Notification),
                (1_700, MarkKind::Msi),
            ]
        );
        assert!(t.lanes[1].marks.is_empty() && t.lanes[2].marks.is_empty());
        let c = t.counts();
        assert_eq!((c.messages, c.notifications, c.pmn), (2, 1, 0));
    }

    #[test]
    fn a_run_ending_inside_the_window_ends_the_window() {
        let mut obs = TimelineObserver::new(1_000, 10_000);
        feed(&mut obs);
        let t = obs.finish("t".into());
        assert_eq!(t.window_ns, (1_000, 3_000));
        assert!(t.lanes.iter().all(|l| sum(l) == 2_000));
    }

    #[test]
    fn window_option_parses() {
        assert_eq!(
            parse_timeline_window("2ms..2100us"),
            Ok((2_000_000, 2_100_000))
        );
        assert_eq!(parse_timeline_window("1ms.."), Ok((1_000_000, 1_200_000)));
        assert!(parse_timeline_window("0..1s").is_err());
        assert!(parse_timeline_window("3ms..1ms").is_err());
    }
}

#[cfg(test)]
mod sim_tests {
    use super::*;
    use crate::observers::{ObserveArgs, simulate_with_observers};
    use irqlab_core::{Delivery, Policy};
    use irqlab_inputs::DeliveryArg;
    use irqlab_sim::{Platform, SimOptions};

    /// Four disks completing into CPU 0 (examples/one-cpu-four-disks.fio, shorter).
    const JOB: &str = "[global]\nioengine=io_uring\ndirect=1\nrw=randread\nbs=4k\n\
        iodepth=32\niodepth_batch_submit=8\niodepth_batch_complete_min=1\n\
        iodepth_batch_complete_max=32\ncpus_allowed=0\ntime_based\nruntime=2ms\n\
        ramp_time=500us\n[d0]\nfilename=/dev/nvme0n1\n[d1]\nfilename=/dev/nvme1n1\n\
        [d2]\nfilename=/dev/nvme2n1\n[d3]\nfilename=/dev/nvme3n1\n";

    fn inputs() -> (Vec<irqlab_fio::JobSpec>, Platform) {
        let jobs = irqlab_fio::parse_str(JOB, "t.fio".as_ref()).unwrap();
        let path =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../platforms/example.toml");
        (jobs, Platform::load(&path, &[]).unwrap())
    }

    fn timeline(delivery: Delivery, window: (u64, u64)) -> irqlab_plot::Timeline {
        let (jobs, platform) = inputs();
        let policy = Policy {
            delivery,
            ..Policy::default()
        };
        let mut obs = TimelineObserver::new(window.0, window.1);
        irqlab_sim::simulate_observed(&jobs, &platform, &policy, &SimOptions::default(), &mut obs)
            .unwrap();
        obs.finish(delivery.to_string())
    }

    #[test]
    fn posted_delivery_draws_fewer_notifications_than_remapped() {
        let window = (600_000, 1_600_000);
        let remapped = timeline(Delivery::Remapped, window);
        let posted = timeline(Delivery::Posted { max_loop: 3 }, window);
        let (r, p) = (remapped.counts(), posted.counts());
        assert_eq!(r.pmn, 0);
        assert_eq!(
            p.notifications, 0,
            "posted vectors send no own notification"
        );
        assert!(r.messages > 100 && p.messages > 100, "{r:?} {p:?}");
        // Remapped: one notification per message (give or take the window's edges).
        assert!(r.notifications.abs_diff(r.messages) <= 2, "{r:?}");
        assert!(
            p.pmn * 5 < r.notifications * 4,
            "posted should coalesce notifications: {p:?} vs {r:?}"
        );
        for t in [&remapped, &posted] {
            assert_eq!(t.shown_lanes().1, 1, "only CPU 0 works");
            for lane in &t.lanes {
                let sum: u64 = lane.slices.iter().map(|s| s.end_ns - s.start_ns).sum();
                assert_eq!(sum, 1_000_000, "{}", lane.label);
            }
        }
    }

    #[test]
    fn run_writes_a_stacked_png_and_svg() {
        let (jobs, platform) = inputs();
        let dir = std::env::temp_dir().join(format!("irqlab-tl-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for name in ["t.png", "t.svg"] {
            let path = dir.join(name);
            let observe = ObserveArgs {
                timeline: Some(path.clone()),
                timeline_window: Some((1_000_000, 1_050_000)),
                timeline_compare: Some(DeliveryArg::Posted),
                ..ObserveArgs::default()
            };
            let report = simulate_with_observers(
                &jobs,
                &platform,
                &Policy::default(),
                &SimOptions::default(),
                &observe,
                &mut std::io::sink(),
            )
            .unwrap();
            assert!(report.total_ios() > 0);
            let bytes = std::fs::read(&path).unwrap();
            assert!(bytes.len() > 2_000, "{name}: {} bytes", bytes.len());
            if name.ends_with(".svg") {
                let text = String::from_utf8(bytes).unwrap();
                for want in [
                    "delivery=remapped",
                    "delivery=posted max_loop=3",
                    "CPU 0",
                    "hardirq",
                    "PMN (posted notification)",
                    "in 50 µs:",
                ] {
                    assert!(text.contains(want), "SVG lacks '{want}'");
                }
            }
        }
    }

    /// Unwatched, a run has no observer at all; watched by irqtop it has the composite:
    /// the two reports are the same.
    #[test]
    fn a_watched_run_reports_what_an_unwatched_one_does() {
        let (jobs, platform) = inputs();
        let run = |irqtop: Option<u64>| {
            let observe = ObserveArgs {
                irqtop,
                threads: Some(1),
                ..ObserveArgs::default()
            };
            let policy = Policy {
                delivery: Delivery::Posted { max_loop: 3 },
                ..Policy::default()
            };
            let r = simulate_with_observers(
                &jobs,
                &platform,
                &policy,
                &SimOptions::default(),
                &observe,
                &mut std::io::sink(),
            )
            .unwrap();
            format!("{r:?}")
        };
        let (bare, watched) = (run(None), run(Some(500_000)));
        assert!(bare.contains("ios_completed"), "{bare}");
        assert_eq!(bare, watched);
    }

    #[test]
    fn a_bad_picture_name_fails_before_simulating() {
        let (jobs, platform) = inputs();
        let observe = ObserveArgs {
            timeline: Some("t.jpg".into()),
            ..ObserveArgs::default()
        };
        let e = simulate_with_observers(
            &jobs,
            &platform,
            &Policy::default(),
            &SimOptions::default(),
            &observe,
            &mut std::io::sink(),
        )
        .unwrap_err();
        assert!(e.to_string().contains(".png or .svg"), "{e}");
    }
}
