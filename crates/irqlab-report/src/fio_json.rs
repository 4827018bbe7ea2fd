//! fio's JSON output (stat.c show_thread_status_json, add_ddir_status_json,
//! add_ddir_lat_json) with irqlab's own numbers under "x-irqlab", which fio tools ignore.
//!
//! No per-interval bandwidth or IOPS samples are kept, so `bw_samples` and
//! `iops_samples` are 0 and min = max = mean = the whole-window rate, stddev 0.
//! `iodepth_submit` and `iodepth_complete` are not measured and print as 0, which is
//! what fio prints when it has no samples.

use crate::fio_stats::{self, LAT_LABELS_M, LAT_LABELS_NU};
use crate::{CpuReport, DirReport, Engine, JobReport, Latency, RunReport, VectorReport};
use serde_json::{Map, Value, json};

/// The report as fio's JSON; `plus` adds `clat_ns.bins` (fio's json+).
pub fn render(r: &RunReport, plus: bool) -> Value {
    let (timestamp, timestamp_ms, time) = when(r.engine);
    let group_agg = group_aggregates(r);
    let jobs: Vec<Value> = r.jobs.iter().map(|j| job(j, plus, &group_agg)).collect();
    json!({
        "fio version": format!("irqlab-{}", env!("CARGO_PKG_VERSION")),
        "timestamp": timestamp,
        "timestamp_ms": timestamp_ms,
        "time": time,
        // fio-plot wants two of its known top-level keys; job options already carry
        // the globals merged in.
        "global options": {},
        "jobs": jobs,
        "x-irqlab": irqlab(r),
    })
}

/// Simulated runs carry no wall-clock time, so output is identical per seed.
fn when(engine: Engine) -> (u64, u64, String) {
    match engine {
        Engine::Simulated => (0, 0, "simulated".to_string()),
        Engine::RealThreads => {
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap_or_default();
            (
                now.as_secs(),
                now.as_millis() as u64,
                ctime_utc(now.as_secs()),
            )
        }
    }
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

fn job(j: &JobReport, plus: bool, group_agg: &[(u32, u64, u64)]) -> Value {
    let (agg_read, agg_write) = group_agg
        .iter()
        .find(|g| g.0 == j.groupid)
        .map_or((0, 0), |g| (g.1, g.2));
    let mut options = Map::new();
    for (k, v) in &j.options {
        options.insert(k.clone(), Value::String(v.clone()));
    }
    let runtime_ms = fio_stats::ns_to_ms(j.runtime_ns);
    let mut o = Map::new();
    o.insert("jobname".into(), json!(j.name));
    o.insert("groupid".into(), json!(j.groupid));
    o.insert("job_start".into(), json!(0));
    o.insert("error".into(), json!(0));
    o.insert("eta".into(), json!(0));
    o.insert(
        "elapsed".into(),
        json!(j.runtime_ns.div_ceil(1_000_000_000)),
    );
    o.insert("job options".into(), Value::Object(options));
    o.insert("read".into(), ddir(&j.read, plus, agg_read));
    o.insert("write".into(), ddir(&j.write, plus, agg_write));
    o.insert("trim".into(), ddir(&DirReport::default(), false, 0));
    o.insert(
        "sync".into(),
        json!({ "total_ios": 0, "lat_ns": lat(&Latency::new(), false, false) }),
    );
    o.insert("job_runtime".into(), json!(runtime_ms));
    o.insert("usr_cpu".into(), json!(j.usr_cpu_pct()));
    o.insert("sys_cpu".into(), json!(j.sys_cpu_pct()));
    o.insert("ctx".into(), json!(j.ctx));
    o.insert("majf".into(), json!(0));
    o.insert("minf".into(), json!(0));
    let depth = fio_stats::depth_dist(&j.iodepth_level);
    let level_keys = ["1", "2", "4", "8", "16", "32", ">=64"];
    o.insert("iodepth_level".into(), buckets(&level_keys, &depth));
    let sc_keys = ["0", "4", "8", "16", "32", "64", ">=64"];
    o.insert("iodepth_submit".into(), buckets(&sc_keys, &[0.0; 7]));
    o.insert("iodepth_complete".into(), buckets(&sc_keys, &[0.0; 7]));
    let d = fio_stats::lat_dist(j);
    o.insert("latency_ns".into(), buckets(&LAT_LABELS_NU, &d.ns));
    o.insert("latency_us".into(), buckets(&LAT_LABELS_NU, &d.us));
    o.insert("latency_ms".into(), buckets(&LAT_LABELS_M, &d.ms));
    Value::Object(o)
}

fn buckets(keys: &[&str], values: &[f64]) -> Value {
    let mut m = Map::new();
    for (k, v) in keys.iter().zip(values) {
        m.insert((*k).to_string(), json!(v));
    }
    Value::Object(m)
}

/// stat.c add_ddir_status_json: bw in KiB/s, runtime in ms, latencies in ns.
fn ddir(d: &DirReport, plus: bool, group_agg_bw: u64) -> Value {
    let bw_bytes = d.bw_bytes() as u64;
    let bw = bw_bytes / 1024;
    let iops = d.iops();
    // stat.c convert_agg_kbytes_percent: this job's share of its group, capped at 100.
    let bw_agg = if group_agg_bw > 1024 {
        (bw as f64 * 100.0 / (group_agg_bw as f64 / 1024.0)).min(100.0)
    } else if d.total_ios > 0 {
        100.0
    } else {
        0.0
    };
    let ran = d.total_ios > 0;
    let mut o = Map::new();
    o.insert("io_bytes".into(), json!(d.io_bytes));
    o.insert("io_kbytes".into(), json!(d.io_bytes >> 10));
    o.insert("bw_bytes".into(), json!(bw_bytes));
    o.insert("bw".into(), json!(bw));
    o.insert("iops".into(), json!(iops));
    o.insert("runtime".into(), json!(fio_stats::runtime_ms(d)));
    o.insert("total_ios".into(), json!(d.total_ios));
    o.insert("short_ios".into(), json!(0));
    o.insert("drop_ios".into(), json!(0));
    o.insert("slat_ns".into(), lat(&d.slat, false, false));
    o.insert("clat_ns".into(), lat(&d.clat, true, plus));
    o.insert("lat_ns".into(), lat(&d.lat, false, false));
    o.insert("bw_min".into(), json!(if ran { bw } else { 0 }));
    o.insert("bw_max".into(), json!(if ran { bw } else { 0 }));
    o.insert("bw_agg".into(), json!(bw_agg));
    o.insert("bw_mean".into(), json!(if ran { bw as f64 } else { 0.0 }));
    o.insert("bw_dev".into(), json!(0.0));
    o.insert("bw_samples".into(), json!(0));
    o.insert("iops_min".into(), json!(iops as u64));
    o.insert("iops_max".into(), json!(iops as u64));
    o.insert("iops_mean".into(), json!(iops));
    o.insert("iops_stddev".into(), json!(0.0));
    o.insert("iops_samples".into(), json!(0));
    Value::Object(o)
}

/// stat.c add_ddir_lat_json: percentile keys printed with "%f"; json+ bins keyed by
/// the bucket's middle value in ns.
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
            let h = l.histogram();
            let mut b = Map::new();
            for v in h.iter_recorded() {
                let mid = h.median_equivalent(v.value_iterated_to());
                b.insert(mid.to_string(), json!(v.count_at_value()));
            }
            o.insert("bins".into(), Value::Object(b));
        }
    }
    Value::Object(o)
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
            }),
        );
    }
    o.insert("extra".into(), Value::Object(extra));
    Value::Object(o)
}

fn vector(v: &VectorReport) -> Value {
    let mut o = json!({
        "name": v.name,
        "chip": v.chip,
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
            "p50": t.percentile(50.0),
            "p99": t.percentile(99.0),
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
