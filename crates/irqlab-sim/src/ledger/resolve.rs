//! From a platform file to a [`Platform`] and its [`Ledger`]: strip the provenance, read
//! the shared tables it names, turn cycles into ns, merge (table < file), deserialise,
//! validate, apply `--set` (file < `--set`), and note every value outside its range.

use super::parse::{Raw, strip};
use super::tables::{self, Table, TableKind, cycles_to_ns, ghz_to_mhz};
use super::{Entry, Ledger, Origin, RangeFlag, Scalar, defaults, dotted};
use crate::platform::{Platform, PlatformError};
use crate::toml_input;
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// A shared table a platform uses.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TableUse {
    pub kind: TableKind,
    /// The file stem (`golden-cove`, `6.8`).
    pub name: String,
    /// What the platform named it by (`sapphire-rapids`, `6.8`).
    pub selected_by: String,
    pub path: PathBuf,
}

/// A platform with the provenance of every value.
#[derive(Clone, Debug, PartialEq)]
pub struct Resolved {
    pub platform: Platform,
    pub ledger: Ledger,
    /// The platform file (as given).
    pub file: PathBuf,
    /// `cpu.ghz` in whole MHz, when the platform gives it.
    pub mhz: Option<u64>,
    pub tables: Vec<TableUse>,
    /// Values outside their plausible range, one line each (the loader prints them).
    pub warnings: Vec<String>,
}

/// Keys read before the tables are resolved: they choose the tables and scale them.
const SELECTORS: [&str; 4] = ["cpu.model", "cpu.ghz", "kernel.version", "uncore.model"];

/// A key the stack model replaced (platform.rs `RETIRED_KEYS`) is an error at its line
/// that names what replaces it.
fn refuse_retired(raws: &[Raw], origin: &str) -> Result<(), PlatformError> {
    for r in raws {
        if let Some(why) = crate::platform::retired_key(&r.key) {
            return Err(PlatformError(at_line(
                origin,
                r.line,
                &format!("{}: no longer a platform key; replaced by {why}", r.key),
            )));
        }
    }
    Ok(())
}

/// Reads and resolves the platform file at `path`; its tables are looked up beside it.
pub fn load(path: &Path, sets: &[String]) -> Result<Resolved, PlatformError> {
    let text = irqlab_fio::input::read_text(path, irqlab_fio::input::MAX_INPUT_BYTES)
        .map_err(|e| PlatformError(format!("{}: {e}", path.display())))?;
    let dir = path.parent().map(|d| {
        if d.as_os_str().is_empty() {
            Path::new(".")
        } else {
            d
        }
    });
    from_text(&text, &path.display().to_string(), dir, sets)
}

/// Resolves platform text; `origin` names it in messages, `dir` is where its tables are
/// (None: text that names a table is refused).
pub fn from_text(
    text: &str,
    origin: &str,
    dir: Option<&Path>,
    sets: &[String],
) -> Result<Resolved, PlatformError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    // The file limit holds for text given directly too: parsing is not free.
    let limit = irqlab_fio::input::MAX_INPUT_BYTES;
    if text.len() as u64 > limit {
        return Err(PlatformError(format!(
            "{origin}: {}",
            irqlab_fio::input::InputError::TooLarge {
                bytes: text.len() as u64,
                limit
            }
        )));
    }
    let fail = |e: toml::de::Error| PlatformError(toml_input::describe(text, origin, &e));
    // The tree first: an integer past i64 (which no platform value needs) is refused
    // here at its line, before anything re-encodes the platform.
    let mut tree = toml::from_str::<toml::Table>(text).map_err(fail)?;
    let mut raws = strip(&mut tree, text, origin).map_err(PlatformError)?;
    refuse_retired(&raws, origin)?;
    let (selector_sets, other_sets): (Vec<&String>, Vec<&String>) = sets
        .iter()
        .partition(|s| SELECTORS.contains(&s.split_once('=').map_or("", |(k, _)| k.trim())));
    for s in &selector_sets {
        apply_selector(&mut tree, s)?;
    }
    let sel = Selectors::take(&mut tree, text, origin)?;
    let mhz = match sel.ghz {
        Some(g) => Some(ghz_to_mhz(g).map_err(|e| {
            PlatformError(at_line(
                origin,
                raw_line(&raws, "cpu.ghz"),
                &format!("cpu.ghz: {e}"),
            ))
        })?),
        None => None,
    };
    let mut used = Vec::new();
    for (kind, name) in [
        (TableKind::Cpu, &sel.model),
        (TableKind::Kernel, &sel.version),
        (TableKind::Uncore, &sel.uncore),
    ] {
        let Some(name) = name else { continue };
        let line = raw_line(&raws, kind.selector());
        let dir = dir.ok_or_else(|| {
            PlatformError(at_line(
                origin,
                line,
                &format!(
                    "{} = \"{name}\": shared tables are read from files beside the platform file; load it from its file",
                    kind.selector()
                ),
            ))
        })?;
        let t =
            tables::find(dir, kind, name).map_err(|e| PlatformError(at_line(origin, line, &e)))?;
        refuse_retired(&t.raws, &t.path.display().to_string())?;
        used.push(t);
    }
    // Cycles become ns at the platform's frequency, in the file and in its tables (a
    // table's entry the file overrides needs no frequency).
    resolve_cycles(&mut tree, &mut raws, mhz, origin, &[])?;
    let written: Vec<&str> = raws.iter().map(|r| r.key.as_str()).collect();
    for t in &mut used {
        let o = t.path.display().to_string();
        resolve_cycles(&mut t.tree, &mut t.raws, mhz, &o, &written)?;
    }
    let merged = merge(&used, &tree)?;
    let plain = used.is_empty()
        && selector_sets.is_empty()
        && sel.is_empty()
        && raws.iter().all(|r| r.provenance.is_none());
    let ledger = entries(&raws, &used, origin);
    // A file written the old way deserialises from its text, so its messages keep
    // serde's own position; a resolved one maps the key back to the file it is in.
    let p: Platform = if plain {
        toml::from_str(text).map_err(fail)?
    } else {
        // Through text, so that serde's error has a position, hence a key with its array
        // index, which the ledger maps back to the file (or table) and line it is in.
        let merged_text =
            toml::to_string(&merged).map_err(|e| PlatformError(format!("{origin}: {e}")))?;
        toml::from_str(&merged_text).map_err(|e: toml::de::Error| {
            PlatformError(locate(&e, &merged_text, &ledger, text, origin))
        })?
    };
    p.validate().map_err(|PlatformError(e)| {
        let key = e.split([' ', ':']).next().unwrap_or("");
        match ledger.get(key) {
            Some(en) if en.line.is_some() => PlatformError(format!("{}: {e}", en.location())),
            _ => PlatformError(format!("{origin}: {e}")),
        }
    })?;
    let mut ledger = ledger;
    share_array_provenance(&mut ledger, &p);
    add_defaults(&mut ledger, &p);
    for s in &selector_sets {
        mark_set(&mut ledger, s, None);
    }
    let other: Vec<String> = other_sets.into_iter().cloned().collect();
    let p = p.with_overrides(&other)?;
    if !other.is_empty() {
        let tree = toml::Value::try_from(&p).unwrap_or(toml::Value::Table(Default::default()));
        for s in &other {
            mark_set(&mut ledger, s, Some(&tree));
        }
    }
    let warnings = range_warnings(&ledger, mhz);
    Ok(Resolved {
        platform: p,
        ledger,
        file: PathBuf::from(origin),
        mhz,
        tables: used
            .iter()
            .map(|t| TableUse {
                kind: t.kind,
                name: t.name.clone(),
                selected_by: match t.kind {
                    TableKind::Cpu => sel.model.clone().unwrap_or_default(),
                    TableKind::Kernel => sel.version.clone().unwrap_or_default(),
                    TableKind::Uncore => sel.uncore.clone().unwrap_or_default(),
                },
                path: t.path.clone(),
            })
            .collect(),
        warnings,
    })
}

fn at_line(origin: &str, line: Option<usize>, msg: &str) -> String {
    match line {
        Some(l) => format!("{origin}:{l}: {msg}"),
        None => format!("{origin}: {msg}"),
    }
}

fn raw_line(raws: &[Raw], key: &str) -> Option<usize> {
    raws.iter().find(|r| r.key == key).and_then(|r| r.line)
}

/// The table-choosing keys, taken out of the tree (the model does not know them).
#[derive(Default)]
struct Selectors {
    model: Option<String>,
    ghz: Option<f64>,
    version: Option<String>,
    uncore: Option<String>,
}

impl Selectors {
    fn is_empty(&self) -> bool {
        self.model.is_none()
            && self.ghz.is_none()
            && self.version.is_none()
            && self.uncore.is_none()
    }

    fn take(tree: &mut toml::Table, text: &str, origin: &str) -> Result<Selectors, PlatformError> {
        let mut s = Selectors::default();
        let bad = |key: &str, want: &str| {
            PlatformError(at_line(
                origin,
                super::parse::line_of_entry(text, key),
                &format!("{key}: expected {want}"),
            ))
        };
        if let Some(toml::Value::Table(cpu)) = tree.get_mut("cpu") {
            if let Some(v) = cpu.remove("model") {
                s.model = Some(
                    v.as_str()
                        .ok_or_else(|| {
                            bad("cpu.model", "text in quotes, e.g. \"sapphire-rapids\"")
                        })?
                        .to_string(),
                );
            }
            if let Some(v) = cpu.remove("ghz") {
                s.ghz = Some(match v {
                    toml::Value::Float(f) => f,
                    toml::Value::Integer(i) => i as f64,
                    _ => return Err(bad("cpu.ghz", "a number (GHz)")),
                });
            }
        }
        if let Some(toml::Value::Table(k)) = tree.get_mut("kernel")
            && let Some(v) = k.remove("version")
        {
            s.version = Some(
                v.as_str()
                    .ok_or_else(|| bad("kernel.version", "text in quotes, e.g. \"6.8\""))?
                    .to_string(),
            );
        }
        if let Some(toml::Value::Table(u)) = tree.get_mut("uncore")
            && let Some(v) = u.remove("model")
        {
            s.uncore = Some(
                v.as_str()
                    .ok_or_else(|| bad("uncore.model", "text in quotes, e.g. \"sapphire-rapids\""))?
                    .to_string(),
            );
        }
        Ok(s)
    }
}

/// `--set cpu.ghz=3.0` (or a model or kernel version) before the tables are read.
fn apply_selector(tree: &mut toml::Table, set: &str) -> Result<(), PlatformError> {
    let (key, raw) = set.split_once('=').unwrap_or((set, ""));
    let (sec, leaf) = key.trim().split_once('.').unwrap_or_default();
    let raw = raw.trim();
    let v = if leaf == "ghz" {
        raw.parse::<f64>().map(toml::Value::Float).map_err(|_| {
            PlatformError(format!(
                "--set '{set}': '{raw}' for 'cpu.ghz': expected a number"
            ))
        })?
    } else {
        toml::Value::String(raw.trim_matches('"').to_string())
    };
    let t = tree
        .entry(sec.to_string())
        .or_insert_with(|| toml::Value::Table(Default::default()));
    match t {
        toml::Value::Table(t) => {
            t.insert(leaf.to_string(), v);
            Ok(())
        }
        _ => Err(PlatformError(format!(
            "--set '{set}': '{sec}' is not a table"
        ))),
    }
}

/// Writes the ns of every `cycles` entry into `tree`; without a frequency, an entry
/// whose key is `overridden` keeps its cycles only.
fn resolve_cycles(
    tree: &mut toml::Table,
    raws: &mut [Raw],
    mhz: Option<u64>,
    origin: &str,
    overridden: &[&str],
) -> Result<(), PlatformError> {
    for r in raws.iter_mut() {
        let Some(c) = r.cycles else { continue };
        if mhz.is_none() && overridden.contains(&r.key.as_str()) {
            continue;
        }
        let Some(m) = mhz else {
            return Err(PlatformError(at_line(
                origin,
                r.line,
                &format!(
                    "{}: cycles = {c} needs the platform's frequency: cpu.ghz = N in its [cpu]",
                    r.key
                ),
            )));
        };
        let ns = cycles_to_ns(c, m).min(i64::MAX as u64) as i64;
        r.value = Some(Scalar::Int(ns));
        if let Some(slot) = slot_mut(tree, &r.key) {
            *slot = toml::Value::Integer(ns);
        }
    }
    Ok(())
}

/// The value at dotted `key` of `tree`.
fn slot_mut<'a>(tree: &'a mut toml::Table, key: &str) -> Option<&'a mut toml::Value> {
    let mut parts = key.split('.');
    let first = parts.next()?;
    let mut node = tree.get_mut(first)?;
    for p in parts {
        node = match node {
            toml::Value::Table(t) => t.get_mut(p)?,
            toml::Value::Array(a) => a.get_mut(p.parse::<usize>().ok()?)?,
            _ => return None,
        };
    }
    Some(node)
}

/// The tables' trees (a key in two tables is an error), then the file's on top.
fn merge(used: &[Table], file: &toml::Table) -> Result<toml::Table, PlatformError> {
    let mut base = toml::Table::new();
    let mut from: BTreeMap<String, PathBuf> = BTreeMap::new();
    for t in used {
        for r in &t.raws {
            if let Some(other) = from.insert(r.key.clone(), t.path.clone()) {
                return Err(PlatformError(format!(
                    "{} is in two shared tables, {} and {}; one place for each value",
                    r.key,
                    other.display(),
                    t.path.display()
                )));
            }
        }
        overlay(&mut base, &t.tree);
    }
    overlay(&mut base, file);
    Ok(base)
}

/// `top` over `base`: tables merge key by key, anything else replaces.
fn overlay(base: &mut toml::Table, top: &toml::Table) {
    for (k, v) in top {
        match (base.get_mut(k), v) {
            (Some(toml::Value::Table(b)), toml::Value::Table(t)) => overlay(b, t),
            _ => {
                base.insert(k.clone(), v.clone());
            }
        }
    }
}

fn entry_of(r: &Raw, origin: Origin, file: PathBuf) -> Entry {
    Entry {
        key: r.key.clone(),
        value: r.value.clone().unwrap_or(Scalar::Int(0)),
        cycles: r.cycles,
        origin,
        file: Some(file),
        line: r.line,
        provenance: r.provenance.clone(),
        shared_from: None,
        replaced: None,
    }
}

/// The entries the tables and the file write; a file's entry records the table's it
/// overrides.
fn entries(raws: &[Raw], used: &[Table], origin: &str) -> Ledger {
    let mut ledger = Ledger::default();
    for t in used {
        for r in &t.raws {
            ledger.insert(entry_of(
                r,
                Origin::Table {
                    table: t.kind,
                    name: t.name.clone(),
                },
                t.path.clone(),
            ));
        }
    }
    for r in raws {
        let mut e = entry_of(r, Origin::PlatformFile, PathBuf::from(origin));
        if let Some(under) = ledger.get(&r.key) {
            e.replaced = Some(Box::new(under.clone()));
        }
        ledger.insert(e);
    }
    ledger
}

/// A bare value in an entry of `[[root_ports]]` or `[[devices]]` equal to the same key of
/// the nearest earlier entry (for devices, of the same kind) with provenance is the same
/// part: it shares that provenance.
fn share_array_provenance(ledger: &mut Ledger, p: &Platform) {
    let keys: Vec<String> = ledger
        .iter()
        .filter(|e| e.provenance.is_none() && e.origin == Origin::PlatformFile)
        .map(|e| e.key.clone())
        .collect();
    // In index order, so a chain (devices.2 as devices.1 as devices.0) resolves.
    let mut keys: Vec<(String, usize, String)> = keys
        .into_iter()
        .filter_map(|k| {
            let mut it = k.splitn(3, '.');
            let arr = it.next()?.to_string();
            let i: usize = it.next()?.parse().ok()?;
            let rest = it.next()?.to_string();
            matches!(arr.as_str(), "root_ports" | "devices").then_some((arr, i, rest))
        })
        .collect();
    keys.sort_by_key(|(a, i, _)| (a.clone(), *i));
    for (arr, i, rest) in keys {
        let key = format!("{arr}.{i}.{rest}");
        let Some(value) = ledger.get(&key).map(|e| e.value.clone()) else {
            continue;
        };
        let same_kind = |j: usize| {
            arr != "devices" || p.devices.get(j).map(|d| d.kind) == p.devices.get(i).map(|d| d.kind)
        };
        let found = (0..i).rev().filter(|&j| same_kind(j)).find_map(|j| {
            let e = ledger.get(&format!("{arr}.{j}.{rest}"))?;
            (e.value == value && e.provenance.is_some()).then(|| {
                (
                    e.shared_from.clone().unwrap_or(e.key.clone()),
                    e.provenance.clone(),
                )
            })
        });
        if let Some((from, prov)) = found
            && let Some(e) = ledger.get_mut(&key)
        {
            e.provenance = prov;
            e.shared_from = Some(from);
        }
    }
}

/// Every value the structs filled in: a default, with its provenance from [`defaults`].
fn add_defaults(ledger: &mut Ledger, p: &Platform) {
    let Ok(tree) = toml::Value::try_from(p) else {
        return;
    };
    let mut leaves = Vec::new();
    leaf_values(&tree, "", &mut leaves);
    for (key, v) in leaves {
        if ledger.get(&key).is_some() {
            continue;
        }
        ledger.insert(Entry {
            provenance: defaults::provenance(&key),
            key,
            value: v,
            cycles: None,
            origin: Origin::Default,
            file: None,
            line: None,
            shared_from: None,
            replaced: None,
        });
    }
}

/// The scalar leaves of `v` with their dotted keys.
pub(crate) fn leaf_values(v: &toml::Value, path: &str, out: &mut Vec<(String, Scalar)>) {
    let child = |k: &str| dotted(path, k);
    match v {
        toml::Value::Table(t) => {
            for (k, x) in t {
                leaf_values(x, &child(k), out);
            }
        }
        toml::Value::Array(a) => {
            for (i, x) in a.iter().enumerate() {
                leaf_values(x, &child(&i.to_string()), out);
            }
        }
        other => {
            if let Some(s) = Scalar::from_toml(other) {
                out.push((path.to_string(), s));
            }
        }
    }
}

/// Records `--set KEY=VALUE` as the origin of KEY, over what it replaced. `tree` is the
/// platform after the sets (None for a table-choosing key, whose value is the text's).
fn mark_set(ledger: &mut Ledger, set: &str, tree: Option<&toml::Value>) {
    let Some((key, raw)) = set.split_once('=') else {
        return;
    };
    let key = key.trim();
    let value = match tree {
        Some(t) => {
            let mut node = t;
            for part in key.split('.') {
                node = match node {
                    toml::Value::Table(m) => match m.get(part) {
                        Some(x) => x,
                        None => return,
                    },
                    toml::Value::Array(a) => {
                        match part.parse::<usize>().ok().and_then(|i| a.get(i)) {
                            Some(x) => x,
                            None => return,
                        }
                    }
                    _ => return,
                };
            }
            match Scalar::from_toml(node) {
                Some(s) => s,
                None => return,
            }
        }
        None => match raw.trim().parse::<f64>() {
            Ok(f) if key == "cpu.ghz" => Scalar::Float(f),
            _ => Scalar::Text(raw.trim().trim_matches('"').to_string()),
        },
    };
    let old = ledger.get(key).cloned();
    ledger.insert(Entry {
        key: key.to_string(),
        value,
        cycles: None,
        origin: Origin::Set,
        file: None,
        line: None,
        provenance: None,
        shared_from: None,
        replaced: old.map(Box::new),
    });
}

/// One line for every value outside its plausible range (a `--set` against the range of
/// the value it replaced).
fn range_warnings(ledger: &Ledger, mhz: Option<u64>) -> Vec<String> {
    let mut out = Vec::new();
    for e in ledger.iter() {
        let (judged, v) = match (&e.origin, &e.replaced) {
            (Origin::Set, Some(r)) => (r.as_ref(), e.value.as_f64()),
            (Origin::Set, None) => continue,
            _ => (e, e.cycles.map(|c| c as f64).or_else(|| e.value.as_f64())),
        };
        let Some(v) = v else { continue };
        // A --set is in the value's unit; the range of a cycles entry is in cycles.
        let range = if e.origin == Origin::Set {
            judged.range_of_value(mhz)
        } else {
            judged.provenance.as_ref().and_then(|p| p.range)
        };
        let Some(r) = range else { continue };
        if matches!(r.flag(v), RangeFlag::Below | RangeFlag::Above) {
            let unit = if e.cycles.is_some() { " cycles" } else { "" };
            out.push(match e.origin {
                Origin::Set => format!(
                    "--set {}={}: outside the plausible range {}..{} of {} ({})",
                    e.key,
                    e.value,
                    r.lo,
                    r.hi,
                    e.key,
                    judged.location()
                ),
                _ => format!(
                    "{}: {} = {v}{unit} is outside its plausible range {}..{}{unit}",
                    e.location(),
                    e.key,
                    r.lo,
                    r.hi
                ),
            });
        }
    }
    out
}

/// A deserialising error of a resolved platform (`merged_text`) as
/// `FILE:LINE: KEY: what is wrong`, the file being the platform's or the table's that
/// holds the key.
fn locate(
    e: &toml::de::Error,
    merged_text: &str,
    ledger: &Ledger,
    text: &str,
    origin: &str,
) -> String {
    let msg = toml_input::in_users_terms(e.message());
    let Some(key) = e
        .span()
        .and_then(|s| toml_input::key_at(merged_text, s.start).1)
    else {
        return format!("{origin}: {msg}");
    };
    if let Some(en) = ledger.get(&key)
        && en.line.is_some()
    {
        return format!("{}: {key}: {msg}", en.location());
    }
    match line_of_table(text, &key) {
        Some(l) => format!("{origin}:{l}: {key}: {msg}"),
        None => format!("{origin}: {key}: {msg}"),
    }
}

/// The line of the header of table `key` (`cpu`, `devices.1`, `devices.1.submitter`).
fn line_of_table(text: &str, key: &str) -> Option<usize> {
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        if line.trim_start().starts_with('[')
            && let (n, Some(k)) = toml_input::key_at(text, offset)
            && k == key
        {
            return Some(n);
        }
        offset += line.len();
    }
    None
}

/// The entries of one shared table file as written (cycles not turned into ns: no
/// platform gives a frequency), for checking a table on its own.
pub fn table_entries(path: &Path, kind: TableKind) -> Result<Vec<Entry>, PlatformError> {
    let t = tables::load(path, kind).map_err(PlatformError)?;
    let origin = Origin::Table {
        table: kind,
        name: t.name.clone(),
    };
    Ok(t.raws
        .iter()
        .map(|r| entry_of(r, origin.clone(), t.path.clone()))
        .collect())
}
