//! Line plots of sweeps, as PNG and SVG, readable without the CSV: a title, axis labels
//! with units, tick labels with SI suffixes (1.5M), a legend, a marker on every point and
//! one distinct colour per series. [`timeline`] draws CPU lanes over a short window of a
//! run, like Perfetto's thread tracks.
//!
//! ```no_run
//! use irqlab_plot::{LinePlot, Series, write_svg};
//! let plot = LinePlot {
//!     title: "4 KiB random reads".into(),
//!     x_label: "disks".into(),
//!     y_label: "IOPS per disk (I/O/s)".into(),
//!     series: vec![Series { label: "posted".into(), points: vec![(1.0, 9.0e5), (2.0, 8.5e5)] }],
//! };
//! write_svg(&plot, "iops.svg".as_ref()).unwrap();
//! ```
//!
//! Text is drawn with the embedded DejaVu Sans, so PNGs render the same on a machine
//! without system fonts; SVG output is byte-for-byte deterministic.

mod axis;
mod draw;
pub mod timeline;
mod timeline_draw;

pub use axis::si;
pub use timeline::Timeline;

use std::fmt;
use std::path::Path;

/// One line of a plot: a legend label and its points in drawing order.
#[derive(Clone, Debug, PartialEq)]
pub struct Series {
    pub label: String,
    pub points: Vec<(f64, f64)>,
}

/// A plot of one or more series against a shared x axis.
#[derive(Clone, Debug, PartialEq)]
pub struct LinePlot {
    pub title: String,
    /// The x axis description, with its unit (e.g. "loop limit (rounds)").
    pub x_label: String,
    /// The y axis description, with its unit (e.g. "interrupts per second (1/s)").
    pub y_label: String,
    pub series: Vec<Series>,
}

/// Why a plot could not be written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PlotError {
    /// No series has a point.
    Empty,
    /// A point is NaN or infinite.
    NotFinite { series: String },
    /// The picture file could not be created (a missing directory, no permission).
    Create { path: String, msg: String },
    /// The backend failed (file not writable, encoder error).
    Backend { path: String, msg: String },
    /// A timeline's window does not start before it ends.
    EmptyWindow { start: u64, end: u64 },
}

impl fmt::Display for PlotError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PlotError::Empty => f.write_str("nothing to plot: no series has a point"),
            PlotError::NotFinite { series } => {
                write!(
                    f,
                    "series '{series}' has a point that is not a finite number"
                )
            }
            PlotError::Create { path, msg } => {
                write!(f, "{path}: cannot create the picture: {msg}")
            }
            PlotError::Backend { path, msg } => write!(f, "{path}: cannot draw the plot: {msg}"),
            PlotError::EmptyWindow { start, end } => write!(
                f,
                "the timeline window {start}..{end} ns is empty: its start must come before its end"
            ),
        }
    }
}

impl std::error::Error for PlotError {}

/// Pixel size of written plots.
pub const WIDTH: u32 = 1024;
pub const HEIGHT: u32 = 640;

/// Draws `plot` into a PNG file.
pub fn write_png(plot: &LinePlot, path: &Path) -> Result<(), PlotError> {
    let ranges = axis::Ranges::of(plot)?;
    draw::png(plot, &ranges, path)
}

/// Draws `plot` into an SVG file.
pub fn write_svg(plot: &LinePlot, path: &Path) -> Result<(), PlotError> {
    let ranges = axis::Ranges::of(plot)?;
    draw::svg(plot, &ranges, path)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn sample() -> LinePlot {
        LinePlot {
            title: "IOPS per disk".into(),
            x_label: "disks (count)".into(),
            y_label: "IOPS per disk (I/O/s)".into(),
            series: vec![
                Series {
                    label: "remapped".into(),
                    points: vec![(1.0, 1.2e6), (2.0, 1.1e6), (4.0, 0.7e6)],
                },
                Series {
                    label: "posted".into(),
                    points: vec![(1.0, 1.2e6), (2.0, 1.19e6), (4.0, 1.1e6)],
                },
            ],
        }
    }

    fn tmp(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("irqlab-plot-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir.join(name)
    }

    #[test]
    fn svg_holds_title_axis_and_legend_labels() {
        let path = tmp("a.svg");
        write_svg(&sample(), &path).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        for want in [
            "IOPS per disk",
            "disks (count)",
            "IOPS per disk (I/O/s)",
            "remapped",
            "posted",
        ] {
            assert!(text.contains(want), "SVG lacks '{want}'");
        }
        // SI tick labels, not 1200000.
        assert!(
            text.contains("1.2M") || text.contains("1M"),
            "no SI tick label"
        );
        assert!(!text.contains("1200000"));
    }

    #[test]
    fn svg_is_deterministic() {
        let (a, b) = (tmp("d1.svg"), tmp("d2.svg"));
        write_svg(&sample(), &a).unwrap();
        write_svg(&sample(), &b).unwrap();
        assert_eq!(std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap());
    }

    #[test]
    fn png_is_written_and_is_a_png() {
        let path = tmp("a.png");
        write_png(&sample(), &path).unwrap();
        let bytes = std::fs::read(&path).unwrap();
        assert!(bytes.len() > 1000, "PNG too small: {} bytes", bytes.len());
        assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n");
    }

    #[test]
    fn single_point_and_negative_values_plot() {
        let mut p = sample();
        p.series = vec![Series {
            label: "one".into(),
            points: vec![(3.0, -5.0)],
        }];
        write_svg(&p, &tmp("one.svg")).unwrap();
    }

    #[test]
    fn empty_and_nan_are_errors() {
        let mut p = sample();
        p.series.iter_mut().for_each(|s| s.points.clear());
        assert_eq!(write_svg(&p, &tmp("e.svg")), Err(PlotError::Empty));
        let mut p = sample();
        p.series[1].points.push((5.0, f64::NAN));
        assert_eq!(
            write_png(&p, &tmp("n.png")),
            Err(PlotError::NotFinite {
                series: "posted".into()
            })
        );
    }

    #[test]
    fn unwritable_path_is_an_error_not_a_panic() {
        let path = tmp("no-such-dir").join("x").join("a.svg");
        for e in [
            write_svg(&sample(), &path).unwrap_err(),
            write_png(&sample(), &path).unwrap_err(),
        ] {
            // The OS's words, not the backend's debug print of its error.
            assert_eq!(
                e.to_string(),
                format!(
                    "{}: cannot create the picture: No such file or directory",
                    path.display()
                )
            );
        }
    }
}
