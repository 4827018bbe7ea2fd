//! The cross-validation table (text, CSV, JSON): in sample and out of sample side by
//! side, and the summary line "out of sample within 15%: N of M cross-validated figures;
//! K not cross-validated (...)".

use crate::crossval::{CvReport, CvRow, Status};
use crate::metrics::error_pct;
use crate::table::human;
use serde_json::json;

/// The limit the summary counts figures within, percent.
pub const WITHIN_PCT: f64 = 15.0;

fn out_err(r: &CvRow) -> Option<f64> {
    r.out_of_sample.map(|v| error_pct(v, r.published))
}

fn basis(r: &CvRow) -> String {
    let base = match r.status {
        Status::Predicted => "prediction".to_string(),
        Status::Refitted => format!("refit: {}", r.parameters.join(", ")),
        Status::NotCrossValidated => "not cross-validated".to_string(),
    };
    if r.unmoved.is_empty() || r.status == Status::NotCrossValidated {
        base
    } else {
        format!("{base}; unmoved by {}", r.unmoved.join(", "))
    }
}

/// The parameters pinned only by experiment `exp`'s figures that some of its figures
/// do not move with, and how many figures that frees.
fn unmoved(rows: &[CvRow], exp: &str) -> (Vec<String>, usize) {
    let freed: Vec<&CvRow> = rows
        .iter()
        .filter(|r| {
            r.experiment == exp && r.status != Status::NotCrossValidated && !r.unmoved.is_empty()
        })
        .collect();
    let mut v: Vec<String> = freed
        .iter()
        .flat_map(|r| r.unmoved.iter().cloned())
        .collect();
    v.sort();
    v.dedup();
    (v, freed.len())
}

/// `p:a, p:b, q:c` as `p: a, b; q: c`.
fn grouped(labels: &[String]) -> String {
    let mut groups: Vec<(String, Vec<String>)> = Vec::new();
    for l in labels {
        let (owner, key) = l.split_once(':').unwrap_or(("", l));
        match groups.iter_mut().find(|(o, _)| o == owner) {
            Some((_, keys)) => keys.push(key.to_string()),
            None => groups.push((owner.to_string(), vec![key.to_string()])),
        }
    }
    groups
        .iter()
        .map(|(o, keys)| format!("{o}: {}", keys.join(", ")))
        .collect::<Vec<_>>()
        .join("; ")
}

/// The parameters pinned only by experiment `exp`'s figures.
fn lone(rows: &[CvRow], exp: Option<&str>) -> Vec<String> {
    let mut v: Vec<String> = rows
        .iter()
        .filter(|r| r.status == Status::NotCrossValidated && exp.is_none_or(|e| r.experiment == e))
        .flat_map(|r| r.parameters.iter().cloned())
        .collect();
    v.sort();
    v.dedup();
    v
}

pub fn text(report: &CvReport) -> String {
    let head = [
        "experiment",
        "row",
        "metric",
        "published",
        "in sample",
        "error",
        "out of sample",
        "error",
        "out of sample from",
    ];
    let cells: Vec<[String; 9]> = report
        .rows
        .iter()
        .map(|r| {
            [
                r.experiment.clone(),
                r.row.clone(),
                r.metric.clone(),
                human(r.published),
                human(r.in_sample),
                format!("{:+.1}%", error_pct(r.in_sample, r.published)),
                r.out_of_sample.map_or("-".to_string(), human),
                out_err(r).map_or("-".to_string(), |e| format!("{e:+.1}%")),
                basis(r),
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
            let pad = " ".repeat(w.saturating_sub(cell.chars().count()));
            if i < 3 || i == 8 {
                s.push_str(cell);
                s.push_str(&pad);
            } else {
                s.push_str(&pad);
                s.push_str(cell);
            }
            s.push_str(if i + 1 < c.len() { "  " } else { "\n" });
        }
        s.trim_end().to_string() + "\n"
    };
    let mut out = line(&head.map(String::from));
    out.push_str(&line(&width.map(|w| "-".repeat(w))));
    for c in &cells {
        out.push_str(&line(c));
    }
    out.push('\n');
    let mut experiments: Vec<&str> = Vec::new();
    for r in &report.rows {
        if !experiments.contains(&r.experiment.as_str()) {
            experiments.push(&r.experiment);
        }
    }
    for e in experiments {
        let l = lone(&report.rows, Some(e));
        if !l.is_empty() {
            out.push_str(&format!(
                "{e} not cross-validated: {} (pinned only by {e}'s figures)\n",
                grouped(&l)
            ));
        }
        let (u, n) = unmoved(&report.rows, e);
        if n > 0 {
            out.push_str(&format!(
                "{e}: {n} figure{} unmoved across the range of {} (within {}%), cross-validated without {}\n",
                if n == 1 { "" } else { "s" },
                grouped(&u),
                crate::crossval::UNMOVED_PCT,
                if u.len() == 1 { "it" } else { "them" }
            ));
        }
    }
    for f in &report.refits {
        out.push_str(&format!(
            "without {}: {} (fitted to {} figure{} of other experiments, {} evaluations)\n",
            f.experiment,
            f.values.join(", "),
            f.targets,
            if f.targets == 1 { "" } else { "s" },
            f.evals
        ));
    }
    out.push_str(&summary(report));
    out
}

/// The counts: in sample, then out of sample over the cross-validated figures.
pub fn summary(report: &CvReport) -> String {
    let rows = &report.rows;
    let within = |e: Option<f64>| e.is_some_and(|e| e.abs() <= WITHIN_PCT);
    let in_ok = rows
        .iter()
        .filter(|r| within(Some(error_pct(r.in_sample, r.published))))
        .count();
    let cv: Vec<&CvRow> = rows
        .iter()
        .filter(|r| r.status != Status::NotCrossValidated)
        .collect();
    let out_ok = cv.iter().filter(|r| within(out_err(r))).count();
    let lone = lone(rows, None);
    let not = rows.len() - cv.len();
    format!(
        "in sample within {WITHIN_PCT}%: {in_ok} of {} figures\n\
         out of sample within {WITHIN_PCT}%: {out_ok} of {} cross-validated figures; {not} not cross-validated{}\n",
        rows.len(),
        cv.len(),
        if lone.is_empty() {
            String::new()
        } else {
            format!(
                " ({}: pinned only by their own experiment's figures)",
                grouped(&lone)
            )
        }
    )
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

pub fn csv(report: &CvReport) -> String {
    let mut out = String::from(
        "experiment,row,metric,published,in_sample,in_sample_error_pct,out_of_sample,out_of_sample_error_pct,status,parameters\n",
    );
    for r in &report.rows {
        out.push_str(&format!(
            "{},{},{},{},{},{:.3},{},{},{},{}\n",
            csv_field(&r.experiment),
            csv_field(&r.row),
            csv_field(&r.metric),
            r.published,
            r.in_sample,
            error_pct(r.in_sample, r.published),
            r.out_of_sample.map_or(String::new(), |v| v.to_string()),
            out_err(r).map_or(String::new(), |e| format!("{e:.3}")),
            r.status.as_str(),
            csv_field(&r.parameters.join("; ")),
        ));
    }
    out
}

pub fn json(report: &CvReport) -> serde_json::Value {
    json!({
        "rows": report.rows.iter().map(|r| json!({
            "experiment": r.experiment,
            "row": r.row,
            "metric": r.metric,
            "published": r.published,
            "in_sample": r.in_sample,
            "in_sample_error_pct": error_pct(r.in_sample, r.published),
            "out_of_sample": r.out_of_sample,
            "out_of_sample_error_pct": out_err(r),
            "status": r.status.as_str(),
            "parameters": r.parameters,
            "unmoved": r.unmoved,
        })).collect::<Vec<_>>(),
        "refits": report.refits,
        "summary": summary(report).lines().collect::<Vec<_>>(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(status: Status, published: f64, out: Option<f64>, params: &[&str]) -> CvRow {
        CvRow {
            experiment: "E".into(),
            row: "r".into(),
            metric: "iops".into(),
            published,
            in_sample: published,
            out_of_sample: out,
            status,
            parameters: params.iter().map(|s| s.to_string()).collect(),
            unmoved: Vec::new(),
        }
    }

    #[test]
    fn the_summary_counts_cross_validated_figures_and_names_the_rest() {
        let report = CvReport {
            rows: vec![
                row(Status::Predicted, 100.0, Some(110.0), &[]),
                row(Status::Refitted, 100.0, Some(130.0), &["p:x=1"]),
                row(Status::NotCrossValidated, 100.0, None, &["p:y"]),
                row(Status::NotCrossValidated, 100.0, None, &["p:y"]),
            ],
            refits: vec![],
        };
        assert_eq!(
            summary(&report),
            "in sample within 15%: 4 of 4 figures\n\
             out of sample within 15%: 1 of 2 cross-validated figures; 2 not cross-validated (p: y: pinned only by their own experiment's figures)\n"
        );
        let t = text(&report);
        assert!(
            t.contains("E not cross-validated: p: y (pinned only by E's figures)"),
            "{t}"
        );
        assert!(t.contains("refit: p:x=1"), "{t}");
        assert!(
            csv(&report)
                .lines()
                .nth(3)
                .unwrap()
                .ends_with(",,,not cross-validated,p:y")
        );
    }
}
