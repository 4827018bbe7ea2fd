//! A user's own job file on a platform, without editing it: the files and devices it
//! names are mapped onto the platform's devices, and `--max-runtime` caps every job so
//! that a long file can be tried in a second. `irqlab run`, `rt`, `sweep`, the Python
//! package and a future `advise` all call [`shape_jobs`]; what it did comes back as
//! notes for the report.

use crate::{InputError, ValueError};
use irqlab_fio::JobSpec;

/// `--map PATTERN=DEVICE`: files whose name matches PATTERN (`*` any run of characters,
/// `?` one) go to DEVICE.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MapRule {
    pub pattern: String,
    pub device: String,
}

impl MapRule {
    /// Parses `PATTERN=DEVICE` (the last `=` splits, so a pattern may hold one).
    pub fn parse(s: &str) -> Result<MapRule, InputError> {
        match s.rsplit_once('=') {
            Some((p, d)) if !p.is_empty() && !d.trim().is_empty() => Ok(MapRule {
                pattern: p.to_string(),
                device: d.trim().to_string(),
            }),
            _ => Err(InputError::Map(format!(
                "--map '{s}': expected PATTERN=DEVICE, e.g. --map '/dev/sd*=nvme1'"
            ))),
        }
    }

    /// Whether `name` matches the rule's pattern.
    pub fn matches(&self, name: &str) -> bool {
        glob(self.pattern.as_bytes(), name.as_bytes())
    }
}

/// `*` and `?` over bytes, iteratively (a long pattern of stars costs its length times
/// the name's, never exponential time).
fn glob(p: &[u8], s: &[u8]) -> bool {
    let (mut pi, mut si) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while si < s.len() {
        if pi < p.len() && (p[pi] == b'?' || p[pi] == s[si]) {
            pi += 1;
            si += 1;
        } else if pi < p.len() && p[pi] == b'*' {
            star = Some((pi, si));
            pi += 1;
        } else if let Some((sp, ss)) = star {
            pi = sp + 1;
            si = ss + 1;
            star = Some((sp, ss + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|&c| c == b'*')
}

/// How a run is shaped beyond the job file: file mapping rules and a runtime cap.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RunShape {
    pub maps: Vec<MapRule>,
    /// `--max-runtime` in ns.
    pub max_runtime_ns: Option<u64>,
}

/// The shaping options as the commands take them.
#[derive(Clone, Debug, Default, clap::Args)]
pub struct ShapeArgs {
    /// Map the job file's files whose names match PATTERN (`*`, `?`) onto device DEVICE
    /// of the platform (e.g. --map '/dev/sd*=nvme1'); repeatable, first match wins.
    /// Other names that are not the platform's devices take its devices in order of
    /// first appearance.
    #[arg(long = "map", value_name = "PATTERN=DEVICE", value_parser = parse_map)]
    pub maps: Vec<MapRule>,
    /// Cap every job's runtime (and ramp_time) at DURATION, e.g. 5ms; a job bounded by
    /// size, number_ios or nothing becomes time-bound at it. The report says which.
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub max_runtime: Option<u64>,
}

impl ShapeArgs {
    pub fn shape(&self) -> RunShape {
        RunShape {
            maps: self.maps.clone(),
            max_runtime_ns: self.max_runtime,
        }
    }
}

fn parse_map(s: &str) -> Result<MapRule, String> {
    MapRule::parse(s).map_err(|e| e.to_string())
}

/// A duration with fio's suffixes (`5ms`, `2s`, `100us`; a bare number is seconds),
/// above zero.
pub fn parse_duration(s: &str) -> Result<u64, ValueError> {
    match irqlab_fio::parse_time(s) {
        Ok(0) => Err(ValueError::new(s, "expected a duration above 0")),
        Ok(ns) => Ok(ns),
        Err(expected) => Err(ValueError::new(s, format!("expected {expected}"))),
    }
}

/// The jobs as the run takes them, and what was done to them, as (kind, text) notes.
#[derive(Clone, Debug)]
pub struct Shaped {
    pub jobs: Vec<JobSpec>,
    pub notes: Vec<(String, String)>,
}

/// Maps the jobs' files onto `devices` (the platform's device names, in order) and caps
/// their runtime, as `shape` asks. `ncpus` is what `$ncpus` stood for and `cpus_are`
/// says whose CPUs they are ("the platform's CPUs").
pub fn shape_jobs(
    jobs: Vec<JobSpec>,
    devices: &[String],
    shape: &RunShape,
    ncpus: usize,
    cpus_are: &str,
) -> Result<Shaped, InputError> {
    let mut notes = Vec::new();
    if jobs.iter().any(|j| j.uses_ncpus) {
        notes.push((
            "ncpus".to_string(),
            format!("$ncpus = {ncpus} ({cpus_are})"),
        ));
    }
    let (mut jobs, mapped) = map_files(jobs, devices, &shape.maps)?;
    if !mapped.is_empty() {
        let pairs: Vec<String> = mapped.iter().map(|(f, d)| format!("{f} -> {d}")).collect();
        notes.push((
            "files".to_string(),
            format!(
                "{} (names the platform lacks take its devices in order of first appearance; --map PATTERN=DEVICE chooses)",
                pairs.join(", ")
            ),
        ));
    }
    if let Some(cap) = shape.max_runtime_ns
        && let Some(note) = cap_runtime(&mut jobs, cap)
    {
        notes.push(("capped".to_string(), note));
    }
    Ok(Shaped { jobs, notes })
}

/// (file, device) pairs, in order of first appearance.
pub type FilePairs = Vec<(String, String)>;

/// Each file name that is not one of `devices` gets one: by the first matching rule,
/// else the next device no job names, else the devices again in turn. Returns the jobs
/// with device names (`/dev/NAMEn1`) and the (file, device) pairs that were mapped, in
/// order of first appearance.
pub fn map_files(
    mut jobs: Vec<JobSpec>,
    devices: &[String],
    rules: &[MapRule],
) -> Result<(Vec<JobSpec>, FilePairs), InputError> {
    for r in rules {
        if irqlab_sim::device_of(&r.device, devices).is_none() {
            return Err(InputError::Map(format!(
                "--map {}={}: '{}' is not a device of the platform; it has {}",
                r.pattern,
                r.device,
                r.device,
                devices.join(", ")
            )));
        }
    }
    if devices.is_empty() {
        return Ok((jobs, Vec::new()));
    }
    // Every file in order of first appearance (null and cpuio jobs open none).
    let mut order: Vec<&str> = Vec::new();
    for j in jobs.iter().filter(|j| j.ioengine.has_device()) {
        for k in 0..j.numjobs {
            for f in j.files_of_clone(k) {
                if !order.contains(&f.as_str()) {
                    order.push(f);
                }
            }
            if j.clone_filenames.is_empty() {
                break;
            }
        }
    }
    let rule_of = |f: &str| {
        rules
            .iter()
            .find(|r| r.matches(f))
            .and_then(|r| irqlab_sim::device_of(&r.device, devices))
    };
    let mut taken = vec![false; devices.len()];
    for f in &order {
        if let Some(d) = rule_of(f).or_else(|| irqlab_sim::device_of(f, devices)) {
            taken[d] = true;
        }
    }
    let mut mapping: Vec<(String, usize)> = Vec::new();
    let mut next_turn = 0usize;
    for f in &order {
        if let Some(d) = rule_of(f) {
            mapping.push((f.to_string(), d));
            continue;
        }
        if irqlab_sim::device_of(f, devices).is_some() {
            continue;
        }
        let d = match taken.iter().position(|t| !t) {
            Some(d) => {
                taken[d] = true;
                d
            }
            None => {
                next_turn += 1;
                (next_turn - 1) % devices.len()
            }
        };
        mapping.push((f.to_string(), d));
    }
    if mapping.is_empty() {
        return Ok((jobs, Vec::new()));
    }
    let dev_of = |f: &String| -> String {
        match mapping.iter().find(|(m, _)| m == f) {
            Some((_, d)) => format!("/dev/{}n1", devices[*d]),
            None => f.clone(),
        }
    };
    for j in jobs.iter_mut().filter(|j| j.ioengine.has_device()) {
        j.filenames = j.filenames.iter().map(dev_of).collect();
        for names in &mut j.clone_filenames {
            *names = names.iter().map(dev_of).collect();
        }
    }
    let pairs = mapping
        .into_iter()
        .map(|(f, d)| (f, devices[d].clone()))
        .collect();
    Ok((jobs, pairs))
}

/// `--max-runtime`: every job's runtime and ramp_time at most `cap`; a job bounded by
/// size, number_ios or nothing becomes time-bound at the cap. Returns what changed, in
/// words, or None when nothing did.
pub fn cap_runtime(jobs: &mut [JobSpec], cap: u64) -> Option<String> {
    let (mut shortened, mut bounded, mut ramps) = (0usize, 0usize, 0usize);
    for j in jobs.iter_mut() {
        match j.runtime_ns {
            Some(r) if r <= cap => {}
            Some(_) => {
                j.runtime_ns = Some(cap);
                shortened += 1;
            }
            None => {
                j.runtime_ns = Some(cap);
                bounded += 1;
            }
        }
        if j.ramp_time_ns > cap {
            j.ramp_time_ns = cap;
            ramps += 1;
        }
    }
    let shown = human(cap);
    let mut parts = Vec::new();
    if shortened > 0 {
        parts.push(format!(
            "{shortened} job(s) with a longer runtime run {shown}"
        ));
    }
    if bounded > 0 {
        parts.push(format!(
            "{bounded} job(s) bounded by size, number_ios or nothing stop at {shown} at the latest"
        ));
    }
    if ramps > 0 {
        parts.push(format!("{ramps} ramp_time(s) cut to {shown}"));
    }
    (!parts.is_empty()).then(|| format!("--max-runtime {shown}: {}", parts.join("; ")))
}

/// A duration as the user would write it (`5ms`, `2s`, `1500us`).
fn human(ns: u64) -> String {
    for (unit, div) in [("s", 1_000_000_000), ("ms", 1_000_000), ("us", 1_000)] {
        if ns.is_multiple_of(div) {
            return format!("{}{unit}", ns / div);
        }
    }
    format!("{ns}ns")
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn jobs(text: &str) -> Vec<JobSpec> {
        irqlab_fio::parse_str(text, Path::new("m.fio")).unwrap()
    }

    fn devs() -> Vec<String> {
        (0..4).map(|i| format!("nvme{i}")).collect()
    }

    #[test]
    fn names_the_platform_lacks_take_free_devices_in_order() {
        let js = jobs(
            "[a]\nfilename=/dev/sdb\n[b]\nfilename=/dev/nvme0n1\n[c]\ndirectory=/data\nnumjobs=2\n",
        );
        let (out, pairs) = map_files(js, &devs(), &[]).unwrap();
        assert_eq!(
            out[0].filenames,
            ["/dev/nvme1n1"],
            "nvme0 is named by job b"
        );
        assert_eq!(out[1].filenames, ["/dev/nvme0n1"]);
        assert_eq!(out[2].files_of_clone(0), ["/dev/nvme2n1"]);
        assert_eq!(out[2].files_of_clone(1), ["/dev/nvme3n1"]);
        assert_eq!(pairs[0], ("/dev/sdb".to_string(), "nvme1".to_string()));
        assert_eq!(pairs.len(), 3);
        // More files than devices: the devices again, in turn.
        let many = jobs("[a]\nnrfiles=6\n");
        let (out, _) = map_files(many, &devs(), &[]).unwrap();
        assert_eq!(
            out[0].filenames,
            [
                "/dev/nvme0n1",
                "/dev/nvme1n1",
                "/dev/nvme2n1",
                "/dev/nvme3n1",
                "/dev/nvme0n1",
                "/dev/nvme1n1"
            ]
        );
    }

    #[test]
    fn rules_win_and_must_name_a_device() {
        let js = jobs("[a]\nfilename=/dev/sdb:/dev/sdc\n");
        let rule = MapRule::parse("/dev/sd?=nvme3").unwrap();
        let (out, _) = map_files(js.clone(), &devs(), &[rule]).unwrap();
        assert_eq!(out[0].filenames, ["/dev/nvme3n1", "/dev/nvme3n1"]);
        let bad = MapRule::parse("*=nvme9").unwrap();
        let e = map_files(js, &devs(), &[bad]).unwrap_err().to_string();
        assert!(
            e.contains("'nvme9' is not a device") && e.contains("nvme0, nvme1"),
            "{e}"
        );
        assert!(MapRule::parse("nvme1").is_err());
        assert!(MapRule::parse("a*b=x").unwrap().matches("a/long/b"));
        assert!(!MapRule::parse("a*b=x").unwrap().matches("a/long/c"));
        // A pathological pattern is linear, not exponential.
        let p = MapRule::parse(&format!("{}b=x", "*a".repeat(200))).unwrap();
        assert!(!p.matches(&"a".repeat(5000)));
    }

    #[test]
    fn the_cap_bounds_every_job_and_says_so() {
        let mut js = jobs(
            "[a]\nfilename=f\nruntime=900\nramp_time=60\n[b]\nfilename=f\nsize=10g\n[c]\nfilename=f\nruntime=1ms\n",
        );
        let note = cap_runtime(&mut js, 5_000_000).unwrap();
        assert_eq!(js[0].runtime_ns, Some(5_000_000));
        assert_eq!(js[0].ramp_time_ns, 5_000_000);
        assert_eq!(js[1].runtime_ns, Some(5_000_000));
        assert_eq!(js[2].runtime_ns, Some(1_000_000));
        assert!(
            note.starts_with("--max-runtime 5ms: 1 job(s) with a longer runtime"),
            "{note}"
        );
        let mut short = jobs("[c]\nfilename=f\nruntime=1ms\n");
        assert_eq!(cap_runtime(&mut short, 5_000_000), None);
        assert_eq!(parse_duration("5ms"), Ok(5_000_000));
        assert!(parse_duration("0").is_err() && parse_duration("fast").is_err());
    }
}
