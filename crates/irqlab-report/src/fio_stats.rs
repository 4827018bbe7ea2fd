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

/// Percent of I/Os per latency bucket in ns, µs and ms (fio's io_u_lat_n/u/m).
pub struct LatDist {
    pub ns: [f64; 10],
    pub us: [f64; 10],
    pub ms: [f64; 12],
}

/// stat.c stat_calc_lat_n/u/m: the completion latencies of a job's reads and writes as
/// io_u_mark_latency counted them, in percent of its I/Os (0.01 floor for non-empty
/// buckets).
pub fn lat_dist(job: &JobReport) -> LatDist {
    let mut m = [0u64; 32];
    for lat in [&job.read.clat, &job.write.clat] {
        for (a, b) in m.iter_mut().zip(lat.marks()) {
            *a += b;
        }
    }
    let total = job.read.total_ios + job.write.total_ios;
    let pct = |c: u64| lat_pct(c, total);
    LatDist {
        ns: std::array::from_fn(|i| pct(m[i])),
        us: std::array::from_fn(|i| pct(m[10 + i])),
        ms: std::array::from_fn(|i| pct(m[20 + i])),
    }
}

fn lat_pct(c: u64, total: u64) -> f64 {
    if total == 0 {
        return 0.0;
    }
    let p = c as f64 * 100.0 / total as f64;
    if c > 0 && p < 0.01 { 0.01 } else { p }
}

/// stat.c stat_calc_dist: percent of `total` per depth bucket, 0.1 floor for non-empty
/// ones.
pub fn depth_dist(map: &[u64; 7], total: u64) -> [f64; 7] {
    map.map(|c| {
        if total == 0 {
            return 0.0;
        }
        let p = c as f64 * 100.0 / total as f64;
        if c > 0 && p < 0.1 { 0.1 } else { p }
    })
}

/// The percentile list with fio's values (bucket middles).
pub fn percentiles(lat: &Latency) -> Vec<(f64, u64)> {
    PERCENTILES
        .iter()
        .copied()
        .zip(lat.percentiles(&PERCENTILES))
        .collect()
}

/// fio's runtime in ms of a window in ns (backend.c update_runtime: whole µs rounded
/// up to ms).
pub fn ns_to_ms(ns: u64) -> u64 {
    (ns / 1_000).div_ceil(1_000)
}

/// One direction of one reporting group (stat.c __show_run_stats): total bytes,
/// aggregate bandwidth, per-job min/max bandwidth and run times.
#[derive(Clone, Copy, Debug, Default)]
pub struct GroupDir {
    pub io_bytes: u64,
    /// Bytes per second over the longest run of the group (ms, as stat.c).
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
    for job in jobs {
        let d = dir(job);
        if d.runtime_ms() == 0 || (d.total_ios == 0 && d.io_bytes == 0) {
            continue;
        }
        let bw = d.fio_bw_bytes();
        let run = d.runtime_ms();
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
    }
    // stat.c: agg = iobytes * 1000 / max_run, in whole ms.
    if let Some(e) = g.as_mut() {
        e.agg_bw = e.io_bytes * 1000 / e.max_run_ms.max(1);
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
            job.read.clat.record_clat(ns);
        }
        job.read.total_ios = 9;
        let d = lat_dist(&job);
        let share = 100.0 / 9.0;
        assert!((d.ns[0] - share).abs() < 1e-9, "1 ns is below 2");
        assert!((d.ns[9] - share).abs() < 1e-9, "999 ns is in 750..=999");
        assert!((d.us[2] - share).abs() < 1e-9, "9 us is in 4..=9");
        assert!((d.ms[11] - share).abs() < 1e-9, "3 s");
        let sum: f64 = d.ns.iter().chain(&d.us).chain(&d.ms).sum();
        assert!((sum - 100.0).abs() < 1e-6);
    }

    #[test]
    fn depth_shares_have_a_floor() {
        let d = depth_dist(&[1, 0, 0, 0, 0, 9998, 1], 10_000);
        assert_eq!(d[0], 0.1);
        assert_eq!(d[1], 0.0);
        assert!((d[5] - 99.98).abs() < 1e-9);
        assert_eq!(depth_dist(&[0; 7], 0), [0.0; 7]);
    }

    #[test]
    fn runtime_rounds_up_whole_microseconds() {
        assert_eq!(ns_to_ms(0), 0);
        assert_eq!(ns_to_ms(999), 0);
        assert_eq!(ns_to_ms(1_000), 1);
        assert_eq!(ns_to_ms(20_000_999), 20);
        assert_eq!(ns_to_ms(20_001_000), 21);
    }
}
