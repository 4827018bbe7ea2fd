//! `irqlab platform --explain`: every resolved parameter of a platform with its value,
//! unit, where it was set (a shared table, the platform file, `--set`, a built-in
//! default), the kind of evidence behind it, and where it sits against its range.

use irqlab_sim::ledger::{
    Entry, Origin, RangeFlag, Resolved, SourceKind, TableKind, dotted, is_structural, unit_of,
};
use serde::Serialize;

/// One parameter as `--explain` shows it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Explained {
    pub key: String,
    /// The value the model gets, as text (`75`, `"eevdf"`).
    pub value: String,
    pub unit: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cycles: Option<u64>,
    /// "cpus/golden-cove", "kernels/6.8", "platform file", "--set", "built-in default".
    pub origin: String,
    /// FILE:LINE where it is written.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub at: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub line: Option<usize>,
    /// The earlier entry of the same part whose provenance it shares.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shared_from: Option<String>,
    /// What it overrides ("cpus/golden-cove: 285 cycles").
    #[serde(skip_serializing_if = "Option::is_none")]
    pub overrides: Option<String>,
    /// None: unsourced (or a `--set`, which says what it replaced).
    pub source: Option<SourceKind>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub machine: Option<String>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub pins: Vec<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cite: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub quote: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// A fit's independent source: "datasheet: [X] ...".
    #[serde(skip_serializing_if = "Option::is_none")]
    pub also: Option<String>,
    /// The plausible range in the value's unit.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub range: Option<[f64; 2]>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub flag: Option<RangeFlag>,
}

impl Explained {
    /// No provenance where one is needed.
    pub fn unsourced(&self) -> bool {
        self.source.is_none() && self.origin != "--set" && !is_structural(&self.key)
    }
}

/// Every parameter of `r`, in the order the platform file's sections and fields have.
pub fn explain(r: &Resolved) -> Vec<Explained> {
    let mut keys = Vec::new();
    if let Ok(v) = serde_json::to_value(&r.platform) {
        ordered_keys(&v, "", &mut keys);
    }
    // The keys that choose and scale the tables lead their sections.
    for (key, section) in [
        ("uncore.model", "uncore."),
        ("kernel.version", "kernel."),
        ("cpu.ghz", "cpu."),
        ("cpu.model", "cpu."),
    ] {
        if r.ledger.get(key).is_some() {
            let at = keys
                .iter()
                .position(|k| k.starts_with(section))
                .unwrap_or(keys.len());
            keys.insert(at, key.to_string());
        }
    }
    keys.iter()
        .filter_map(|k| r.ledger.get(k))
        .map(|e| row(e, r.mhz))
        .collect()
}

/// The dotted keys of `v`'s scalar leaves in document order.
fn ordered_keys(v: &serde_json::Value, path: &str, out: &mut Vec<String>) {
    let child = |k: &str| dotted(path, k);
    match v {
        serde_json::Value::Object(m) => m.iter().for_each(|(k, x)| ordered_keys(x, &child(k), out)),
        serde_json::Value::Array(a) => a
            .iter()
            .enumerate()
            .for_each(|(i, x)| ordered_keys(x, &child(&i.to_string()), out)),
        serde_json::Value::Null => {}
        _ => out.push(path.to_string()),
    }
}

fn row(e: &Entry, mhz: Option<u64>) -> Explained {
    // A --set shows the range of what it replaced, in the value's unit.
    let judged = match (&e.origin, &e.replaced) {
        (Origin::Set, Some(r)) => r.as_ref(),
        _ => e,
    };
    let range = judged.range_of_value(mhz);
    let flag = match e.origin {
        Origin::Set => range.zip(e.value.as_f64()).map(|(r, v)| r.flag(v)),
        _ => e.range_flag(),
    }
    .filter(|f| *f != RangeFlag::Inside);
    let overrides = e.replaced.as_ref().map(|r| {
        let v = match r.cycles {
            Some(c) if r.value.as_f64() == Some(0.0) && mhz.is_none() => format!("{c} cycles"),
            Some(c) => format!("{} ({c} cycles)", r.value),
            None => r.value.to_string(),
        };
        let src = r
            .provenance
            .as_ref()
            .map_or("unsourced".to_string(), |p| p.source.to_string());
        format!("{} {v}, {src}", r.origin)
    });
    let p = e.provenance.as_ref();
    Explained {
        key: e.key.clone(),
        value: e.value.to_string(),
        unit: unit_of(&e.key),
        cycles: e.cycles,
        origin: e.origin.to_string(),
        at: e.line.map(|_| e.location()),
        line: e.line,
        shared_from: e.shared_from.clone(),
        overrides,
        source: p.map(|p| p.source),
        machine: p.and_then(|p| p.machine.clone()),
        pins: p.map_or(Vec::new(), |p| {
            p.pins.iter().map(|x| x.to_string()).collect()
        }),
        cite: p.and_then(|p| p.cite.clone()),
        quote: p.and_then(|p| p.quote.clone()),
        note: p.and_then(|p| p.note.clone()),
        also: p.and_then(|p| p.also.as_ref()).map(|a| {
            let mut s = a.source.to_string();
            for x in [&a.cite, &a.quote, &a.note].into_iter().flatten() {
                s.push_str(": ");
                s.push_str(x);
            }
            s
        }),
        range: range.map(|r| [r.lo, r.hi]),
        flag,
    }
}

fn flag_text(f: RangeFlag) -> &'static str {
    match f {
        RangeFlag::Inside => "",
        RangeFlag::AtLow => "at its low bound",
        RangeFlag::AtHigh => "at its high bound",
        RangeFlag::Below => "BELOW ITS RANGE",
        RangeFlag::Above => "ABOVE ITS RANGE",
    }
}

/// `v` without a float's noise: 3.8, 52, 0.3.
fn num(v: f64) -> String {
    if v == v.trunc() && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        format!("{}", (v * 1e6).round() / 1e6)
    }
}

/// `text` wrapped at `width`: the first line after `first`, the others after `rest`.
fn wrap(text: &str, first: &str, rest: &str, width: usize) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut line = String::new();
    let indent = |n: usize| if n == 0 { first } else { rest };
    for w in text.split_whitespace() {
        if !line.is_empty() && indent(out.len()).len() + line.len() + 1 + w.len() > width {
            out.push(format!("{}{line}", indent(out.len())));
            line.clear();
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(w);
    }
    if !line.is_empty() {
        out.push(format!("{}{line}", indent(out.len())));
    }
    out
}

/// The table for people: a line per parameter, its evidence wrapped below it.
pub fn text(r: &Resolved, rows: &[Explained]) -> String {
    const WIDTH: usize = 100;
    let mut out = format!("platform {} ({})\n", r.platform.name, r.file.display());
    for t in &r.tables {
        let what = match t.kind {
            TableKind::Cpu => format!(
                "cpu.model = \"{}\"{}",
                t.selected_by,
                r.mhz
                    .map(|m| format!(" at {} GHz", num(m as f64 / 1000.0)))
                    .unwrap_or_default()
            ),
            TableKind::Kernel => format!("kernel.version = \"{}\"", t.selected_by),
            TableKind::Uncore => format!("uncore.model = \"{}\"", t.selected_by),
        };
        out.push_str(&format!(
            "  {what}: table {}/{} ({})\n",
            t.kind.dir(),
            t.name,
            t.path.display()
        ));
    }
    out.push('\n');
    let value_of = |x: &Explained| {
        let mut v = x.value.clone();
        if !x.unit.is_empty() {
            v = format!("{v} {}", x.unit);
        }
        if let (Some(c), Some(m)) = (x.cycles, r.mhz) {
            v = format!("{v} ({c} cycles @ {} GHz)", num(m as f64 / 1000.0));
        }
        v
    };
    let where_of = |x: &Explained| {
        let mut w = match x.line {
            Some(l) => format!("{}:{l}", x.origin),
            None => x.origin.clone(),
        };
        if let Some(s) = &x.shared_from {
            w = format!(
                "{w} (as {})",
                s.rsplit_once('.').map_or(s.as_str(), |(a, _)| a)
            );
        }
        w
    };
    let kw = rows.iter().map(|x| x.key.len()).max().unwrap_or(3).max(3);
    let vw = rows
        .iter()
        .map(|x| value_of(x).len())
        .max()
        .unwrap_or(5)
        .max(5);
    let ow = rows
        .iter()
        .map(|x| where_of(x).len())
        .max()
        .unwrap_or(6)
        .max(6);
    out.push_str(&format!(
        "{:kw$}  {:vw$}  {:ow$}  SOURCE\n",
        "KEY", "VALUE", "ORIGIN"
    ));
    for x in rows {
        let source = match (&x.source, x.origin.as_str()) {
            (Some(s), _) => s.to_string(),
            (None, "--set") => "--set".to_string(),
            (None, _) if is_structural(&x.key) => "-".to_string(),
            (None, _) => "UNSOURCED".to_string(),
        };
        let flag = x.flag.map(flag_text).unwrap_or_default();
        let line = format!(
            "{:kw$}  {:vw$}  {:ow$}  {source}{}",
            x.key,
            value_of(x),
            where_of(x),
            if flag.is_empty() {
                String::new()
            } else {
                format!("  {flag}")
            }
        );
        out.push_str(line.trim_end());
        out.push('\n');
        // A part that shares an earlier entry's provenance says so in its origin.
        if x.shared_from.is_some() {
            continue;
        }
        let mut detail = Vec::new();
        if let Some(m) = &x.machine {
            detail.push(format!("machine: {m}"));
        }
        if !x.pins.is_empty() {
            detail.push(format!("pinned by: {}", x.pins.join(", ")));
        }
        if let Some(c) = &x.cite {
            detail.push(format!("cite: {c}"));
        }
        if let Some(q) = &x.quote {
            detail.push(format!("quote: \"{q}\""));
        }
        if let Some(n) = &x.note {
            detail.push(format!("note: {n}"));
        }
        if let Some(a) = &x.also {
            detail.push(format!("also: {a}"));
        }
        if let Some([lo, hi]) = x.range {
            let u = if x.unit.is_empty() {
                String::new()
            } else {
                format!(" {}", x.unit)
            };
            detail.push(format!("range: {}..{}{u}", num(lo), num(hi)));
        }
        if let Some(o) = &x.overrides {
            detail.push(format!("overrides: {o}"));
        }
        for d in detail {
            out.extend(
                wrap(&d, "    ", "        ", WIDTH)
                    .into_iter()
                    .map(|l| l + "\n"),
            );
        }
    }
    out.push('\n');
    out.push_str(&summary(rows));
    out
}

/// "N parameters: ...; by source: ...; K unsourced, B at a bound, O outside their range".
pub fn summary(rows: &[Explained]) -> String {
    let count = |f: &dyn Fn(&Explained) -> bool| rows.iter().filter(|x| f(x)).count();
    let mut origins: Vec<(String, usize)> = Vec::new();
    for x in rows {
        match origins.iter_mut().find(|(k, _)| *k == x.origin) {
            Some((_, n)) => *n += 1,
            None => origins.push((x.origin.clone(), 1)),
        }
    }
    let sources: Vec<String> = SourceKind::ALL
        .iter()
        .filter_map(|s| {
            let n = count(&|x| x.source == Some(*s));
            (n > 0).then(|| format!("{s} {n}"))
        })
        .collect();
    format!(
        "{} parameters: {}\nby source: {}; {} unsourced; {} at a bound of their range, {} outside it\n",
        rows.len(),
        origins
            .iter()
            .map(|(o, n)| format!("{n} from {o}"))
            .collect::<Vec<_>>()
            .join(", "),
        sources.join(", "),
        count(&|x| x.unsourced()),
        count(&|x| matches!(x.flag, Some(RangeFlag::AtLow | RangeFlag::AtHigh))),
        count(&|x| matches!(x.flag, Some(RangeFlag::Below | RangeFlag::Above))),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn spr() -> Resolved {
        let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../platforms/spr-gen5.toml");
        irqlab_sim::ledger::load(&p, &[]).unwrap()
    }

    #[test]
    fn every_value_is_explained_once_in_file_order() {
        let r = spr();
        let rows = explain(&r);
        let keys: Vec<&str> = rows.iter().map(|x| x.key.as_str()).collect();
        assert_eq!(&keys[..4], &["name", "cpu.model", "cpu.ghz", "cpu.count"]);
        let mut sorted = keys.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), keys.len(), "a key twice");
        let entry = rows.iter().find(|x| x.key == "cpu.irq_entry_ns").unwrap();
        assert_eq!(
            (entry.value.as_str(), entry.cycles, entry.origin.as_str()),
            ("145", Some(550), "cpus/golden-cove")
        );
        let v = rows.iter().position(|x| x.key == "kernel.version").unwrap();
        assert!(rows[v + 1].key.starts_with("kernel."), "{:?}", rows[v + 1]);
        let t = text(&r, &rows);
        assert!(t.contains("145 ns (550 cycles @ 3.8 GHz)"), "{t}");
        assert!(t.contains("pinned by: c1/remapped-8-disks"), "{t}");
        assert!(
            t.contains("uncore.model = \"sapphire-rapids\": table uncores/sapphire-rapids"),
            "{t}"
        );
        assert!(t.contains(" 0 unsourced;"), "{t}");
    }

    #[test]
    fn a_set_shows_what_it_replaced_and_its_range() {
        let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../platforms/spr-gen5.toml");
        let r = irqlab_sim::ledger::load(&p, &["uncore.ubox_ns=500".into()]).unwrap();
        let rows = explain(&r);
        let d = rows.iter().find(|x| x.key == "uncore.ubox_ns").unwrap();
        assert_eq!((d.origin.as_str(), d.source), ("--set", None));
        assert_eq!(d.flag, Some(RangeFlag::Above));
        assert!(
            d.overrides
                .as_ref()
                .unwrap()
                .starts_with("uncores/sapphire-rapids 150, fit")
        );
        assert!(text(&r, &rows).contains("ABOVE ITS RANGE"));
    }
}
