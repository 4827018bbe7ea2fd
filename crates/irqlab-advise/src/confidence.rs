//! How sure an answer is: the costs it rests on most, and whether each was fitted to or
//! measured on a named machine, fitted to published figures, or is a prior (an
//! estimate, a data sheet, a paper's figure for other hardware, a built-in default),
//! from the platform's ledger.

use irqlab_sim::ledger::{Resolved, SourceKind};
use serde::Serialize;

/// What a cost rests on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Basis {
    /// Fitted to, or measured on, a named machine (`machine = ...`).
    Machine,
    /// Fitted to published figures (scenarios of other rigs).
    Published,
    /// A prior: an estimate, a data sheet, a paper or list figure, the kernel's
    /// constant, physics, a default.
    Prior,
}

/// One cost behind an answer.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Cost {
    pub key: String,
    pub value: String,
    pub source: String,
    pub machine: Option<String>,
    pub basis: Basis,
}

/// The costs behind a candidate.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Confidence {
    pub costs: Vec<Cost>,
    pub machine: usize,
    pub published: usize,
    pub prior: usize,
}

impl Confidence {
    /// One line: how many of the costs are this machine's own.
    pub fn summary(&self) -> String {
        let n = self.costs.len();
        let names = |b: Basis| {
            self.costs
                .iter()
                .filter(|c| c.basis == b)
                .map(|c| c.key.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        };
        let mut s = format!(
            "{} of the {n} costs behind it were fitted to or measured on a named machine",
            self.machine
        );
        if self.machine > 0 {
            s.push_str(&format!(" ({})", names(Basis::Machine)));
        }
        if self.published > 0 {
            s.push_str(&format!(
                "; {} fitted to published figures of other rigs ({})",
                self.published,
                names(Basis::Published)
            ));
        }
        if self.prior > 0 {
            s.push_str(&format!(
                "; {} are priors (estimates, data sheets, defaults: {})",
                self.prior,
                names(Basis::Prior)
            ));
        }
        s
    }
}

/// The keys of `pattern` in `r` (`devices.*.read_ns`: every device group's).
fn expand(r: &Resolved, pattern: &str) -> Vec<String> {
    if !pattern.contains('*') {
        return vec![pattern.to_string()];
    }
    let (head, tail) = pattern.split_once(".*.").unwrap_or((pattern, ""));
    let n = match head {
        "devices" => r.platform.devices.len(),
        "root_ports" => r.platform.root_ports.len(),
        _ => 0,
    };
    (0..n).map(|i| format!("{head}.{i}.{tail}")).collect()
}

/// The costs `keys` (patterns) rest on, by the ledger of `r`.
pub fn of(r: &Resolved, keys: &[String]) -> Confidence {
    let mut costs = Vec::new();
    for k in keys.iter().flat_map(|k| expand(r, k)) {
        let Some(e) = r.ledger.get(&k) else {
            continue;
        };
        let (source, machine, basis) = match &e.provenance {
            Some(p) => {
                let basis = match (p.source, &p.machine) {
                    (_, Some(_)) => Basis::Machine,
                    (SourceKind::Fit, None) => Basis::Published,
                    _ => Basis::Prior,
                };
                (p.source.to_string(), p.machine.clone(), basis)
            }
            None => ("unsourced".to_string(), None, Basis::Prior),
        };
        costs.push(Cost {
            key: k,
            value: e.value.to_string(),
            source,
            machine,
            basis,
        });
    }
    let count = |b: Basis| costs.iter().filter(|c| c.basis == b).count();
    Confidence {
        machine: count(Basis::Machine),
        published: count(Basis::Published),
        prior: count(Basis::Prior),
        costs,
    }
}
