//! Which shared tables a captured machine takes its costs from: the cpus/ table of its
//! core (by the CPU's vendor, family and model as /proc/cpuinfo gives them) and the
//! kernels/ table of its kernel version, the nearest known when there is no exact one,
//! said so. Their values are copied into the platform with their provenance, core-bound
//! cycles turned into ns at the machine's frequency.

use crate::FromCaptureError;
use irqlab_sim::ledger::{Provenance, Range, TableKind, cycles_to_ns};
use std::path::{Path, PathBuf};

/// A core the tables may name: the `models` name a cpus/ table lists it by.
struct Core {
    vendor: &'static str,
    family: u32,
    models: &'static [u32],
    /// The name cpus/ tables use.
    name: &'static str,
    /// In words, for messages.
    label: &'static str,
    year: u32,
}

/// Server cores by CPUID family and model (Intel SDM vol. 4 table 2-1, AMD's Processor
/// Programming References), the names cpus/ tables list them by.
const CORES: &[Core] = &[
    Core {
        vendor: "GenuineIntel",
        family: 6,
        models: &[63],
        name: "haswell-x",
        label: "Intel Haswell-EP",
        year: 2014,
    },
    Core {
        vendor: "GenuineIntel",
        family: 6,
        models: &[79],
        name: "broadwell-x",
        label: "Intel Broadwell-EP",
        year: 2016,
    },
    Core {
        vendor: "GenuineIntel",
        family: 6,
        models: &[85],
        name: "skylake-sp",
        label: "Intel Skylake-SP / Cascade Lake",
        year: 2017,
    },
    Core {
        vendor: "GenuineIntel",
        family: 6,
        models: &[106, 108],
        name: "ice-lake-sp",
        label: "Intel Ice Lake-SP",
        year: 2021,
    },
    Core {
        vendor: "GenuineIntel",
        family: 6,
        models: &[143],
        name: "sapphire-rapids",
        label: "Intel Sapphire Rapids",
        year: 2023,
    },
    Core {
        vendor: "GenuineIntel",
        family: 6,
        models: &[207],
        name: "emerald-rapids",
        label: "Intel Emerald Rapids",
        year: 2023,
    },
    Core {
        vendor: "GenuineIntel",
        family: 6,
        models: &[173, 174],
        name: "granite-rapids",
        label: "Intel Granite Rapids",
        year: 2024,
    },
    Core {
        vendor: "AuthenticAMD",
        family: 23,
        models: &[1, 8],
        name: "zen1",
        label: "AMD Zen (Naples)",
        year: 2017,
    },
    Core {
        vendor: "AuthenticAMD",
        family: 23,
        models: &[49],
        name: "zen2",
        label: "AMD Zen 2 (Rome)",
        year: 2019,
    },
    Core {
        vendor: "AuthenticAMD",
        family: 25,
        models: &[1],
        name: "zen3",
        label: "AMD Zen 3 (Milan)",
        year: 2021,
    },
    Core {
        vendor: "AuthenticAMD",
        family: 25,
        models: &[17, 160],
        name: "zen4",
        label: "AMD Zen 4 (Genoa, Bergamo)",
        year: 2022,
    },
    Core {
        vendor: "AuthenticAMD",
        family: 26,
        models: &[2, 17],
        name: "zen5",
        label: "AMD Zen 5 (Turin)",
        year: 2024,
    },
];

/// A table chosen for the machine.
#[derive(Clone, Debug, PartialEq)]
pub struct Choice {
    pub kind: TableKind,
    pub path: PathBuf,
    /// What the machine is, in words (`AMD Zen 5 (Turin)`, `Linux 6.18.44`).
    pub machine_is: String,
    /// What the table describes (`sapphire-rapids`, `6.8`).
    pub table_is: String,
    pub exact: bool,
}

impl Choice {
    /// One line for the output: which table and why.
    pub fn said(&self) -> String {
        let file = self.path.file_name().map_or_else(String::new, |n| {
            format!("{}/{}", self.kind.dir(), n.to_string_lossy())
        });
        if self.exact {
            format!("{file} ({} is {})", self.machine_is, self.table_is)
        } else {
            format!(
                "{file}: nearest known ({} has no table; {} is the nearest the tables describe)",
                self.machine_is, self.table_is
            )
        }
    }
}

fn table_err(path: &Path, why: impl Into<String>) -> FromCaptureError {
    FromCaptureError::Table {
        path: path.to_path_buf(),
        why: why.into(),
    }
}

fn toml_files(dir: &Path) -> Result<Vec<PathBuf>, FromCaptureError> {
    let rd = std::fs::read_dir(dir).map_err(|e| {
        table_err(
            dir,
            format!(
                "cannot list the shared tables ({e}); expected the platforms directory's tables"
            ),
        )
    })?;
    let mut v: Vec<PathBuf> = rd
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.is_file() && p.extension().is_some_and(|x| x == "toml"))
        .collect();
    v.sort();
    if v.is_empty() {
        return Err(table_err(dir, "no *.toml table there"));
    }
    Ok(v)
}

/// The core of a CPU, if it is one of [`CORES`].
fn core_of(vendor: Option<&str>, family: Option<u32>, model: Option<u32>) -> Option<&'static Core> {
    CORES.iter().find(|c| {
        Some(c.vendor) == vendor
            && Some(c.family) == family
            && model.is_some_and(|m| c.models.contains(&m))
    })
}

/// The cpus/ table for the CPU of `topo`.
pub fn choose_cpu(
    platforms: &Path,
    topo: &irqlab_capture::topology::Topology,
) -> Result<Choice, FromCaptureError> {
    choose_by_core(platforms, TableKind::Cpu, topo)
}

/// The uncores/ table for the CPU of `topo` (its socket's interrupt router).
pub fn choose_uncore(
    platforms: &Path,
    topo: &irqlab_capture::topology::Topology,
) -> Result<Choice, FromCaptureError> {
    choose_by_core(platforms, TableKind::Uncore, topo)
}

/// The table of `kind` (cpus/ or uncores/: both list the `models` they describe) for
/// the CPU of `topo`, exact or the nearest known.
fn choose_by_core(
    platforms: &Path,
    kind: TableKind,
    topo: &irqlab_capture::topology::Topology,
) -> Result<Choice, FromCaptureError> {
    let dir = platforms.join(kind.dir());
    let mut listed: Vec<(String, PathBuf)> = Vec::new();
    for p in toml_files(&dir)? {
        let text = std::fs::read_to_string(&p).map_err(|e| table_err(&p, e.to_string()))?;
        let t: toml::Table = toml::from_str(&text).map_err(|e| table_err(&p, e.to_string()))?;
        for m in t
            .get("models")
            .and_then(|m| m.as_array())
            .into_iter()
            .flatten()
            .filter_map(|m| m.as_str())
        {
            listed.push((m.to_string(), p.clone()));
        }
    }
    if listed.is_empty() {
        return Err(table_err(&dir, "no table lists models = [...]"));
    }
    let mine = core_of(topo.vendor.as_deref(), topo.family, topo.model);
    let machine_is = match mine {
        Some(c) => c.label.to_string(),
        None => format!(
            "{} family {} model {}",
            topo.vendor.as_deref().unwrap_or("an unknown vendor's CPU"),
            topo.family.map_or("?".into(), |f| f.to_string()),
            topo.model.map_or("?".into(), |m| m.to_string())
        ),
    };
    if let Some(c) = mine
        && let Some((name, path)) = listed.iter().find(|(n, _)| n == c.name)
    {
        return Ok(Choice {
            kind,
            path: path.clone(),
            machine_is,
            table_is: name.clone(),
            exact: true,
        });
    }
    // The nearest: the same vendor first, then the nearest year (the newer on a tie).
    let known: Vec<(&Core, &(String, PathBuf))> = listed
        .iter()
        .filter_map(|l| CORES.iter().find(|c| c.name == l.0).map(|c| (c, l)))
        .collect();
    let pick = match mine {
        Some(m) => known
            .iter()
            .min_by_key(|(c, _)| {
                (
                    c.vendor != m.vendor,
                    c.year.abs_diff(m.year),
                    std::cmp::Reverse(c.year),
                )
            })
            .map(|(c, l)| (format!("{} ({})", l.0, c.label), l.1.clone())),
        None => known
            .iter()
            .min_by_key(|(c, _)| {
                (
                    Some(c.vendor) != topo.vendor.as_deref(),
                    std::cmp::Reverse(c.year),
                )
            })
            .map(|(c, l)| (format!("{} ({})", l.0, c.label), l.1.clone())),
    }
    .unwrap_or_else(|| (listed[0].0.clone(), listed[0].1.clone()));
    Ok(Choice {
        kind,
        path: pick.1,
        machine_is,
        table_is: pick.0,
        exact: false,
    })
}

/// `6.18.44-fc-v657` → (6, 18).
fn version(s: &str) -> Option<(u32, u32)> {
    let mut it = s.split(|c: char| !c.is_ascii_digit());
    let major = it.next()?.parse().ok()?;
    let minor = it.next()?.parse().ok()?;
    Some((major, minor))
}

/// The kernels/ table nearest the release (None: not in the capture), and the most
/// complete table (the newest) when the nearest is another one: the nearest's values
/// override the base's.
pub fn choose_kernel(
    platforms: &Path,
    release: Option<&str>,
) -> Result<(Choice, Option<Choice>), FromCaptureError> {
    let dir = platforms.join(TableKind::Kernel.dir());
    let mut tables: Vec<((u32, u32), PathBuf)> = toml_files(&dir)?
        .into_iter()
        .filter_map(|p| {
            let v = version(&p.file_stem()?.to_string_lossy())?;
            Some((v, p))
        })
        .collect();
    tables.sort();
    let Some(newest) = tables.last().cloned() else {
        return Err(table_err(
            &dir,
            "no table named by a version (e.g. 6.8.toml)",
        ));
    };
    let key = |v: (u32, u32)| i64::from(v.0) * 1000 + i64::from(v.1);
    let mine = release.and_then(version);
    let (nearest, exact) = match mine {
        Some(m) => {
            let t = tables
                .iter()
                .min_by_key(|(v, _)| ((key(*v) - key(m)).abs(), std::cmp::Reverse(*v)))
                .cloned()
                .unwrap_or(newest.clone());
            let exact = t.0 == m;
            (t, exact)
        }
        None => (newest.clone(), false),
    };
    let name = |v: (u32, u32)| format!("{}.{}", v.0, v.1);
    let machine_is = match (release, mine) {
        (Some(r), Some(_)) => format!("Linux {r}"),
        (Some(r), None) => format!("kernel release '{r}' (not a version)"),
        (None, _) => "the kernel (the capture does not say its release)".to_string(),
    };
    let choice = |t: &((u32, u32), PathBuf), exact: bool| Choice {
        kind: TableKind::Kernel,
        path: t.1.clone(),
        machine_is: machine_is.clone(),
        table_is: name(t.0),
        exact,
    };
    let base = (nearest.0 != newest.0).then(|| choice(&newest, false));
    Ok((choice(&nearest, exact), base))
}

/// One value copied from a table: dotted key, value (ns for cycles), provenance.
pub type Copied = (String, toml::Value, Provenance);

/// The values of table `c`, cycles in ns at `mhz`, each noting where it came from.
pub fn copy(c: &Choice, mhz: u64) -> Result<Vec<Copied>, FromCaptureError> {
    let entries = irqlab_sim::ledger::table_entries(&c.path, c.kind)
        .map_err(|e| table_err(&c.path, e.to_string()))?;
    let file = format!(
        "{}/{}",
        c.kind.dir(),
        c.path
            .file_name()
            .map_or_else(String::new, |n| n.to_string_lossy().into_owned())
    );
    let mut out = Vec::new();
    for e in entries {
        let Some(mut p) = e.provenance.clone() else {
            return Err(table_err(
                &c.path,
                format!(
                    "{}: a bare value; every table value needs its provenance",
                    e.key
                ),
            ));
        };
        let from = match e.cycles {
            Some(cy) => format!("{file}: {cy} cycles at {} GHz", mhz as f64 / 1000.0),
            None => file.clone(),
        };
        let value = match e.cycles {
            Some(cy) => toml::Value::Integer(cycles_to_ns(cy, mhz) as i64),
            None => e.value.to_toml(),
        };
        if let (Some(_), Some(r)) = (e.cycles, p.range) {
            p.range = Some(Range {
                lo: r.lo * 1000.0 / mhz as f64,
                hi: r.hi * 1000.0 / mhz as f64,
            });
        }
        // A fit to other rigs' published figures is, for this machine, an estimate from
        // that fit: its pins name scenarios of those rigs, not runs of this one.
        let from = if p.source == irqlab_sim::ledger::SourceKind::Fit {
            let pins: Vec<String> = p.pins.iter().map(|x| x.to_string()).collect();
            p.source = irqlab_sim::ledger::SourceKind::Estimate;
            p.pins.clear();
            p.also = None;
            format!("{from}, fitted there to {}", pins.join(", "))
        } else if p.source == irqlab_sim::ledger::SourceKind::Measured {
            // Another machine's measurement is a prior for this one.
            let on = p.machine.take().unwrap_or_default();
            p.source = irqlab_sim::ledger::SourceKind::Estimate;
            format!("{from}, measured there on {on}")
        } else {
            from
        };
        p.note = Some(match p.note.take() {
            Some(n) => format!("{from}; {n}"),
            None => from,
        });
        out.push((e.key.clone(), value, p));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn platforms() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../platforms")
    }

    fn topo(vendor: &str, family: u32, model: u32) -> irqlab_capture::topology::Topology {
        irqlab_capture::topology::Topology {
            vendor: Some(vendor.into()),
            family: Some(family),
            model: Some(model),
            ..Default::default()
        }
    }

    #[test]
    fn a_known_core_takes_its_table_and_another_the_nearest_said_so() {
        let emr = choose_cpu(&platforms(), &topo("GenuineIntel", 6, 207)).unwrap();
        assert!(emr.exact && emr.table_is == "emerald-rapids", "{emr:?}");
        let zen5 = choose_cpu(&platforms(), &topo("AuthenticAMD", 26, 2)).unwrap();
        assert!(!zen5.exact);
        assert!(
            zen5.said().contains("AMD Zen 5 (Turin) has no table"),
            "{}",
            zen5.said()
        );
        let odd = choose_cpu(&platforms(), &topo("HygonGenuine", 24, 1)).unwrap();
        assert!(!odd.exact && odd.machine_is.contains("HygonGenuine family 24"));
    }

    #[test]
    fn the_nearest_kernel_version_and_the_base_it_overrides() {
        let (k, base) = choose_kernel(&platforms(), Some("6.18.44-fc-v657")).unwrap();
        assert_eq!((k.table_is.as_str(), k.exact), ("6.8", false));
        assert!(base.is_none());
        let (k, base) = choose_kernel(&platforms(), Some("5.4.0-100-generic")).unwrap();
        assert_eq!(k.table_is, "5.3");
        assert_eq!(base.unwrap().table_is, "6.8");
        let (k, _) = choose_kernel(&platforms(), Some("6.8.0-45-generic")).unwrap();
        assert!(k.exact);
        let (k, _) = choose_kernel(&platforms(), None).unwrap();
        assert!(
            k.said().contains("does not say its release"),
            "{}",
            k.said()
        );
        assert_eq!(version("6.18.44-fc"), Some((6, 18)));
        assert_eq!(version("rc"), None);
    }

    #[test]
    fn cycles_become_ns_at_the_machines_frequency() {
        let c = choose_cpu(&platforms(), &topo("GenuineIntel", 6, 143)).unwrap();
        let v = copy(&c, 2000).unwrap();
        let (_, value, p) = v.iter().find(|(k, _, _)| k == "cpu.irq_entry_ns").unwrap();
        // The note says the cycles; at 2 GHz they are half as many ns.
        let note = p.note.as_deref().unwrap();
        let cycles: u64 = note
            .strip_prefix("cpus/golden-cove.toml: ")
            .and_then(|r| r.split(" cycles at 2 GHz").next())
            .and_then(|c| c.parse().ok())
            .unwrap_or_else(|| panic!("{note}"));
        assert_eq!(value.as_integer(), Some(cycles.div_ceil(2) as i64));
    }
}
