//! `irqlab sweep --fio-dir DIR`: a benchmark folder as fio-plot's bench-fio lays one out,
//! so every fio-plot graph draws from a sweep. Each point writes fio's JSON (json+) as
//! `RW-iodepth-D-numjobs-N.json` and, through write_lat_log/write_bw_log/write_iops_log
//! with that prefix, the `RW-iodepth-D-numjobs-N_TYPE.K.log` files fio-plot's `-g` reads.
//! Points that differ in anything but job.iodepth and job.numjobs go to their own
//! subdirectory (`delivery=posted`), as bench-fio separates runs of different settings.

use crate::SweepError;
use crate::grid::{Grid, KeyKind};
use irqlab_fio::JobSpec;
use irqlab_report::RunReport;
use std::path::{Path, PathBuf};

/// The directory of point `values` under `base`.
pub fn point_dir(base: &Path, grid: &Grid, values: &[&str]) -> PathBuf {
    let parts: Vec<String> = grid
        .dims
        .iter()
        .zip(values)
        .filter(|(d, _)| !matches!(&d.kind, KeyKind::Job(o) if o == "iodepth" || o == "numjobs"))
        .map(|(d, v)| format!("{}={v}", d.key).replace('/', "_"))
        .collect();
    if parts.is_empty() {
        base.to_path_buf()
    } else {
        base.join(parts.join(","))
    }
}

/// bench-fio's file prefix `RW-iodepth-D-numjobs-N` from the first job's options as
/// written (fio-plot matches them against the JSON's job options).
pub fn prefix(jobs: &[JobSpec]) -> String {
    let Some(job) = jobs.first() else {
        return "job".into();
    };
    let opt = |name: &str, default: &str| {
        job.option(name)
            .map_or_else(|| default.to_string(), |o| o.value.clone())
    };
    let rw = opt("rw", "read");
    let rw = rw.split(':').next().unwrap_or("read").to_string();
    format!(
        "{rw}-iodepth-{}-numjobs-{}",
        opt("iodepth", "1"),
        opt("numjobs", "1")
    )
}

/// The log options a point runs with (bench-fio passes the same on fio's command line).
pub fn log_options(prefix: &str) -> [(&'static str, String); 3] {
    [
        ("write_lat_log", prefix.to_string()),
        ("write_bw_log", prefix.to_string()),
        ("write_iops_log", prefix.to_string()),
    ]
}

/// Writes the point's JSON and logs into `dir`.
pub fn write(dir: &Path, prefix: &str, report: &RunReport) -> Result<(), SweepError> {
    let fail = |path: &Path, e: &dyn std::fmt::Display| SweepError::Write {
        path: path.to_path_buf(),
        message: e.to_string(),
    };
    std::fs::create_dir_all(dir).map_err(|e| fail(dir, &e))?;
    let json = irqlab_report::fio_json::render(report, true);
    let path = dir.join(format!("{prefix}.json"));
    let mut text = serde_json::to_string_pretty(&json).map_err(|e| fail(&path, &e))?;
    text.push('\n');
    std::fs::write(&path, text).map_err(|e| fail(&path, &e))?;
    irqlab_report::fio_log::write_all(report, dir)
        .map(drop)
        .map_err(|(p, e)| fail(&p, &e))
}
