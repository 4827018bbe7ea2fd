//! Stripping provenance out of a parsed platform or table file: every inline table with a
//! `value`, `cycles` or `source` key becomes its plain value, and its fields an entry.

use super::{Pin, Provenance, Range, Scalar, SourceKind};
use crate::toml_input::KeyLines;

/// One value as a file writes it.
#[derive(Clone, Debug)]
pub(crate) struct Raw {
    pub key: String,
    /// None for a `cycles` entry (its ns are computed when the frequency is known).
    pub value: Option<Scalar>,
    pub cycles: Option<u64>,
    pub provenance: Option<Provenance>,
    pub line: Option<usize>,
}

/// The fields an entry's inline table may hold.
const FIELDS: &str = "value, cycles, source, machine, pins, cite, quote, range, note, also";
/// The fields of an `also` (a fit's independent source).
const ALSO_FIELDS: &str = "source, machine, cite, quote, note";

/// The line of dotted `key` in `text`: its `key = ...` line, or the first line of a
/// table written `[key]` or with dotted keys (`key.value = ...`).
pub(crate) fn line_of_entry(text: &str, key: &str) -> Option<usize> {
    entry_line(&KeyLines::new(text), key)
}

/// `line_of_entry` in a text whose keys are indexed.
fn entry_line(keys: &KeyLines, key: &str) -> Option<usize> {
    keys.get(key)
        .or_else(|| keys.get(&format!("{key}.value")))
        .or_else(|| keys.get(&format!("{key}.cycles")))
        .or_else(|| keys.get(&format!("{key}.source")))
}

/// Replaces every provenance table in `table` by its value (a `cycles` entry by 0 until
/// it is resolved) and returns an entry for every scalar. `file` names the text in
/// errors, which read `FILE:LINE: KEY: what is wrong`.
pub(crate) fn strip(table: &mut toml::Table, text: &str, file: &str) -> Result<Vec<Raw>, String> {
    let mut out = Vec::new();
    strip_table(table, "", &KeyLines::new(text), file, &mut out)?;
    Ok(out)
}

fn child(path: &str, k: &str) -> String {
    if path.is_empty() {
        k.to_string()
    } else {
        format!("{path}.{k}")
    }
}

fn is_entry(t: &toml::Table) -> bool {
    t.contains_key("value") || t.contains_key("cycles") || t.contains_key("source")
}

fn strip_table(
    table: &mut toml::Table,
    path: &str,
    keys: &KeyLines,
    file: &str,
    out: &mut Vec<Raw>,
) -> Result<(), String> {
    for (k, v) in table.iter_mut() {
        let key = child(path, k);
        strip_value(v, &key, keys, file, out)?;
    }
    Ok(())
}

fn strip_value(
    v: &mut toml::Value,
    key: &str,
    keys: &KeyLines,
    file: &str,
    out: &mut Vec<Raw>,
) -> Result<(), String> {
    match v {
        toml::Value::Table(t) if is_entry(t) => {
            let line = entry_line(keys, key);
            let at = |why: String| match line {
                Some(l) => format!("{file}:{l}: {key}: {why}"),
                None => format!("{file}: {key}: {why}"),
            };
            let raw = entry(t, key, line).map_err(at)?;
            *v = match (&raw.value, raw.cycles) {
                (Some(s), _) => s.to_toml(),
                (None, Some(_)) => toml::Value::Integer(0),
                (None, None) => unreachable!("an entry has a value or cycles"),
            };
            out.push(raw);
        }
        toml::Value::Table(t) => strip_table(t, key, keys, file, out)?,
        toml::Value::Array(a) if a.iter().all(|x| x.is_table()) && !a.is_empty() => {
            for (i, x) in a.iter_mut().enumerate() {
                strip_value(x, &format!("{key}.{i}"), keys, file, out)?;
            }
        }
        other => {
            if let Some(s) = Scalar::from_toml(other) {
                out.push(Raw {
                    key: key.to_string(),
                    value: Some(s),
                    cycles: None,
                    provenance: None,
                    line: keys.get(key),
                });
            }
        }
    }
    Ok(())
}

fn text_field(t: &toml::Table, name: &str) -> Result<Option<String>, String> {
    match t.get(name) {
        None => Ok(None),
        Some(toml::Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(format!("{name} must be text in quotes")),
    }
}

fn number(v: &toml::Value) -> Option<f64> {
    match v {
        toml::Value::Integer(i) => Some(*i as f64),
        toml::Value::Float(f) if f.is_finite() => Some(*f),
        _ => None,
    }
}

fn source_kind(t: &toml::Table) -> Result<SourceKind, String> {
    let names: Vec<&str> = SourceKind::ALL.iter().map(|k| k.as_str()).collect();
    match t.get("source") {
        None => Err(format!(
            "no source; write source = \"...\" (one of {}), or a bare value for an unsourced one",
            names.join(", ")
        )),
        Some(toml::Value::String(s)) => SourceKind::parse(s)
            .ok_or_else(|| format!("source = \"{s}\": expected one of {}", names.join(", "))),
        Some(_) => Err(format!(
            "source must be text in quotes, one of {}",
            names.join(", ")
        )),
    }
}

/// The parts every source kind shares: machine, cite, quote, note.
fn common(t: &toml::Table, source: SourceKind) -> Result<Provenance, String> {
    let mut p = Provenance::new(source);
    p.machine = text_field(t, "machine")?;
    match (source, &p.machine) {
        (SourceKind::Measured, None) => {
            return Err(
                "source = \"measured\" needs machine = \"...\": the machine measured".into(),
            );
        }
        // A fit with a machine is fitted to that machine's own runs (a capture's, see
        // `irqlab platform --from-capture`): its pins name the runs, not scenarios.
        (s, Some(_)) if s != SourceKind::Measured && s != SourceKind::Fit => {
            return Err(format!(
                "machine is for source = \"measured\" (the machine measured) or \"fit\" (the machine whose runs pin it), not \"{s}\""
            ));
        }
        _ => {}
    }
    p.cite = text_field(t, "cite")?;
    p.quote = text_field(t, "quote")?;
    p.note = text_field(t, "note")?;
    Ok(p)
}

fn entry(t: &toml::Table, key: &str, line: Option<usize>) -> Result<Raw, String> {
    const KNOWN: [&str; 10] = [
        "value", "cycles", "source", "machine", "pins", "cite", "quote", "range", "note", "also",
    ];
    if let Some(k) = t.keys().find(|k| !KNOWN.contains(&k.as_str())) {
        return Err(format!("unknown field '{k}'; expected {FIELDS}"));
    }
    let value = match t.get("value") {
        None => None,
        Some(v) => Some(Scalar::from_toml(v).ok_or_else(|| {
            "value must be a number, true or false, or text (one value, not a table or list)"
                .to_string()
        })?),
    };
    let cycles = match t.get("cycles") {
        None => None,
        Some(toml::Value::Integer(c)) if *c >= 0 => Some(*c as u64),
        Some(_) => return Err("cycles must be a whole number (0 or more)".into()),
    };
    match (&value, cycles) {
        (Some(_), Some(_)) => {
            return Err("value and cycles both given; write one (cycles: core-bound work, ns = cycles / cpu.ghz)".into());
        }
        (None, None) => return Err("no value; write value = N (or cycles = N in ns keys)".into()),
        _ => {}
    }
    if cycles.is_some() && !key.ends_with("_ns") {
        return Err("cycles are for times in ns (keys ending in _ns); write value = N".into());
    }
    let source = source_kind(t)?;
    let mut p = common(t, source)?;
    if let Some(pins) = t.get("pins") {
        if source != SourceKind::Fit {
            return Err(format!(
                "pins are the figures a fit is pinned by; this source is \"{source}\""
            ));
        }
        let toml::Value::Array(list) = pins else {
            return Err(
                "pins must be a list of scenario ids, e.g. [\"c1/remapped-8-disks\"]".into(),
            );
        };
        for x in list {
            let s = x.as_str().unwrap_or_default();
            let pin = Pin::parse(s).ok_or_else(|| match &p.machine {
                Some(m) => format!(
                    "pins: '{s}' is not a run of {m}'s capture with its metric (RUN:METRIC, e.g. \"qd1-psync:clat_mean_us\")"
                ),
                None => format!(
                    "pins: '{s}' is not a scenario id (its path under scenarios/ without .toml, e.g. \"c1/remapped-8-disks\" or \"c1/remapped-8-disks:iops_per_disk\")"
                ),
            })?;
            if p.machine.is_some() && pin.metric.is_none() {
                return Err(format!(
                    "pins: '{s}' names a run without its metric; a fit to a machine's runs names each figure as RUN:METRIC"
                ));
            }
            p.pins.push(pin);
        }
    }
    if let Some(r) = t.get("range") {
        let pair = match r {
            toml::Value::Array(a) if a.len() == 2 => number(&a[0]).zip(number(&a[1])),
            _ => None,
        };
        let Some((lo, hi)) = pair else {
            return Err("range must be [LO, HI], two numbers".into());
        };
        if lo > hi {
            return Err(format!("range = [{lo}, {hi}]: LO is above HI"));
        }
        if value.as_ref().is_some_and(|v| v.as_f64().is_none()) {
            return Err("range is for numbers; this value is not one".into());
        }
        p.range = Some(Range { lo, hi });
    }
    if let Some(a) = t.get("also") {
        if source != SourceKind::Fit {
            return Err("also names a fit's independent source; this entry is not a fit".into());
        }
        let toml::Value::Table(a) = a else {
            return Err(format!("also must be a table with {ALSO_FIELDS}"));
        };
        if let Some(k) = a
            .keys()
            .find(|k| !ALSO_FIELDS.split(", ").any(|f| f == k.as_str()))
        {
            return Err(format!("also: unknown field '{k}'; expected {ALSO_FIELDS}"));
        }
        let s = source_kind(a).map_err(|e| format!("also: {e}"))?;
        if s == SourceKind::Fit {
            return Err("also: an independent source cannot be another fit".into());
        }
        p.also = Some(Box::new(common(a, s).map_err(|e| format!("also: {e}"))?));
    }
    Ok(Raw {
        key: key.to_string(),
        value,
        cycles,
        provenance: Some(p),
        line,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strip_text(text: &str) -> Result<(toml::Table, Vec<Raw>), String> {
        let mut t: toml::Table = toml::from_str(text).unwrap();
        let raws = strip(&mut t, text, "p.toml")?;
        Ok((t, raws))
    }

    #[test]
    fn inline_tables_become_values_and_entries() {
        let text = "name = \"x\"\n[uncore]\nstack_rtt_ns = 20\nubox_ns = { value = 150, source = \"fit\", pins = [\"c1/r8\"], range = [20, 400] }\n[cpu]\nirq_entry_ns = { cycles = 285, source = \"estimate\" }\n";
        let (t, raws) = strip_text(text).unwrap();
        assert_eq!(t["uncore"]["ubox_ns"].as_integer(), Some(150));
        assert_eq!(t["cpu"]["irq_entry_ns"].as_integer(), Some(0));
        let d = raws.iter().find(|r| r.key == "uncore.ubox_ns").unwrap();
        let p = d.provenance.as_ref().unwrap();
        assert_eq!(p.source, SourceKind::Fit);
        assert_eq!(p.pins[0].scenario, "c1/r8");
        assert_eq!(
            p.range,
            Some(Range {
                lo: 20.0,
                hi: 400.0
            })
        );
        assert_eq!(d.line, Some(4));
        let r = raws
            .iter()
            .find(|r| r.key == "uncore.stack_rtt_ns")
            .unwrap();
        assert!(r.provenance.is_none());
        let c = raws.iter().find(|r| r.key == "cpu.irq_entry_ns").unwrap();
        assert_eq!(c.cycles, Some(285));
    }

    #[test]
    fn table_form_and_dotted_keys_find_their_lines() {
        let text = "[uncore]\nstack_rtt_ns.value = 20\nstack_rtt_ns.source = \"estimate\"\n[uncore.pid_ns]\nvalue = 90\nsource = \"physics\"\n";
        let (t, raws) = strip_text(text).unwrap();
        assert_eq!(t["uncore"]["pid_ns"].as_integer(), Some(90));
        let line = |k: &str| raws.iter().find(|r| r.key == k).unwrap().line;
        assert_eq!(line("uncore.stack_rtt_ns"), Some(2));
        assert_eq!(line("uncore.pid_ns"), Some(5));
    }

    #[test]
    fn bad_provenance_is_named_with_file_line_and_key() {
        for (body, says) in [
            ("{ value = 1 }", "no source"),
            (
                "{ value = 1, source = \"vibes\" }",
                "expected one of datasheet",
            ),
            (
                "{ value = 1, cycles = 2, source = \"physics\" }",
                "both given",
            ),
            ("{ source = \"physics\" }", "no value"),
            ("{ value = 1, source = \"measured\" }", "needs machine"),
            (
                "{ value = 1, source = \"paper\", machine = \"m\" }",
                "machine is for",
            ),
            (
                "{ value = 1, source = \"estimate\", machine = \"m\" }",
                "not \"estimate\"",
            ),
            (
                "{ value = 1, source = \"paper\", pins = [\"c1/x\"] }",
                "pins are",
            ),
            (
                "{ value = 1, source = \"fit\", pins = [\"c1/x.toml\"] }",
                "not a scenario id",
            ),
            (
                "{ value = 1, source = \"fit\", range = [5, 1] }",
                "LO is above HI",
            ),
            (
                "{ value = 1, source = \"fit\", range = [5] }",
                "two numbers",
            ),
            (
                "{ value = 1, source = \"fit\", colour = 1 }",
                "unknown field 'colour'",
            ),
            (
                "{ value = 1, source = \"fit\", also = { source = \"fit\" } }",
                "another fit",
            ),
            (
                "{ value = 1, source = \"paper\", also = { source = \"paper\" } }",
                "not a fit",
            ),
            (
                "{ value = \"t\", source = \"paper\", range = [1, 2] }",
                "range is for numbers",
            ),
        ] {
            let text = format!("[uncore]\nstack_rtt_ns = {body}\n");
            let e = strip_text(&text).unwrap_err();
            assert!(
                e.starts_with("p.toml:2: uncore.stack_rtt_ns: ") && e.contains(says),
                "{body}: {e}"
            );
        }
        let e =
            strip_text("[devices.x]\ncount = { cycles = 3, source = \"physics\" }\n").unwrap_err();
        assert!(e.contains("cycles are for times in ns"), "{e}");
    }

    #[test]
    fn a_fit_to_a_machine_names_its_runs_with_their_metrics() {
        let text = "[devices.0]\nread_ns = { value = 9000, source = \"fit\", machine = \"vm\", pins = [\"qd1-psync:clat_mean_us\", \"qd1-psync:iops\"], range = [1000, 90000] }\n";
        let (_, raws) = strip_text(text).unwrap();
        let p = raws[0].provenance.as_ref().unwrap();
        assert_eq!(p.machine.as_deref(), Some("vm"));
        assert_eq!(p.pins[1].to_string(), "qd1-psync:iops");
        let e = strip_text(&text.replace(":iops", "")).unwrap_err();
        assert!(e.contains("without its metric"), "{e}");
    }

    #[test]
    fn array_entries_are_indexed() {
        let text =
            "[[devices]]\ncount = 1\n[[devices]]\ncount = { value = 2, source = \"paper\" }\n";
        let (t, raws) = strip_text(text).unwrap();
        assert_eq!(t["devices"][1]["count"].as_integer(), Some(2));
        assert!(
            raws.iter()
                .any(|r| r.key == "devices.1.count" && r.line == Some(4))
        );
        assert!(
            raws.iter()
                .any(|r| r.key == "devices.0.count" && r.provenance.is_none())
        );
    }
}
