//! The per-kind tables of platforms/kinds/: what a device of a kind (nvme.toml) or the
//! interrupt path of a bare-metal PCIe host (pcie-host.toml) costs before a capture's
//! runs fit what they pin. Each section holds ledger entries, as the cpus/ and kernels/
//! tables do.

use crate::FromCaptureError;
use irqlab_sim::ledger::{Provenance, Range, SourceKind};
use std::path::Path;

/// One entry of a kind table: its key within the section, value and provenance.
pub type KindEntry = (String, toml::Value, Provenance);

/// A kind table read: its sections by name, entries in file order.
#[derive(Clone, Debug)]
pub struct KindTable {
    pub sections: Vec<(String, Vec<KindEntry>)>,
}

impl KindTable {
    pub fn section(&self, name: &str) -> &[KindEntry] {
        self.sections
            .iter()
            .find(|(n, _)| n == name)
            .map_or(&[], |(_, v)| v.as_slice())
    }
}

fn text_of(t: &toml::Table, k: &str) -> Option<String> {
    t.get(k).and_then(|v| v.as_str()).map(str::to_string)
}

fn number(v: &toml::Value) -> Option<f64> {
    v.as_float().or_else(|| v.as_integer().map(|i| i as f64))
}

/// An entry's inline table as value and provenance.
fn entry(t: &toml::Table) -> Result<(toml::Value, Provenance), String> {
    let value = t.get("value").cloned().ok_or("no value")?;
    let source = text_of(t, "source")
        .and_then(|s| SourceKind::parse(&s))
        .ok_or("no source, or not one of the ledger's")?;
    let mut p = Provenance::new(source);
    p.machine = text_of(t, "machine");
    p.cite = text_of(t, "cite");
    p.quote = text_of(t, "quote");
    p.note = text_of(t, "note");
    if let Some(r) = t.get("range").and_then(|r| r.as_array()) {
        match r.as_slice() {
            [a, b] => {
                p.range = Some(Range {
                    lo: number(a).ok_or("range: not a number")?,
                    hi: number(b).ok_or("range: not a number")?,
                })
            }
            _ => return Err("range must be [LO, HI]".into()),
        }
    }
    Ok((value, p))
}

/// Reads platforms/kinds/NAME.toml.
pub fn load(platforms: &Path, name: &str) -> Result<KindTable, FromCaptureError> {
    let path = platforms.join("kinds").join(format!("{name}.toml"));
    let err = |why: String| FromCaptureError::Table {
        path: path.clone(),
        why,
    };
    let text = std::fs::read_to_string(&path).map_err(|e| {
        err(format!(
            "cannot read it ({e}); expected the {name} kind's table beside the platforms"
        ))
    })?;
    let doc: toml::Table = toml::from_str(&text).map_err(|e| err(e.to_string()))?;
    let mut sections = Vec::new();
    for (sname, v) in &doc {
        let Some(t) = v.as_table() else {
            return Err(err(format!("{sname}: expected a [section] of entries")));
        };
        let mut entries = Vec::new();
        for (k, e) in t {
            let Some(et) = e.as_table() else {
                return Err(err(format!(
                    "{sname}.{k}: a bare value; every value needs its provenance ({{ value = ..., source = ... }})"
                )));
            };
            let (value, p) = entry(et).map_err(|w| err(format!("{sname}.{k}: {w}")))?;
            entries.push((k.clone(), value, p));
        }
        // Keys in the file's order, as the ledger would list them.
        entries.sort_by_key(|(k, _, _)| {
            irqlab_sim::toml_input::line_of_key(&text, &format!("{sname}.{k}"))
                .unwrap_or(usize::MAX)
        });
        sections.push((sname.clone(), entries));
    }
    Ok(KindTable { sections })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_nvme_kind_holds_every_value_with_its_source() {
        let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../platforms");
        let t = load(&p, "nvme").unwrap();
        let d = t.section("device");
        assert!(
            d.iter().any(|(k, v, p)| k == "read_ns"
                && v.as_integer() == Some(80000)
                && p.range.is_some())
        );
        assert_eq!(d[0].0, "queue_depth");
        let h = load(&p, "pcie-host").unwrap();
        assert!(
            h.section("uncore")
                .iter()
                .any(|(k, _, _)| k == "stack_rtt_ns")
        );
        assert!(
            load(&p, "nope")
                .unwrap_err()
                .to_string()
                .contains("nope.toml")
        );
    }
}
