//! Drawing timelines with plotters in pixel coordinates, the same code for both
//! backends.

use crate::PlotError;
use crate::draw::{FONT, backend, create, register_font};
use crate::timeline::{Activity, Lane, MarkKind, TIMELINE_WIDTH, Timeline, ticks};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use std::path::Path;

/// Left of the lanes: room for "CPU 127".
const LEFT: i32 = 84;
const RIGHT_MARGIN: i32 = 28;
const LEGEND_H: i32 = 44;
/// Title and counts lines above a panel's lanes.
const HEADER_H: i32 = 60;
const LANE_H: i32 = 50;
/// The slice bar inside a lane: notification triangles above it, MSI ticks below.
const BAR_TOP: i32 = 14;
const BAR_H: i32 = 22;
const AXIS_H: i32 = 56;
const PANEL_GAP: i32 = 14;

const LANE_BG: RGBColor = RGBColor(238, 238, 238);
const GRID: RGBColor = RGBColor(215, 215, 215);
const PMN_COLOUR: RGBColor = RGBColor(0, 150, 60);
const REMAPPED_COLOUR: RGBColor = RGBColor(200, 0, 130);
const MSI_COLOUR: RGBColor = RGBColor(30, 30, 30);

/// Tableau-like colours, kept apart from the mark colours.
fn colour(a: Activity) -> Option<RGBColor> {
    match a {
        Activity::Idle => None,
        Activity::Usr => Some(RGBColor(31, 119, 180)),
        Activity::Sys => Some(RGBColor(158, 202, 233)),
        Activity::HardIrq => Some(RGBColor(214, 39, 40)),
        Activity::SoftIrq => Some(RGBColor(255, 150, 30)),
        Activity::Ksoftirqd => Some(RGBColor(140, 86, 75)),
        Activity::IrqThread => Some(RGBColor(148, 103, 189)),
    }
}

fn panel_height(t: &Timeline) -> i32 {
    let lanes = t.shown_lanes().0.len().max(1);
    HEADER_H + LANE_H * i32::try_from(lanes).unwrap_or(i32::MAX / LANE_H) + AXIS_H
}

fn size(timelines: &[Timeline]) -> (u32, u32) {
    let panels: i32 = timelines.iter().map(panel_height).sum();
    let gaps = PANEL_GAP * (i32::try_from(timelines.len()).unwrap_or(1) - 1).max(0);
    let h = LEGEND_H + panels + gaps + 8;
    (TIMELINE_WIDTH, u32::try_from(h).unwrap_or(600))
}

pub(crate) fn png(timelines: &[Timeline], path: &Path) -> Result<(), PlotError> {
    register_font(path)?;
    create(path)?;
    let root = BitMapBackend::new(path, size(timelines)).into_drawing_area();
    draw(root, timelines).map_err(|msg| backend(path, msg))
}

pub(crate) fn svg(timelines: &[Timeline], path: &Path) -> Result<(), PlotError> {
    register_font(path)?;
    create(path)?;
    let root = SVGBackend::new(path, size(timelines)).into_drawing_area();
    draw(root, timelines).map_err(|msg| backend(path, msg))
}

fn text_style(size: u32, pos: Pos) -> TextStyle<'static> {
    TextStyle::from((FONT, size).into_font())
        .color(&BLACK)
        .pos(pos)
}

fn draw<DB: DrawingBackend>(
    root: DrawingArea<DB, Shift>,
    timelines: &[Timeline],
) -> Result<(), String>
where
    DB::ErrorType: 'static,
{
    let e = |e: DrawingAreaErrorKind<DB::ErrorType>| e.to_string();
    root.fill(&WHITE).map_err(e)?;
    legend(&root).map_err(e)?;
    let mut y = LEGEND_H;
    for t in timelines {
        panel(&root, t, y).map_err(e)?;
        y += panel_height(t) + PANEL_GAP;
    }
    root.present().map_err(e)?;
    Ok(())
}

type DrawResult<DB> = Result<(), DrawingAreaErrorKind<<DB as DrawingBackend>::ErrorType>>;

/// One row: a swatch per activity, then the three marks.
fn legend<DB: DrawingBackend>(root: &DrawingArea<DB, Shift>) -> DrawResult<DB> {
    let style = text_style(15, Pos::new(HPos::Left, VPos::Center));
    let cy = LEGEND_H / 2;
    let mut x = LEFT;
    let label = |x: &mut i32, text: &str| -> DrawResult<DB> {
        root.draw(&Text::new(text.to_string(), (*x, cy), style.clone()))?;
        let (w, _) = root.estimate_text_size(text, &style)?;
        *x += i32::try_from(w).unwrap_or(100) + 22;
        Ok(())
    };
    for a in Activity::DRAWN {
        let c = colour(a).unwrap_or(WHITE);
        root.draw(&Rectangle::new([(x, cy - 8), (x + 16, cy + 8)], c.filled()))?;
        x += 22;
        label(&mut x, a.name())?;
    }
    for (kind, c) in [
        (MarkKind::Pmn, PMN_COLOUR),
        (MarkKind::Notification, REMAPPED_COLOUR),
    ] {
        root.draw(&triangle(x + 6, cy - 6, c))?;
        x += 18;
        label(&mut x, kind.name())?;
    }
    root.draw(&PathElement::new(
        vec![(x + 4, cy - 7), (x + 4, cy + 7)],
        MSI_COLOUR.stroke_width(2),
    ))?;
    x += 14;
    label(&mut x, MarkKind::Msi.name())
}

/// A triangle pointing down with its tip at (x, top + 10).
fn triangle(x: i32, top: i32, c: RGBColor) -> Polygon<(i32, i32)> {
    Polygon::new(vec![(x - 5, top), (x + 5, top), (x, top + 10)], c.filled())
}

/// Title, counts, lanes and time axis of one timeline, its top at `top`.
fn panel<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    t: &Timeline,
    top: i32,
) -> DrawResult<DB> {
    let (a, b) = t.window_ns;
    let right = i32::try_from(TIMELINE_WIDTH).unwrap_or(1200) - RIGHT_MARGIN;
    let width = f64::from(right - LEFT);
    let span = (b - a) as f64;
    let px = |ns: u64| LEFT + ((ns.clamp(a, b) - a) as f64 * width / span).round() as i32;

    let left_top = Pos::new(HPos::Left, VPos::Top);
    root.draw(&Text::new(
        t.full_title(),
        (12, top + 6),
        text_style(20, left_top),
    ))?;
    root.draw(&Text::new(
        t.counts_line(),
        (12, top + 34),
        text_style(15, left_top),
    ))?;

    let (lanes, _) = t.shown_lanes();
    let lanes_top = top + HEADER_H;
    let nlanes = i32::try_from(lanes.len().max(1)).unwrap_or(1);
    let lanes_bottom = lanes_top + nlanes * LANE_H;
    let ticks = ticks(t.window_ns);
    for &(at, _) in &ticks {
        let x = px(at);
        root.draw(&PathElement::new(
            vec![(x, lanes_top), (x, lanes_bottom)],
            GRID,
        ))?;
    }
    if lanes.is_empty() {
        let mid = (
            lanes_top + BAR_TOP + BAR_H / 2,
            Pos::new(HPos::Center, VPos::Center),
        );
        root.draw(&Text::new(
            "no CPU did anything in this window",
            ((LEFT + right) / 2, mid.0),
            text_style(15, mid.1),
        ))?;
    }
    for (i, lane) in lanes.iter().enumerate() {
        let y = lanes_top + i32::try_from(i).unwrap_or(0) * LANE_H;
        draw_lane(root, lane, y, right, &px)?;
    }

    // The time axis under the lanes.
    let axis_y = lanes_bottom + 2;
    root.draw(&PathElement::new(
        vec![(LEFT, axis_y), (right, axis_y)],
        BLACK,
    ))?;
    let tick_style = text_style(14, Pos::new(HPos::Center, VPos::Top));
    for (at, label) in ticks {
        let x = px(at);
        root.draw(&PathElement::new(vec![(x, axis_y), (x, axis_y + 5)], BLACK))?;
        root.draw(&Text::new(label, (x, axis_y + 8), tick_style.clone()))?;
    }
    let axis_label = if t.wall_clock {
        "wall-clock time since the start (µs)"
    } else {
        "simulated time (µs)"
    };
    root.draw(&Text::new(
        axis_label,
        ((LEFT + right) / 2, axis_y + 30),
        text_style(15, Pos::new(HPos::Center, VPos::Top)),
    ))
}

/// One CPU: its label, slice bar, notification triangles and MSI ticks.
fn draw_lane<DB: DrawingBackend>(
    root: &DrawingArea<DB, Shift>,
    lane: &Lane,
    y: i32,
    right: i32,
    px: &impl Fn(u64) -> i32,
) -> DrawResult<DB> {
    let bar = (y + BAR_TOP, y + BAR_TOP + BAR_H);
    root.draw(&Text::new(
        lane.label.clone(),
        (LEFT - 10, (bar.0 + bar.1) / 2),
        text_style(15, Pos::new(HPos::Right, VPos::Center)),
    ))?;
    root.draw(&Rectangle::new(
        [(LEFT, bar.0), (right, bar.1)],
        LANE_BG.filled(),
    ))?;
    for s in &lane.slices {
        let Some(c) = colour(s.activity) else {
            continue;
        };
        let (x0, x1) = (px(s.start_ns), px(s.end_ns));
        // A slice shorter than a pixel still shows, one pixel wide.
        let x1 = x1.max(x0 + 1);
        root.draw(&Rectangle::new([(x0, bar.0), (x1, bar.1)], c.filled()))?;
    }
    for m in &lane.marks {
        let x = px(m.at_ns);
        match m.kind {
            MarkKind::Pmn => root.draw(&triangle(x, y + 2, PMN_COLOUR))?,
            MarkKind::Notification => root.draw(&triangle(x, y + 2, REMAPPED_COLOUR))?,
            MarkKind::Msi => root.draw(&PathElement::new(
                vec![(x, bar.1 + 2), (x, bar.1 + 11)],
                MSI_COLOUR.stroke_width(1),
            ))?,
        }
    }
    Ok(())
}
