//! Timelines of a short window of a run, like Perfetto's thread tracks: one lane per
//! CPU with coloured slices of what it was doing, CPU notifications as triangles above
//! the lane and device MSI messages as ticks below it, so a remapped and a posted run of
//! the same burst show at a glance the notifications posted delivery leaves out.
//!
//! ```no_run
//! use irqlab_plot::timeline::{Activity, Lane, Mark, MarkKind, Slice, Timeline, write_png};
//! let t = Timeline {
//!     title: "example: delivery=posted".into(),
//!     window_ns: (0, 10_000),
//!     lanes: vec![Lane {
//!         label: "CPU 0".into(),
//!         slices: vec![Slice { start_ns: 0, end_ns: 10_000, activity: Activity::Usr }],
//!         marks: vec![Mark { at_ns: 5_000, kind: MarkKind::Pmn }],
//!     }],
//!     wall_clock: false,
//! };
//! write_png(&t, "t.png".as_ref()).unwrap();
//! ```

use crate::PlotError;
use crate::axis::si;
use crate::timeline_draw;
use std::path::Path;

/// Lanes drawn at most; the busiest are kept (and the title says so).
pub const MAX_LANES: usize = 16;
/// Pixel width of written timelines.
pub const TIMELINE_WIDTH: u32 = 1200;

/// What a CPU is doing during a slice (the simulator's slice kinds).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Activity {
    /// Not drawn: the lane's background shows through.
    Idle,
    Usr,
    Sys,
    HardIrq,
    SoftIrq,
    Ksoftirqd,
    IrqThread,
}

impl Activity {
    /// The drawn activities, in legend order.
    pub const DRAWN: [Activity; 6] = [
        Activity::Usr,
        Activity::Sys,
        Activity::HardIrq,
        Activity::SoftIrq,
        Activity::Ksoftirqd,
        Activity::IrqThread,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Activity::Idle => "idle",
            Activity::Usr => "usr",
            Activity::Sys => "sys",
            Activity::HardIrq => "hardirq",
            Activity::SoftIrq => "softirq",
            Activity::Ksoftirqd => "ksoftirqd",
            Activity::IrqThread => "irq thread",
        }
    }
}

/// A point event on a lane.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum MarkKind {
    /// A posted MSI notification (the PMN row of /proc/interrupts).
    Pmn,
    /// A remapped vector's own CPU notification.
    Notification,
    /// A device raised an MSI for a vector handled on this lane's CPU.
    Msi,
}

impl MarkKind {
    pub fn name(self) -> &'static str {
        match self {
            MarkKind::Pmn => "PMN (posted notification)",
            MarkKind::Notification => "remapped notification",
            MarkKind::Msi => "MSI message",
        }
    }
}

/// `activity` from `start_ns` to `end_ns` (exclusive).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Slice {
    pub start_ns: u64,
    pub end_ns: u64,
    pub activity: Activity,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mark {
    pub at_ns: u64,
    pub kind: MarkKind,
}

/// One CPU's track.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Lane {
    pub label: String,
    pub slices: Vec<Slice>,
    pub marks: Vec<Mark>,
}

impl Lane {
    /// Time spent in drawn (non-idle) slices.
    pub fn busy_ns(&self) -> u64 {
        self.slices
            .iter()
            .filter(|s| s.activity != Activity::Idle)
            .map(|s| s.end_ns.saturating_sub(s.start_ns))
            .sum()
    }

    /// Whether the lane has anything to draw.
    pub fn is_active(&self) -> bool {
        !self.marks.is_empty() || self.busy_ns() > 0
    }
}

/// A window of one run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Timeline {
    pub title: String,
    /// Start and end of the drawn window, in ns of simulated (or wall) time.
    pub window_ns: (u64, u64),
    pub lanes: Vec<Lane>,
    /// The time axis is wall-clock time (a real-thread run), not simulated time.
    pub wall_clock: bool,
}

/// Marks counted over every lane of a timeline.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counts {
    pub messages: u64,
    pub pmn: u64,
    pub notifications: u64,
}

impl Counts {
    /// Every CPU notification, posted or remapped.
    pub fn all_notifications(&self) -> u64 {
        self.pmn + self.notifications
    }
}

impl Timeline {
    pub fn counts(&self) -> Counts {
        let mut c = Counts::default();
        for m in self.lanes.iter().flat_map(|l| &l.marks) {
            match m.kind {
                MarkKind::Pmn => c.pmn += 1,
                MarkKind::Notification => c.notifications += 1,
                MarkKind::Msi => c.messages += 1,
            }
        }
        c
    }

    /// "in 200 µs: 812 MSI messages (4.06M/s), 271 notifications (271 PMN): 3.00 messages
    /// per notification".
    pub fn counts_line(&self) -> String {
        let c = self.counts();
        let span = self.window_ns.1.saturating_sub(self.window_ns.0);
        let rate = |n: u64| si(n as f64 * 1e9 / span.max(1) as f64);
        let all = c.all_notifications();
        let kinds = match (c.pmn, c.notifications) {
            (0, 0) => String::new(),
            (_, 0) => " (all PMN)".to_string(),
            (0, _) => " (all remapped)".to_string(),
            (p, n) => format!(" ({p} PMN, {n} remapped)"),
        };
        let ratio = if all == 0 {
            String::new()
        } else {
            format!(
                ": {:.2} messages per notification",
                c.messages as f64 / all as f64
            )
        };
        format!(
            "in {} µs: {} MSI messages ({}/s), {} CPU notifications{kinds} ({}/s){ratio}",
            us_text(span, decimals_for(span)),
            c.messages,
            rate(c.messages),
            all,
            rate(all),
        )
    }

    /// The lanes drawn, in their original order: the active ones, or the
    /// [`MAX_LANES`] busiest of them; and how many active lanes there were.
    pub fn shown_lanes(&self) -> (Vec<&Lane>, usize) {
        let mut active: Vec<(usize, &Lane)> = self
            .lanes
            .iter()
            .enumerate()
            .filter(|(_, l)| l.is_active())
            .collect();
        let total = active.len();
        if total > MAX_LANES {
            active.sort_by_key(|&(i, l)| (std::cmp::Reverse((l.busy_ns(), l.marks.len())), i));
            active.truncate(MAX_LANES);
            active.sort_by_key(|&(i, _)| i);
        }
        (active.into_iter().map(|(_, l)| l).collect(), total)
    }

    /// The title, with a note when lanes were left out.
    pub fn full_title(&self) -> String {
        let (shown, total) = self.shown_lanes();
        if shown.len() < total {
            format!(
                "{} ({} busiest of {total} active CPUs shown)",
                self.title,
                shown.len()
            )
        } else {
            self.title.clone()
        }
    }

    fn check(&self) -> Result<(), PlotError> {
        let (a, b) = self.window_ns;
        if a >= b {
            return Err(PlotError::EmptyWindow { start: a, end: b });
        }
        Ok(())
    }
}

/// Tick positions (ns) and labels (µs) for a window: steps of 1, 2 or 5 × 10^k ns,
/// at most ten ticks.
pub(crate) fn ticks(window: (u64, u64)) -> Vec<(u64, String)> {
    let (a, b) = window;
    let span = b.saturating_sub(a).max(1);
    let mut step = 1u64;
    'find: for exp in 0..19 {
        let base = 10u64.pow(exp);
        for m in [1, 2, 5] {
            step = base * m;
            if span / step <= 10 {
                break 'find;
            }
        }
    }
    let decimals = decimals_for(step);
    let first = a.div_ceil(step) * step;
    (0..)
        .map(|i| first + i * step)
        .take_while(|&t| t <= b)
        .map(|t| (t, us_text(t, decimals)))
        .collect()
}

/// Decimals a µs value needs to show steps of `step_ns`.
fn decimals_for(step_ns: u64) -> usize {
    if step_ns.is_multiple_of(1_000) {
        0
    } else if step_ns.is_multiple_of(100) {
        1
    } else if step_ns.is_multiple_of(10) {
        2
    } else {
        3
    }
}

/// ns as µs with `decimals` decimals, in integer arithmetic (deterministic output).
fn us_text(ns: u64, decimals: usize) -> String {
    let whole = ns / 1_000;
    if decimals == 0 {
        return whole.to_string();
    }
    let frac = format!("{:03}", ns % 1_000);
    format!("{whole}.{}", &frac[..decimals.min(3)])
}

/// Draws `timeline` into a PNG file, [`TIMELINE_WIDTH`] px wide.
pub fn write_png(timeline: &Timeline, path: &Path) -> Result<(), PlotError> {
    write_png_stacked(std::slice::from_ref(timeline), path)
}

/// Draws `timeline` into an SVG file.
pub fn write_svg(timeline: &Timeline, path: &Path) -> Result<(), PlotError> {
    write_svg_stacked(std::slice::from_ref(timeline), path)
}

/// Draws timelines one above the other under one legend (e.g. a remapped and a posted
/// run of the same job), each with its own title, counts and time axis.
pub fn write_png_stacked(timelines: &[Timeline], path: &Path) -> Result<(), PlotError> {
    check_all(timelines)?;
    timeline_draw::png(timelines, path)
}

/// [`write_png_stacked`] as SVG.
pub fn write_svg_stacked(timelines: &[Timeline], path: &Path) -> Result<(), PlotError> {
    check_all(timelines)?;
    timeline_draw::svg(timelines, path)
}

/// PNG or SVG by the file's extension (`.png`, `.svg`, any case).
pub fn write_stacked(timelines: &[Timeline], path: &Path) -> Result<(), PlotError> {
    match image_format(path) {
        Some(ImageFormat::Png) => write_png_stacked(timelines, path),
        Some(ImageFormat::Svg) => write_svg_stacked(timelines, path),
        None => Err(PlotError::Backend {
            path: path.display().to_string(),
            msg: "the file name must end in .png or .svg".into(),
        }),
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ImageFormat {
    Png,
    Svg,
}

/// The picture format a file name asks for, if any.
pub fn image_format(path: &Path) -> Option<ImageFormat> {
    let ext = path.extension()?.to_str()?.to_ascii_lowercase();
    match ext.as_str() {
        "png" => Some(ImageFormat::Png),
        "svg" => Some(ImageFormat::Svg),
        _ => None,
    }
}

fn check_all(timelines: &[Timeline]) -> Result<(), PlotError> {
    if timelines.is_empty() {
        return Err(PlotError::Empty);
    }
    timelines.iter().try_for_each(Timeline::check)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn lane(label: &str, cpu_busy: u64, marks: Vec<Mark>) -> Lane {
        Lane {
            label: label.into(),
            slices: vec![
                Slice {
                    start_ns: 0,
                    end_ns: cpu_busy,
                    activity: Activity::HardIrq,
                },
                Slice {
                    start_ns: cpu_busy,
                    end_ns: 10_000,
                    activity: Activity::Idle,
                },
            ],
            marks,
        }
    }

    fn sample() -> Timeline {
        let m = |at_ns, kind| Mark { at_ns, kind };
        Timeline {
            title: "example: delivery=posted".into(),
            window_ns: (0, 10_000),
            lanes: vec![
                lane(
                    "CPU 0",
                    3_000,
                    vec![
                        m(100, MarkKind::Msi),
                        m(200, MarkKind::Msi),
                        m(300, MarkKind::Msi),
                        m(150, MarkKind::Pmn),
                    ],
                ),
                lane("CPU 1", 0, vec![]),
                lane("CPU 2", 500, vec![m(700, MarkKind::Notification)]),
            ],
            wall_clock: false,
        }
    }

    fn tmp(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("irqlab-timeline-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir.join(name)
    }

    #[test]
    fn counts_and_ratio() {
        let t = sample();
        assert_eq!(
            t.counts(),
            Counts {
                messages: 3,
                pmn: 1,
                notifications: 1
            }
        );
        let line = t.counts_line();
        assert!(
            line.starts_with("in 10 µs: 3 MSI messages (300k/s)"),
            "{line}"
        );
        assert!(
            line.contains("2 CPU notifications (1 PMN, 1 remapped)"),
            "{line}"
        );
        assert!(line.ends_with("1.50 messages per notification"), "{line}");
    }

    #[test]
    fn idle_lanes_are_left_out_and_many_lanes_capped_to_the_busiest() {
        let t = sample();
        let (shown, total) = t.shown_lanes();
        let labels: Vec<&str> = shown.iter().map(|l| l.label.as_str()).collect();
        assert_eq!(labels, ["CPU 0", "CPU 2"]);
        assert_eq!(total, 2);
        assert_eq!(t.full_title(), t.title);

        let mut many = sample();
        many.lanes = (0..20)
            .map(|i| lane(&format!("CPU {i}"), 100 * (i as u64 + 1), vec![]))
            .collect();
        let (shown, total) = many.shown_lanes();
        assert_eq!((shown.len(), total), (MAX_LANES, 20));
        // The four least busy (CPU 0..3) go; order stays by CPU.
        assert_eq!(shown[0].label, "CPU 4");
        assert_eq!(shown[15].label, "CPU 19");
        assert!(many.full_title().contains("16 busiest of 20"));
    }

    #[test]
    fn ticks_are_round_and_inside_the_window() {
        let t = ticks((2_000_000, 2_050_000));
        let labels: Vec<&str> = t.iter().map(|x| x.1.as_str()).collect();
        assert_eq!(
            labels,
            [
                "2000", "2005", "2010", "2015", "2020", "2025", "2030", "2035", "2040", "2045",
                "2050"
            ]
        );
        let t = ticks((1_000, 4_000));
        assert_eq!(t[0], (1_000, "1.0".to_string()));
        assert_eq!(t[1], (1_500, "1.5".to_string()));
        assert!(ticks((0, 1)).len() >= 2);
    }

    #[test]
    fn svg_holds_lane_labels_legend_and_counts() {
        let path = tmp("t.svg");
        write_svg(&sample(), &path).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        for want in [
            "example: delivery=posted",
            "CPU 0",
            "CPU 2",
            "usr",
            "hardirq",
            "softirq",
            "ksoftirqd",
            "irq thread",
            "PMN (posted notification)",
            "remapped notification",
            "MSI message",
            "3 MSI messages",
            "simulated time (µs)",
        ] {
            assert!(text.contains(want), "SVG lacks '{want}'");
        }
        assert!(!text.contains("CPU 1<"), "an idle lane is drawn");
        // Triangles for the two notifications.
        assert!(text.matches("<polygon").count() >= 2);
        // A real-thread run is drawn on wall-clock time.
        let wall = Timeline {
            wall_clock: true,
            ..sample()
        };
        write_svg(&wall, &path).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.contains("wall-clock time since the start (µs)"));
        assert!(!text.contains("simulated time"));
    }

    #[test]
    fn png_single_and_stacked_are_written() {
        let one = tmp("t.png");
        write_png(&sample(), &one).unwrap();
        let two = tmp("t2.png");
        write_stacked(&[sample(), sample()], &two).unwrap();
        for p in [&one, &two] {
            let bytes = std::fs::read(p).unwrap();
            assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n");
            assert!(bytes.len() > 2_000);
        }
        // Stacked is taller: the PNG IHDR holds the height at bytes 20..24.
        let h = |p: &PathBuf| {
            let b = std::fs::read(p).unwrap();
            u32::from_be_bytes([b[20], b[21], b[22], b[23]])
        };
        assert!(h(&two) > h(&one) + 100);
    }

    #[test]
    fn svg_is_deterministic() {
        let (a, b) = (tmp("d1.svg"), tmp("d2.svg"));
        write_svg(&sample(), &a).unwrap();
        write_svg(&sample(), &b).unwrap();
        assert_eq!(std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap());
    }

    #[test]
    fn bad_inputs_are_errors() {
        let mut t = sample();
        t.window_ns = (5, 5);
        assert_eq!(
            write_svg(&t, &tmp("w.svg")),
            Err(PlotError::EmptyWindow { start: 5, end: 5 })
        );
        assert_eq!(write_png_stacked(&[], &tmp("e.png")), Err(PlotError::Empty));
        let e = write_stacked(&[sample()], &tmp("x.jpg")).unwrap_err();
        assert!(e.to_string().contains(".png or .svg"), "{e}");
        assert_eq!(image_format("A.SVG".as_ref()), Some(ImageFormat::Svg));
    }

    #[test]
    fn a_lane_with_nothing_active_still_draws() {
        let mut t = sample();
        t.lanes.iter_mut().for_each(|l| {
            l.marks.clear();
            l.slices.clear();
        });
        write_svg(&t, &tmp("empty.svg")).unwrap();
    }
}
