//! A capture's runs as the fit simulates them: each run's job (its NAME.fio, or rebuilt
//! from the options fio wrote into its JSON), its files mapped onto the platform's
//! devices, its runtime shortened to a simulated window long enough for a few thousand
//! I/Os; and what the run measured: IOPS, mean completion latency, I/Os per interrupt and
//! the jobs' CPU time.

use crate::template::{Mapped, Template, disk_of};
use irqlab_calib::Metric;
use irqlab_capture::Capture;
use irqlab_capture::run::Run;
use std::path::Path;

/// One capture run, ready to simulate.
#[derive(Clone, Debug, PartialEq)]
pub struct FitRun {
    pub name: String,
    /// The job as the simulator runs it on the platform.
    pub job_text: String,
    /// The simulated runtime after the ramp, ns.
    pub window_ns: u64,
    /// What the run measured.
    pub measured: Vec<(Metric, f64)>,
    pub engine: irqlab_fio::IoEngine,
    /// I/Os in flight per job, and jobs.
    pub iodepth: u32,
    pub jobs: u32,
    /// hipri: completions polled, no interrupt.
    pub polled: bool,
    /// Device interrupts per second the run measured.
    pub interrupts_per_s: f64,
}

impl FitRun {
    /// I/Os the run keeps in flight in all.
    pub fn outstanding(&self) -> u32 {
        let per_job = if self.engine.is_sync() {
            1
        } else {
            self.iodepth
        };
        per_job * self.jobs
    }

    pub fn value(&self, m: Metric) -> Option<f64> {
        self.measured.iter().find(|(x, _)| *x == m).map(|(_, v)| *v)
    }
}

/// Options that bound a job's length or place: replaced by the window.
const LENGTH_KEYS: &[&str] = &[
    "runtime",
    "ramp_time",
    "time_based",
    "size",
    "io_size",
    "io_limit",
    "number_ios",
    "loops",
    "startdelay",
    "filesize",
    "offset",
];

/// The job file of a run: NAME.fio (or the manifest's job file), else one rebuilt from
/// the options in fio's JSON.
fn job_source(c: &Capture, r: &Run) -> Result<String, String> {
    let listed = c
        .manifest
        .as_ref()
        .and_then(|m| m.runs.iter().find(|e| e.name == r.name))
        .map(|e| e.job_file.clone())
        .unwrap_or_else(|| format!("{}.fio", r.name));
    let p = c.dir.join(&listed);
    if p.is_file() {
        return irqlab_fio::input::read_text(&p, irqlab_fio::input::MAX_INPUT_BYTES)
            .map_err(|e| format!("{}: {e}", p.display()));
    }
    from_json(&c.dir.join(format!("{}.json", r.name)))
}

fn opt_lines(v: Option<&serde_json::Value>) -> String {
    let mut s = String::new();
    if let Some(m) = v.and_then(|o| o.as_object()) {
        for (k, v) in m {
            let v = match v {
                serde_json::Value::String(s) => s.clone(),
                other => other.to_string(),
            };
            s.push_str(&format!("{k}={v}\n"));
        }
    }
    s
}

/// A job file from fio's JSON: "global options" and each job's "job options".
fn from_json(path: &Path) -> Result<String, String> {
    let text = irqlab_fio::input::read_text(path, 64 << 20)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    let start = text.find('{').unwrap_or(0);
    let v: serde_json::Value = serde_json::from_str(&text[start..])
        .map_err(|e| format!("{}: not JSON ({e})", path.display()))?;
    let mut s = format!("[global]\n{}", opt_lines(v.get("global options")));
    let jobs = v
        .get("jobs")
        .and_then(|j| j.as_array())
        .cloned()
        .unwrap_or_default();
    for (i, j) in jobs.iter().enumerate() {
        let name = j
            .get("jobname")
            .and_then(|n| n.as_str())
            .filter(|n| !n.is_empty() && !n.contains([']', '\n']))
            .map_or_else(|| format!("job{i}"), str::to_string);
        s.push_str(&format!("\n[{name}]\n{}", opt_lines(j.get("job options"))));
    }
    if jobs.is_empty() {
        return Err(format!(
            "{}: no jobs to rebuild the job from",
            path.display()
        ));
    }
    let no_options = v
        .get("global options")
        .and_then(|o| o.as_object())
        .is_none_or(|o| o.is_empty())
        && jobs.iter().all(|j| {
            j.get("job options")
                .and_then(|o| o.as_object())
                .is_none_or(|o| o.is_empty())
        });
    if no_options {
        let stem = path
            .file_stem()
            .map_or_else(String::new, |s| s.to_string_lossy().into_owned());
        return Err(format!(
            "its job is unknown: no {stem}.fio beside {}, and the JSON holds no \"global options\" or \"job options\" (fio writes them; give the job file as {stem}.fio)",
            path.display()
        ));
    }
    Ok(s)
}

/// The platform file for a file a job names on the capture's machine.
fn map_file(name: &str, r: &Run, devices: &[Mapped]) -> Option<String> {
    let base = name.strip_prefix("/dev/").unwrap_or(name);
    let direct = devices
        .iter()
        .find(|m| base == m.disk || base == m.capture || disk_of(base) == m.capture);
    if let Some(m) = direct {
        return Some(m.file.clone());
    }
    // A regular file: on the run's device, or the only one there is.
    let dev = r.device.as_deref();
    devices
        .iter()
        .find(|m| dev == Some(m.capture.as_str()))
        .or_else(|| (devices.len() == 1).then(|| &devices[0]))
        .map(|m| m.file.clone())
}

/// `text` with its files mapped and its length set to `window_ns` after `ramp_ns`.
fn rewrite(
    text: &str,
    r: &Run,
    devices: &[Mapped],
    window_ns: u64,
    ramp_ns: u64,
) -> Result<String, String> {
    let mut out = String::new();
    let mut saw_global = false;
    let mut length = format!(
        "time_based=1\nruntime={}us\nramp_time={}us\n",
        window_ns.div_ceil(1000),
        ramp_ns.div_ceil(1000)
    );
    let names_a_file = text.lines().any(|l| {
        let k = l.split_once('=').map_or("", |(k, _)| k.trim());
        k == "filename" || k == "directory"
    });
    if !names_a_file {
        // fio would use the job's name as a file in the current directory: the run's disk.
        let f = map_file("", r, devices).ok_or("its job names no file, and the run no device")?;
        length.push_str(&format!("filename={f}\n"));
    }
    for line in text.lines() {
        let t = line.trim();
        if t.starts_with('[') {
            out.push_str(line);
            out.push('\n');
            if t.eq_ignore_ascii_case("[global]") {
                saw_global = true;
                out.push_str(&length);
            }
            continue;
        }
        let (k, v) = t
            .split_once('=')
            .map_or((t, ""), |(k, v)| (k.trim(), v.trim()));
        if LENGTH_KEYS.contains(&k) {
            continue;
        }
        if k == "filename" {
            let mut mapped = Vec::new();
            for f in v.split(':').filter(|f| !f.is_empty()) {
                mapped.push(map_file(f, r, devices).ok_or_else(|| {
                    format!("its file {f} is on no device of the capture the model has")
                })?);
            }
            out.push_str(&format!("filename={}\n", mapped.join(":")));
            continue;
        }
        out.push_str(line);
        out.push('\n');
    }
    if !saw_global {
        out = format!("[global]\n{length}{out}");
    }
    Ok(out)
}

/// The runs of `c` the fit can use, and why each other was left out.
pub fn fit_runs(
    c: &Capture,
    t: &Template,
    ios_per_run: u64,
    min_window_ns: u64,
) -> (Vec<FitRun>, Vec<String>) {
    let mut runs = Vec::new();
    let mut left = Vec::new();
    for s in &c.skipped {
        left.push(format!("{}: {}", s.name, s.why));
    }
    for r in &c.runs {
        match fit_run(c, r, t, ios_per_run, min_window_ns) {
            Ok(f) => runs.push(f),
            Err(why) => left.push(format!("{}: {why}", r.name)),
        }
    }
    (runs, left)
}

fn fit_run(
    c: &Capture,
    r: &Run,
    t: &Template,
    ios_per_run: u64,
    min_window_ns: u64,
) -> Result<FitRun, String> {
    let s = &r.summary;
    if s.iops <= 0.0 {
        return Err("no I/O".into());
    }
    let source = job_source(c, r)?;
    // Mapped first (a hand-made job may name no file), then read for its shape.
    let shape = rewrite(&source, r, &t.devices, 1_000_000, 0)?;
    let specs = irqlab_fio::parse_str(&shape, Path::new(&format!("{}.fio", r.name)))
        .map_err(|e| format!("its job does not parse: {e}"))?;
    let Some(first) = specs.first() else {
        return Err("its job has no job section".into());
    };
    let jobs: u32 = specs.iter().map(|j| j.numjobs.max(1)).sum();
    let polled = specs.iter().any(|j| j.hipri);
    let iodepth = first.iodepth.max(1);
    let per_job = if first.ioengine.is_sync() { 1 } else { iodepth };
    // Little's law when fio gave no latency.
    let clat_ns = if s.clat_mean_us > 0.0 {
        s.clat_mean_us * 1000.0
    } else {
        f64::from(per_job * jobs) / s.iops * 1e9
    };
    // A QD1 run's mean latency is what pins the small costs on its path: five times the
    // samples (they are cheap to simulate).
    let want = if per_job * jobs == 1 {
        5 * ios_per_run
    } else {
        ios_per_run
    };
    let by_count = want as f64 / s.iops * 1e9;
    // Long enough for the device's and the kernel's dynamics too (aggregation timers,
    // interrupts bunching): at least `min_window_ns` and 30 completion times.
    let window_ns = by_count
        .max(30.0 * clat_ns)
        .clamp(min_window_ns as f64, 5e9)
        .max(1e6) as u64;
    let ramp_ns = (window_ns / 5).max((5.0 * clat_ns) as u64);
    let job_text = rewrite(&source, r, &t.devices, window_ns, ramp_ns)?;
    irqlab_fio::parse_str(&job_text, Path::new(&format!("{}.fio", r.name)))
        .map_err(|e| format!("its job, mapped onto the platform, does not parse: {e}"))?;
    let mut measured = vec![(Metric::Iops, s.iops)];
    if s.clat_mean_us > 0.0 {
        measured.push((Metric::ClatMeanUs, s.clat_mean_us));
    }
    if let Some(x) = r.ios_per_interrupt.filter(|_| !polled && r.interrupts > 0) {
        measured.push((Metric::IosPerInterrupt, x));
    }
    let cpu: Vec<f64> = r.fio.jobs.iter().map(|j| j.usr_cpu + j.sys_cpu).collect();
    let cpu_mean = cpu.iter().sum::<f64>() / cpu.len().max(1) as f64;
    if cpu_mean > 0.0 {
        measured.push((Metric::JobCpuPct, cpu_mean));
    }
    Ok(FitRun {
        name: r.name.clone(),
        job_text,
        window_ns,
        measured,
        engine: first.ioengine,
        iodepth,
        jobs,
        polled,
        interrupts_per_s: r.interrupts_per_s,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_job_is_mapped_and_shortened() {
        let m = vec![Mapped {
            capture: "vda".into(),
            disk: "vda".into(),
            platform: "nvme0".into(),
            file: "/dev/nvme0n1".into(),
            group: 0,
        }];
        let r = Run {
            name: "x".into(),
            what: None,
            device: Some("vda".into()),
            loadavg: vec![],
            fio: Default::default(),
            summary: Default::default(),
            delta: Default::default(),
            cpus: vec![],
            vectors: vec![],
            interrupts: 0,
            window_s: 0.0,
            interrupts_per_s: 0.0,
            ios_per_interrupt: None,
            device_ios_per_interrupt: None,
        };
        let text =
            "; c\n[global]\nfilename=/data/f.dat\nruntime=10\nsize=1g\n\n[j]\nioengine=psync\n";
        let out = rewrite(text, &r, &m, 20_000_000, 4_000_000).unwrap();
        assert_eq!(
            out,
            "; c\n[global]\ntime_based=1\nruntime=20000us\nramp_time=4000us\nfilename=/dev/nvme0n1\n\n[j]\nioengine=psync\n"
        );
        let out = rewrite("[j]\nfilename=/dev/vda\n", &r, &m, 1000, 0).unwrap();
        assert!(
            out.starts_with("[global]\ntime_based=1\n") && out.contains("filename=/dev/nvme0n1")
        );
        let two = vec![
            m[0].clone(),
            Mapped {
                capture: "vdb".into(),
                disk: "vdb".into(),
                ..m[0].clone()
            },
        ];
        let mut r2 = r.clone();
        r2.device = None;
        assert!(
            rewrite("[j]\nfilename=/x\n", &r2, &two, 1, 0)
                .unwrap_err()
                .contains("/x")
        );
    }
}
