//! Drawing with plotters, the same code for both backends.

use crate::axis::{Ranges, si};
use crate::{HEIGHT, LinePlot, PlotError, WIDTH};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::FontStyle;
use std::path::Path;
use std::sync::Once;

/// Tableau 10: colours told apart by most readers, in a fixed order.
const COLOURS: [RGBColor; 10] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
];

pub(crate) const FONT: &str = "sans-serif";

pub(crate) fn png(plot: &LinePlot, ranges: &Ranges, path: &Path) -> Result<(), PlotError> {
    register_font(path)?;
    create(path)?;
    let root = BitMapBackend::new(path, (WIDTH, HEIGHT)).into_drawing_area();
    draw(root, plot, ranges).map_err(|msg| backend(path, msg))
}

pub(crate) fn svg(plot: &LinePlot, ranges: &Ranges, path: &Path) -> Result<(), PlotError> {
    register_font(path)?;
    create(path)?;
    let root = SVGBackend::new(path, (WIDTH, HEIGHT)).into_drawing_area();
    draw(root, plot, ranges).map_err(|msg| backend(path, msg))
}

pub(crate) fn backend(path: &Path, msg: String) -> PlotError {
    PlotError::Backend {
        path: path.display().to_string(),
        msg,
    }
}

/// Creates the picture file before drawing: the backends report a path they cannot write
/// only at the end, as a debug print of their error.
pub(crate) fn create(path: &Path) -> Result<(), PlotError> {
    std::fs::File::create(path).map(drop).map_err(|e| {
        let text = e.to_string();
        // The OS's words without Rust's " (os error N)" tail.
        let msg = text.split(" (os error").next().unwrap_or(&text).to_string();
        PlotError::Create {
            path: path.display().to_string(),
            msg,
        }
    })
}

/// The embedded DejaVu Sans stands in for "sans-serif", so no system font is needed.
pub(crate) fn register_font(path: &Path) -> Result<(), PlotError> {
    static ONCE: Once = Once::new();
    let mut failed = false;
    ONCE.call_once(|| {
        failed = plotters::style::register_font(FONT, FontStyle::Normal, dejavu::sans::regular())
            .is_err();
    });
    if failed {
        return Err(backend(
            path,
            "the embedded DejaVu font did not load".into(),
        ));
    }
    Ok(())
}

fn draw<DB: DrawingBackend>(
    root: DrawingArea<DB, Shift>,
    plot: &LinePlot,
    r: &Ranges,
) -> Result<(), String>
where
    DB::ErrorType: 'static,
{
    let e = |e: DrawingAreaErrorKind<DB::ErrorType>| e.to_string();
    root.fill(&WHITE).map_err(e)?;
    let mut chart = ChartBuilder::on(&root)
        .caption(&plot.title, (FONT, 26))
        .margin(24)
        .x_label_area_size(56)
        .y_label_area_size(84)
        .build_cartesian_2d(r.x.0..r.x.1, r.y.0..r.y.1)
        .map_err(e)?;
    let fmt = |v: &f64| si(*v);
    chart
        .configure_mesh()
        .x_desc(plot.x_label.as_str())
        .y_desc(plot.y_label.as_str())
        .x_label_formatter(&fmt)
        .y_label_formatter(&fmt)
        .label_style((FONT, 15))
        .axis_desc_style((FONT, 18))
        .light_line_style(RGBColor(235, 235, 235))
        .draw()
        .map_err(e)?;

    for (i, s) in plot.series.iter().enumerate() {
        let colour = COLOURS[i % COLOURS.len()];
        let line = colour.stroke_width(2);
        chart
            .draw_series(LineSeries::new(s.points.iter().copied(), line))
            .map_err(e)?
            .label(s.label.as_str())
            .legend(move |(x, y)| {
                EmptyElement::at((x, y))
                    + PathElement::new(vec![(-10, 0), (10, 0)], colour.stroke_width(2))
                    + marker(i, (0, 0), colour)
            });
        // A second cue besides colour: the marker shape cycles with the series.
        chart
            .draw_series(
                s.points
                    .iter()
                    .map(|&p| EmptyElement::at(p) + marker(i, (0, 0), colour)),
            )
            .map_err(e)?;
    }

    chart
        .configure_series_labels()
        .position(legend_corner(plot, r))
        .label_font((FONT, 16))
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .margin(12)
        .draw()
        .map_err(e)?;
    root.present().map_err(e)?;
    Ok(())
}

/// A circle, triangle or square, by series index.
fn marker<DB: DrawingBackend>(
    i: usize,
    at: (i32, i32),
    colour: RGBColor,
) -> DynElement<'static, DB, (i32, i32)> {
    let style = colour.filled();
    match i % 3 {
        0 => Circle::new(at, 4, style).into_dyn(),
        1 => TriangleMarker::new(at, 5, style).into_dyn(),
        _ => Rectangle::new([(at.0 - 4, at.1 - 4), (at.0 + 4, at.1 + 4)], style).into_dyn(),
    }
}

/// The corner of the plot area with the fewest points, so the legend hides little.
fn legend_corner(plot: &LinePlot, r: &Ranges) -> SeriesLabelPosition {
    let mut count = [0usize; 4]; // upper left, upper right, lower left, lower right
    for s in &plot.series {
        for &(x, y) in &s.points {
            let right = (x - r.x.0) / (r.x.1 - r.x.0) > 0.5;
            let lower = (y - r.y.0) / (r.y.1 - r.y.0) < 0.5;
            count[usize::from(lower) * 2 + usize::from(right)] += 1;
        }
    }
    let best = (0..4).min_by_key(|&k| (count[k], k)).unwrap_or(0);
    match best {
        0 => SeriesLabelPosition::UpperLeft,
        1 => SeriesLabelPosition::UpperRight,
        2 => SeriesLabelPosition::LowerLeft,
        _ => SeriesLabelPosition::LowerRight,
    }
}
