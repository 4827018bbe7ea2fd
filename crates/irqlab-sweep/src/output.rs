//! What a sweep writes: the CSV, the plots and the table printed at the end.

use crate::SweepError;
use crate::grid::{Dim, Grid, KeyKind};
use crate::metrics::{METRICS, fmt};
use irqlab_inputs::PolicyKey;
use irqlab_plot::{LinePlot, Series};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// The metrics of one grid point, in [`METRICS`] order.
#[derive(Clone, Debug, PartialEq)]
pub struct PointResult {
    pub metrics: Vec<f64>,
}

/// One row per point: the swept keys, then every metric.
pub fn csv(grid: &Grid, results: &[PointResult]) -> String {
    let mut out = csv_header(grid);
    for (i, r) in results.iter().enumerate() {
        out.push_str(&csv_row(grid, i, &r.metrics));
    }
    out
}

/// The CSV's first line: the swept keys, then every metric name.
pub fn csv_header(grid: &Grid) -> String {
    let header: Vec<String> = grid
        .dims
        .iter()
        .map(|d| quote(&d.key))
        .chain(METRICS.iter().map(|m| m.name.to_string()))
        .collect();
    format!("{}\n", header.join(","))
}

/// The CSV line of point `i` with its `metrics`.
pub fn csv_row(grid: &Grid, i: usize, metrics: &[f64]) -> String {
    let row: Vec<String> = grid
        .values(i)
        .into_iter()
        .map(quote)
        .chain(metrics.iter().map(|&x| fmt(x)))
        .collect();
    format!("{}\n", row.join(","))
}

/// RFC 4180: a field with a comma, quote or newline is quoted, quotes doubled.
fn quote(s: &str) -> String {
    if s.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// The swept keys and the chosen metrics as aligned columns.
pub fn table(grid: &Grid, results: &[PointResult], metrics: &[usize]) -> String {
    let mut rows: Vec<Vec<String>> = vec![
        grid.dims
            .iter()
            .map(|d| d.key.clone())
            .chain(metrics.iter().map(|&m| METRICS[m].name.to_string()))
            .collect(),
    ];
    for (i, r) in results.iter().enumerate() {
        rows.push(
            grid.values(i)
                .into_iter()
                .map(str::to_string)
                .chain(metrics.iter().map(|&m| short(r.metrics[m])))
                .collect(),
        );
    }
    let ncols = rows[0].len();
    let widths: Vec<usize> = (0..ncols)
        .map(|c| rows.iter().map(|r| r[c].chars().count()).max().unwrap_or(0))
        .collect();
    let nkeys = grid.dims.len();
    let mut out = String::new();
    for r in &rows {
        let cells: Vec<String> = r
            .iter()
            .enumerate()
            .map(|(c, s)| {
                // Keys left-aligned, numbers right-aligned.
                if c < nkeys {
                    format!("{s:<w$}", w = widths[c])
                } else {
                    format!("{s:>w$}", w = widths[c])
                }
            })
            .collect();
        let _ = writeln!(out, "{}", cells.join("  ").trim_end());
    }
    out
}

/// A table cell: about four significant digits (the CSV keeps three decimals).
fn short(x: f64) -> String {
    let a = x.abs();
    let dec = if a >= 100.0 || a == 0.0 {
        0
    } else if a >= 1.0 {
        2
    } else {
        3
    };
    format!("{x:.dec$}")
}

/// The dim plotted along x: the one named by `--x`, else the first numeric dim with more
/// than one value. None when no dim is numeric.
pub fn x_dim(grid: &Grid, named: Option<&str>) -> Result<Option<usize>, SweepError> {
    if let Some(key) = named {
        let d = grid.dims.iter().position(|d| d.key == key).ok_or_else(|| {
            SweepError::X(format!("--x {key}: not a swept key (give it with --set)"))
        })?;
        if !grid.dims[d].is_numeric() {
            return Err(SweepError::X(format!(
                "--x {key}: its values are not all numbers"
            )));
        }
        return Ok(Some(d));
    }
    Ok(grid
        .dims
        .iter()
        .position(|d| d.values.len() > 1 && d.is_numeric()))
}

/// A plot of metric `m` against dim `x`, one series per combination of the other dims
/// that vary; `context` (job file and platform) goes in the title with the fixed keys.
pub fn plot(grid: &Grid, results: &[PointResult], x: usize, m: usize, context: &str) -> LinePlot {
    let others: Vec<usize> = (0..grid.dims.len())
        .filter(|&d| d != x && grid.dims[d].values.len() > 1)
        .collect();
    let fixed: Vec<String> = grid
        .dims
        .iter()
        .enumerate()
        .filter(|&(d, dim)| d != x && dim.values.len() == 1)
        .map(|(_, dim)| format!("{}={}", dim.key, dim.values[0]))
        .collect();
    // Series in order of first appearance in the grid: deterministic.
    let mut series: Vec<(Vec<usize>, Series)> = Vec::new();
    for (i, r) in results.iter().enumerate() {
        let ix = grid.point(i);
        let key: Vec<usize> = others.iter().map(|&d| ix[d]).collect();
        let xv: f64 = grid.dims[x].values[ix[x]].parse().unwrap_or(0.0);
        let point = (xv, r.metrics[m]);
        match series.iter_mut().find(|(k, _)| *k == key) {
            Some((_, s)) => s.points.push(point),
            None => {
                let label = if others.is_empty() {
                    METRICS[m].name.to_string()
                } else {
                    others
                        .iter()
                        .map(|&d| format!("{}={}", grid.dims[d].key, grid.dims[d].values[ix[d]]))
                        .collect::<Vec<_>>()
                        .join(" ")
                };
                series.push((
                    key,
                    Series {
                        label,
                        points: vec![point],
                    },
                ));
            }
        }
    }
    let mut series: Vec<Series> = series.into_iter().map(|(_, s)| s).collect();
    for s in &mut series {
        s.points.sort_by(|a, b| a.0.total_cmp(&b.0));
    }
    let mut title = format!("{} vs {} — {context}", METRICS[m].name, grid.dims[x].key);
    if !fixed.is_empty() {
        let _ = write!(title, " ({})", fixed.join(", "));
    }
    LinePlot {
        title,
        x_label: axis_label(&grid.dims[x]),
        y_label: METRICS[m].label.to_string(),
        series,
    }
}

/// Writes `plot` as `stem.png` and `stem.svg`; returns both paths.
pub fn write_plot(plot: &LinePlot, stem: &Path) -> Result<Vec<PathBuf>, SweepError> {
    let mut written = Vec::new();
    for ext in ["png", "svg"] {
        let path = stem.with_extension(ext);
        let res = if ext == "png" {
            irqlab_plot::write_png(plot, &path)
        } else {
            irqlab_plot::write_svg(plot, &path)
        };
        res.map_err(|e| SweepError::Write {
            path: path.clone(),
            message: e.to_string(),
        })?;
        written.push(path);
    }
    Ok(written)
}

/// The key with its unit, guessed from kernel and fio naming conventions.
fn axis_label(d: &Dim) -> String {
    let k = d.key.as_str();
    let last = k.rsplit('.').next().unwrap_or(k);
    let unit = match &d.kind {
        KeyKind::Policy(PolicyKey::MaxLoop) => "rounds",
        KeyKind::Policy(PolicyKey::Budget | PolicyKey::Weight) => "CQEs",
        KeyKind::Seed => "seed",
        KeyKind::Job(opt) if opt == "iodepth" => "I/Os in flight per job",
        KeyKind::Job(opt) if opt == "numjobs" => "jobs",
        KeyKind::Job(opt) if opt.starts_with("iodepth_batch") => "I/Os",
        _ if last.ends_with("_ns") => "ns",
        _ if last.ends_with("_us") => "µs",
        _ if last.ends_with("_ms") => "ms",
        _ if last.ends_with("_hz") => "Hz",
        _ if last == "bytes_per_ns" => "GB/s",
        _ if last.ends_with("_bytes") => "bytes",
        _ if last == "max_iops" => "I/Os per second",
        _ if last == "queue_depth" => "entries",
        _ if last == "count" || last == "queues" => "count",
        _ if last.ends_with("_cv") => "ratio",
        _ => "",
    };
    if unit.is_empty() {
        k.to_string()
    } else {
        format!("{k} ({unit})")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grid() -> Grid {
        Grid::parse(&[
            "devices.0.count=1..3".into(),
            "delivery=remapped,posted".into(),
            "cpu.irq_entry_ns=250".into(),
        ])
        .unwrap()
    }

    fn results(n: usize) -> Vec<PointResult> {
        (0..n)
            .map(|i| PointResult {
                metrics: (0..METRICS.len())
                    .map(|m| (i * 10 + m) as f64 + 0.5)
                    .collect(),
            })
            .collect()
    }

    #[test]
    fn csv_has_keys_then_metrics_one_row_per_point() {
        let g = grid();
        let text = csv(&g, &results(6));
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 7);
        assert!(lines[0].starts_with("devices.0.count,delivery,cpu.irq_entry_ns,iops,"));
        assert!(
            lines[2].starts_with("1,posted,250,10.5,11.5"),
            "{}",
            lines[2]
        );
        let quoted = csv(&Grid::parse(&["coalesce=7,1".into()]).unwrap(), &results(1));
        assert!(
            quoted.lines().nth(1).unwrap().starts_with("\"7,1\","),
            "{quoted}"
        );
    }

    #[test]
    fn plot_has_a_series_per_other_combination() {
        let g = grid();
        let x = x_dim(&g, None).unwrap().unwrap();
        assert_eq!(x, 0);
        let p = plot(&g, &results(6), x, 0, "a.fio on example");
        assert_eq!(p.series.len(), 2);
        assert_eq!(p.series[0].label, "delivery=remapped");
        assert_eq!(
            p.series[0].points,
            vec![(1.0, 0.5), (2.0, 20.5), (3.0, 40.5)]
        );
        assert_eq!(p.x_label, "devices.0.count (count)");
        assert!(p.y_label.contains("I/Os per second"));
        assert!(p.title.contains("cpu.irq_entry_ns=250"), "{}", p.title);
    }

    #[test]
    fn x_must_be_swept_and_numeric() {
        let g = grid();
        assert!(
            x_dim(&g, Some("delivery"))
                .unwrap_err()
                .to_string()
                .contains("not all numbers")
        );
        assert!(
            x_dim(&g, Some("nope"))
                .unwrap_err()
                .to_string()
                .contains("not a swept key")
        );
        let cat = Grid::parse(&["delivery=remapped,posted".into()]).unwrap();
        assert_eq!(x_dim(&cat, None).ok(), Some(None));
    }

    #[test]
    fn table_aligns_columns() {
        let g = grid();
        let t = table(&g, &results(6), &[0, 5]);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines.len(), 7);
        assert!(lines[0].contains("iops") && lines[0].contains("clat_p99_us"));
        let w = lines[1].len();
        assert!(lines[1..].iter().all(|l| l.len() == w), "{t}");
    }
}
