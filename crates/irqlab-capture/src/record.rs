//! `irqlab capture`: record this machine into a new directory: /proc/interrupts at rest,
//! the host (topology, kernel, IOMMU, block devices and vectors), then unless told not
//! to, the fio battery on a target with /proc/interrupts read just before and after each
//! run, and manifest.json saying what is where. Nothing is written outside the directory
//! but the target file irqlab lays out (and removes).

use crate::battery::{RunSpec, battery, job_file};
use crate::error::CaptureError;
use crate::fio_exec::{Ended, Fio};
use crate::interrupts::meta_line;
use crate::manifest::{FioTool, Manifest, RunEntry, SCHEMA};
use crate::probe::Probe;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// What `irqlab capture` was asked to do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CaptureOptions {
    pub out: PathBuf,
    /// A file or block device; None: a new file in the current directory.
    pub target: Option<PathBuf>,
    /// Asked for shorter runs (recorded in the manifest).
    pub quick: bool,
    /// Each run's length.
    pub runtime_s: u32,
    /// The size of a file irqlab lays out.
    pub file_bytes: u64,
    pub no_fio: bool,
    pub fio: Option<PathBuf>,
    /// Who writes the manifest (`irqlab 0.1.0`).
    pub tool: String,
}

impl CaptureOptions {
    /// 10 s runs on a 1 GiB file, or with `quick` 3 s on 256 MiB; fio from PATH.
    pub fn new(out: PathBuf, quick: bool) -> CaptureOptions {
        CaptureOptions {
            out,
            target: None,
            quick,
            runtime_s: if quick { 3 } else { 10 },
            file_bytes: if quick { 256 << 20 } else { 1 << 30 },
            no_fio: false,
            fio: None,
            tool: format!("irqlab-capture {}", env!("CARGO_PKG_VERSION")),
        }
    }
}

/// Refuses an existing directory that is not empty, so no capture is overwritten.
fn check_out(out: &Path) -> Result<(), CaptureError> {
    match std::fs::read_dir(out).map(|mut rd| rd.next().is_some()) {
        Ok(true) => Err(CaptureError::Write {
            path: out.to_path_buf(),
            why: "exists and is not empty; expected a new or empty directory".into(),
        }),
        Ok(false) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(CaptureError::write(out, &e)),
    }
}

fn write(path: &Path, text: &str) -> Result<(), CaptureError> {
    std::fs::write(path, text).map_err(|e| CaptureError::write(path, &e))
}

/// Reads /proc/interrupts into `path`, with irqlab's line of boot time and read time.
fn snapshot(p: &Probe, path: &Path) -> Result<String, CaptureError> {
    let text = p
        .text("/proc/interrupts")
        .ok_or_else(|| CaptureError::Read {
            path: "/proc/interrupts".into(),
            why: "cannot read; irqlab capture needs Linux's /proc/interrupts".into(),
        })?;
    let taken = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64());
    let btime = p
        .text("/proc/stat")
        .as_deref()
        .and_then(crate::kernel::btime);
    let full = format!("{}{text}", meta_line(btime, taken));
    write(path, &full)?;
    Ok(full)
}

fn write_manifest(out: &Path, m: &Manifest) -> Result<(), CaptureError> {
    let path = out.join("manifest.json");
    let text = serde_json::to_string_pretty(m).map_err(|e| CaptureError::Write {
        path: path.clone(),
        why: e.to_string(),
    })?;
    write(&path, &(text + "\n"))
}

/// One line after a run: what it measured, as `irqlab capture --show` would.
fn run_line(out: &Path, e: &RunEntry, host: &crate::host::Host) -> String {
    let read = || -> Option<crate::run::Run> {
        let fio = crate::fio_json::parse(&std::fs::read_to_string(out.join(&e.json)).ok()?).ok()?;
        let snap =
            |f: &str| crate::interrupts::parse(&std::fs::read_to_string(out.join(f)).ok()?).ok();
        let delta = crate::irq_delta::delta(&snap(&e.irq_before)?, &snap(&e.irq_after)?).ok()?;
        let vector_irqs = e
            .device
            .as_deref()
            .and_then(|d| host.device(d))
            .map(|d| d.vectors.iter().map(|v| v.irq).collect())
            .unwrap_or_default();
        Some(crate::run::build(crate::run::Parts {
            name: e.name.clone(),
            what: None,
            device: e.device.clone(),
            loadavg: Vec::new(),
            fio,
            delta,
            vector_irqs,
        }))
    };
    match read() {
        Some(r) => format!(
            "      IOPS {:.0}, clat mean {:.1} us, {:.0} interrupts/s, {} I/Os per interrupt",
            r.summary.iops,
            r.summary.clat_mean_us,
            r.interrupts_per_s,
            r.ios_per_interrupt
                .map_or("-".into(), |x| format!("{x:.2}"))
        ),
        None => "      (no readable result)".into(),
    }
}

/// Runs one battery entry: job file, snapshot, fio, snapshot.
fn one_run(
    fio: &Fio,
    out: &Path,
    spec: &RunSpec,
    job: String,
    device: Option<String>,
    stop: &AtomicBool,
    p: &Probe,
) -> Result<(RunEntry, Ended), CaptureError> {
    let n = &spec.name;
    let mut e = RunEntry {
        name: n.clone(),
        what: spec.what.clone(),
        args: vec![
            "--output-format=json+".into(),
            format!("--output={n}.json"),
            "--readonly".into(),
            "--eta=never".into(),
            format!("{n}.fio"),
        ],
        job_file: format!("{n}.fio"),
        json: format!("{n}.json"),
        irq_before: format!("{n}.irq0"),
        irq_after: format!("{n}.irq1"),
        device,
        loadavg: Vec::new(),
        failed: None,
    };
    let load = || p.value("/proc/loadavg").unwrap_or_default();
    write(&out.join(&e.job_file), &job)?;
    e.loadavg.push(load());
    let err_file = out.join(format!("{n}.stderr"));
    snapshot(p, &out.join(&e.irq_before))?;
    let ended = crate::fio_exec::run(fio, out, &e.args, &err_file, stop)?;
    snapshot(p, &out.join(&e.irq_after))?;
    e.loadavg.push(load());
    if std::fs::metadata(&err_file).is_ok_and(|m| m.len() == 0) {
        let _ = std::fs::remove_file(&err_file);
    }
    match &ended {
        Ended::Failed(why) => e.failed = Some(why.clone()),
        Ended::Stopped => e.failed = Some("stopped by Ctrl-C".into()),
        Ended::Ok => {}
    }
    Ok((e, ended))
}

/// Records a capture; `progress` hears each step. On Ctrl-C (`stop` set) the runs so far
/// and the manifest stay, the target file is removed, and the error is Interrupted.
pub fn record(
    o: &CaptureOptions,
    stop: &AtomicBool,
    progress: &dyn Fn(&str),
) -> Result<Manifest, CaptureError> {
    check_out(&o.out)?;
    let fio = if o.no_fio {
        None
    } else {
        Some(crate::fio_exec::find(o.fio.as_deref())?)
    };
    let target = match &fio {
        Some(_) => Some(crate::target::prepare(
            o.target.as_deref(),
            o.file_bytes,
            stop,
            progress,
        )?),
        None => None,
    };
    std::fs::create_dir_all(&o.out).map_err(|e| CaptureError::write(&o.out, &e))?;
    progress(&format!("reading the host into {}", o.out.display()));
    let p = Probe::live();
    let rest = snapshot(&p, &o.out.join("interrupts.txt"))?;
    let at_rest = crate::interrupts::parse(&rest)
        .map_err(|e| CaptureError::malformed("/proc/interrupts", e))?;
    let host = crate::host::read(&p, Some(&at_rest));
    let mut m = Manifest {
        schema: SCHEMA.into(),
        tool: o.tool.clone(),
        date: humantime::format_rfc3339_seconds(SystemTime::now()).to_string(),
        host,
        sources: p.sources(),
        interrupts_at_rest: Some("interrupts.txt".into()),
        quick: o.quick,
        target: target.as_ref().map(|t| t.info.clone()),
        fio: fio.as_ref().map(|f| FioTool {
            path: f.path.to_string_lossy().into_owned(),
            version: f.version.clone(),
        }),
        runs: Vec::new(),
        notes: Vec::new(),
    };
    let (Some(fio), Some(target)) = (fio, target) else {
        m.notes.push("--no-fio: the machine only, no runs".into());
        write_manifest(&o.out, &m)?;
        return Ok(m);
    };
    let device = target.info.device.clone();
    let dev = device.as_deref().and_then(|d| m.host.device(d));
    match dev {
        Some(d) if d.vectors.is_empty() => m.notes.push(format!("{}: no interrupt vectors found for it in /proc/interrupts; the runs' interrupts are not attributed", d.name)),
        None => m.notes.push(format!("{}: no block device found under it (tmpfs, overlay, network or device mapper); the runs' interrupts are not attributed", target.info.path)),
        _ => {}
    }
    let polled = dev.is_some_and(|d| d.io_poll == Some(true) && d.poll_queues > 0);
    if !polled {
        m.notes
            .push("no poll queues on the target's device: the polled QD1 run is left out".into());
    }
    let specs = battery(m.host.topology.cpus(), polled);
    let size = (target.info.kind == "file").then_some(target.info.size_bytes);
    for (i, spec) in specs.iter().enumerate() {
        if stop.load(Ordering::Relaxed) {
            break;
        }
        progress(&format!(
            "[{}/{}] {}: {} ({} s)",
            i + 1,
            specs.len(),
            spec.name,
            spec.what,
            o.runtime_s
        ));
        let job = job_file(spec, &target.info.path, size, o.runtime_s);
        let (entry, ended) = one_run(&fio, &o.out, spec, job, device.clone(), stop, &p)?;
        match &ended {
            Ended::Ok => progress(&run_line(&o.out, &entry, &m.host)),
            Ended::Failed(why) => progress(&format!("      failed: {why}")),
            Ended::Stopped => {}
        }
        m.runs.push(entry);
    }
    m.sources = p.sources();
    if target.info.created {
        m.notes.push(format!(
            "{} was laid out for the runs and removed afterwards",
            target.info.path
        ));
    }
    let interrupted = stop.load(Ordering::Relaxed);
    if interrupted {
        m.notes
            .push("interrupted by Ctrl-C: the runs after the one stopped did not run".into());
    }
    write_manifest(&o.out, &m)?;
    drop(target);
    if interrupted {
        return Err(CaptureError::Interrupted);
    }
    Ok(m)
}

/// `capture-HOST-YYYYMMDD-HHMMSS` (UTC) in the current directory.
pub fn default_out() -> PathBuf {
    let host = Probe::live()
        .value("/proc/sys/kernel/hostname")
        .unwrap_or_else(|| "host".into());
    let host: String = host
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let date = humantime::format_rfc3339_seconds(SystemTime::now()).to_string();
    let stamp: String = date
        .chars()
        .filter(|c| c.is_ascii_digit() || *c == 'T')
        .collect::<String>()
        .replace('T', "-");
    PathBuf::from(format!("capture-{host}-{stamp}"))
}
