//! The platform being built, as an ordered document: sections of values, each value with
//! its provenance fields in the ledger's inline-table form (docs/calibration.md "The
//! ledger"). It renders as a self-contained platform file: every value inline, no shared
//! table named, so the file loads from anywhere.

use irqlab_sim::ledger::{Provenance, Range};

/// One value and its provenance (None: a structural key such as `kind` or `prefix`).
#[derive(Clone, Debug, PartialEq)]
pub struct Item {
    pub key: String,
    pub value: toml::Value,
    pub prov: Option<Provenance>,
}

/// A `[table]` or one `[[array]]` element, or a sub-table of one (`[devices.virtio]`).
#[derive(Clone, Debug, PartialEq)]
pub struct Section {
    /// The header as written (`cpu`, `engine.libaio`, `root_ports`, `devices.virtio`);
    /// empty for the top level.
    pub header: String,
    /// Written `[[header]]`.
    pub array: bool,
    /// The dotted prefix of its keys in the platform (`cpu`, `devices.0`,
    /// `devices.0.virtio`).
    pub prefix: String,
    pub items: Vec<Item>,
}

impl Section {
    pub fn new(header: &str, array: bool, prefix: &str) -> Section {
        Section {
            header: header.to_string(),
            array,
            prefix: prefix.to_string(),
            items: Vec::new(),
        }
    }

    /// Sets `key` (replacing an item of that key).
    pub fn set(&mut self, key: &str, value: toml::Value, prov: Option<Provenance>) {
        let item = Item {
            key: key.to_string(),
            value,
            prov,
        };
        match self.items.iter_mut().find(|i| i.key == key) {
            Some(i) => *i = item,
            None => self.items.push(item),
        }
    }
}

/// The whole platform.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Doc {
    /// Comment lines of the header (without `# `).
    pub header: Vec<String>,
    pub sections: Vec<Section>,
}

impl Doc {
    /// The section whose keys start with `prefix`, created (as a table) when absent.
    pub fn section(&mut self, prefix: &str) -> &mut Section {
        if let Some(i) = self.sections.iter().position(|s| s.prefix == prefix) {
            return &mut self.sections[i];
        }
        self.sections.push(Section::new(prefix, false, prefix));
        self.sections.last_mut().expect("just pushed")
    }

    /// The item at dotted platform `key`.
    pub fn get(&self, key: &str) -> Option<&Item> {
        let (prefix, leaf) = key.rsplit_once('.').unwrap_or(("", key));
        self.sections
            .iter()
            .find(|s| s.prefix == prefix)?
            .items
            .iter()
            .find(|i| i.key == leaf)
    }

    pub fn get_mut(&mut self, key: &str) -> Option<&mut Item> {
        let (prefix, leaf) = key.rsplit_once('.').unwrap_or(("", key));
        self.sections
            .iter_mut()
            .find(|s| s.prefix == prefix)?
            .items
            .iter_mut()
            .find(|i| i.key == leaf)
    }

    /// Sets dotted `key`; its section must exist (array elements are made explicitly).
    pub fn set(&mut self, key: &str, value: toml::Value, prov: Option<Provenance>) {
        let (prefix, leaf) = key.rsplit_once('.').unwrap_or(("", key));
        self.section(prefix).set(leaf, value, prov);
    }

    /// The number at `key`, when it holds one.
    pub fn number(&self, key: &str) -> Option<f64> {
        match &self.get(key)?.value {
            toml::Value::Integer(i) => Some(*i as f64),
            toml::Value::Float(f) => Some(*f),
            _ => None,
        }
    }

    /// The platform file.
    pub fn render(&self) -> String {
        let mut out = String::new();
        for line in &self.header {
            if line.is_empty() {
                out.push_str("#\n");
            } else {
                out.push_str(&format!("# {line}\n"));
            }
        }
        for s in &self.sections {
            if !s.header.is_empty() {
                if s.array {
                    out.push_str(&format!("\n[[{}]]\n", s.header));
                } else {
                    out.push_str(&format!("\n[{}]\n", s.header));
                }
            } else if !out.is_empty() {
                out.push('\n');
            }
            for i in &s.items {
                out.push_str(&format!(
                    "{} = {}\n",
                    i.key,
                    entry(&i.value, i.prov.as_ref())
                ));
            }
        }
        out
    }
}

fn quoted(s: &str) -> String {
    toml::Value::String(s.to_string()).to_string()
}

/// A range bound; an integer value's range is widened to whole numbers (a cycles range
/// turned into ns is not whole).
fn bound(x: f64, integer: bool, up: bool) -> String {
    match (integer, up) {
        (true, false) => format!("{}", x.floor() as i64),
        (true, true) => format!("{}", x.ceil() as i64),
        (false, _) => toml::Value::Float(x).to_string(),
    }
}

/// A value written as the ledger reads it: bare, or `{ value = ..., source = ..., ... }`.
pub fn entry(value: &toml::Value, prov: Option<&Provenance>) -> String {
    let Some(p) = prov else {
        return value.to_string();
    };
    let integer = matches!(value, toml::Value::Integer(_));
    let mut f = vec![
        format!("value = {value}"),
        format!("source = {}", quoted(p.source.as_str())),
    ];
    f.extend(fields(p, integer));
    format!("{{ {} }}", f.join(", "))
}

/// The fields after `source`, in the ledger's order.
fn fields(p: &Provenance, integer: bool) -> Vec<String> {
    let mut f = Vec::new();
    if let Some(m) = &p.machine {
        f.push(format!("machine = {}", quoted(m)));
    }
    if !p.pins.is_empty() {
        let pins: Vec<String> = p.pins.iter().map(|x| quoted(&x.to_string())).collect();
        f.push(format!("pins = [{}]", pins.join(", ")));
    }
    if let Some(c) = &p.cite {
        f.push(format!("cite = {}", quoted(c)));
    }
    if let Some(q) = &p.quote {
        f.push(format!("quote = {}", quoted(q)));
    }
    if let Some(Range { lo, hi }) = p.range {
        f.push(format!(
            "range = [{}, {}]",
            bound(lo, integer, false),
            bound(hi, integer, true)
        ));
    }
    if let Some(n) = &p.note {
        f.push(format!("note = {}", quoted(n)));
    }
    if let Some(a) = &p.also {
        let mut inner = vec![format!("source = {}", quoted(a.source.as_str()))];
        inner.extend(fields(a, integer));
        f.push(format!("also = {{ {} }}", inner.join(", ")));
    }
    f
}

#[cfg(test)]
mod tests {
    use super::*;
    use irqlab_sim::ledger::{Pin, SourceKind};

    #[test]
    fn entries_render_as_the_ledger_reads_them() {
        let mut p = Provenance::new(SourceKind::Fit);
        p.machine = Some("vm".into());
        p.pins = vec![Pin::parse("qd1:iops").unwrap()];
        p.range = Some(Range { lo: 1.0, hi: 9.5 });
        p.note = Some("say \"why\"".into());
        let s = entry(&toml::Value::Integer(5), Some(&p));
        assert_eq!(
            s,
            "{ value = 5, source = \"fit\", machine = \"vm\", pins = [\"qd1:iops\"], range = [1, 10], note = 'say \"why\"' }"
        );
        let mut d = Doc::default();
        d.sections.push(Section::new("", false, ""));
        d.set("name", toml::Value::String("x".into()), None);
        d.sections.push(Section::new("devices", true, "devices.0"));
        d.set("devices.0.count", toml::Value::Integer(2), None);
        assert_eq!(d.number("devices.0.count"), Some(2.0));
        assert_eq!(d.render(), "name = \"x\"\n\n[[devices]]\ncount = 2\n");
    }
}
