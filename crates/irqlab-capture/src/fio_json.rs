//! fio's JSON result (`--output-format=json` or `json+`), read as written by fio's
//! stat.c (show_thread_status_json): per job its error, per direction its IOPS, I/O count,
//! runtime and completion latency (mean, percentiles, and with json+ the histogram
//! bins), the job's CPU time, and the disks' counters (disk_util). Parsing only checks
//! the shape; whether a run is usable is the reader's question ([`crate::run`]).

use crate::error::Malformed;
use serde_json::Value;

/// One direction (read or write) of one job.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FioDir {
    pub iops: f64,
    pub total_ios: u64,
    pub runtime_ms: f64,
    pub clat_mean_ns: f64,
    /// fio's percentile list: (percent, ns), ascending by percent.
    pub clat_percentiles: Vec<(f64, f64)>,
    /// json+ only: the latency histogram, (bucket value in ns, count), ascending.
    pub clat_bins: Vec<(u64, u64)>,
}

/// One job (or one group, with group_reporting).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FioJob {
    pub name: String,
    /// fio's error code for the job (an errno), 0 when it ran clean.
    pub error: i64,
    pub read: Option<FioDir>,
    pub write: Option<FioDir>,
    /// CPU time of the job's thread as a percentage of its runtime.
    pub usr_cpu: f64,
    pub sys_cpu: f64,
    /// Context switches of the job's thread.
    pub ctx: u64,
    pub job_runtime_ms: f64,
}

impl FioJob {
    pub fn dirs(&self) -> impl Iterator<Item = &FioDir> {
        self.read.iter().chain(self.write.iter())
    }
}

/// A disk fio saw under the file (fio's disk_util: /sys/block/*/stat deltas).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct DiskUtil {
    pub name: String,
    pub read_ios: u64,
    pub write_ios: u64,
    pub util_pct: f64,
}

/// A whole fio JSON result.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FioOutput {
    pub version: Option<String>,
    pub jobs: Vec<FioJob>,
    pub disk_util: Vec<DiskUtil>,
}

fn num(v: &Value, k: &str) -> f64 {
    v.get(k).and_then(Value::as_f64).unwrap_or(0.0)
}

fn count(v: &Value, k: &str) -> u64 {
    v.get(k).and_then(Value::as_u64).unwrap_or(0)
}

fn dir(d: &Value) -> FioDir {
    let clat = d.get("clat_ns");
    let mut pct: Vec<(f64, f64)> = clat
        .and_then(|c| c.get("percentile"))
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| Some((k.parse::<f64>().ok()?, v.as_f64()?)))
                .collect()
        })
        .unwrap_or_default();
    pct.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mut bins: Vec<(u64, u64)> = clat
        .and_then(|c| c.get("bins"))
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .filter_map(|(k, v)| Some((k.parse::<u64>().ok()?, v.as_u64()?)))
                .collect()
        })
        .unwrap_or_default();
    bins.sort_unstable();
    FioDir {
        iops: num(d, "iops"),
        total_ios: count(d, "total_ios"),
        runtime_ms: num(d, "runtime"),
        clat_mean_ns: clat.map_or(0.0, |c| num(c, "mean")),
        clat_percentiles: pct,
        clat_bins: bins,
    }
}

fn job(j: &Value) -> FioJob {
    FioJob {
        name: j
            .get("jobname")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string(),
        error: j.get("error").and_then(Value::as_i64).unwrap_or(0),
        read: j.get("read").map(dir),
        write: j.get("write").map(dir),
        usr_cpu: num(j, "usr_cpu"),
        sys_cpu: num(j, "sys_cpu"),
        ctx: count(j, "ctx"),
        job_runtime_ms: num(j, "job_runtime"),
    }
}

/// Parses fio's JSON; text before the first `{` (fio prints warnings there) is skipped.
pub fn parse(text: &str) -> Result<FioOutput, Malformed> {
    let start = text
        .find('{')
        .ok_or_else(|| Malformed("no JSON object; expected fio --output-format=json".into()))?;
    let v: Value = serde_json::from_str(&text[start..])
        .map_err(|e| Malformed(format!("not JSON ({e}); expected fio --output-format=json")))?;
    let jobs = v.get("jobs").and_then(Value::as_array).ok_or_else(|| {
        Malformed("no \"jobs\" array; expected fio --output-format=json (a fio result)".into())
    })?;
    let disk_util = v
        .get("disk_util")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .map(|d| DiskUtil {
                    name: d
                        .get("name")
                        .and_then(Value::as_str)
                        .unwrap_or("")
                        .to_string(),
                    read_ios: count(d, "read_ios"),
                    write_ios: count(d, "write_ios"),
                    util_pct: num(d, "util"),
                })
                .collect()
        })
        .unwrap_or_default();
    Ok(FioOutput {
        version: v
            .get("fio version")
            .and_then(Value::as_str)
            .map(str::to_string),
        jobs: jobs.iter().map(job).collect(),
        disk_util,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jobs_directions_percentiles_and_bins_are_read() {
        let text = r#"fio: a warning first
{"fio version":"fio-3.33","jobs":[{"jobname":"a","error":0,"usr_cpu":1.5,"sys_cpu":20.0,"ctx":7,"job_runtime":1000,
 "read":{"iops":100.0,"total_ios":100,"runtime":1000,"clat_ns":{"mean":5000.0,
   "percentile":{"99.000000":9000,"50.000000":5000},"bins":{"9000":1,"5000":99}}}}],
 "disk_util":[{"name":"vda","read_ios":120,"write_ios":3,"util":50.5}]}"#;
        let out = parse(text).unwrap();
        assert_eq!(out.version.as_deref(), Some("fio-3.33"));
        let j = &out.jobs[0];
        assert_eq!((j.name.as_str(), j.error, j.ctx), ("a", 0, 7));
        let r = j.read.as_ref().unwrap();
        assert_eq!(r.clat_percentiles, vec![(50.0, 5000.0), (99.0, 9000.0)]);
        assert_eq!(r.clat_bins, vec![(5000, 99), (9000, 1)]);
        assert!(j.write.is_none());
        assert_eq!(out.disk_util[0].read_ios, 120);
    }

    #[test]
    fn text_that_is_not_a_fio_result_is_refused_with_what_was_expected() {
        for bad in ["", "hello", "{\"jobs\": 3}", "{\"jobs\": [", "{}"] {
            let e = parse(bad).unwrap_err();
            assert!(
                e.0.contains("expected fio --output-format=json"),
                "{bad}: {e}"
            );
        }
    }
}
