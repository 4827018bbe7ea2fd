//! fio's JSON output (stat.c __show_run_stats, show_thread_status_json,
//! add_ddir_status_json, add_ddir_lat_json; diskutil.c json_array_add_disk_util) with
//! irqlab's own numbers under "x-irqlab", which fio tools ignore.
//!
//! Where fio reads a clock, a simulated run reads the simulated one: `timestamp`,
//! `timestamp_ms`, `time` and `job_start` count simulated time from the start of the run
//! as if it began at the Unix epoch, so the output is the same for a given seed;
//! `x-irqlab.clock` says so in the file.

use crate::fio_stats::{self, LAT_LABELS_M, LAT_LABELS_NU};
use crate::{CpuReport, DirReport, DiskUtil, Engine, JobReport, Latency, RunReport, VectorReport};
use serde_json::{Map, Value, json};

/// The report as fio's JSON; `plus` adds `clat_ns.bins` (fio's json+).
pub fn render(r: &RunReport, plus: bool) -> Value {
    let end_ms = r.end_ns / 1_000_000;
    let group_agg = group_aggregates(r);
    let elapsed_s = elapsed_s(r);
    let jobs: Vec<Value> = r
        .jobs
        .iter()
        .map(|j| job(j, plus, &group_agg, elapsed_s))
        .collect();
    let mut o = Map::new();
    o.insert(
        "fio version".into(),
        json!(format!("irqlab-{}", env!("CARGO_PKG_VERSION"))),
    );
    o.insert("timestamp".into(), json!(end_ms / 1000));
    o.insert("timestamp_ms".into(), json!(end_ms));
    o.insert("time".into(), json!(ctime_utc(end_ms / 1000)));
    // stat.c json_add_job_opts: left out when no [global] section set anything.
    if !r.global_options.is_empty() {
        o.insert("global options".into(), options(&r.global_options));
    }
    o.insert("jobs".into(), Value::Array(jobs));
    if !r.disks.is_empty() {
        o.insert("disk_util".into(), r.disks.iter().map(disk_util).collect());
    }
    o.insert("x-irqlab".into(), irqlab(r));
    Value::Object(o)
}

/// eta.c: `elapsed` is the whole run in seconds, rounded up.
fn elapsed_s(r: &RunReport) -> u64 {
    let ns = match (r.engine, &r.measured) {
        (Engine::RealThreads, Some(m)) => m.wall_ns,
        _ => r.end_ns,
    };
    (ns / 1_000_000).div_ceil(1000)
}

fn options(pairs: &[(String, String)]) -> Value {
    let mut m = Map::new();
    for (k, v) in pairs {
        m.insert(k.clone(), Value::String(v.clone()));
    }
    Value::Object(m)
}

/// Aggregate bytes/s per (groupid, direction), for `bw_agg`.
fn group_aggregates(r: &RunReport) -> Vec<(u32, u64, u64)> {
    fio_stats::group_ids(&r.jobs)
        .into_iter()
        .map(|gid| {
            let jobs = || r.jobs.iter().filter(move |j| j.groupid == gid);
            let rd = fio_stats::group_dir(jobs(), |j| &j.read).map_or(0, |g| g.agg_bw);
            let wr = fio_stats::group_dir(jobs(), |j| &j.write).map_or(0, |g| g.agg_bw);
            (gid, rd, wr)
        })
        .collect()
}

fn job(j: &JobReport, plus: bool, group_agg: &[(u32, u64, u64)], elapsed_s: u64) -> Value {
    let (agg_read, agg_write) = group_agg
        .iter()
        .find(|g| g.0 == j.groupid)
        .map_or((0, 0), |g| (g.1, g.2));
    let mut o = Map::new();
    o.insert("jobname".into(), json!(j.name));
    o.insert("groupid".into(), json!(j.groupid));
    o.insert("job_start".into(), json!(j.job_start_ns / 1_000_000));
    o.insert("error".into(), json!(j.error_code()));
    o.insert("eta".into(), json!(0));
    o.insert("elapsed".into(), json!(elapsed_s));
    if !j.options.is_empty() {
        o.insert("job options".into(), options(&j.options));
    }
    o.insert(
        "read".into(),
        ddir(&j.read, plus, j.clat_percentiles, agg_read),
    );
    o.insert(
        "write".into(),
        ddir(&j.write, plus, j.clat_percentiles, agg_write),
    );
    let trims = j.trim.total_ios > 0;
    o.insert(
        "trim".into(),
        ddir(&j.trim, plus && trims, j.clat_percentiles && trims, 0),
    );
    o.insert(
        "sync".into(),
        json!({ "total_ios": 0, "lat_ns": lat(&Latency::new(), false, false) }),
    );
    o.insert(
        "job_runtime".into(),
        json!(fio_stats::ns_to_ms(j.runtime_ns)),
    );
    o.insert("usr_cpu".into(), json!(j.usr_cpu_pct()));
    o.insert("sys_cpu".into(), json!(j.sys_cpu_pct()));
    o.insert("ctx".into(), json!(j.ctx));
    o.insert("majf".into(), json!(0));
    o.insert("minf".into(), json!(0));
    let level_keys = ["1", "2", "4", "8", "16", "32", ">=64"];
    let level = fio_stats::depth_dist(&j.iodepth_level, j.iodepth_level.iter().sum());
    o.insert("iodepth_level".into(), buckets(&level_keys, &level));
    let sc_keys = ["0", "4", "8", "16", "32", "64", ">=64"];
    let submit = fio_stats::depth_dist(&j.iodepth_submit, j.submit_calls);
    o.insert("iodepth_submit".into(), buckets(&sc_keys, &submit));
    let complete = fio_stats::depth_dist(&j.iodepth_complete, j.complete_calls);
    o.insert("iodepth_complete".into(), buckets(&sc_keys, &complete));
    let d = fio_stats::lat_dist(j);
    o.insert("latency_ns".into(), buckets(&LAT_LABELS_NU, &d.ns));
    o.insert("latency_us".into(), buckets(&LAT_LABELS_NU, &d.us));
    o.insert("latency_ms".into(), buckets(&LAT_LABELS_M, &d.ms));
    // stat.c: printed whenever latency_qd is set, which lat_target_init makes the
    // iodepth when there is no latency_target (not modelled: target and window are 0).
    if j.latency_depth > 0 {
        let t = j
            .latency_target
            .clone()
            .unwrap_or(crate::LatencyTargetReport {
                target_ns: 0,
                window_us: 0,
                percentile: 100.0,
            });
        o.insert("latency_depth".into(), json!(j.latency_depth));
        o.insert("latency_target".into(), json!(t.target_ns));
        o.insert("latency_target_ns".into(), json!(t.target_ns));
        o.insert("latency_percentile".into(), json!(t.percentile));
        o.insert("latency_window".into(), json!(t.window_us));
        o.insert("latency_window_us".into(), json!(t.window_us));
    }
    if let Some(desc) = &j.description {
        o.insert("desc".into(), json!(desc));
    }
    if let Some(ss) = &j.steadystate {
        o.insert("steadystate".into(), steadystate(ss));
    }
    if let Some(z) = j.zone_resets {
        o.insert("zone_resets".into(), json!(z));
    }
    Value::Object(o)
}

/// stat.c show_thread_status_json's "steadystate" object.
fn steadystate(ss: &crate::SteadyStateReport) -> Value {
    let mut data = Map::new();
    data.insert("bw_mean".into(), json!(ss.bw_mean));
    data.insert("iops_mean".into(), json!(ss.iops_mean));
    if let Some(lat) = &ss.lat_ns {
        data.insert("lat_mean".into(), json!(ss.lat_mean));
        data.insert("lat_ns".into(), json!(lat));
    }
    data.insert("iops".into(), json!(ss.iops));
    data.insert("bw".into(), json!(ss.bw));
    let pct = if ss.pct { "%" } else { "" };
    json!({
        "ss": ss.criterion_name,
        "duration": ss.duration_s,
        "attained": u8::from(ss.attained),
        "criterion": format!("{:.6}{pct}", ss.criterion as f32),
        "max_deviation": ss.max_deviation,
        "slope": ss.slope,
        "data": Value::Object(data),
    })
}

fn buckets(keys: &[&str], values: &[f64]) -> Value {
    let mut m = Map::new();
    for (k, v) in keys.iter().zip(values) {
        m.insert((*k).to_string(), json!(v));
    }
    Value::Object(m)
}

/// stat.c add_ddir_status_json: bw in KiB/s and rates from the runtime in whole ms, as
/// fio computes them; latencies in ns.
fn ddir(d: &DirReport, plus: bool, percentiles: bool, group_agg_bw: u64) -> Value {
    let bw_bytes = d.fio_bw_bytes();
    let bw = bw_bytes / 1024;
    let mut o = Map::new();
    o.insert("io_bytes".into(), json!(d.io_bytes));
    o.insert("io_kbytes".into(), json!(d.io_bytes >> 10));
    o.insert("bw_bytes".into(), json!(bw_bytes));
    o.insert("bw".into(), json!(bw));
    o.insert("iops".into(), json!(d.fio_iops()));
    o.insert("runtime".into(), json!(d.runtime_ms()));
    o.insert("total_ios".into(), json!(d.total_ios));
    o.insert("short_ios".into(), json!(0));
    o.insert("drop_ios".into(), json!(0));
    o.insert("slat_ns".into(), lat(&d.slat, false, false));
    o.insert("clat_ns".into(), lat(&d.clat, percentiles, plus));
    o.insert("lat_ns".into(), lat(&d.lat, false, false));
    let (min, max, mean, dev, agg) = match d.bw_samples.calc() {
        Some((min, max, mean, dev)) => (min, max, mean, dev, agg_percent(group_agg_bw, mean)),
        None => (0, 0, 0.0, 0.0, 0.0),
    };
    o.insert("bw_min".into(), json!(min));
    o.insert("bw_max".into(), json!(max));
    o.insert("bw_agg".into(), json!(agg));
    o.insert("bw_mean".into(), json!(mean));
    o.insert("bw_dev".into(), json!(dev));
    o.insert("bw_samples".into(), json!(d.bw_samples.samples));
    let (min, max, mean, dev) = d.iops_samples.calc().unwrap_or((0, 0, 0.0, 0.0));
    o.insert("iops_min".into(), json!(min));
    o.insert("iops_max".into(), json!(max));
    o.insert("iops_mean".into(), json!(mean));
    o.insert("iops_stddev".into(), json!(dev));
    o.insert("iops_samples".into(), json!(d.iops_samples.samples));
    Value::Object(o)
}

/// stat.c convert_agg_kbytes_percent: the mean bandwidth sample (truncated to an int)
/// as a share of the group's aggregate, capped at 100.
pub(crate) fn agg_percent(group_agg_bw: u64, mean: f64) -> f64 {
    if group_agg_bw > 1024 {
        ((mean as i64) as f64 * 100.0 / (group_agg_bw as f64 / 1024.0)).min(100.0)
    } else {
        100.0
    }
}

/// stat.c add_ddir_lat_json: percentile keys printed with "%f"; json+ bins keyed by
/// the middle of each of fio's buckets.
fn lat(l: &Latency, percentiles: bool, bins: bool) -> Value {
    let mut o = Map::new();
    o.insert("min".into(), json!(l.min()));
    o.insert("max".into(), json!(l.max()));
    o.insert("mean".into(), json!(l.mean()));
    o.insert("stddev".into(), json!(l.stddev()));
    o.insert("N".into(), json!(l.count()));
    if percentiles && l.count() > 0 {
        let mut p = Map::new();
        for (pct, v) in fio_stats::percentiles(l) {
            p.insert(format!("{pct:.6}"), json!(v));
        }
        o.insert("percentile".into(), Value::Object(p));
        if bins {
            let mut b = Map::new();
            for (mid, count) in l.bins() {
                b.insert(mid.to_string(), json!(count));
            }
            o.insert("bins".into(), Value::Object(b));
        }
    }
    Value::Object(o)
}

/// diskutil.c json_array_add_disk_util.
fn disk_util(d: &DiskUtil) -> Value {
    json!({
        "name": d.name,
        "read_ios": d.ios[0],
        "write_ios": d.ios[1],
        "read_sectors": d.sectors[0],
        "write_sectors": d.sectors[1],
        "read_merges": 0,
        "write_merges": 0,
        "read_ticks": d.ticks_ms[0],
        "write_ticks": d.ticks_ms[1],
        "in_queue": d.in_queue_ms,
        "util": d.util_pct(),
    })
}

/// What fio reads from a clock, and what stands in for it here.
fn clock(r: &RunReport) -> Value {
    match r.engine {
        Engine::Simulated => json!({
            "base": "simulated",
            "timestamp": "simulated time at the end of the run, counted from the start of the run as if it began at the Unix epoch (fio: wall-clock time of the report)",
            "job_start": "simulated ms from the start of the run to the job's start (fio: wall-clock ms of the job's start)",
            "elapsed": "simulated seconds of the whole run, rounded up",
            "runtime": "simulated ms of the job's measured window, whole µs rounded up to ms as fio does",
            "usr_cpu/sys_cpu/ctx": "simulated CPU time and context switches of the job's thread",
            "bw/iops samples": "one sample per bwavgtime/iopsavgtime (or log_avg_msec) of simulated time",
            "disk_util": "the model's device queues over the measured window: ticks are request lifetimes from submission to completion, util the time with a request in flight",
        }),
        Engine::RealThreads => json!({
            "base": "wall",
            "timestamp": "wall-clock time of the report",
            "job_start": "wall-clock ms of the job's start",
            "usr_cpu/sys_cpu/ctx": "CPU time of the emulated CPU threads, shared among their job clones",
        }),
    }
}

/// Rates over the exact window in ns, next to fio's rates over whole ms.
fn exact(r: &RunReport) -> Value {
    r.jobs
        .iter()
        .map(|j| {
            let dir = |d: &DirReport| {
                json!({
                    "runtime_ns": d.runtime_ns,
                    "iops": d.iops(),
                    "bw_bytes": d.bw_bytes(),
                })
            };
            let mut o = json!({
                "jobname": j.name,
                "groupid": j.groupid,
                "jobs": j.members,
                "read": dir(&j.read),
                "write": dir(&j.write),
            });
            if let (Some(m), Some(map)) = (j.migrations, o.as_object_mut()) {
                map.insert("migrations".into(), json!(m));
            }
            o
        })
        .collect()
}

fn irqlab(r: &RunReport) -> Value {
    let engine = match r.engine {
        Engine::Simulated => "simulated",
        Engine::RealThreads => "real-threads",
    };
    let mut policy = Map::new();
    for (k, v) in &r.policy {
        policy.insert(k.clone(), json!(v));
    }
    let mut extra = Map::new();
    for (k, v) in &r.extra {
        extra.insert(k.clone(), json!(v));
    }
    let pmn: u64 = r.cpus.iter().map(|c| c.pmn).sum();
    let mut o = Map::new();
    o.insert("engine".into(), json!(engine));
    o.insert("platform".into(), json!(r.platform));
    o.insert("seed".into(), json!(r.seed));
    o.insert("policy".into(), Value::Object(policy));
    o.insert("duration_ns".into(), json!(r.duration_ns));
    o.insert("clock".into(), clock(r));
    o.insert("exact".into(), exact(r));
    o.insert("vectors".into(), r.vectors.iter().map(vector).collect());
    o.insert("cpus".into(), r.cpus.iter().map(cpu).collect());
    o.insert("notifications".into(), json!(r.notifications()));
    o.insert("pmn".into(), json!(pmn));
    o.insert("vector_interrupts".into(), json!(r.vector_interrupts()));
    o.insert("coalescing_ratio".into(), json!(r.coalescing_ratio()));
    o.insert(
        "ios_per_notification".into(),
        json!(r.ios_per_notification()),
    );
    if let Some(m) = &r.measured {
        o.insert(
            "measured".into(),
            json!({
                "wall_ns": m.wall_ns,
                "wakeups": m.wakeups,
                "voluntary_ctx": m.voluntary_ctx,
                "involuntary_ctx": m.involuntary_ctx,
                "usr_ns": m.usr_ns,
                "sys_ns": m.sys_ns,
                "cpu_stolen_ns": m.cpu_stolen_ns,
            }),
        );
    }
    o.insert("extra".into(), Value::Object(extra));
    let warnings = crate::sanity::warnings(r);
    if !warnings.is_empty() {
        o.insert("warnings".into(), json!(warnings));
    }
    if !r.notes.is_empty() {
        let notes: Vec<Value> = r
            .notes
            .iter()
            .map(|(k, t)| json!({"kind": k, "text": t}))
            .collect();
        o.insert("notes".into(), Value::Array(notes));
    }
    Value::Object(o)
}

fn vector(v: &VectorReport) -> Value {
    let mut o = json!({
        "name": v.name,
        "chip": v.chip,
        "device": v.device,
        "hwirq": v.hwirq,
        "messages": v.messages,
        "handled": v.handled(),
        "per_cpu": v.per_cpu,
        "device_coalesced": v.device_coalesced,
        "completions": v.completions,
    });
    if let Some(m) = &v.moderation {
        o["moderation"] = json!({
            "moderator": m.moderator,
            "final_level": m.final_level,
            "programs": m.programs,
            "level_ns": m.level_ns,
            "course_ns": m.course_ns,
            "course": m.course,
        });
    }
    o
}

fn cpu(c: &CpuReport) -> Value {
    let t = &c.tick_lateness;
    json!({
        "cpu": c.cpu,
        "usr_ns": c.usr_ns,
        "sys_ns": c.sys_ns,
        "hardirq_ns": c.hardirq_ns,
        "softirq_ns": c.softirq_ns,
        "ksoftirqd_ns": c.ksoftirqd_ns,
        "irq_thread_ns": c.irq_thread_ns,
        "idle_ns": c.idle_ns,
        "ctx_switches": c.ctx_switches,
        "hardirqs": c.hardirqs,
        "pmn": c.pmn,
        "timer_ticks": c.timer_ticks,
        "ksoftirqd_wakeups": c.ksoftirqd_wakeups,
        "tick_lateness_ns": {
            "N": t.count(),
            "p50": t.percentile(50.0).min(t.max()),
            "p99": t.percentile(99.0).min(t.max()),
            "max": t.max(),
            "mean": t.mean(),
        },
    })
}

/// ctime(3)'s layout in UTC, e.g. "Thu Nov  5 12:34:56 2026" (no libc time zone).
fn ctime_utc(secs: u64) -> String {
    const DAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    let days = secs / 86_400;
    let rem = secs % 86_400;
    // Howard Hinnant's civil_from_days.
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{} {} {:>2} {:02}:{:02}:{:02} {}",
        DAYS[(days % 7) as usize],
        MONTHS[(month - 1) as usize],
        day,
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        year
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ctime_layout() {
        assert_eq!(ctime_utc(0), "Thu Jan  1 00:00:00 1970");
        assert_eq!(ctime_utc(1_700_000_000), "Tue Nov 14 22:13:20 2023");
        assert_eq!(ctime_utc(951_782_400), "Tue Feb 29 00:00:00 2000");
    }
}
