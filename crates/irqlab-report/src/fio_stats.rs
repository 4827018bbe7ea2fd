//! Numbers that fio's text and JSON outputs share: the percentile list, the
//! latency-distribution buckets, I/O depth shares and group aggregates.

use crate::{DirReport, JobReport, Latency};

/// options.c: fio's default `percentile_list`.
pub const PERCENTILES: [f64; 17] = [
    1.0, 5.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0, 90.0, 95.0, 99.0, 99.5, 99.9, 99.95,
    99.99,
];

/// io_u.c io_u_mark_lat_nsec/usec/msec bucket labels: the "2" bucket holds values
/// below 2, "4" holds 2..=3, ... "1000" holds 750..=999 of the unit.
pub const LAT_LABELS_NU: [&str; 10] = [
    "2", "4", "10", "20", "50", "100", "250", "500", "750", "1000",
];
pub const LAT_LABELS_M: [&str; 12] = [
    "2", "4", "10", "20", "50", "100", "250", "500", "750", "1000", "2000", ">=2000",
];
const LAT_UPPER: [u64; 10] = [2, 4, 10, 20, 50, 100, 250, 500, 750, 1000];

/// Percent of I/Os per latency bucket in ns, µs and ms (fio's io_u_lat_n/u/m).
pub struct LatDist {
    pub ns: [f64; 10],
    pub us: [f64; 10],
    pub ms: [f64; 12],
}

/// Buckets the completion latencies of a job's reads and writes together, as fio's
/// io_u_mark_latency does; percentages use stat.c stat_calc_lat (0.01 floor for
/// non-empty buckets).
pub fn lat_dist(job: &JobReport) -> LatDist {
    let mut n = [0u64; 10];
    let mut u = [0u64; 10];
    let mut m = [0u64; 12];
    for lat in [&job.read.clat, &job.write.clat] {
        let hist = lat.histogram();
        if lat.count() == 0 {
            continue;
        }
        for v in hist.iter_recorded() {
            // Within HDR's 0.1% resolution a value may land in a neighbouring bucket.
            let ns = hist.median_equivalent(v.value_iterated_to());
            let count = v.count_at_value();
            if ns < 1_000 {
                n[bucket(ns)] += count;
            } else if ns < 1_000_000 {
                u[bucket(ns / 1_000)] += count;
            } else {
                let ms = ns / 1_000_000;
                let i = match ms {
                    0..1000 => bucket(ms),
                    1000..2000 => 10,
                    _ => 11,
                };
                m[i] += count;
            }
        }
    }
    let total = job.read.clat.count() + job.write.clat.count();
    LatDist {
        ns: n.map(|c| lat_pct(c, total)),
        us: u.map(|c| lat_pct(c, total)),
        ms: m.map(|c| lat_pct(c, total)),
    }
}

fn bucket(v: u64) -> usize {
    LAT_UPPER.iter().position(|&up| v < up).unwrap_or(9)
}

fn lat_pct(c: u64, total: u64) -> f64 {
    if total == 0 {
        return 0.0;
    }
    let p = c as f64 * 100.0 / total as f64;
    if c > 0 && p < 0.01 { 0.01 } else { p }
}

/// stat.c stat_calc_dist: percent per I/O depth bucket, 0.1 floor for non-empty ones.
pub fn depth_dist(map: &[u64; 7]) -> [f64; 7] {
    let total: u64 = map.iter().sum();
    map.map(|c| {
        if total == 0 {
            return 0.0;
        }
        let p = c as f64 * 100.0 / total as f64;
        if c > 0 && p < 0.1 { 0.1 } else { p }
    })
}

/// The percentile list with HDR values (3 significant digits), fio's `ovals`.
pub fn percentiles(lat: &Latency) -> Vec<(f64, u64)> {
    PERCENTILES
        .iter()
        .map(|&p| (p, lat.percentile(p)))
        .collect()
}

/// The measured window of one direction in whole ms, fio's `runtime[ddir]`; a
/// non-empty window under 1 ms counts as 1 ms so rates stay finite.
pub fn runtime_ms(d: &DirReport) -> u64 {
    ns_to_ms(d.runtime_ns)
}

/// ns to whole ms, rounded; a non-empty window under 1 ms counts as 1 ms. One rule for
/// every runtime field of a report.
pub fn ns_to_ms(ns: u64) -> u64 {
    if ns == 0 {
        0
    } else {
        ((ns + 500_000) / 1_000_000).max(1)
    }
}

/// One direction of one reporting group (stat.c __show_run_stats): total bytes,
/// aggregate bandwidth, per-job min/max bandwidth and run times.
#[derive(Clone, Copy, Debug, Default)]
pub struct GroupDir {
    pub io_bytes: u64,
    /// Bytes per second over the longest run of the group.
    pub agg_bw: u64,
    pub min_bw: u64,
    pub max_bw: u64,
    pub min_run_ms: u64,
    pub max_run_ms: u64,
}

/// Aggregates `dir` of every job in `group` (only jobs that ran that direction).
pub fn group_dir<'a>(
    jobs: impl Iterator<Item = &'a JobReport>,
    dir: impl Fn(&JobReport) -> &DirReport,
) -> Option<GroupDir> {
    let mut g: Option<GroupDir> = None;
    let mut max_run_ns = 0u64;
    for job in jobs {
        let d = dir(job);
        if d.runtime_ns == 0 || (d.total_ios == 0 && d.io_bytes == 0) {
            continue;
        }
        let bw = d.bw_bytes() as u64;
        let run = runtime_ms(d);
        let e = g.get_or_insert(GroupDir {
            min_bw: u64::MAX,
            min_run_ms: u64::MAX,
            ..GroupDir::default()
        });
        e.io_bytes += d.io_bytes;
        e.min_bw = e.min_bw.min(bw);
        e.max_bw = e.max_bw.max(bw);
        e.min_run_ms = e.min_run_ms.min(run);
        e.max_run_ms = e.max_run_ms.max(run);
        max_run_ns = max_run_ns.max(d.runtime_ns);
    }
    if let Some(e) = g.as_mut() {
        e.agg_bw = (e.io_bytes as f64 * 1e9 / max_run_ns as f64) as u64;
    }
    g
}

/// The distinct group ids in first-seen order.
pub fn group_ids(jobs: &[JobReport]) -> Vec<u32> {
    let mut ids: Vec<u32> = Vec::new();
    for j in jobs {
        if !ids.contains(&j.groupid) {
            ids.push(j.groupid);
        }
    }
    ids
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latency_buckets_follow_io_u_mark_latency() {
        let mut job = JobReport::default();
        for ns in [
            1,
            3,
            999,
            1_500,
            9_000,
            300_000,
            1_900_000,
            1_500_000_000,
            3_000_000_000,
        ] {
            job.read.clat.record(ns);
        }
        let d = lat_dist(&job);
        let share = 100.0 / 9.0;
        assert!((d.ns[0] - share).abs() < 1e-9, "1 ns is below 2");
        assert!((d.ns[1] - share).abs() < 1e-9, "3 ns is in 2..=3");
        assert!((d.ns[9] - share).abs() < 1e-9, "999 ns is in 750..=999");
        assert!((d.us[0] - share).abs() < 1e-9, "1.5 us");
        assert!((d.us[3] - 0.0).abs() < 1e-9);
        assert!((d.us[2] - share).abs() < 1e-9, "9 us is in 4..=9");
        assert!((d.us[7] - share).abs() < 1e-9, "300 us is in 250..=499");
        assert!((d.ms[0] - share).abs() < 1e-9, "1.9 ms is 1 ms, below 2");
        assert!((d.ms[10] - share).abs() < 1e-9, "1.5 s");
        assert!((d.ms[11] - share).abs() < 1e-9, "3 s");
        let sum: f64 = d.ns.iter().chain(&d.us).chain(&d.ms).sum();
        assert!((sum - 100.0).abs() < 1e-6);
    }

    #[test]
    fn depth_shares_have_a_floor() {
        let d = depth_dist(&[1, 0, 0, 0, 0, 9998, 1]);
        assert_eq!(d[0], 0.1);
        assert_eq!(d[1], 0.0);
        assert!((d[5] - 99.98).abs() < 1e-9);
        assert_eq!(depth_dist(&[0; 7]), [0.0; 7]);
    }
}
