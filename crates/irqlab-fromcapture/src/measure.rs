//! What the capture measured, as the builders write it: a value's provenance naming the
//! machine and the capture file it was read from, and the head of a `[[devices]]` group
//! (the NVMe groups of template.rs and the virtio-blk ones of virtio.rs start alike).

use crate::doc::{Doc, Section};
use irqlab_sim::ledger::{Provenance, SourceKind};

/// A measured value's provenance: read on `machine` from `cite`, with what it said.
pub fn measured(
    machine: &str,
    cite: &str,
    quote: Option<String>,
    note: Option<String>,
) -> Provenance {
    let mut p = Provenance::new(SourceKind::Measured);
    p.machine = Some(machine.to_string());
    p.cite = Some(cite.to_string());
    p.quote = quote;
    p.note = note;
    p
}

pub fn int(v: u64) -> toml::Value {
    toml::Value::Integer(v as i64)
}

/// Starts `[[devices]]` group `g` of one `kind` disk named `prefix`N, the capture's
/// `disk`; returns the group's key prefix (`devices.g`).
pub fn device_group(
    doc: &mut Doc,
    g: usize,
    kind: &str,
    prefix: &str,
    machine: &str,
    disk: &str,
) -> String {
    let dp = format!("devices.{g}");
    doc.sections.push(Section::new("devices", true, &dp));
    doc.set(
        &format!("{dp}.kind"),
        toml::Value::String(kind.into()),
        None,
    );
    doc.set(
        &format!("{dp}.prefix"),
        toml::Value::String(prefix.into()),
        None,
    );
    doc.set(
        &format!("{dp}.count"),
        int(1),
        Some(measured(
            machine,
            "capture devices",
            Some(disk.to_string()),
            None,
        )),
    );
    dp
}
