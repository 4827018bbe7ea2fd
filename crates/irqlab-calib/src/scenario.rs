//! Scenario files: one row of a published experiment. A scenario is a small TOML file next
//! to a fio job file; it names the experiment and row, the platform, the policy (in
//! `irqlab run`'s own option syntax), topology knobs, and the published value of each
//! metric with its source. It holds workload and topology only: platform costs live in
//! the platform file, so nothing in a scenario exists to move one result.
//!
//! ```toml
//! experiment = "C1"
//! row = "remapped, 8 disks"
//! job = "randread-libaio.fio"            # relative to this file
//! platform = "../../platforms/spr-gen5.toml"
//! policy = "--delivery remapped"         # any `irqlab run` policy options
//! source = "Jacob Pan, [PATCH 00/15] Coalesced Interrupt Delivery with posted MSI, Jan 2024"
//!
//! [topology]
//! disks = 8
//! jobs_per_disk = 6
//!
//! [[target]]
//! metric = "iops_per_disk"
//! published = 834000
//! ```

use crate::CalibError;
use crate::metrics::Metric;
use irqlab_core::Policy;
use irqlab_inputs::{Topology, parse_policy};
use serde::Deserialize;
use std::path::{Path, PathBuf};

/// One row of an experiment, ready to run.
#[derive(Clone, Debug)]
pub struct Scenario {
    /// The file it was read from.
    pub path: PathBuf,
    /// The file stem, a short name to select it by.
    pub name: String,
    pub experiment: String,
    pub row: String,
    pub job: PathBuf,
    pub platform: PathBuf,
    pub policy: Policy,
    /// The policy as the file wrote it (`irqlab run` options).
    pub policy_text: String,
    pub topology: Topology,
    pub source: String,
    pub targets: Vec<Target>,
}

/// A published figure the scenario is compared with.
#[derive(Clone, Debug, PartialEq)]
pub struct Target {
    pub metric: Metric,
    pub published: f64,
    /// Where the figure comes from, when it differs from the scenario's source.
    pub source: Option<String>,
    /// Why the model misses this figure, when docs/calibration.md's Findings say so.
    pub miss: Option<KnownMiss>,
}

/// A miss docs/calibration.md explains: `finding` is the number of its entry under
/// "Findings".
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KnownMiss {
    pub kind: MissKind,
    pub finding: u32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MissKind {
    /// Two published sources disagree about the same rig: no one platform gives both
    /// figures. `reproduce --check` passes over it.
    Contradiction,
    /// The model lacks what the figure needs (the finding says what); it counts against
    /// `reproduce --check`.
    Limitation,
}

impl MissKind {
    pub fn as_str(self) -> &'static str {
        match self {
            MissKind::Contradiction => "contradiction",
            MissKind::Limitation => "limitation",
        }
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    experiment: String,
    row: String,
    job: String,
    platform: String,
    #[serde(default)]
    policy: String,
    #[serde(default)]
    source: String,
    #[serde(default)]
    topology: TopologyFile,
    #[serde(default, rename = "target")]
    targets: Vec<TargetFile>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct TopologyFile {
    disks: Option<usize>,
    jobs_per_disk: Option<u32>,
    vectors_per_cpu: Option<usize>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct TargetFile {
    metric: String,
    published: f64,
    source: Option<String>,
    /// "contradiction" (two published sources disagree about the same rig) or
    /// "limitation" (of the model).
    miss: Option<String>,
    /// The docs/calibration.md finding that explains the miss.
    finding: Option<u32>,
}

impl Scenario {
    /// Reads one scenario file; paths inside it are relative to it.
    pub fn load(path: &Path) -> Result<Scenario, CalibError> {
        let text = irqlab_fio::input::read_text(path, irqlab_fio::input::MAX_INPUT_BYTES)
            .map_err(|e| CalibError::at(path, e))?;
        Self::parse(&text, path)
    }

    pub fn parse(text: &str, path: &Path) -> Result<Scenario, CalibError> {
        let at = |e: &dyn std::fmt::Display| CalibError::at(path, e);
        let f: File = toml::from_str(text).map_err(|e| CalibError::toml(text, path, &e))?;
        let dir = path.parent().unwrap_or(Path::new("."));
        let policy = parse_policy(&f.policy).map_err(|e| at(&e))?;
        let topology = Topology {
            disks: f.topology.disks,
            jobs_per_disk: f.topology.jobs_per_disk,
            vectors_per_cpu: f.topology.vectors_per_cpu,
        };
        topology.check().map_err(|e| {
            let e = e.to_string();
            let key = e.split(' ').next().unwrap_or("");
            match irqlab_sim::toml_input::line_of_key(text, key) {
                Some(line) => CalibError::Syntax(format!("{}:{line}: {e}", path.display())),
                None => at(&e),
            }
        })?;
        let mut targets = Vec::new();
        for t in f.targets {
            let metric: Metric = t.metric.parse().map_err(|e| at(&e))?;
            if !(t.published.is_finite() && t.published > 0.0) {
                return Err(at(&format!(
                    "target {}: published must be a positive number, not {}",
                    t.metric, t.published
                )));
            }
            let miss = match (t.miss.as_deref(), t.finding) {
                (None, None) => None,
                (Some(kind), Some(finding)) => Some(KnownMiss {
                    kind: match kind {
                        "contradiction" => MissKind::Contradiction,
                        "limitation" => MissKind::Limitation,
                        other => {
                            return Err(at(&format!(
                                "target {}: miss = \"{other}\": expected \"contradiction\" \
                                 (between published sources) or \"limitation\" (of the model)",
                                t.metric
                            )));
                        }
                    },
                    finding,
                }),
                _ => {
                    return Err(at(&format!(
                        "target {}: miss and finding go together (the kind of miss and the \
                         number of the docs/calibration.md finding that explains it)",
                        t.metric
                    )));
                }
            };
            targets.push(Target {
                metric,
                published: t.published,
                source: t.source,
                miss,
            });
        }
        Ok(Scenario {
            path: path.to_path_buf(),
            name: path
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_default(),
            experiment: f.experiment,
            row: f.row,
            job: dir.join(f.job),
            platform: dir.join(f.platform),
            policy,
            policy_text: f.policy,
            topology,
            source: f.source,
            targets,
        })
    }

    /// Whether a name given on the command line selects this scenario: the experiment
    /// ("C1", case-insensitive), the file stem, or a path.
    pub fn matches(&self, sel: &str) -> bool {
        self.experiment.eq_ignore_ascii_case(sel)
            || self.name == sel
            || self.path == Path::new(sel)
            || self.path.ends_with(sel)
    }
}

/// Every `*.toml` scenario under `dir` (recursively), sorted by path. These are published
/// experiments, so each needs a `[[target]]` (a scenario used only with a targets file's
/// own measurements needs none).
pub fn load_dir(dir: &Path) -> Result<Vec<Scenario>, CalibError> {
    let mut files = Vec::new();
    collect(dir, &mut files, 0)?;
    files.sort();
    if files.is_empty() {
        return Err(CalibError::NoScenarios(dir.to_path_buf()));
    }
    files
        .iter()
        .map(|p| {
            let s = Scenario::load(p)?;
            if s.targets.is_empty() {
                return Err(CalibError::at(
                    p,
                    "no [[target]]: a published scenario needs at least one metric and its published value",
                ));
            }
            Ok(s)
        })
        .collect()
}

/// Directories nested deeper than this (a symlink loop) are an error, not a recursion.
const MAX_DIR_DEPTH: usize = 16;

fn collect(dir: &Path, out: &mut Vec<PathBuf>, depth: usize) -> Result<(), CalibError> {
    if depth > MAX_DIR_DEPTH {
        return Err(CalibError::at(
            dir,
            format!("scenario directories nested more than {MAX_DIR_DEPTH} deep (a symlink loop?)"),
        ));
    }
    let entries =
        std::fs::read_dir(dir).map_err(|e| CalibError::at(dir, format!("cannot list: {e}")))?;
    for e in entries {
        let p = e.map_err(|e| CalibError::at(dir, e))?.path();
        if p.is_dir() {
            collect(&p, out, depth + 1)?;
        } else if p.extension().is_some_and(|x| x == "toml") {
            out.push(p);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use irqlab_core::Delivery;

    const TEXT: &str = r#"
experiment = "C1"
row = "posted, 8 disks"
job = "job.fio"
platform = "../p.toml"
policy = "--delivery posted --max-loop 5"
[topology]
disks = 8
[[target]]
metric = "iops_per_disk"
published = 1943000
"#;

    #[test]
    fn parses_policy_topology_and_targets() {
        let s = Scenario::parse(TEXT, Path::new("scenarios/c1/posted-8.toml")).unwrap();
        assert_eq!(s.policy.delivery, Delivery::Posted { max_loop: 5 });
        assert_eq!(s.topology.disks, Some(8));
        assert_eq!(s.job, Path::new("scenarios/c1/job.fio"));
        assert_eq!(s.platform, Path::new("scenarios/c1/../p.toml"));
        assert_eq!(s.targets[0].metric, Metric::IopsPerDisk);
        assert!(s.matches("c1") && s.matches("posted-8") && !s.matches("C2"));
    }

    #[test]
    fn a_scenario_needs_no_target_of_its_own() {
        let bare = TEXT.replace(
            "[[target]]\nmetric = \"iops_per_disk\"\npublished = 1943000\n",
            "",
        );
        let s = Scenario::parse(&bare, Path::new("mine.toml")).unwrap();
        assert!(s.targets.is_empty());
    }

    #[test]
    fn bad_policy_and_unknown_keys_are_named() {
        let bad = TEXT.replace("--max-loop 5", "--max-loop 0");
        let e = Scenario::parse(&bad, Path::new("x.toml"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("x.toml") && e.contains("max-loop"), "{e}");
        let bad = TEXT.replace("disks = 8", "disk = 8");
        let e = Scenario::parse(&bad, Path::new("x.toml"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("disk"), "{e}");
        let bad = TEXT.replace("iops_per_disk", "iopz");
        let e = Scenario::parse(&bad, Path::new("x.toml"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("iopz") && e.contains("iops"), "{e}");
    }

    #[test]
    fn a_documented_miss_names_its_kind_and_finding() {
        let with = |extra: &str| {
            TEXT.replace(
                "published = 1943000\n",
                &format!("published = 1943000\n{extra}"),
            )
        };
        let s = Scenario::parse(
            &with("miss = \"contradiction\"\nfinding = 5\n"),
            Path::new("x.toml"),
        )
        .unwrap();
        assert_eq!(
            s.targets[0].miss,
            Some(KnownMiss {
                kind: MissKind::Contradiction,
                finding: 5
            })
        );
        for (bad, says) in [
            ("miss = \"limitation\"\n", "go together"),
            ("finding = 3\n", "go together"),
            ("miss = \"typo\"\nfinding = 3\n", "contradiction"),
        ] {
            let e = Scenario::parse(&with(bad), Path::new("x.toml"))
                .unwrap_err()
                .to_string();
            assert!(e.contains("x.toml") && e.contains(says), "{bad}: {e}");
        }
    }
}
