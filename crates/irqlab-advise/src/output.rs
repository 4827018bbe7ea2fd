//! The advice as a table for people, as JSON, and as a chart (p99 latency against IOPS,
//! one point per candidate).

use crate::measure::Figures;
use crate::rank::Objective;
use crate::{Advice, AdviseError};
use std::path::Path;

fn si(v: f64) -> String {
    if v >= 1e6 {
        format!("{:.3}M", v / 1e6)
    } else if v >= 1e4 {
        format!("{:.1}K", v / 1e3)
    } else {
        format!("{v:.0}")
    }
}

/// The objective's figure, with its unit.
pub fn objective_value(o: Objective, f: &Figures) -> String {
    match o {
        Objective::Iops => format!("{} IOPS", si(f.iops)),
        Objective::Latency => format!("p99 {:.1} us", f.clat_p99_us),
        Objective::Cpu => format!("{:.2} us of CPU per I/O", f.cpu_per_io_us),
    }
}

/// The table, the recommendation with its knob, and how sure it is.
pub fn text(a: &Advice) -> String {
    let mut s = format!(
        "advise: {} on platform {}, objective {}{}; {} ms simulated per candidate\n",
        a.job,
        a.platform,
        a.objective,
        {
            let mut c = Vec::new();
            if let Some(m) = a.constraints.max_p99_us {
                c.push(format!("p99 <= {m} us"));
            }
            if let Some(m) = a.constraints.max_cpu_pct {
                c.push(format!("CPU <= {m}%"));
            }
            if c.is_empty() {
                String::new()
            } else {
                format!(" within {}", c.join(", "))
            }
        },
        a.window_ms
    );
    for n in &a.notes {
        s.push_str(&format!("note: {n}\n"));
    }
    s.push_str(&format!(
        "\n{:>2}  {:<18} {:>9} {:>9} {:>9} {:>9} {:>7} {:>10} {:>9} {:>8}  {}\n",
        "#",
        "candidate",
        "IOPS",
        "p50 us",
        "p99 us",
        "CPU/IO us",
        "CPU %",
        "irq/s",
        "tick p99",
        "vs stock",
        "meets"
    ));
    for (i, r) in a.rows.iter().enumerate() {
        let f = &r.figures;
        s.push_str(&format!(
            "{:>2}  {:<18} {:>9} {:>9.1} {:>9.1} {:>9.2} {:>7.1} {:>10} {:>9.1} {:>+7.1}%  {}\n",
            i + 1,
            r.candidate.name,
            si(f.iops),
            f.clat_p50_us,
            f.clat_p99_us,
            f.cpu_per_io_us,
            f.cpu_pct,
            si(f.interrupts_per_s),
            f.tick_late_p99_us,
            r.gain * 100.0,
            if r.violates.is_empty() {
                "yes".to_string()
            } else {
                format!("no: {}", r.violates.join(", "))
            }
        ));
    }
    s.push_str("   (CPU/IO: every CPU's busy time per I/O; CPU %: of all the platform's CPUs; tick p99: the worst CPU's timer-tick lateness, us; vs stock: on the objective)\n");
    let by_option: Vec<&str> = a
        .excluded
        .iter()
        .filter(|e| e.why == "left out by --candidates")
        .map(|e| e.name.as_str())
        .collect();
    for e in a
        .excluded
        .iter()
        .filter(|e| e.why != "left out by --candidates")
    {
        s.push_str(&format!("not tried: {}: {}\n", e.name, e.why));
    }
    if !by_option.is_empty() {
        s.push_str(&format!(
            "not tried (--candidates): {}\n",
            by_option.join(", ")
        ));
    }
    let best = a.best();
    s.push_str(&format!("\nrecommendation: {}\n", a.verdict));
    s.push_str(&format!(
        "  knob: {}{}\n",
        best.candidate.knob,
        if best.candidate.mainline {
            ""
        } else {
            " [not in mainline Linux]"
        }
    ));
    s.push_str(&format!(
        "  irqlab run {} --platform {} {}\n",
        a.job, a.platform_file, best.candidate.policy
    ));
    s.push_str(&format!("how sure: {}\n", a.confidence.summary()));
    if a.confidence.machine == 0 {
        s.push_str("  none of them is this machine's own: the answer is the model's with its tables' values; irqlab platform --from-capture fits the ones a capture pins\n");
    }
    s
}

/// The advice as JSON.
pub fn json(a: &Advice) -> serde_json::Value {
    let mut v = serde_json::to_value(a).unwrap_or(serde_json::Value::Null);
    if let Some(o) = v.as_object_mut() {
        o.insert(
            "recommendation".into(),
            serde_json::json!({
                "candidate": a.best().candidate.name,
                "knob": a.best().candidate.knob,
                "policy": a.best().candidate.policy,
                "verdict": a.verdict,
                "confidence": a.confidence.summary(),
            }),
        );
    }
    v
}

/// p99 completion latency against IOPS, a point per candidate, as PNG or SVG by the
/// file's extension.
pub fn chart(a: &Advice, path: &Path) -> Result<(), AdviseError> {
    let plot = irqlab_plot::LinePlot {
        title: format!(
            "advise: {} on {} (p99 against IOPS per policy)",
            a.job, a.platform
        ),
        x_label: "IOPS (I/O/s)".into(),
        y_label: "p99 completion latency (us)".into(),
        series: a
            .rows
            .iter()
            .map(|r| irqlab_plot::Series {
                label: r.candidate.name.clone(),
                points: vec![(r.figures.iops, r.figures.clat_p99_us)],
            })
            .collect(),
    };
    let r = match irqlab_plot::timeline::image_format(path) {
        Some(irqlab_plot::timeline::ImageFormat::Png) => irqlab_plot::write_png(&plot, path),
        Some(irqlab_plot::timeline::ImageFormat::Svg) => irqlab_plot::write_svg(&plot, path),
        None => {
            return Err(AdviseError::Chart(format!(
                "--chart {}: expected a file name ending in .png or .svg",
                path.display()
            )));
        }
    };
    r.map_err(|e| AdviseError::Chart(e.to_string()))
}
