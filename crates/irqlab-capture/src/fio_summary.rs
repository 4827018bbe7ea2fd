//! One run's figures from its fio result: IOPS, I/O count and runtime summed over jobs
//! and directions, the mean completion latency weighted by I/Os, percentiles, and the
//! jobs' CPU time.

use crate::fio_json::{FioDir, FioOutput};

/// The whole run, every job and direction together.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct FioSummary {
    pub iops: f64,
    pub total_ios: u64,
    /// The longest job runtime, seconds.
    pub runtime_s: f64,
    pub clat_mean_us: f64,
    pub clat_p50_us: Option<f64>,
    pub clat_p99_us: Option<f64>,
    /// True when the percentiles are of all I/Os: one job and direction, or json+ bins
    /// merged. With several jobs in plain JSON they are the largest job's (an upper bound).
    pub percentiles_exact: bool,
    /// usr and sys CPU summed over jobs, in % of one CPU (fio reports each job's
    /// thread as a % of its runtime).
    pub usr_cpu_pct: f64,
    pub sys_cpu_pct: f64,
    pub jobs: usize,
}

/// fio's rule (stat.c, calc_clat_percentiles): the first bucket whose running count
/// reaches p% of all samples.
pub fn percentile_of_bins(bins: &[(u64, u64)], pct: f64) -> Option<f64> {
    let n: u64 = bins.iter().map(|b| b.1).sum();
    if n == 0 {
        return None;
    }
    let want = pct / 100.0 * n as f64;
    let mut sum = 0u64;
    for &(v, c) in bins {
        sum += c;
        if sum as f64 >= want {
            return Some(v as f64);
        }
    }
    bins.last().map(|b| b.0 as f64)
}

fn listed(d: &FioDir, pct: f64) -> Option<f64> {
    d.clat_percentiles
        .iter()
        .find(|(p, _)| (p - pct).abs() < 1e-9)
        .map(|(_, v)| *v)
}

/// Merges the json+ bins of every direction with I/O; None unless each has bins.
fn merged_bins(dirs: &[&FioDir]) -> Option<Vec<(u64, u64)>> {
    if dirs.iter().any(|d| d.clat_bins.is_empty()) {
        return None;
    }
    let mut m = std::collections::BTreeMap::new();
    for d in dirs {
        for &(v, c) in &d.clat_bins {
            *m.entry(v).or_insert(0u64) += c;
        }
    }
    Some(m.into_iter().collect())
}

impl FioOutput {
    pub fn summary(&self) -> FioSummary {
        let mut s = FioSummary {
            jobs: self.jobs.len(),
            ..FioSummary::default()
        };
        let mut clat_sum = 0.0;
        let mut busy: Vec<&FioDir> = Vec::new();
        let mut runtime_ms = 0.0f64;
        for j in &self.jobs {
            for d in j.dirs() {
                s.iops += d.iops;
                s.total_ios += d.total_ios;
                clat_sum += d.total_ios as f64 * d.clat_mean_ns;
                runtime_ms = runtime_ms.max(d.runtime_ms);
                if d.total_ios > 0 {
                    busy.push(d);
                }
            }
            runtime_ms = runtime_ms.max(j.job_runtime_ms);
            s.usr_cpu_pct += j.usr_cpu;
            s.sys_cpu_pct += j.sys_cpu;
        }
        s.runtime_s = runtime_ms / 1000.0;
        if s.total_ios > 0 {
            s.clat_mean_us = clat_sum / s.total_ios as f64 / 1000.0;
        }
        let us = |v: Option<f64>| v.map(|ns| ns / 1000.0);
        if let Some(bins) = merged_bins(&busy).filter(|_| !busy.is_empty()) {
            s.clat_p50_us = us(percentile_of_bins(&bins, 50.0));
            s.clat_p99_us = us(percentile_of_bins(&bins, 99.0));
            s.percentiles_exact = true;
        } else {
            let worst = |p: f64| {
                busy.iter()
                    .filter_map(|d| listed(d, p))
                    .fold(None, |m: Option<f64>, v| Some(m.map_or(v, |m| m.max(v))))
            };
            s.clat_p50_us = us(worst(50.0));
            s.clat_p99_us = us(worst(99.0));
            s.percentiles_exact = busy.len() == 1;
        }
        s
    }

    /// Why this result cannot be a measurement: a job's error, or no I/O at all.
    pub fn failure(&self) -> Option<String> {
        if self.jobs.is_empty() {
            return Some("the \"jobs\" array is empty".into());
        }
        if let Some(j) = self.jobs.iter().find(|j| j.error != 0) {
            let os = std::io::Error::from_raw_os_error(j.error as i32);
            return Some(format!(
                "job '{}' ended with error {} ({}); expected error 0",
                j.name,
                j.error,
                irqlab_fio::input::io_reason(&os)
            ));
        }
        if self
            .jobs
            .iter()
            .flat_map(|j| j.dirs())
            .all(|d| d.total_ios == 0)
        {
            return Some("no job completed any I/O (total_ios is 0 everywhere)".into());
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fio_json::{FioJob, parse};

    fn dir(ios: u64, mean: f64, p99: f64, bins: Vec<(u64, u64)>) -> FioDir {
        FioDir {
            iops: ios as f64,
            total_ios: ios,
            runtime_ms: 1000.0,
            clat_mean_ns: mean,
            clat_percentiles: vec![(50.0, mean), (99.0, p99)],
            clat_bins: bins,
        }
    }

    fn out(dirs: Vec<FioDir>) -> FioOutput {
        FioOutput {
            jobs: dirs
                .into_iter()
                .enumerate()
                .map(|(i, d)| FioJob {
                    name: format!("j{i}"),
                    read: Some(d),
                    usr_cpu: 1.0,
                    sys_cpu: 10.0,
                    job_runtime_ms: 1000.0,
                    ..FioJob::default()
                })
                .collect(),
            ..FioOutput::default()
        }
    }

    #[test]
    fn jobs_sum_and_the_mean_is_weighted_by_ios() {
        let s = out(vec![
            dir(100, 1000.0, 2000.0, vec![]),
            dir(300, 5000.0, 9000.0, vec![]),
        ])
        .summary();
        assert_eq!((s.iops, s.total_ios, s.jobs), (400.0, 400, 2));
        assert!((s.clat_mean_us - 4.0).abs() < 1e-12);
        assert_eq!((s.usr_cpu_pct, s.sys_cpu_pct), (2.0, 20.0));
        // Without bins, several jobs give the largest job's percentile and say so.
        assert_eq!(s.clat_p99_us, Some(9.0));
        assert!(!s.percentiles_exact);
    }

    #[test]
    fn bins_of_several_jobs_give_exact_percentiles() {
        let a = dir(100, 1000.0, 1000.0, vec![(1000, 100)]);
        let b = dir(100, 3000.0, 3000.0, vec![(3000, 97), (8000, 3)]);
        let s = out(vec![a, b]).summary();
        assert!(s.percentiles_exact);
        // 200 samples: the 100th is the last of the first job's; 197 are at most 3000, so
        // the 198th (99%) is 8000, which neither job's own p99 list would give.
        assert_eq!(s.clat_p50_us, Some(1.0));
        assert_eq!(s.clat_p99_us, Some(8.0));
        assert_eq!(percentile_of_bins(&[(5, 99), (7, 1)], 99.0), Some(5.0));
        assert_eq!(percentile_of_bins(&[], 99.0), None);
    }

    #[test]
    fn failed_and_empty_runs_say_why() {
        let j = r#"{"jobs":[{"jobname":"x","error":5,"read":{"total_ios":0}}]}"#;
        let why = parse(j).unwrap().failure().unwrap();
        assert!(
            why.contains("job 'x' ended with error 5") && why.contains("expected error 0"),
            "{why}"
        );
        let j = r#"{"jobs":[{"jobname":"x","error":0,"read":{"total_ios":0}}]}"#;
        assert!(
            parse(j)
                .unwrap()
                .failure()
                .unwrap()
                .contains("no job completed")
        );
        assert!(parse(r#"{"jobs":[]}"#).unwrap().failure().is_some());
        let ok = out(vec![dir(1, 1.0, 1.0, vec![])]);
        assert_eq!(ok.failure(), None);
    }
}
