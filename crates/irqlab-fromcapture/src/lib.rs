//! A platform file for a machine, from its capture (`irqlab platform --from-capture`):
//! its CPUs, kernel, disks, queues, vectors and their CPUs as the capture shows them;
//! every cost it cannot see from the shared tables (platforms/cpus/ by the CPU's core,
//! platforms/kernels/ by the kernel version, nearest known when there is no exact one)
//! and the kind tables (platforms/kinds/); then the few costs the capture's runs pin
//! (the device's service time and ceiling, the interrupt and wake-up or CPU path, the
//! IIO stack's part of a remapped MSI, the device's interrupt rule) fitted to them with the
//! calibration machinery. Every value is written with its provenance; fitted ones with
//! the runs that pin them, their residuals and whether they ended at a bound. Runs left
//! out of the fit (`runs`) are predicted, so how well the rest explain them is measured.

mod doc;
mod error;
pub mod fit;
mod kinds;
mod measure;
pub mod runs;
pub mod synthetic;
pub mod tables;
pub mod template;
mod text;
mod virtio;

pub use doc::{Doc, Item, Section};
pub use error::FromCaptureError;
pub use fit::{Decided, Figure, FittedCost, Outcome, Unpinned};
pub use text::report;

use irqlab_calib::{Evaluator, Metric};
use irqlab_capture::Capture;
use irqlab_sim::Budget;
use irqlab_sim::ledger::{Pin, Provenance, Range, Resolved, SourceKind};
use std::path::PathBuf;

/// How to build.
#[derive(Clone, Debug)]
pub struct Options {
    /// Where cpus/, kernels/ and kinds/ are (the platforms directory).
    pub platforms: PathBuf,
    /// Fit to these runs only (None: all); the others are predicted.
    pub runs: Option<Vec<String>>,
    /// Objective evaluations of Nelder–Mead.
    pub max_evals: usize,
    pub seed: u64,
    /// I/Os each run's simulated window aims at.
    pub ios_per_run: u64,
    /// The shortest simulated window of a run, ns.
    pub min_window_ns: u64,
    pub budget: Budget,
}

impl Options {
    pub fn new(platforms: PathBuf) -> Options {
        Options {
            platforms,
            runs: None,
            max_evals: 120,
            seed: 1,
            ios_per_run: 8000,
            min_window_ns: 20_000_000,
            budget: Budget::DEFAULT,
        }
    }
}

/// The platform built, and how.
#[derive(Clone, Debug)]
pub struct Built {
    pub machine: String,
    /// The platform file, self-contained (no table named), every value with provenance.
    pub platform_text: String,
    /// It, loaded.
    pub resolved: Resolved,
    pub template: template::Template,
    pub used: Vec<String>,
    /// Runs the fit could not use, and why.
    pub left_out: Vec<String>,
    pub outcome: Outcome,
    /// The runs not used, predicted: IOPS, mean clat and I/Os per interrupt.
    pub held_out: Vec<Figure>,
}

/// Builds the platform of `c`; `eval` runs the simulations, `progress` hears of each.
pub fn build(
    c: &Capture,
    opts: &Options,
    eval: &mut dyn Evaluator,
    progress: &mut dyn FnMut(usize),
) -> Result<Built, FromCaptureError> {
    let t = template::build(c, &opts.platforms)?;
    let (all, mut left_out) = runs::fit_runs(c, &t, opts.ios_per_run, opts.min_window_ns);
    // A run the model refuses on this platform (more I/Os in flight than a virtqueue's
    // ring holds, ...) is left out, with the model's reason.
    let start_text = t.doc.render();
    let origin = format!("platform of {}", t.machine);
    let flat = irqlab_sim::Platform::from_toml(&start_text, &origin, &[])
        .and_then(|p| p.to_toml())
        .map_err(|e| FromCaptureError::Platform(e.to_string()))?;
    let mut all = all;
    all.retain(|r| {
        let task = irqlab_calib::EvalTask {
            scenario: format!("capture run {}", r.name),
            job_name: format!("{}.fio", r.name),
            job_text: r.job_text.clone(),
            platform_text: flat.clone(),
            platform_origin: origin.clone(),
            sets: Vec::new(),
            policy: String::new(),
            disks: None,
            jobs_per_disk: None,
            vectors_per_cpu: None,
            seed: opts.seed,
            metrics: Vec::new(),
            budget: opts.budget,
        };
        match task.job_text.is_empty() {
            true => true,
            false => match check_run(&task) {
                Ok(()) => true,
                Err(why) => {
                    left_out.push(format!("{}: the model cannot run it here: {why}", r.name));
                    false
                }
            },
        }
    });
    if all.is_empty() {
        return Err(FromCaptureError::NoUsableRun {
            dir: c.dir.clone(),
            why: if left_out.is_empty() {
                vec!["the capture has no fio run (recorded with --no-fio?)".into()]
            } else {
                left_out
            },
        });
    }
    let names: Vec<String> = all.iter().map(|r| r.name.clone()).collect();
    let used: Vec<&runs::FitRun> = match &opts.runs {
        None => all.iter().collect(),
        Some(sel) => {
            let mut v = Vec::new();
            for s in sel {
                match all.iter().find(|r| &r.name == s) {
                    Some(r) => v.push(r),
                    None => {
                        return Err(FromCaptureError::UnknownRun {
                            name: s.clone(),
                            runs: names.clone(),
                        });
                    }
                }
            }
            v
        }
    };
    let mut ctx = fit::Ctx {
        platform_text: &flat,
        origin: &origin,
        seed: opts.seed,
        budget: opts.budget,
        eval,
        progress,
        evals: 0,
    };
    let outcome = fit::fit(
        &t.doc,
        &t.group_kinds,
        t.devices.len(),
        t.remapping,
        &used,
        opts.max_evals,
        &mut ctx,
    )?;
    let held: Vec<&runs::FitRun> = all
        .iter()
        .filter(|r| !used.iter().any(|u| u.name == r.name))
        .collect();
    let mut held_out = Vec::new();
    if !held.is_empty() {
        let wanted = [Metric::Iops, Metric::ClatMeanUs, Metric::IosPerInterrupt];
        let out = ctx.simulate(&held, &outcome.sets, &wanted);
        for (r, o) in held.iter().zip(out) {
            let o = o.ok_or_else(|| FromCaptureError::Run {
                run: r.name.clone(),
                why: format!(
                    "it cannot be simulated on the fitted platform: {}",
                    ctx.why(r, &outcome.sets)
                ),
            })?;
            for (k, m) in wanted.iter().enumerate() {
                if let Some(v) = r.value(*m) {
                    held_out.push(Figure {
                        run: r.name.clone(),
                        metric: *m,
                        measured: v,
                        simulated: o[k],
                    });
                }
            }
        }
    }
    let used_names: Vec<String> = used.iter().map(|r| r.name.clone()).collect();
    let mut doc = t.doc.clone();
    write_fit(&mut doc, &t, &outcome);
    let built_header = text::header(c, &t, &outcome, &used_names, &held_out, &left_out);
    doc.header = built_header;
    let platform_text = doc.render();
    let resolved = irqlab_sim::ledger::from_text(&platform_text, &origin, None, &[])
        .map_err(|e| FromCaptureError::Platform(e.to_string()))?;
    Ok(Built {
        machine: t.machine.clone(),
        platform_text,
        resolved,
        template: t,
        used: used_names,
        left_out,
        outcome,
        held_out,
    })
}

/// Whether the model takes the run's job on the platform: it is built, not simulated.
fn check_run(task: &irqlab_calib::EvalTask) -> Result<(), String> {
    let mut short = task.clone();
    // A window of a microsecond: enough to refuse what cannot run, nothing to simulate.
    short.job_text = short
        .job_text
        .lines()
        .map(|l| {
            let k = l.split_once('=').map_or("", |(k, _)| k.trim());
            match k {
                "runtime" => "runtime=1us".to_string(),
                "ramp_time" => "ramp_time=0".to_string(),
                _ => l.to_string(),
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
    short.run().map(|_| ()).map_err(|e| e.to_string())
}

/// The fitted values and decisions into the document, with their provenance.
fn write_fit(doc: &mut doc::Doc, t: &template::Template, o: &Outcome) {
    for f in &o.fitted {
        let p = &f.param;
        let mut prov = Provenance::new(SourceKind::Fit);
        prov.machine = Some(t.machine.clone());
        prov.pins = f
            .pins
            .iter()
            .filter_map(|(r, m)| Pin::parse(&format!("{r}:{m}")))
            .collect();
        prov.range = Some(Range { lo: p.lo, hi: p.hi });
        let residuals = f
            .residuals
            .iter()
            .map(|x| format!("{}:{} {:+.1}%", x.run, x.metric, x.error_pct()))
            .collect::<Vec<_>>()
            .join(", ");
        let bound = f.at_bound.map_or_else(String::new, |b| {
            format!("; AT THE {} BOUND of its range", b.to_uppercase())
        });
        let bounded = f.bound.map_or_else(String::new, |b| {
            format!(
                "; the runs bound it ({b} this: its figures move one way only), so the value is where the fit ended"
            )
        });
        prov.note = Some(format!(
            "{}: fitted to the capture's runs (was {} before the fit); residuals {residuals}{bound}{bounded}",
            p.what, p.before
        ));
        let value = if p.integer {
            toml::Value::Integer(f.value.round() as i64)
        } else {
            toml::Value::Float((f.value * 1000.0).round() / 1000.0)
        };
        for k in &p.keys {
            doc.set(k, value.clone(), Some(prov.clone()));
        }
    }
    for u in &o.unpinned {
        if let Some((v, why)) = &u.floor {
            let mut prov = Provenance::new(SourceKind::Measured);
            prov.machine = Some(t.machine.clone());
            prov.cite = Some("capture runs".into());
            prov.note = Some(format!(
                "{}: at least this ({why}); the model reaches the run's figures by another limit, so the runs pin it no further",
                u.param.what
            ));
            let value = if u.param.integer {
                toml::Value::Integer(v.round() as i64)
            } else {
                toml::Value::Float(v.round())
            };
            for k in &u.param.keys {
                doc.set(k, value.clone(), Some(prov.clone()));
            }
        }
    }
    for d in &o.decided {
        if d.value == "per_completion" {
            continue;
        }
        let mut prov = Provenance::new(SourceKind::Measured);
        prov.machine = Some(t.machine.clone());
        prov.cite = Some(format!("capture runs {}", d.runs.join(", ")));
        prov.note = Some(d.why.clone());
        let (leaf, value) = match d.key.rsplit_once('.') {
            Some((_, leaf)) if leaf == "coalesce_count" => {
                (leaf.to_string(), toml::Value::Integer(256))
            }
            Some((_, leaf)) => (leaf.to_string(), toml::Value::String(d.value.clone())),
            None => continue,
        };
        let groups = doc
            .sections
            .iter()
            .filter(|s| s.header == "devices")
            .count();
        for g in 0..groups {
            doc.set(
                &format!("devices.{g}.{leaf}"),
                value.clone(),
                Some(prov.clone()),
            );
        }
    }
}
