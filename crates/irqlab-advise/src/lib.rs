//! `irqlab advise`: which interrupt policy helps a workload on a platform. The user's own
//! fio job is simulated under every policy the platform and the job allow (posted MSI
//! only on bare metal with interrupt remapping that posts; polling only with poll
//! queues and an engine that polls; device coalescing only where the device has it;
//! moderators, irq_poll, threaded handlers, reaping after submission), in parallel;
//! the candidates are ranked by the objective within the constraints, each with the knob
//! a user turns on a real machine; and the answer says which costs behind it were fitted
//! to or measured on a machine and which are priors (the platform's ledger).

mod candidates;
pub mod confidence;
mod error;
pub mod jobs;
pub mod measure;
mod output;
mod posting;
pub mod rank;

pub use candidates::{Candidate, Excluded, candidates};
pub use confidence::Confidence;
pub use error::AdviseError;
pub use measure::Figures;
pub use output::{chart, json, text};
pub use rank::{Constraints, Objective};

use irqlab_sim::ledger::Resolved;
use irqlab_sim::{Budget, SimOptions};
use serde::Serialize;
use std::path::Path;

/// What to advise on.
#[derive(Clone, Debug)]
pub struct Request {
    /// The job file's text, and its name for messages.
    pub job_text: String,
    pub job_name: String,
    /// The platform, resolved with its ledger.
    pub platform: Resolved,
    pub objective: Objective,
    pub constraints: Constraints,
    /// Simulated time of each candidate's window after the ramp, ns.
    pub window_ns: u64,
    pub seed: u64,
    pub threads: usize,
    pub budget: Budget,
    /// Try only these candidates (by name; `stock` is always tried: it is the baseline).
    pub only: Option<Vec<String>>,
    /// `--map PATTERN=DEVICE` rules for the job's files.
    pub maps: Vec<irqlab_inputs::MapRule>,
}

/// The job as it runs and the candidates to try.
#[derive(Clone, Debug)]
pub struct Plan {
    pub jobs: Vec<irqlab_fio::JobSpec>,
    pub candidates: Vec<Candidate>,
    pub excluded: Vec<Excluded>,
    pub notes: Vec<String>,
}

/// One candidate's result.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Row {
    #[serde(flatten)]
    pub candidate: Candidate,
    #[serde(flatten)]
    pub figures: Figures,
    /// Better than the stock kernel on the objective by this fraction.
    pub gain: f64,
    /// The constraints it misses (empty: it meets them).
    pub violates: Vec<String>,
}

/// The advice.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Advice {
    pub job: String,
    pub platform: String,
    /// The platform's file, as the command line can name it.
    pub platform_file: String,
    pub objective: Objective,
    pub constraints: Constraints,
    pub window_ms: f64,
    /// Ranked, best first.
    pub rows: Vec<Row>,
    pub excluded: Vec<Excluded>,
    /// The index into `rows` of the recommendation.
    pub recommended: usize,
    /// Why, in words.
    pub verdict: String,
    /// The costs behind the recommendation (and behind the stock kernel's figures).
    pub confidence: Confidence,
    /// What was done to the job (files mapped, runtime capped).
    pub notes: Vec<String>,
}

impl Advice {
    pub fn best(&self) -> &Row {
        &self.rows[self.recommended]
    }

    pub fn row(&self, name: &str) -> Option<&Row> {
        self.rows.iter().find(|r| r.candidate.name == name)
    }
}

/// The job on the platform and the candidates it allows (and `only` keeps).
pub fn plan(req: &Request) -> Result<Plan, AdviseError> {
    let p = &req.platform.platform;
    let jobs = irqlab_fio::parse_str(&req.job_text, Path::new(&req.job_name))
        .map_err(|e| AdviseError::Job(e.to_string()))?;
    let (jobs, notes) = jobs::shape(jobs, p, &req.maps, req.window_ns)?;
    let (mut cands, mut excluded) = candidates(p, &jobs);
    if let Some(only) = &req.only {
        let names: Vec<String> = cands.iter().map(|c| c.name.clone()).collect();
        if let Some(bad) = only.iter().find(|o| !names.contains(o)) {
            return Err(AdviseError::Only(format!(
                "--candidates: '{bad}' is not a candidate on this platform for this job; the candidates: {}{}",
                names.join(", "),
                if excluded.is_empty() {
                    String::new()
                } else {
                    format!(
                        " (not tried: {})",
                        excluded
                            .iter()
                            .map(|e| e.name.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    )
                }
            )));
        }
        let (keep, drop): (Vec<Candidate>, Vec<Candidate>) = cands
            .into_iter()
            .partition(|c| c.name == "stock" || only.contains(&c.name));
        cands = keep;
        excluded.extend(drop.into_iter().map(|c| Excluded {
            name: c.name,
            why: "left out by --candidates".into(),
        }));
    }
    Ok(Plan {
        jobs,
        candidates: cands,
        excluded,
        notes,
    })
}

/// Simulates every candidate and ranks them; `done` is called as each finishes.
pub fn advise(req: &Request, done: &(dyn Fn() + Sync)) -> Result<Advice, AdviseError> {
    run(req, plan(req)?, done)
}

/// Simulates the plan's candidates and ranks them.
pub fn run(req: &Request, plan: Plan, done: &(dyn Fn() + Sync)) -> Result<Advice, AdviseError> {
    let p = &req.platform.platform;
    let Plan {
        jobs,
        candidates: cands,
        excluded,
        notes,
    } = plan;
    let threads = req.threads.max(1).min(cands.len());
    let results = irqlab_calib::runner::par_map(&cands, threads, done, |c| {
        let policy = irqlab_inputs::parse_policy(&c.policy)
            .map_err(|e| AdviseError::Policy(c.name.clone(), e.to_string()))?;
        let opts = SimOptions::with_seed(req.seed).with_budget(req.budget);
        irqlab_sim::simulate(&jobs, p, &policy, &opts)
            .map(|r| measure::figures(&r))
            .map_err(|e| AdviseError::Sim(c.name.clone(), e.to_string()))
    });
    let mut figures = Vec::with_capacity(results.len());
    for r in results {
        figures.push(r?);
    }
    let stock = figures[0].clone();
    let order = rank::order(&figures, req.objective, &req.constraints);
    let rows: Vec<Row> = order
        .iter()
        .map(|&i| Row {
            candidate: cands[i].clone(),
            figures: figures[i].clone(),
            gain: req.objective.gain(&figures[i], &stock),
            violates: req.constraints.violated(&figures[i]),
        })
        .collect();
    let stock_at = rows
        .iter()
        .position(|r| r.candidate.name == "stock")
        .unwrap_or(0);
    let first = &rows[0];
    let (recommended, verdict) = if !first.violates.is_empty() {
        (
            0,
            format!(
                "no candidate meets the constraints; the nearest is {} ({})",
                first.candidate.name,
                first.violates.join(", ")
            ),
        )
    } else if first.candidate.name == "stock" || first.gain < rank::NOISE {
        let stock_ok = rows[stock_at].violates.is_empty();
        (
            if stock_ok { stock_at } else { 0 },
            format!(
                "keep the stock kernel: no policy is better on {} by more than {:.0}% (the model's noise between policies){}",
                req.objective,
                rank::NOISE * 100.0,
                if first.candidate.name == "stock" {
                    String::new()
                } else {
                    format!(
                        "; the best, {}, is {:+.1}%",
                        first.candidate.name,
                        first.gain * 100.0
                    )
                }
            ),
        )
    } else {
        let mainline = rows
            .iter()
            .find(|r| r.candidate.mainline && r.violates.is_empty())
            .filter(|r| !first.candidate.mainline && r.gain >= rank::NOISE);
        (
            0,
            format!(
                "{}: {:+.1}% {} over the stock kernel ({} -> {}){}",
                first.candidate.name,
                first.gain * 100.0,
                match req.objective {
                    Objective::Iops => "IOPS",
                    Objective::Latency => "on p99 latency",
                    Objective::Cpu => "on CPU per I/O",
                },
                output::objective_value(req.objective, &rows[stock_at].figures),
                output::objective_value(req.objective, &first.figures),
                mainline.map_or_else(String::new, |m| format!(
                    "; not in mainline Linux: the best with a mainline knob is {} ({:+.1}%)",
                    m.candidate.name,
                    m.gain * 100.0
                ))
            ),
        )
    };
    let mut behind = rows[recommended].candidate.costs.clone();
    for k in &rows[stock_at].candidate.costs {
        if !behind.contains(k) {
            behind.push(k.clone());
        }
    }
    let confidence = confidence::of(&req.platform, &behind);
    Ok(Advice {
        job: req.job_name.clone(),
        platform: p.name.clone(),
        platform_file: req.platform.file.display().to_string(),
        objective: req.objective,
        constraints: req.constraints,
        window_ms: req.window_ns as f64 / 1e6,
        rows,
        excluded,
        recommended,
        verdict,
        confidence,
        notes,
    })
}
