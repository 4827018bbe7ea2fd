//! What was built, in words: the platform file's header and the command's report (the
//! tables chosen, the devices mapped, each fitted cost with its pins and residuals, what
//! could not be fitted, and the held-out runs' prediction errors).

use crate::Built;
use crate::fit::{Figure, Outcome};
use crate::template::Template;
use irqlab_capture::Capture;

fn fmt_value(v: f64) -> String {
    if v.abs() >= 1e6 {
        format!("{:.3}M", v / 1e6)
    } else if v.abs() >= 1e4 {
        format!("{:.1}K", v / 1e3)
    } else if v.abs() >= 100.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.2}")
    }
}

/// A table of figures: run, metric, measured, simulated, error.
pub fn figures(rows: &[Figure]) -> Vec<String> {
    let mut out = vec![format!(
        "{:<22} {:<18} {:>10} {:>10} {:>8}",
        "run", "metric", "measured", "model", "error"
    )];
    for f in rows {
        out.push(format!(
            "{:<22} {:<18} {:>10} {:>10} {:>+7.1}%",
            f.run,
            f.metric.name(),
            fmt_value(f.measured),
            fmt_value(f.simulated),
            f.error_pct()
        ));
    }
    out
}

/// The lines of the platform file's header (without `# `).
pub fn header(
    c: &Capture,
    t: &Template,
    o: &Outcome,
    used: &[String],
    held: &[Figure],
    left_out: &[String],
) -> Vec<String> {
    let mut h = vec![
        format!(
            "Platform of {}, built by `irqlab platform --from-capture` (irqlab {}) from {}{}.",
            t.machine,
            env!("CARGO_PKG_VERSION"),
            c.dir.display(),
            c.manifest
                .as_ref()
                .map_or_else(|| ", a capture laid out by hand".to_string(), |m| format!(", captured {}", m.date))
        ),
        "Every value has its provenance inline (docs/calibration.md \"The ledger\"); no shared table is".into(),
        "named, so the file loads from anywhere. Cites like [CAL] or [#10] are those of the table".into(),
        "named in the value's note.".into(),
        String::new(),
        "Tables:".into(),
    ];
    for tb in &t.tables {
        h.push(format!("  {}", tb.said()));
    }
    for k in &t.kinds_used {
        h.push(format!("  {k}"));
    }
    h.push("Devices (capture -> platform):".into());
    for d in &t.devices {
        h.push(format!("  {} -> {} ({})", d.capture, d.platform, d.file));
    }
    h.push(format!(
        "Fitted to run(s) {} ({} evaluations, objective {:.3e}){}:",
        used.join(", "),
        o.evals,
        o.objective,
        if held.is_empty() {
            String::new()
        } else {
            let mut names: Vec<&str> = held.iter().map(|f| f.run.as_str()).collect();
            names.dedup();
            format!("; held out: {}", names.join(", "))
        }
    ));
    for f in &o.fitted {
        h.push(format!(
            "  {} = {} (was {}): {}{}",
            f.param.key(),
            fmt_value(f.value),
            fmt_value(f.param.before),
            f.param.what,
            f.at_bound.map_or_else(String::new, |b| format!(
                ", AT ITS {} BOUND",
                b.to_uppercase()
            )) + &f.bound.map_or_else(String::new, |b| format!(
                " ({b}: its figures move one way only, so the runs bound it)"
            ))
        ));
        h.push(format!(
            "      pinned by {}",
            f.residuals
                .iter()
                .map(|x| format!("{}:{} ({:+.1}%)", x.run, x.metric, x.error_pct()))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    for d in &o.decided {
        h.push(format!("  {} = {}: {}", d.key, d.value, d.why));
    }
    for u in &o.unpinned {
        h.push(format!("  not fitted: {}: {}", u.param.key(), u.why));
    }
    for l in left_out {
        h.push(format!("  run left out: {l}"));
    }
    if !t.notes.is_empty() {
        h.push("Assumptions:".into());
        for n in &t.notes {
            h.push(format!("  {n}"));
        }
    }
    h.push("In sample (the runs fitted):".into());
    h.extend(figures(&o.in_sample).into_iter().map(|l| format!("  {l}")));
    if !held.is_empty() {
        h.push("Held out (predicted by the platform fitted to the others):".into());
        h.extend(figures(held).into_iter().map(|l| format!("  {l}")));
    }
    h
}

/// The command's report: the header's contents, for a terminal.
pub fn report(b: &Built) -> String {
    let mut s = String::new();
    for l in b.platform_text.lines().take_while(|l| l.starts_with('#')) {
        s.push_str(l.strip_prefix("# ").unwrap_or(l.trim_start_matches('#')));
        s.push('\n');
    }
    s
}
