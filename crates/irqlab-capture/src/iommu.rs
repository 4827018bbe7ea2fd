//! Whether an IOMMU remaps (or posts) interrupts, from what is readable without root:
//! the IOMMU units in /sys/class/iommu, Intel's capability registers there, the ACPI
//! tables' presence (DMAR, IVRS), and the chips of the device vectors in
//! /proc/interrupts: the kernel names a remapped MSI domain "IR-PCI-MSI(X)"
//! (drivers/iommu/intel/irq_remapping.c, amd/iommu.c).

use crate::interrupts::Snapshot;
use crate::probe::Probe;
use serde::{Deserialize, Serialize};

/// One IOMMU unit and, for Intel's, what its registers say it can do.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct IommuUnit {
    pub name: String,
    /// VT-d ECAP bit 3 (IR): interrupt remapping supported.
    pub remapping: Option<bool>,
    /// VT-d CAP bit 59 (PI): posted interrupts supported.
    pub posting: Option<bool>,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Iommu {
    pub units: Vec<IommuUnit>,
    /// ACPI tables that describe an IOMMU and are present (DMAR: VT-d, IVRS: AMD-Vi).
    pub acpi_tables: Vec<String>,
    /// A numbered row of /proc/interrupts has an IR- chip: remapping is in use.
    pub remapping_in_use: bool,
    /// /proc/interrupts has a PMN row (posted MSI notifications, arch/x86 with
    /// CONFIG_X86_POSTED_MSI).
    pub posted_msi_row: bool,
}

fn hex_bit(text: &str, bit: u32) -> Option<bool> {
    let v = u64::from_str_radix(text.trim().trim_start_matches("0x"), 16).ok()?;
    Some(v >> bit & 1 == 1)
}

/// What a snapshot alone says: remapping in use (IR- chips) and the PMN row.
pub fn from_snapshot(s: &Snapshot) -> Iommu {
    Iommu {
        remapping_in_use: s
            .rows
            .iter()
            .any(|r| r.irq().is_some() && r.chip.starts_with("IR-")),
        posted_msi_row: s.row("PMN").is_some(),
        ..Iommu::default()
    }
}

pub fn read(p: &Probe, at_rest: Option<&Snapshot>) -> Iommu {
    let units = p
        .list("/sys/class/iommu")
        .into_iter()
        .map(|name| {
            let reg = |r: &str| p.value(&format!("/sys/class/iommu/{name}/intel-iommu/{r}"));
            IommuUnit {
                remapping: reg("ecap").and_then(|e| hex_bit(&e, 3)),
                posting: reg("cap").and_then(|c| hex_bit(&c, 59)),
                name,
            }
        })
        .collect();
    let acpi_tables = ["DMAR", "IVRS"]
        .iter()
        .filter(|t| p.exists(&format!("/sys/firmware/acpi/tables/{t}")))
        .map(|t| t.to_string())
        .collect();
    let (remapping_in_use, posted_msi_row) = at_rest.map_or((false, false), |s| {
        let i = from_snapshot(s);
        (i.remapping_in_use, i.posted_msi_row)
    });
    Iommu {
        units,
        acpi_tables,
        remapping_in_use,
        posted_msi_row,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vt_d_capability_bits_are_read() {
        assert_eq!(hex_bit("d2008c40660462", 59), Some(false));
        assert_eq!(hex_bit("0x0800000000000000", 59), Some(true));
        assert_eq!(hex_bit("f050da", 3), Some(true));
        assert_eq!(hex_bit("zz", 3), None);
    }
}
