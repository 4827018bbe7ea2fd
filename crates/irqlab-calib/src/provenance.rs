//! `irqlab platform --check`: every value of a platform (and of the shared tables it
//! names) has provenance, every fit names the figures that pin it and its range, every
//! pin is a figure of a scenario that uses the value, no value is outside its range, and
//! no fit rests on a single figure without an independent source.

use crate::scenario::Scenario;
use irqlab_sim::ledger::{self, Entry, Origin, Resolved, SourceKind, TableKind, is_structural};
use serde::Serialize;
use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};

/// What is wrong with a value's provenance.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ProblemKind {
    /// The platform or table does not load.
    Load,
    /// A bare value: no source.
    Unsourced,
    /// A fit that names no figure.
    FitWithoutPins,
    /// A fit without a range to refit it within.
    FitWithoutRange,
    /// A pin that names no scenario, or a metric the scenario does not publish.
    UnknownPin,
    /// A pin whose scenario runs a platform that does not take this value.
    PinElsewhere,
    /// A value outside its own range.
    OutOfRange,
    /// A fit pinned by one figure, with no independent source (`also`).
    SingleFigure,
}

impl ProblemKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ProblemKind::Load => "does not load",
            ProblemKind::Unsourced => "unsourced",
            ProblemKind::FitWithoutPins => "fit without pins",
            ProblemKind::FitWithoutRange => "fit without a range",
            ProblemKind::UnknownPin => "unknown pin",
            ProblemKind::PinElsewhere => "pin on another platform",
            ProblemKind::OutOfRange => "outside its range",
            ProblemKind::SingleFigure => "pinned by one figure",
        }
    }
}

/// One problem: where, which key, what.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Problem {
    /// FILE:LINE of the value (or the file).
    pub at: String,
    pub key: String,
    pub kind: ProblemKind,
    pub message: String,
}

/// The published figures pins name: (scenario id, metric) pairs.
pub type Figures = BTreeSet<(String, String)>;

/// Scenarios by file, and their platforms resolved once each.
pub struct Pins<'a> {
    dir: PathBuf,
    by_path: HashMap<PathBuf, &'a Scenario>,
    platforms: HashMap<PathBuf, Option<Resolved>>,
}

fn canon(p: &Path) -> PathBuf {
    std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf())
}

impl<'a> Pins<'a> {
    /// `scenarios` were loaded from `dir` (pins are paths under it).
    pub fn new(dir: &Path, scenarios: &'a [Scenario]) -> Pins<'a> {
        Pins {
            dir: dir.to_path_buf(),
            by_path: scenarios.iter().map(|s| (canon(&s.path), s)).collect(),
            platforms: HashMap::new(),
        }
    }

    /// The scenario a pin's id names.
    pub fn scenario(&self, id: &str) -> Option<&'a Scenario> {
        self.by_path
            .get(&canon(&self.dir.join(format!("{id}.toml"))))
            .copied()
    }

    /// The scenario's platform, resolved (None when it does not load).
    pub fn platform_of(&mut self, s: &Scenario) -> Option<&Resolved> {
        let key = canon(&s.platform);
        self.platforms
            .entry(key)
            .or_insert_with(|| ledger::load(&s.platform, &[]).ok())
            .as_ref()
    }

    /// Whether scenario `s` runs with `e`: its platform takes `e.key` from the same
    /// file and by the same route (the platform file, or the same table).
    pub fn uses(&mut self, s: &Scenario, e: &Entry) -> bool {
        let Some(r) = self.platform_of(s) else {
            return false;
        };
        let Some(there) = r.ledger.get(&e.key) else {
            return false;
        };
        let same_route = match (&there.origin, &e.origin) {
            (Origin::PlatformFile, Origin::PlatformFile) => true,
            (Origin::Table { name: a, table: x }, Origin::Table { name: b, table: y }) => {
                a == b && x == y
            }
            _ => false,
        };
        same_route && there.file.as_deref().map(canon) == e.file.as_deref().map(canon)
    }

    /// The figures `e`'s pins name, and a problem for each pin that names none.
    pub fn figures(&mut self, e: &Entry) -> (Figures, Vec<String>) {
        let mut figs = Figures::new();
        let mut bad = Vec::new();
        let Some(p) = &e.provenance else {
            return (figs, bad);
        };
        for pin in &p.pins {
            let Some(s) = self.scenario(&pin.scenario) else {
                bad.push(format!(
                    "pin {pin}: no scenario {}",
                    self.dir.join(format!("{}.toml", pin.scenario)).display()
                ));
                continue;
            };
            let metrics: Vec<String> = s.targets.iter().map(|t| t.metric.to_string()).collect();
            match &pin.metric {
                Some(m) if !metrics.contains(m) => bad.push(format!(
                    "pin {pin}: the scenario publishes {} only",
                    metrics.join(", ")
                )),
                Some(m) => {
                    figs.insert((pin.scenario.clone(), m.clone()));
                }
                None => figs.extend(metrics.into_iter().map(|m| (pin.scenario.clone(), m))),
            }
        }
        (figs, bad)
    }
}

/// The problems of one entry (its pins checked against the scenarios).
fn check_entry(e: &Entry, pins: &mut Pins<'_>, out: &mut Vec<Problem>) {
    let mut problem = |kind: ProblemKind, message: String| {
        out.push(Problem {
            at: e.location(),
            key: e.key.clone(),
            kind,
            message,
        })
    };
    if e.origin == Origin::Set || is_structural(&e.key) {
        return;
    }
    let Some(p) = &e.provenance else {
        problem(
            ProblemKind::Unsourced,
            format!("{} has no provenance", e.value),
        );
        return;
    };
    if let Some(f) = e.range_flag()
        && matches!(f, ledger::RangeFlag::Below | ledger::RangeFlag::Above)
        && let Some(r) = p.range
    {
        let v = e
            .cycles
            .map_or(e.value.to_string(), |c| format!("{c} cycles"));
        problem(
            ProblemKind::OutOfRange,
            format!("{v} is outside its range {}..{}", r.lo, r.hi),
        );
    }
    if p.source != SourceKind::Fit || e.shared_from.is_some() {
        return;
    }
    if p.pins.is_empty() {
        problem(
            ProblemKind::FitWithoutPins,
            "a fit that names no figure (pins = [...])".to_string(),
        );
        return;
    }
    if p.range.is_none() {
        problem(
            ProblemKind::FitWithoutRange,
            "a fit without range = [LO, HI] to refit it within".to_string(),
        );
    }
    if p.machine.is_some() {
        // Fitted to a machine's own runs (platform --from-capture): its pins are that
        // capture's RUN:METRIC figures, not scenarios; what tests it is the runs held out
        // of the fit (--runs), not a second figure.
        return;
    }
    let (figs, bad) = pins.figures(e);
    for b in bad {
        problem(ProblemKind::UnknownPin, b);
    }
    for pin in &p.pins {
        if let Some(s) = pins.scenario(&pin.scenario)
            && !pins.uses(s, e)
        {
            problem(
                ProblemKind::PinElsewhere,
                format!(
                    "pin {pin} runs {}, which does not take this value from {}",
                    s.platform.display(),
                    e.location()
                ),
            );
        }
    }
    if figs.len() == 1 && p.also.is_none() {
        let (s, m) = figs.iter().next().expect("one figure");
        problem(
            ProblemKind::SingleFigure,
            format!(
                "a fit pinned by one figure ({s}:{m}) with no independent source (also = {{ ... }})"
            ),
        );
    }
}

/// Checks `platforms` and the shared tables in `tables` (each table's entries once,
/// with the platforms' own entries); problems sorted by file and line.
pub fn check(
    platforms: &[PathBuf],
    tables: &[(TableKind, PathBuf)],
    scenarios_dir: &Path,
    scenarios: &[Scenario],
) -> Vec<Problem> {
    let mut pins = Pins::new(scenarios_dir, scenarios);
    let mut out = Vec::new();
    let mut table_files: Vec<(TableKind, PathBuf)> = tables.to_vec();
    for p in platforms {
        match ledger::load(p, &[]) {
            Err(e) => out.push(Problem {
                at: p.display().to_string(),
                key: String::new(),
                kind: ProblemKind::Load,
                message: e.to_string(),
            }),
            Ok(r) => {
                for e in r.ledger.iter() {
                    if !matches!(e.origin, Origin::Table { .. }) {
                        check_entry(e, &mut pins, &mut out);
                    }
                }
                table_files.extend(r.tables.iter().map(|t| (t.kind, t.path.clone())));
            }
        }
    }
    let mut seen = BTreeSet::new();
    for (kind, path) in table_files {
        if !seen.insert(canon(&path)) {
            continue;
        }
        match ledger::table_entries(&path, kind) {
            Err(e) => out.push(Problem {
                at: path.display().to_string(),
                key: String::new(),
                kind: ProblemKind::Load,
                message: e.to_string(),
            }),
            Ok(entries) => entries
                .iter()
                .for_each(|e| check_entry(e, &mut pins, &mut out)),
        }
    }
    // By file, then line.
    out.sort_by_key(|p| {
        let (file, line) = match p.at.rsplit_once(':') {
            Some((f, l)) if l.parse::<usize>().is_ok() => (f.to_string(), l.parse().unwrap_or(0)),
            _ => (p.at.clone(), 0),
        };
        (file, line, p.key.clone(), p.kind)
    });
    out
}

/// One line per problem, then a count.
pub fn text(problems: &[Problem], checked: usize) -> String {
    let mut s = String::new();
    for p in problems {
        s.push_str(&format!("{}: {}: {}\n", p.at, p.key, p.message));
    }
    let mut kinds: Vec<(ProblemKind, usize)> = Vec::new();
    for p in problems {
        match kinds.iter_mut().find(|(k, _)| *k == p.kind) {
            Some((_, n)) => *n += 1,
            None => kinds.push((p.kind, 1)),
        }
    }
    kinds.sort();
    s.push_str(&format!(
        "{} problem{} in {checked} platform{} and their tables{}\n",
        problems.len(),
        if problems.len() == 1 { "" } else { "s" },
        if checked == 1 { "" } else { "s" },
        if kinds.is_empty() {
            String::new()
        } else {
            format!(
                ": {}",
                kinds
                    .iter()
                    .map(|(k, n)| format!("{n} {}", k.as_str()))
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        }
    ));
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::load_dir;

    /// A platform and two scenarios that use it, in a scratch directory.
    fn scratch(name: &str, platform_extra: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("irqlab-prov-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("sc/e1")).unwrap();
        let example = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../platforms/example.toml"
        ))
        .unwrap();
        let text = example.replace(
            "stack_rtt_ns = { value = 65, source = \"estimate\",",
            &format!("stack_rtt_ns = {{ value = 65, {platform_extra}"),
        );
        assert_ne!(text, example);
        std::fs::write(dir.join("p.toml"), text).unwrap();
        std::fs::write(
            dir.join("sc/e1/job.fio"),
            "[j]\nfilename=/dev/nvme0n1\nruntime=1ms\n",
        )
        .unwrap();
        for stem in ["a", "b"] {
            std::fs::write(
                dir.join(format!("sc/e1/{stem}.toml")),
                format!(
                    "experiment = \"E1\"\nrow = \"{stem}\"\njob = \"job.fio\"\nplatform = \"../../p.toml\"\n\
                     [[target]]\nmetric = \"iops\"\npublished = 1000\n[[target]]\nmetric = \"cpu_busy_pct\"\npublished = 10\n"
                ),
            )
            .unwrap();
        }
        dir
    }

    fn problems(dir: &Path) -> Vec<Problem> {
        let sc = load_dir(&dir.join("sc")).unwrap();
        check(&[dir.join("p.toml")], &[], &dir.join("sc"), &sc)
    }

    #[test]
    fn a_shipped_style_platform_passes() {
        let dir = scratch(
            "ok",
            "source = \"fit\", pins = [\"e1/a\", \"e1/b:iops\"], range = [10, 100],",
        );
        assert_eq!(problems(&dir), vec![]);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn each_kind_of_problem_is_found() {
        for (extra, kind, says) in [
            (
                "source = \"fit\", range = [1, 100],",
                ProblemKind::FitWithoutPins,
                "names no figure",
            ),
            (
                "source = \"fit\", pins = [\"e1/a\"],",
                ProblemKind::FitWithoutRange,
                "without range",
            ),
            (
                "source = \"fit\", pins = [\"e1/zz\", \"e1/a\"], range = [1, 99],",
                ProblemKind::UnknownPin,
                "no scenario",
            ),
            (
                "source = \"fit\", pins = [\"e1/a:iopz\", \"e1/b\"], range = [1, 99],",
                ProblemKind::UnknownPin,
                "publishes iops, cpu_busy_pct only",
            ),
            (
                "source = \"fit\", pins = [\"e1/a:iops\"], range = [1, 99],",
                ProblemKind::SingleFigure,
                "one figure (e1/a:iops)",
            ),
            (
                "source = \"estimate\", range = [70, 99],",
                ProblemKind::OutOfRange,
                "outside its range 70..99",
            ),
        ] {
            let dir = scratch("bad", extra);
            let got = problems(&dir);
            assert!(
                got.iter().any(|p| p.kind == kind
                    && p.key == "uncore.stack_rtt_ns"
                    && p.message.contains(says)),
                "{extra}: {got:?}"
            );
            let _ = std::fs::remove_dir_all(&dir);
        }
        // A fit to a machine's own runs names them, not scenarios (held-out runs test it).
        let dir = scratch(
            "machine",
            "source = \"fit\", machine = \"vm\", pins = [\"qd1:iops\"], range = [1, 99],",
        );
        assert_eq!(problems(&dir), vec![]);
        let _ = std::fs::remove_dir_all(&dir);
        let dir = scratch(
            "machine0",
            "source = \"fit\", machine = \"vm\", range = [1, 99],",
        );
        let got = problems(&dir);
        assert!(
            got.len() == 1 && got[0].kind == ProblemKind::FitWithoutPins,
            "{got:?}"
        );
        let _ = std::fs::remove_dir_all(&dir);
        // An independent source lifts the single-figure rule.
        let dir = scratch(
            "also",
            "source = \"fit\", pins = [\"e1/a:iops\"], range = [1, 99], also = { source = \"datasheet\", cite = \"X\" },",
        );
        assert_eq!(problems(&dir), vec![]);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn a_bare_value_is_unsourced() {
        let dir = scratch("bare", "source = \"physics\",");
        let text = std::fs::read_to_string(dir.join("p.toml"))
            .unwrap()
            .replace("eoi_ns = { value = 50, source = \"estimate\", note = \"local APIC EOI (x2APIC MSR write)\" }", "eoi_ns = 50");
        let line = 1 + text.lines().position(|l| l == "eoi_ns = 50").unwrap();
        std::fs::write(dir.join("p.toml"), text).unwrap();
        let got = problems(&dir);
        assert_eq!(got.len(), 1, "{got:?}");
        assert_eq!(
            (got[0].kind, got[0].key.as_str()),
            (ProblemKind::Unsourced, "cpu.eoi_ns")
        );
        assert!(
            got[0].at.ends_with(&format!("p.toml:{line}")),
            "{}",
            got[0].at
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
