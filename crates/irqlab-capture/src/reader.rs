//! Reading a capture directory: the one irqlab writes (manifest.json) or one laid out by
//! hand (lscpu.txt, and per run NAME.json with NAME.irq0 and NAME.irq1). Every file is
//! checked, and a bad one is refused with its path and what was expected there.

use crate::error::CaptureError;
use crate::host::Host;
use crate::hostbench::BenchReport;
use crate::interrupts::Snapshot;
use crate::manifest::{Manifest, RunEntry, SCHEMA};
use crate::run::{Parts, Run};
use crate::vectors::DeviceKind;
use std::path::{Path, PathBuf};

/// fio's json+ of several jobs may be a few MiB; nothing here is larger than this.
const MAX_JSON_BYTES: u64 = 64 << 20;
const MAX_TEXT_BYTES: u64 = 16 << 20;

/// Files of a capture that are not runs.
const NOT_RUNS: &[&str] = &["manifest.json", "bench.json"];

/// A run the capture lists but that has no result to read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Skipped {
    pub name: String,
    pub why: String,
}

/// A capture directory, read and checked.
#[derive(Clone, Debug, PartialEq)]
pub struct Capture {
    pub dir: PathBuf,
    /// None for a directory laid out by hand.
    pub manifest: Option<Manifest>,
    pub host: Host,
    pub at_rest: Option<Snapshot>,
    pub runs: Vec<Run>,
    pub skipped: Vec<Skipped>,
    pub bench: Option<BenchReport>,
}

fn read(path: &Path, expected: &str, limit: u64) -> Result<String, CaptureError> {
    if std::fs::symlink_metadata(path).is_err() {
        return Err(CaptureError::Missing {
            path: path.to_path_buf(),
            expected: expected.to_string(),
        });
    }
    irqlab_fio::input::read_text(path, limit).map_err(|e| CaptureError::Read {
        path: path.to_path_buf(),
        why: e.to_string(),
    })
}

fn snapshot(path: &Path, run: &str) -> Result<Snapshot, CaptureError> {
    let text = read(
        path,
        &format!(
            "/proc/interrupts as it was around run {run} (cat /proc/interrupts > {})",
            file_name(path)
        ),
        MAX_TEXT_BYTES,
    )?;
    crate::interrupts::parse(&text).map_err(|e| CaptureError::malformed(path, e))
}

fn file_name(p: &Path) -> String {
    p.file_name()
        .map_or_else(String::new, |n| n.to_string_lossy().into_owned())
}

fn manifest(dir: &Path) -> Result<Option<Manifest>, CaptureError> {
    let path = dir.join("manifest.json");
    if !path.exists() {
        return Ok(None);
    }
    let text = read(&path, "irqlab's manifest", MAX_JSON_BYTES)?;
    let v: serde_json::Value = serde_json::from_str(&text).map_err(|e| {
        CaptureError::malformed(&path, format!("not JSON ({e}); expected irqlab's manifest"))
    })?;
    let schema = v.get("schema").and_then(|s| s.as_str()).unwrap_or("");
    if schema.split('/').next() != SCHEMA.split('/').next()
        || schema.split('/').nth(1) != SCHEMA.split('/').nth(1)
    {
        return Err(CaptureError::malformed(
            &path,
            format!(
                "schema '{schema}'; expected \"{SCHEMA}\" (a capture written by irqlab capture)"
            ),
        ));
    }
    serde_json::from_value(v).map(Some).map_err(|e| {
        CaptureError::malformed(&path, format!("{e}; expected irqlab's manifest ({SCHEMA})"))
    })
}

/// The runs of a hand-made layout: every NAME.json but the capture's own files, each
/// with NAME.irq0 and NAME.irq1; a snapshot without its JSON is an error too.
fn discover(dir: &Path) -> Result<Vec<RunEntry>, CaptureError> {
    let rd = std::fs::read_dir(dir).map_err(|e| CaptureError::Read {
        path: dir.to_path_buf(),
        why: irqlab_fio::input::io_reason(&e),
    })?;
    let mut names: Vec<String> = Vec::new();
    let mut orphans: Vec<String> = Vec::new();
    for e in rd.flatten() {
        let f = e.file_name().to_string_lossy().into_owned();
        if let Some(n) = f
            .strip_suffix(".json")
            .filter(|_| !NOT_RUNS.contains(&f.as_str()))
        {
            names.push(n.to_string());
        } else if let Some(n) = f.strip_suffix(".irq0").or_else(|| f.strip_suffix(".irq1")) {
            orphans.push(n.to_string());
        }
    }
    names.sort();
    if let Some(o) = orphans.iter().find(|o| !names.contains(o)) {
        return Err(CaptureError::Missing {
            path: dir.join(format!("{o}.json")),
            expected: format!(
                "fio's JSON result of run {o} (fio --output-format=json --output={o}.json), since {o}.irq0/{o}.irq1 are there"
            ),
        });
    }
    Ok(names
        .into_iter()
        .map(|n| RunEntry {
            what: String::new(),
            args: Vec::new(),
            job_file: format!("{n}.fio"),
            json: format!("{n}.json"),
            irq_before: format!("{n}.irq0"),
            irq_after: format!("{n}.irq1"),
            device: None,
            loadavg: Vec::new(),
            failed: None,
            name: n,
        })
        .collect())
}

/// The devices a hand-made capture shows: its vectors' names (NVMe controllers,
/// virtio-blk devices), named after the controller.
fn inferred_devices(snap: &Snapshot) -> Vec<crate::devices::BlockDevice> {
    crate::vectors::infer(snap)
        .into_iter()
        .map(|(prefix, kind, vectors)| crate::devices::BlockDevice {
            name: prefix.clone(),
            kind,
            driver: None,
            model: None,
            size_bytes: None,
            rotational: None,
            irq_prefix: Some(prefix),
            pci: None,
            queues: Vec::new(),
            io_poll: None,
            poll_queues: 0,
            nr_requests: None,
            scheduler: None,
            virtio_features: Vec::new(),
            vectors,
        })
        .collect()
}

/// The kernel of a hand-made capture, from its optional `uname.txt` (`uname -r`, or
/// `uname -a`, whose third word is the release) and `cmdline.txt` (/proc/cmdline).
fn hand_kernel(dir: &Path) -> Result<crate::kernel::Kernel, CaptureError> {
    let mut k = crate::kernel::Kernel::default();
    let uname = dir.join("uname.txt");
    if uname.exists() {
        let text = read(&uname, "uname -r (the kernel release)", MAX_TEXT_BYTES)?;
        let words: Vec<&str> = text.split_whitespace().collect();
        let release = match words.as_slice() {
            [r] => *r,
            ["Linux", _, r, ..] => *r,
            _ => {
                return Err(CaptureError::malformed(
                    &uname,
                    "expected the output of uname -r (e.g. 6.8.0-45-generic) or uname -a",
                ));
            }
        };
        if !release.starts_with(|c: char| c.is_ascii_digit()) {
            return Err(CaptureError::malformed(
                &uname,
                format!(
                    "'{release}' is not a kernel release; expected the output of uname -r (e.g. 6.8.0-45-generic)"
                ),
            ));
        }
        k.release = Some(release.to_string());
    }
    let cmdline = dir.join("cmdline.txt");
    if cmdline.exists() {
        let text = read(&cmdline, "/proc/cmdline", MAX_TEXT_BYTES)?;
        let line = text.trim().to_string();
        k.options = crate::kernel::options(&line);
        k.cmdline = Some(line);
    }
    Ok(k)
}

/// The devices of a hand-made run: the NVMe controllers of the disks fio names (every
/// one of them: a job may use several), or the only device there is.
fn hand_devices(host: &Host, fio: &crate::fio_json::FioOutput) -> Vec<String> {
    let mut found: Vec<String> = Vec::new();
    for u in &fio.disk_util {
        let ctrl: String = if u.name.starts_with("nvme") {
            let digits: String = u.name[4..]
                .chars()
                .take_while(char::is_ascii_digit)
                .collect();
            format!("nvme{digits}")
        } else {
            u.name.clone()
        };
        if host.device(&ctrl).is_some() && !found.contains(&ctrl) {
            found.push(ctrl);
        }
    }
    if found.is_empty() && host.devices.len() == 1 {
        found.push(host.devices[0].name.clone());
    }
    found
}

impl Capture {
    /// Reads and checks the capture in `dir`.
    pub fn open(dir: &Path) -> Result<Capture, CaptureError> {
        if !dir.is_dir() {
            return Err(CaptureError::Layout {
                dir: dir.to_path_buf(),
                why: "not a directory; expected a capture directory (irqlab capture --out DIR)"
                    .into(),
            });
        }
        let manifest = manifest(dir)?;
        let (mut host, entries, rest_file) = match &manifest {
            Some(m) => (m.host.clone(), m.runs.clone(), m.interrupts_at_rest.clone()),
            None => {
                let lscpu = dir.join("lscpu.txt");
                if !lscpu.exists() {
                    return Err(CaptureError::Layout {
                        dir: dir.to_path_buf(),
                        why: "no manifest.json and no lscpu.txt; expected a directory written by irqlab capture, or one laid out by hand: lscpu.txt (LC_ALL=C lscpu), and per run NAME.json (fio --output-format=json), NAME.irq0 and NAME.irq1 (/proc/interrupts before and after)".into(),
                    });
                }
                let text = read(&lscpu, "lscpu's output", MAX_TEXT_BYTES)?;
                let topology =
                    crate::lscpu::parse(&text).map_err(|e| CaptureError::malformed(&lscpu, e))?;
                let host = Host {
                    topology,
                    kernel: hand_kernel(dir)?,
                    ..Host::default()
                };
                let rest = dir
                    .join("interrupts.txt")
                    .exists()
                    .then(|| "interrupts.txt".to_string());
                (host, discover(dir)?, rest)
            }
        };
        if manifest.is_none() && entries.is_empty() {
            return Err(CaptureError::Layout {
                dir: dir.to_path_buf(),
                why: "no runs; expected NAME.json (fio --output-format=json) with NAME.irq0 and NAME.irq1 for each run".into(),
            });
        }
        let at_rest = match &rest_file {
            Some(f) => Some(snapshot(&dir.join(f), "at rest")?),
            None => None,
        };
        let mut runs = Vec::new();
        let mut skipped = Vec::new();
        for e in &entries {
            if let Some(why) = &e.failed {
                skipped.push(Skipped {
                    name: e.name.clone(),
                    why: why.clone(),
                });
                continue;
            }
            let json = dir.join(&e.json);
            let text = read(
                &json,
                &format!(
                    "fio's JSON result of run {} (fio --output-format=json)",
                    e.name
                ),
                MAX_JSON_BYTES,
            )?;
            let fio =
                crate::fio_json::parse(&text).map_err(|m| CaptureError::malformed(&json, m))?;
            if let Some(why) = fio.failure() {
                return Err(CaptureError::FailedRun { path: json, why });
            }
            let (b, a) = (dir.join(&e.irq_before), dir.join(&e.irq_after));
            let (before, after) = (snapshot(&b, &e.name)?, snapshot(&a, &e.name)?);
            if manifest.is_none() && host.devices.is_empty() {
                let snap = at_rest.as_ref().unwrap_or(&before);
                host.devices = inferred_devices(snap);
                host.iommu = crate::iommu::from_snapshot(snap);
            }
            let snap_err = |why: String| CaptureError::Snapshots {
                before: b.clone(),
                after: a.clone(),
                why,
            };
            let delta = crate::irq_delta::delta(&before, &after).map_err(|m| snap_err(m.0))?;
            let runtime = fio.summary().runtime_s;
            if let Some(w) = delta.window_s
                && w + 0.05 < runtime
            {
                return Err(snap_err(format!(
                    "they are {w:.3} s apart, but fio ran for {runtime:.3} s: not taken around this run"
                )));
            }
            // The run's devices: the manifest's, or those fio's disk_util names.
            let devices: Vec<String> = match &e.device {
                Some(d) => vec![d.clone()],
                None => hand_devices(&host, &fio),
            };
            let device = (devices.len() == 1).then(|| devices[0].clone());
            let of_run: Vec<&crate::devices::BlockDevice> =
                devices.iter().filter_map(|d| host.device(d)).collect();
            let vector_irqs: Vec<u32> = if of_run.is_empty() {
                host.devices
                    .iter()
                    .flat_map(|d| d.vectors.iter().map(|v| v.irq))
                    .collect()
            } else {
                of_run
                    .iter()
                    .flat_map(|d| d.vectors.iter().map(|v| v.irq))
                    .collect()
            };
            runs.push(crate::run::build(Parts {
                name: e.name.clone(),
                what: Some(e.what.clone()).filter(|w| !w.is_empty()),
                device,
                loadavg: e.loadavg.clone(),
                fio,
                delta,
                vector_irqs,
            }));
        }
        let bench_path = dir.join("bench.json");
        let bench = if bench_path.exists() {
            let text = read(&bench_path, "irqlab hostbench's JSON", MAX_JSON_BYTES)?;
            Some(serde_json::from_str(&text).map_err(|e| {
                CaptureError::malformed(
                    &bench_path,
                    format!("{e}; expected irqlab hostbench's JSON"),
                )
            })?)
        } else {
            None
        };
        Ok(Capture {
            dir: dir.to_path_buf(),
            manifest,
            host,
            at_rest,
            runs,
            skipped,
            bench,
        })
    }

    /// The run named `name`.
    pub fn run(&self, name: &str) -> Option<&Run> {
        self.runs.iter().find(|r| r.name == name)
    }

    /// Whether any device of the capture is of this kind.
    pub fn has_kind(&self, kind: DeviceKind) -> bool {
        self.host.devices.iter().any(|d| d.kind == kind)
    }
}
