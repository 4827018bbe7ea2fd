//! The ledger: where every platform value comes from. A value in a platform file (or in a
//! shared table it names) may be written as an inline table that says so:
//!
//! ```toml
//! ubox_ns = { value = 157, source = "fit", pins = ["c1/remapped-8-disks", "v2/io_uring-remapped"], range = [120, 200], note = "..." }
//! irq_entry_ns = { cycles = 285, source = "estimate", note = "..." }   # shared tables: ns = cycles / cpu.ghz
//! ```
//!
//! The loader strips these into [`Entry`]s keyed by the dotted key (`uncore.ubox_ns`,
//! `devices.0.max_iops`) before it deserialises the [`Platform`](crate::Platform), so the
//! model never sees them. A bare value is accepted and is "unsourced". Shared tables
//! (`cpus/*.toml`, named by `cpu.model`; `kernels/*.toml`, named by `kernel.version`;
//! `uncores/*.toml`, named by `uncore.model`) sit beside the platform file; resolution is table < platform file < `--set`. Every
//! default the platform structs fill in has its provenance in [`defaults`].

pub mod defaults;
mod parse;
mod resolve;
mod tables;
mod warn;

pub use resolve::{Resolved, TableUse, from_text, load, table_entries};
pub use tables::{FrequencyError, TableKind, cycles_to_ns, ghz_to_mhz, table_files};
pub use warn::warn_once;

use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;

/// What kind of evidence a value rests on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SourceKind {
    /// A vendor's data sheet or specification.
    Datasheet,
    /// A paper's measurement.
    Paper,
    /// A measurement posted to a mailing list.
    List,
    /// A microbenchmark of a named machine (`machine`).
    Measured,
    /// The physics or arithmetic of one operation.
    Physics,
    /// A constant in kernel source.
    Kernel,
    /// A prior with no specific measurement behind it.
    Estimate,
    /// Fitted to published figures (`pins`), or with `machine` to that machine's runs.
    Fit,
}

impl SourceKind {
    pub const ALL: [SourceKind; 8] = [
        SourceKind::Datasheet,
        SourceKind::Paper,
        SourceKind::List,
        SourceKind::Measured,
        SourceKind::Physics,
        SourceKind::Kernel,
        SourceKind::Estimate,
        SourceKind::Fit,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            SourceKind::Datasheet => "datasheet",
            SourceKind::Paper => "paper",
            SourceKind::List => "list",
            SourceKind::Measured => "measured",
            SourceKind::Physics => "physics",
            SourceKind::Kernel => "kernel",
            SourceKind::Estimate => "estimate",
            SourceKind::Fit => "fit",
        }
    }

    pub fn parse(s: &str) -> Option<SourceKind> {
        SourceKind::ALL.into_iter().find(|k| k.as_str() == s)
    }
}

impl fmt::Display for SourceKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A published figure that pins a fitted value: a scenario (its path under scenarios/
/// without `.toml`) and, optionally, one of its metrics (all of them when absent).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Pin {
    pub scenario: String,
    pub metric: Option<String>,
}

impl Pin {
    /// `c1/remapped-8-disks` or `c1/remapped-8-disks:iops_per_disk`.
    pub fn parse(s: &str) -> Option<Pin> {
        let (scenario, metric) = match s.split_once(':') {
            Some((a, m)) => (a, Some(m)),
            None => (s, None),
        };
        let ok = !scenario.is_empty()
            && !scenario.ends_with(".toml")
            && !scenario.starts_with('/')
            && scenario
                .split('/')
                .all(|p| !p.is_empty() && p != "." && p != "..");
        match metric {
            Some("") => None,
            _ if ok => Some(Pin {
                scenario: scenario.to_string(),
                metric: metric.map(str::to_string),
            }),
            _ => None,
        }
    }
}

impl fmt::Display for Pin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.metric {
            Some(m) => write!(f, "{}:{m}", self.scenario),
            None => f.write_str(&self.scenario),
        }
    }
}

/// A plausible range, in the unit the entry is written in (cycles for a `cycles` entry).
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Range {
    pub lo: f64,
    pub hi: f64,
}

/// Where a value sits against its range.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum RangeFlag {
    Inside,
    AtLow,
    AtHigh,
    Below,
    Above,
}

impl Range {
    pub fn flag(&self, v: f64) -> RangeFlag {
        if v < self.lo {
            RangeFlag::Below
        } else if v > self.hi {
            RangeFlag::Above
        } else if v == self.lo {
            RangeFlag::AtLow
        } else if v == self.hi {
            RangeFlag::AtHigh
        } else {
            RangeFlag::Inside
        }
    }
}

/// The evidence for one value.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Provenance {
    pub source: SourceKind,
    /// The machine a `measured` value was measured on, or whose own runs pin a `fit`
    /// (then `pins` name that machine's capture runs, `RUN:METRIC`, not scenarios).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub machine: Option<String>,
    /// The figures a `fit` is pinned by.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub pins: Vec<Pin>,
    /// A short reference, e.g. "[JP] RFC Test #1" (the file's header lists the sources).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cite: Option<String>,
    /// The source's exact words.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub quote: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub range: Option<Range>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// A fit's independent source (a data sheet, a paper) that its value agrees with.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub also: Option<Box<Provenance>>,
}

impl Provenance {
    pub fn new(source: SourceKind) -> Provenance {
        Provenance {
            source,
            machine: None,
            pins: Vec::new(),
            cite: None,
            quote: None,
            range: None,
            note: None,
            also: None,
        }
    }
}

/// Where the value the model gets was set.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Origin {
    /// The platform file itself.
    PlatformFile,
    /// A shared table (`cpus/golden-cove.toml`, `kernels/6.8.toml`).
    Table { table: TableKind, name: String },
    /// A `--set KEY=VALUE` override.
    Set,
    /// A default the platform structs fill in (provenance in [`defaults`]).
    Default,
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Origin::PlatformFile => f.write_str("platform file"),
            Origin::Table { table, name } => write!(f, "{}/{name}", table.dir()),
            Origin::Set => f.write_str("--set"),
            Origin::Default => f.write_str("built-in default"),
        }
    }
}

/// A scalar as the platform holds it.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Scalar {
    Int(i64),
    Float(f64),
    Bool(bool),
    Text(String),
}

impl Scalar {
    pub fn from_toml(v: &toml::Value) -> Option<Scalar> {
        match v {
            toml::Value::Integer(i) => Some(Scalar::Int(*i)),
            toml::Value::Float(f) => Some(Scalar::Float(*f)),
            toml::Value::Boolean(b) => Some(Scalar::Bool(*b)),
            toml::Value::String(s) => Some(Scalar::Text(s.clone())),
            _ => None,
        }
    }

    pub fn to_toml(&self) -> toml::Value {
        match self {
            Scalar::Int(i) => toml::Value::Integer(*i),
            Scalar::Float(f) => toml::Value::Float(*f),
            Scalar::Bool(b) => toml::Value::Boolean(*b),
            Scalar::Text(s) => toml::Value::String(s.clone()),
        }
    }

    /// The value as a number, when it is one.
    pub fn as_f64(&self) -> Option<f64> {
        match self {
            Scalar::Int(i) => Some(*i as f64),
            Scalar::Float(f) => Some(*f),
            _ => None,
        }
    }
}

impl fmt::Display for Scalar {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Scalar::Int(i) => write!(f, "{i}"),
            Scalar::Float(x) => write!(f, "{x}"),
            Scalar::Bool(b) => write!(f, "{b}"),
            Scalar::Text(s) => write!(f, "\"{s}\""),
        }
    }
}

/// One resolved value and where it comes from.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Entry {
    pub key: String,
    /// The value the model gets.
    pub value: Scalar,
    /// The core cycles it was computed from (ns = cycles / cpu.ghz, see [`cycles_to_ns`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cycles: Option<u64>,
    pub origin: Origin,
    /// The file the value is written in (None for `--set` and defaults).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub file: Option<PathBuf>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<usize>,
    /// None: written as a bare value, unsourced.
    pub provenance: Option<Provenance>,
    /// The earlier entry of the same array (the same part) whose provenance this bare
    /// value shares, e.g. `devices.0` for `devices.1.max_iops`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shared_from: Option<String>,
    /// What this entry overrides: the table's entry under a platform file's, the file's
    /// under a `--set`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub replaced: Option<Box<Entry>>,
}

impl Entry {
    /// The plausible range in the value's own unit (a cycles range converted to ns at
    /// `mhz`).
    pub fn range_of_value(&self, mhz: Option<u64>) -> Option<Range> {
        let r = self.provenance.as_ref()?.range?;
        match (self.cycles, mhz) {
            (Some(_), Some(m)) => Some(Range {
                lo: r.lo * 1000.0 / m as f64,
                hi: r.hi * 1000.0 / m as f64,
            }),
            (Some(_), None) => None,
            (None, _) => Some(r),
        }
    }

    /// Where the value sits against its range, compared in the unit the range is written
    /// in (cycles for a cycles entry).
    pub fn range_flag(&self) -> Option<RangeFlag> {
        let r = self.provenance.as_ref()?.range?;
        let v = match self.cycles {
            Some(c) => c as f64,
            None => self.value.as_f64()?,
        };
        Some(r.flag(v))
    }

    /// "platforms/spr-gen5.toml:42", "--set", "built-in default".
    pub fn location(&self) -> String {
        match (&self.file, self.line) {
            (Some(f), Some(l)) => format!("{}:{l}", f.display()),
            (Some(f), None) => f.display().to_string(),
            _ => self.origin.to_string(),
        }
    }
}

/// Every value of a resolved platform, by dotted key.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
#[serde(transparent)]
pub struct Ledger {
    entries: BTreeMap<String, Entry>,
}

impl Ledger {
    pub fn get(&self, key: &str) -> Option<&Entry> {
        self.entries.get(key)
    }

    pub fn iter(&self) -> impl Iterator<Item = &Entry> {
        self.entries.values()
    }

    pub fn len(&self) -> usize {
        self.entries.len()
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub(crate) fn insert(&mut self, e: Entry) {
        self.entries.insert(e.key.clone(), e);
    }

    pub(crate) fn get_mut(&mut self, key: &str) -> Option<&mut Entry> {
        self.entries.get_mut(key)
    }

    /// The keys that share `key`'s provenance (the same part in other array entries),
    /// `key` first.
    pub fn same_part(&self, key: &str) -> Vec<String> {
        let mut keys = vec![key.to_string()];
        keys.extend(
            self.entries
                .values()
                .filter(|e| e.shared_from.as_deref() == Some(key) && e.origin != Origin::Set)
                .map(|e| e.key.clone()),
        );
        keys
    }
}

/// Keys that name parts rather than hold a parameter: they need no provenance.
pub fn is_structural(key: &str) -> bool {
    let parts: Vec<&str> = key.split('.').collect();
    matches!(
        parts.as_slice(),
        ["name"]
            | ["cpu", "model"]
            | ["kernel", "version"]
            | ["uncore", "model"]
            | ["root_ports", _, "name" | "stack"]
            | ["devices", _, "kind" | "prefix" | "port"]
    )
}

/// The unit a key's value is in, from its name.
pub fn unit_of(key: &str) -> &'static str {
    let leaf = key.rsplit('.').next().unwrap_or(key);
    if leaf == "bytes_per_ns" {
        "B/ns"
    } else if leaf.ends_with("_ns") {
        "ns"
    } else if leaf.ends_with("_bytes") {
        "B"
    } else if leaf == "max_iops" {
        "IOPS"
    } else if leaf == "ghz" {
        "GHz"
    } else if leaf.ends_with("_hz") {
        "Hz"
    } else {
        ""
    }
}

/// A key's dotted path below `path` (`uncore` and `pid_ns` give `uncore.pid_ns`).
pub fn dotted(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pins_parse_with_and_without_a_metric() {
        assert_eq!(
            Pin::parse("c1/remapped-8-disks:iops_per_disk"),
            Some(Pin {
                scenario: "c1/remapped-8-disks".into(),
                metric: Some("iops_per_disk".into())
            })
        );
        assert_eq!(Pin::parse("c4/x").unwrap().metric, None);
        for bad in ["", "c1/x.toml", "/abs", "c1/../x", "c1/x:", "c1//x"] {
            assert_eq!(Pin::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn ranges_flag_bounds_and_outside() {
        let r = Range { lo: 10.0, hi: 20.0 };
        assert_eq!(r.flag(10.0), RangeFlag::AtLow);
        assert_eq!(r.flag(20.0), RangeFlag::AtHigh);
        assert_eq!(r.flag(15.0), RangeFlag::Inside);
        assert_eq!(r.flag(9.0), RangeFlag::Below);
        assert_eq!(r.flag(21.0), RangeFlag::Above);
    }

    #[test]
    fn units_come_from_key_names() {
        assert_eq!(unit_of("cpu.irq_entry_ns"), "ns");
        assert_eq!(unit_of("root_ports.0.bytes_per_ns"), "B/ns");
        assert_eq!(unit_of("root_ports.0.mps_bytes"), "B");
        assert_eq!(unit_of("devices.1.max_iops"), "IOPS");
        assert_eq!(unit_of("cpu.tick_hz"), "Hz");
        assert_eq!(unit_of("cpu.count"), "");
        assert!(is_structural("devices.3.prefix") && !is_structural("devices.3.count"));
    }
}
