//! The reproduce table (text, CSV, JSON): experiment, row, metric, published, simulated,
//! and the signed error in percent.

use crate::metrics::error_pct;
use crate::scenario::{KnownMiss, MissKind};
use serde_json::json;

/// One line of the table.
#[derive(Clone, Debug, PartialEq)]
pub struct Row {
    pub experiment: String,
    pub row: String,
    pub metric: String,
    pub published: f64,
    pub simulated: f64,
    /// Where the published figure comes from (JSON output only).
    pub source: String,
    /// The documented reason for a miss, if docs/calibration.md gives one.
    pub miss: Option<KnownMiss>,
}

impl Row {
    pub fn error_pct(&self) -> f64 {
        error_pct(self.simulated, self.published)
    }

    /// Off by more than `pct` percent (or not computed).
    pub fn off_by_more(&self, pct: f64) -> bool {
        let e = self.error_pct();
        e.is_nan() || e.abs() > pct
    }

    /// The miss is a documented contradiction between published sources.
    pub fn contradicted(&self) -> bool {
        self.miss.is_some_and(|m| m.kind == MissKind::Contradiction)
    }

    /// The note column: the finding that explains a documented miss.
    fn note(&self) -> String {
        self.miss.map_or_else(String::new, |m| {
            format!("finding {} ({})", m.finding, m.kind.as_str())
        })
    }
}

/// Engineering notation with 4 significant digits: 834000 → "834.0K".
pub fn human(v: f64) -> String {
    let a = v.abs();
    let (div, suffix) = if a >= 1e9 {
        (1e9, "G")
    } else if a >= 1e6 {
        (1e6, "M")
    } else if a >= 1e4 {
        (1e3, "K")
    } else {
        (1.0, "")
    };
    let x = v / div;
    let decimals = if x.abs() >= 100.0 {
        1
    } else if x.abs() >= 10.0 {
        2
    } else {
        3
    };
    format!("{x:.decimals$}{suffix}")
}

pub fn text(rows: &[Row]) -> String {
    let head = [
        "experiment",
        "row",
        "metric",
        "published",
        "simulated",
        "error",
        "docs/calibration.md",
    ];
    let cells: Vec<[String; 7]> = rows
        .iter()
        .map(|r| {
            [
                r.experiment.clone(),
                r.row.clone(),
                r.metric.clone(),
                human(r.published),
                human(r.simulated),
                format!("{:+.1}%", r.error_pct()),
                r.note(),
            ]
        })
        .collect();
    let mut width = head.map(str::len);
    for c in &cells {
        for (w, s) in width.iter_mut().zip(c) {
            *w = (*w).max(s.chars().count());
        }
    }
    let line = |c: &[String]| -> String {
        let mut s = String::new();
        for (i, (cell, w)) in c.iter().zip(width).enumerate() {
            // Text columns left-aligned, numbers right-aligned. Padded by hand: format!'s
            // width stops at 65535, and a scenario's row may be longer.
            let pad = " ".repeat(w.saturating_sub(cell.chars().count()));
            if i < 3 || i == 6 {
                s.push_str(cell);
                s.push_str(&pad);
            } else {
                s.push_str(&pad);
                s.push_str(cell);
            }
            s.push_str(if i + 1 < c.len() { "  " } else { "\n" });
        }
        s
    };
    let trim = |s: String| s.trim_end().to_string() + "\n";
    let mut out = trim(line(&head.map(String::from)));
    out.push_str(&line(&width.map(|w| "-".repeat(w))));
    for c in &cells {
        out.push_str(&trim(line(c)));
    }
    out
}

/// One line under the table: how many figures are within `pct` percent, in all and per
/// experiment (a figure that could not be computed counts as off).
pub fn summary(rows: &[Row], pct: f64) -> String {
    let mut per: std::collections::BTreeMap<&str, (usize, usize)> = Default::default();
    for r in rows {
        let e = per.entry(r.experiment.as_str()).or_default();
        e.1 += 1;
        if r.error_pct().abs() <= pct {
            e.0 += 1;
        }
    }
    let within: usize = per.values().map(|v| v.0).sum();
    let parts: Vec<String> = per
        .iter()
        .map(|(e, (ok, n))| format!("{e} {ok}/{n}"))
        .collect();
    let mut out = format!(
        "within {pct}%: {within} of {} figures ({})\n",
        rows.len(),
        parts.join(", ")
    );
    // The misses by what explains them (docs/calibration.md, Findings).
    let off: Vec<&Row> = rows.iter().filter(|r| r.off_by_more(pct)).collect();
    if !off.is_empty() {
        let of_kind = |k: Option<MissKind>| {
            let mut findings: Vec<u32> = Vec::new();
            let n = off
                .iter()
                .filter(|r| r.miss.map(|m| m.kind) == k)
                .inspect(|r| findings.extend(r.miss.map(|m| m.finding)))
                .count();
            findings.sort_unstable();
            findings.dedup();
            let list: Vec<String> = findings.iter().map(u32::to_string).collect();
            (n, list.join(", "))
        };
        let (c, cf) = of_kind(Some(MissKind::Contradiction));
        let (l, lf) = of_kind(Some(MissKind::Limitation));
        let (u, _) = of_kind(None);
        out.push_str(&format!(
            "off by more: {c} where published sources contradict each other (findings {cf}), \
             {l} model limitations (findings {lf}), {u} unexplained\n"
        ));
    }
    out
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

pub fn csv(rows: &[Row]) -> String {
    let mut out =
        String::from("experiment,row,metric,published,simulated,error_pct,miss,finding\n");
    for r in rows {
        out.push_str(&format!(
            "{},{},{},{},{},{:.3},{},{}\n",
            csv_field(&r.experiment),
            csv_field(&r.row),
            csv_field(&r.metric),
            r.published,
            r.simulated,
            r.error_pct(),
            r.miss.map_or("", |m| m.kind.as_str()),
            r.miss.map_or_else(String::new, |m| m.finding.to_string()),
        ));
    }
    out
}

pub fn json(rows: &[Row]) -> serde_json::Value {
    json!(
        rows.iter()
            .map(|r| json!({
                "experiment": r.experiment,
                "row": r.row,
                "metric": r.metric,
                "published": r.published,
                "simulated": r.simulated,
                "error_pct": r.error_pct(),
                "source": r.source,
                "miss": r.miss.map(|m| json!({"kind": m.kind.as_str(), "finding": m.finding})),
            }))
            .collect::<Vec<_>>()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn figure(experiment: &str, published: f64, simulated: f64) -> Row {
        Row {
            experiment: experiment.into(),
            row: "r".into(),
            metric: "iops".into(),
            published,
            simulated,
            source: String::new(),
            miss: None,
        }
    }

    #[test]
    fn summary_counts_figures_within_the_limit_per_experiment() {
        let rows = [
            figure("C1", 100.0, 109.0),
            figure("C1", 100.0, 111.0),
            figure("C2", 100.0, f64::NAN),
            figure("C3", 100.0, 90.0),
        ];
        assert!(
            summary(&rows, 10.0)
                .starts_with("within 10%: 2 of 4 figures (C1 1/2, C2 0/1, C3 1/1)\n")
        );
    }

    fn row() -> Row {
        Row {
            experiment: "C1".into(),
            row: "remapped, 8 disks".into(),
            metric: "iops_per_disk".into(),
            published: 834_000.0,
            simulated: 917_400.0,
            source: String::new(),
            miss: None,
        }
    }

    #[test]
    fn text_table_aligns_and_signs_the_error() {
        let t = text(&[row()]);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines.len(), 3);
        assert!(
            lines[2].contains("834.0K") && lines[2].contains("917.4K"),
            "{t}"
        );
        assert!(lines[2].trim_end().ends_with("+10.0%"), "{t}");
        assert!(lines[1].starts_with("----------"), "{t}");
    }

    #[test]
    fn rows_wider_than_format_widths_are_padded() {
        let mut wide = row();
        wide.row = "r".repeat(70_000);
        let t = text(&[wide, row()]);
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines[2].len(), lines[3].len(), "columns line up");
        assert!(lines[3].trim_end().ends_with("+10.0%"));
    }

    #[test]
    fn csv_quotes_fields_with_commas() {
        let c = csv(&[row()]);
        assert!(c.contains("\"remapped, 8 disks\""), "{c}");
        assert!(c.trim_end().ends_with(",10.000,,"), "{c}");
    }

    #[test]
    fn human_numbers() {
        assert_eq!(human(1_943_000.0), "1.943M");
        assert_eq!(human(36.0), "36.00");
        assert_eq!(human(14_370_000.0), "14.37M");
    }

    #[test]
    fn documented_misses_are_counted_by_kind_and_only_contradictions_pass_check() {
        let miss = |kind, finding| Some(KnownMiss { kind, finding });
        let rows = [
            Row {
                miss: miss(MissKind::Contradiction, 6),
                ..figure("C5", 100.0, 130.0)
            },
            Row {
                miss: miss(MissKind::Limitation, 7),
                ..figure("FLOOD", 100.0, 200.0)
            },
            figure("C2", 100.0, 120.0),
            Row {
                // Documented, but within the limit: not a miss.
                miss: miss(MissKind::Limitation, 3),
                ..figure("V2", 100.0, 105.0)
            },
        ];
        let s = summary(&rows, 10.0);
        assert!(
            s.ends_with(
                "off by more: 1 where published sources contradict each other (findings 6), \
                 1 model limitations (findings 7), 1 unexplained\n"
            ),
            "{s}"
        );
        let failing = crate::reproduce::off_by_more(&rows, 10.0);
        assert_eq!(failing.len(), 2, "{failing:?}");
        assert!(failing.iter().all(|f| !f.starts_with("C5")), "{failing:?}");
        assert!(text(&rows).contains("finding 6 (contradiction)"));
    }
}
