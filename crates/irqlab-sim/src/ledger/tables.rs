//! Shared tables beside the platform files: `cpus/*.toml` hold a core's costs (named by
//! the platform's `cpu.model`, which the table lists in `models`), `kernels/*.toml` a
//! kernel version's path costs and constants (named by `kernel.version`, the file stem),
//! `uncores/*.toml` a socket design's interrupt path (named by `uncore.model`, listed in
//! the table's `models`). A table holds `[cpu]`, `[kernel]`, `[engine.*]`, `[iommu]` or
//! `[uncore]` keys, each a ledger entry;
//! core-bound work is written in cycles and becomes ns at the platform's `cpu.ghz`.

use super::parse::{Raw, strip};
use crate::toml_input;
use serde::Serialize;
use std::path::{Path, PathBuf};

/// Which shared table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TableKind {
    Cpu,
    Kernel,
    Uncore,
}

impl TableKind {
    pub const ALL: [TableKind; 3] = [TableKind::Cpu, TableKind::Kernel, TableKind::Uncore];

    /// The directory beside the platform files.
    pub fn dir(self) -> &'static str {
        match self {
            TableKind::Cpu => "cpus",
            TableKind::Kernel => "kernels",
            TableKind::Uncore => "uncores",
        }
    }

    /// The platform key that names the table.
    pub fn selector(self) -> &'static str {
        match self {
            TableKind::Cpu => "cpu.model",
            TableKind::Kernel => "kernel.version",
            TableKind::Uncore => "uncore.model",
        }
    }
}

/// The sections a table may hold (arrays of parts are the platform's own).
const SECTIONS: [&str; 5] = ["cpu", "kernel", "engine", "iommu", "uncore"];

/// One table read and stripped.
#[derive(Clone, Debug)]
pub(crate) struct Table {
    pub kind: TableKind,
    /// The file stem: `golden-cove`, `6.8`.
    pub name: String,
    pub path: PathBuf,
    pub tree: toml::Table,
    pub raws: Vec<Raw>,
}

/// Why a clock frequency was refused.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum FrequencyError {
    /// Not a number in 0.1..=10 GHz.
    OutOfRange(f64),
    /// Not a whole number of MHz (cycles become ns by integer arithmetic).
    NotWholeMhz(f64),
}

impl std::fmt::Display for FrequencyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FrequencyError::OutOfRange(g) => write!(f, "{g} is not a frequency in 0.1..=10 GHz"),
            FrequencyError::NotWholeMhz(g) => write!(f, "{g} GHz is not a whole number of MHz"),
        }
    }
}

impl std::error::Error for FrequencyError {}

/// `ghz` as whole MHz, so that cycles become ns by integer arithmetic.
pub fn ghz_to_mhz(ghz: f64) -> Result<u64, FrequencyError> {
    if !(ghz.is_finite() && (0.1..=10.0).contains(&ghz)) {
        return Err(FrequencyError::OutOfRange(ghz));
    }
    let mhz = (ghz * 1000.0).round();
    if (ghz * 1000.0 - mhz).abs() > 1e-6 {
        return Err(FrequencyError::NotWholeMhz(ghz));
    }
    Ok(mhz as u64)
}

/// The one rounding of cycles into ns: cycles / (mhz / 1000), to the nearest ns, halves
/// up, in integer arithmetic (so 285 cycles at 3800 MHz are exactly 75 ns).
pub fn cycles_to_ns(cycles: u64, mhz: u64) -> u64 {
    let m = u128::from(mhz.max(1));
    ((u128::from(cycles) * 1000 + m / 2) / m).min(u128::from(u64::MAX)) as u64
}

/// The `*.toml` files of `dir`, sorted.
fn toml_files(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|it| {
            it.flatten()
                .map(|e| e.path())
                .filter(|p| p.is_file() && p.extension().is_some_and(|x| x == "toml"))
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

fn read(path: &Path) -> Result<(String, toml::Table), String> {
    let text = irqlab_fio::input::read_text(path, irqlab_fio::input::MAX_INPUT_BYTES)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    let t = toml::from_str::<toml::Table>(&text)
        .map_err(|e| toml_input::describe(&text, &path.display().to_string(), &e))?;
    Ok((text, t))
}

/// The `models` a cpus/ or uncores/ table lists.
fn models(t: &toml::Table) -> Vec<String> {
    t.get("models")
        .and_then(|m| m.as_array())
        .map(|a| {
            a.iter()
                .filter_map(|x| x.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// The table of `kind` that `name` selects, looked up in `dir` (the platform file's
/// directory).
pub(crate) fn find(dir: &Path, kind: TableKind, name: &str) -> Result<Table, String> {
    let sub = dir.join(kind.dir());
    let path = match kind {
        TableKind::Cpu | TableKind::Uncore => {
            let mut hits = Vec::new();
            let mut known = Vec::new();
            for p in toml_files(&sub) {
                let (_, t) = read(&p)?;
                let m = models(&t);
                if m.iter().any(|x| x == name) {
                    hits.push(p.clone());
                }
                known.extend(m);
            }
            match hits.len() {
                1 => hits.remove(0),
                0 => {
                    return Err(format!(
                        "{} = \"{name}\": no table in {} lists it in models{}",
                        kind.selector(),
                        sub.display(),
                        if known.is_empty() {
                            String::new()
                        } else {
                            format!(" (models there: {})", known.join(", "))
                        }
                    ));
                }
                _ => {
                    return Err(format!(
                        "{} = \"{name}\" is listed by more than one table: {}",
                        kind.selector(),
                        hits.iter()
                            .map(|p| p.display().to_string())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ));
                }
            }
        }
        TableKind::Kernel => {
            let safe = !name.is_empty()
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_'))
                && !name.starts_with('.');
            let p = sub.join(format!("{name}.toml"));
            if !safe || !p.is_file() {
                let known: Vec<String> = toml_files(&sub)
                    .iter()
                    .filter_map(|p| p.file_stem().map(|s| s.to_string_lossy().into_owned()))
                    .collect();
                return Err(format!(
                    "kernel.version = \"{name}\": no {}{}",
                    p.display(),
                    if known.is_empty() {
                        String::new()
                    } else {
                        format!(" (versions there: {})", known.join(", "))
                    }
                ));
            }
            p
        }
    };
    load(&path, kind)
}

/// Reads one table file and strips its provenance.
pub(crate) fn load(path: &Path, kind: TableKind) -> Result<Table, String> {
    let (text, mut tree) = read(path)?;
    let origin = path.display().to_string();
    let at = |key: &str, why: String| match toml_input::line_of_key(&text, key) {
        Some(l) => format!("{origin}:{l}: {why}"),
        None => format!("{origin}: {why}"),
    };
    match kind {
        TableKind::Cpu | TableKind::Uncore => {
            let ok = tree
                .get("models")
                .and_then(|m| m.as_array())
                .is_some_and(|a| !a.is_empty() && a.iter().all(|x| x.is_str()));
            if !ok {
                return Err(at(
                    "models",
                    format!(
                        "a {}/ table needs models = [\"...\"], the CPU models it describes",
                        kind.dir()
                    ),
                ));
            }
            tree.remove("models");
        }
        TableKind::Kernel => {}
    }
    for (k, v) in &tree {
        if !SECTIONS.contains(&k.as_str()) || !v.is_table() {
            return Err(at(
                k,
                format!(
                    "{k}: a shared table holds [{}] sections only",
                    SECTIONS.join("], [")
                ),
            ));
        }
    }
    for sel in ["cpu.model", "cpu.ghz", "kernel.version", "uncore.model"] {
        let (s, k) = sel.split_once('.').unwrap_or_default();
        if tree.get(s).and_then(|t| t.get(k)).is_some() {
            return Err(at(
                sel,
                format!("{sel}: the platform file names its tables and frequency, not a table"),
            ));
        }
    }
    let raws = strip(&mut tree, &text, &origin)?;
    Ok(Table {
        kind,
        name: path
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default(),
        path: path.to_path_buf(),
        tree,
        raws,
    })
}

/// Every table file of every kind in `dir` (the platforms directory).
pub fn table_files(dir: &Path) -> Vec<(TableKind, PathBuf)> {
    TableKind::ALL
        .iter()
        .flat_map(|&k| {
            toml_files(&dir.join(k.dir()))
                .into_iter()
                .map(move |p| (k, p))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cycles_round_to_the_nearest_ns() {
        assert_eq!(cycles_to_ns(285, 3800), 75);
        assert_eq!(cycles_to_ns(285, 2700), 106); // 105.6
        assert_eq!(cycles_to_ns(38, 2700), 14); // 14.07
        assert_eq!(cycles_to_ns(3, 2000), 2); // 1.5: halves up
        assert_eq!(cycles_to_ns(0, 2000), 0);
    }

    #[test]
    fn frequencies_are_whole_mhz() {
        assert_eq!(ghz_to_mhz(3.8), Ok(3800));
        assert_eq!(ghz_to_mhz(2.7), Ok(2700));
        assert!(ghz_to_mhz(2.70001).is_err());
        assert!(ghz_to_mhz(0.0).is_err());
        assert!(ghz_to_mhz(f64::NAN).is_err());
    }
}
