//! Grammar-aware mutations (issue 23): a job file changed the way a user changes one
//! (a known option set to a value it takes, a number scaled), and a platform with its
//! costs perturbed within their ranges. Most such inputs are accepted, so the fuzz
//! targets spend their time inside the model rather than in its refusals; the hostile
//! mutations of [`crate::mutate`] still run for a share of the cases.

use proptest::prelude::*;
use proptest::sample::Index;

/// fio options with values they take, as a user would write them.
pub const JOB_OPTIONS: &[(&str, &[&str])] = &[
    (
        "ioengine",
        &[
            "libaio",
            "io_uring",
            "pvsync2",
            "psync",
            "sync",
            "posixaio",
            "null",
            "io_uring_cmd",
            "cpuio",
        ],
    ),
    (
        "rw",
        &[
            "read",
            "write",
            "randread",
            "randwrite",
            "randrw",
            "rw",
            "write:4k",
            "randread:8",
            "randtrim",
            "trimwrite",
        ],
    ),
    ("bs", &["512", "4k", "16k", "64k", "128k", "4k,64k"]),
    ("bsrange", &["4k-64k", "512-8k"]),
    (
        "bssplit",
        &["4k/50:64k/50", "4k/90:1m/10", "512/10:4k/90,64k/100"],
    ),
    ("iodepth", &["1", "2", "8", "32", "128"]),
    ("iodepth_batch_submit", &["1", "4", "16"]),
    ("iodepth_batch_complete_min", &["0", "1", "8"]),
    ("iodepth_batch_complete_max", &["0", "8", "32"]),
    ("numjobs", &["1", "2", "4"]),
    ("cpus_allowed", &["0", "1", "0-3", "2,5", "0-15"]),
    ("cpus_allowed_policy", &["shared", "split"]),
    ("rwmixread", &["0", "30", "70", "100"]),
    ("runtime", &["1ms", "2ms", "500us"]),
    ("ramp_time", &["0", "200us", "1ms"]),
    ("size", &["64k", "1m", "10g", "30%", "4z"]),
    ("io_size", &["128k", "1m"]),
    ("number_ios", &["0", "100", "2000"]),
    ("loops", &["1", "3"]),
    ("rate_iops", &["0", "5000", "50000,10000"]),
    ("rate", &["4m", "100m"]),
    ("rate_process", &["linear", "poisson"]),
    ("thinktime", &["0", "10", "100us"]),
    ("thinktime_spin", &["0", "5"]),
    ("thinktime_blocks", &["1", "8"]),
    ("startdelay", &["0", "100us", "100us-300us"]),
    ("randseed", &["1", "42"]),
    ("randrepeat", &["0", "1"]),
    (
        "filename",
        &[
            "/dev/nvme0n1",
            "/dev/nvme1n1",
            "/dev/nvme0n1:/dev/nvme1n1",
            "/dev/sdb",
            "data.bin",
        ],
    ),
    ("directory", &["/data", "/mnt/a:/mnt/b"]),
    ("nrfiles", &["1", "3"]),
    ("hipri", &["0", "1"]),
    ("direct", &["1"]),
    ("group_reporting", &["1"]),
    ("stonewall", &["1"]),
    ("new_group", &["1"]),
    ("write_lat_log", &["lat"]),
    ("write_bw_log", &["bw"]),
    ("log_avg_msec", &["0", "1"]),
    ("clat_percentiles", &["0", "1"]),
    ("verify", &["crc32c", "md5"]),
    ("norandommap", &["1"]),
    ("random_distribution", &["zipf:1.2", "zoned:50/5:50/95"]),
    ("prioclass", &["1", "3"]),
    ("fixedbufs", &["1"]),
    ("zonemode", &["none", "strided", "zbd"]),
    ("zonesize", &["256k", "1m"]),
    ("max_open_zones", &["0", "2"]),
    ("io_submit_mode", &["inline", "offload"]),
    ("sqthread_poll", &["1"]),
    ("sqthread_poll_cpu", &["0", "3"]),
    ("exitall", &["1"]),
    ("exit_what", &["group", "stonewall", "all"]),
    ("flow", &["1", "4"]),
    ("flow_sleep", &["0", "50"]),
    ("rate_iops_min", &["10", "1000"]),
    ("latency_target", &["100us", "1ms"]),
    ("latency_window", &["200us", "1ms"]),
    ("latency_percentile", &["90", "100"]),
    ("max_latency", &["1ms"]),
    ("steadystate", &["iops:10%", "bw_slope:1%"]),
    ("steadystate_duration", &["2s"]),
    ("num_range", &["1", "4"]),
    ("write_mode", &["zeroes", "write/50:verify/50"]),
    ("cpuload", &["50", "100"]),
    ("cpuchunks", &["100", "1000"]),
    ("wait_for", &["randread"]),
    ("thread", &["1"]),
    ("description", &["a job"]),
];

/// A valid `key=value` line from [`JOB_OPTIONS`].
fn job_line() -> impl Strategy<Value = String> {
    (any::<Index>(), any::<Index>()).prop_map(|(k, v)| {
        let (key, values) = k.get(JOB_OPTIONS);
        format!("{key}={}", v.get(values))
    })
}

/// One change a user makes to a job file.
#[derive(Clone, Debug)]
pub enum JobEdit {
    /// Sets an option in the job (or global) section at line index `at`: an existing
    /// line of the same key is replaced, otherwise the line is added there.
    Set(Index, String),
    /// Removes an option line (never a section header).
    Drop(Index),
    /// Adds another job section: `[name]` and an option.
    Section(u8, String),
}

fn job_edit() -> impl Strategy<Value = JobEdit> {
    prop_oneof![
        6 => (any::<Index>(), job_line()).prop_map(|(i, l)| JobEdit::Set(i, l)),
        2 => any::<Index>().prop_map(JobEdit::Drop),
        1 => (any::<u8>(), job_line()).prop_map(|(n, l)| JobEdit::Section(n, l)),
    ]
}

/// Up to `max` user edits.
pub fn job_edits(max: usize) -> impl Strategy<Value = Vec<JobEdit>> {
    prop::collection::vec(job_edit(), 1..=max)
}

/// `text` with `edits` applied.
pub fn edit_job(text: &str, edits: &[JobEdit]) -> Vec<u8> {
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let is_option = |l: &str| {
        let t = l.trim();
        !t.is_empty() && !t.starts_with('[') && !t.starts_with(';') && !t.starts_with('#')
    };
    for e in edits {
        match e {
            JobEdit::Set(at, line) => {
                let key = line.split('=').next().unwrap_or("");
                let is_header = |l: &String| l.trim().starts_with('[');
                if !lines.iter().any(is_header) {
                    lines.insert(0, "[fuzz]".to_string());
                }
                // The section that holds line `at` (the first one when `at` is above every
                // header), and its extent.
                let at = at.index(lines.len()).min(lines.len());
                let start = lines[..=at.min(lines.len() - 1)]
                    .iter()
                    .rposition(is_header)
                    .or_else(|| lines.iter().position(is_header))
                    .unwrap_or(0);
                let end = lines[start + 1..]
                    .iter()
                    .position(|l| l.trim().starts_with('['))
                    .map_or(lines.len(), |p| start + 1 + p);
                let same = (start..end).find(|&i| {
                    lines[i].split('=').next().map(str::trim) == Some(key) && is_option(&lines[i])
                });
                match same {
                    Some(i) => lines[i] = line.clone(),
                    None if lines.is_empty() => lines.push(line.clone()),
                    None => lines.insert(end.max(start + 1).min(lines.len()), line.clone()),
                }
            }
            JobEdit::Drop(at) => {
                let options: Vec<usize> =
                    (0..lines.len()).filter(|&i| is_option(&lines[i])).collect();
                if !options.is_empty() {
                    lines.remove(options[at.index(options.len())]);
                }
            }
            JobEdit::Section(n, line) => {
                lines.push(format!("[fuzz{n}]"));
                lines.push(line.clone());
            }
        }
    }
    let mut out = lines.join("\n");
    out.push('\n');
    out.into_bytes()
}

/// One change to a platform file that keeps it valid: a numeric value scaled (a cost,
/// a count), an integer staying an integer and at least 1 where it was.
#[derive(Clone, Debug)]
pub struct Perturb {
    line: Index,
    /// The factor in percent (50 halves, 200 doubles).
    percent: u16,
}

fn perturb() -> impl Strategy<Value = Perturb> {
    (any::<Index>(), 50u16..=200).prop_map(|(line, percent)| Perturb { line, percent })
}

/// Up to `max` perturbations.
pub fn perturbations(max: usize) -> impl Strategy<Value = Vec<Perturb>> {
    prop::collection::vec(perturb(), 1..=max)
}

/// Keys whose value is a count or an identity, not a cost: left as they are (doubling
/// `count` or `irq_cpu` makes a different machine, or none).
const FIXED_KEYS: &[&str] = &[
    "count",
    "irq_cpu",
    "queues",
    "vectors_per_cpu",
    "port",
    "cpu",
    "prefix",
    "numa",
    "socket",
];

/// `text` (a platform file) with every perturbation applied to a numeric `key = value`
/// line.
pub fn perturb_platform(text: &str, ps: &[Perturb]) -> Vec<u8> {
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let numeric: Vec<usize> = (0..lines.len())
        .filter(|&i| {
            let Some((k, v)) = lines[i].split_once('=') else {
                return false;
            };
            let v = v.split('#').next().unwrap_or("").trim();
            !FIXED_KEYS.contains(&k.trim()) && !v.is_empty() && v.parse::<f64>().is_ok()
        })
        .collect();
    if numeric.is_empty() {
        return text.as_bytes().to_vec();
    }
    for p in ps {
        let i = numeric[p.line.index(numeric.len())];
        let (k, rest) = lines[i].split_once('=').expect("a key = value line");
        let v = rest.split('#').next().unwrap_or("").trim();
        let f = f64::from(p.percent) / 100.0;
        let scaled = match v.parse::<u64>() {
            Ok(n) if n > 0 => ((n as f64 * f).round() as u64).max(1).to_string(),
            Ok(n) => n.to_string(),
            Err(_) => {
                let x: f64 = v.parse().unwrap_or(0.0);
                let y = x * f;
                // Shares (0..1, e.g. service_cv) stay shares.
                let y = if x <= 1.0 { y.min(1.0) } else { y };
                format!("{y:?}")
            }
        };
        lines[i] = format!("{} = {scaled}", k.trim_end());
    }
    let mut out = lines.join("\n");
    out.push('\n');
    out.into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::strategy::ValueTree;
    use proptest::test_runner::TestRunner;

    #[test]
    fn edits_keep_a_job_file_readable() {
        let text = "[global]\nioengine=libaio\n[a]\nfilename=/dev/nvme0n1\nruntime=1ms\n";
        let mut runner = TestRunner::deterministic();
        let mut parsed = 0;
        for _ in 0..200 {
            let edits = job_edits(4).new_tree(&mut runner).unwrap().current();
            let out = String::from_utf8(edit_job(text, &edits)).unwrap();
            if irqlab_fio::parse_str(&out, std::path::Path::new("e.fio")).is_ok() {
                parsed += 1;
            }
        }
        assert!(parsed > 150, "{parsed} of 200 edited files parse");
    }

    #[test]
    fn perturbed_platforms_still_load() {
        let text = crate::seeds::example_platform();
        let mut runner = TestRunner::deterministic();
        let mut loaded = 0;
        for _ in 0..100 {
            let ps = perturbations(4).new_tree(&mut runner).unwrap().current();
            let out = String::from_utf8(perturb_platform(&text, &ps)).unwrap();
            if irqlab_sim::Platform::from_toml(&out, "p.toml", &[]).is_ok() {
                loaded += 1;
            }
        }
        assert!(loaded > 80, "{loaded} of 100 perturbed platforms load");
    }
}
