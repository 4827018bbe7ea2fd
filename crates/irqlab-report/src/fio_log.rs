//! fio's log files (write_lat_log, write_bw_log, write_iops_log; iolog.c flush_samples)
//! with fio's averaging (stat.c add_log_sample, __add_stat_to_log, finalize_logs).
//! Each line is `time (ms since the job's epoch), value, direction, block size, 0` (the
//! last column is the priority flag fio writes without log_prio), which fio-plot's `-g`
//! and fio2gnuplot read.

use crate::io_stat::IoStat;
use std::fmt::Write;

/// stat.c LOG_MSEC_SLACK on Linux.
const LOG_MSEC_SLACK: u64 = 1;

/// What a log records.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LogKind {
    /// Total latency, ns (write_lat_log).
    Lat,
    /// Completion latency, ns (write_lat_log).
    Clat,
    /// Submission latency, ns (write_lat_log).
    Slat,
    /// Bandwidth, KiB/s (write_bw_log).
    Bw,
    /// IOPS (write_iops_log).
    Iops,
}

impl LogKind {
    /// The type part of the file name (init.c gen_log_name).
    pub fn name(self) -> &'static str {
        match self {
            LogKind::Lat => "lat",
            LogKind::Clat => "clat",
            LogKind::Slat => "slat",
            LogKind::Bw => "bw",
            LogKind::Iops => "iops",
        }
    }

    /// iolog.h inline_log: latency logs flush a window on the sample that ends it.
    fn inline(self) -> bool {
        matches!(self, LogKind::Lat | LogKind::Clat | LogKind::Slat)
    }
}

/// One line of a log.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LogEntry {
    pub time_ms: u64,
    pub value: u64,
    /// 0 read, 1 write.
    pub ddir: u8,
    pub bs: u64,
}

/// One log file of one job.
#[derive(Clone, Debug)]
pub struct IoLog {
    pub kind: LogKind,
    /// init.c gen_log_name: `PREFIX_TYPE.N.log` (per_job_logs) or `PREFIX_TYPE.log`.
    pub file_name: String,
    avg_msec: u64,
    window: [IoStat; 2],
    avg_last: [u64; 2],
    pub entries: Vec<LogEntry>,
}

impl IoLog {
    /// A log for the job numbered `thread_number`, averaged over `avg_msec` (0: every
    /// sample is a line).
    pub fn new(
        kind: LogKind,
        prefix: &str,
        thread_number: u32,
        per_job: bool,
        avg_msec: u64,
    ) -> IoLog {
        let file_name = if per_job {
            format!("{prefix}_{}.{thread_number}.log", kind.name())
        } else {
            format!("{prefix}_{}.log", kind.name())
        };
        IoLog {
            kind,
            file_name,
            avg_msec,
            window: [IoStat::default(); 2],
            avg_last: [0; 2],
            entries: Vec::new(),
        }
    }

    /// stat.c add_log_sample: a sample at `elapsed_ms` since the job's epoch.
    pub fn add(&mut self, elapsed_ms: u64, ddir: usize, value: u64, bs: u64) {
        if self.avg_msec == 0 {
            self.entries.push(LogEntry {
                time_ms: elapsed_ms,
                value,
                ddir: ddir as u8,
                bs,
            });
            return;
        }
        self.window[ddir].add(value);
        if elapsed_ms < self.avg_last[ddir] {
            return;
        }
        let this_window = elapsed_ms - self.avg_last[ddir];
        if this_window < self.avg_msec {
            let diff = self.avg_msec - this_window;
            if self.kind.inline() || diff > LOG_MSEC_SLACK {
                return;
            }
        }
        self.flush(ddir, elapsed_ms, bs);
        self.avg_last[ddir] = elapsed_ms - elapsed_ms % self.avg_msec;
    }

    /// stat.c __add_stat_to_log: the window's mean, rounded, if it has samples.
    fn flush(&mut self, ddir: usize, elapsed_ms: u64, bs: u64) {
        let w = std::mem::take(&mut self.window[ddir]);
        if let Some((_, _, mean, _)) = w.calc() {
            self.entries.push(LogEntry {
                time_ms: elapsed_ms,
                value: (mean + 0.5) as u64,
                ddir: ddir as u8,
                // __add_stat_to_log writes averaged entries with bs 0.
                bs: if self.avg_msec > 0 { 0 } else { bs },
            });
        }
    }

    /// stat.c finalize_logs: the open windows at the job's end.
    pub fn finish(&mut self, elapsed_ms: u64) {
        if self.avg_msec > 0 {
            for d in 0..2 {
                self.flush(d, elapsed_ms, 0);
            }
        }
    }

    /// The file's contents, as iolog.c flush_samples prints them.
    pub fn text(&self) -> String {
        let mut out = String::with_capacity(self.entries.len() * 24);
        for e in &self.entries {
            let _ = writeln!(out, "{}, {}, {}, {}, 0", e.time_ms, e.value, e.ddir, e.bs);
        }
        out
    }
}

/// Writes every fio log file of `report` (write_lat_log, write_bw_log, write_iops_log)
/// under `dir`, as fio writes them in its working directory; returns their paths. An
/// error names the file or directory.
pub fn write_all(
    report: &crate::RunReport,
    dir: &std::path::Path,
) -> Result<Vec<std::path::PathBuf>, (std::path::PathBuf, std::io::Error)> {
    let mut written = Vec::new();
    for log in report.jobs.iter().flat_map(|j| &j.logs) {
        let path = dir.join(&log.file_name);
        if let Some(parent) = path.parent() {
            std::fs::create_dir_all(parent).map_err(|e| (parent.to_path_buf(), e))?;
        }
        std::fs::write(&path, log.text()).map_err(|e| (path.clone(), e))?;
        written.push(path);
    }
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_follow_gen_log_name() {
        assert_eq!(
            IoLog::new(LogKind::Clat, "j", 3, true, 0).file_name,
            "j_clat.3.log"
        );
        assert_eq!(
            IoLog::new(LogKind::Bw, "x", 3, false, 0).file_name,
            "x_bw.log"
        );
    }

    #[test]
    fn unaveraged_logs_keep_every_sample() {
        let mut l = IoLog::new(LogKind::Lat, "j", 1, true, 0);
        l.add(0, 0, 1500, 4096);
        l.add(3, 1, 2500, 8192);
        assert_eq!(l.text(), "0, 1500, 0, 4096, 0\n3, 2500, 1, 8192, 0\n");
    }

    #[test]
    fn averaged_latency_logs_flush_on_the_sample_that_ends_a_window() {
        let mut l = IoLog::new(LogKind::Clat, "j", 1, true, 10);
        for (t, v) in [(1, 100), (5, 200), (9, 301), (10, 1000), (14, 50), (25, 7)] {
            l.add(t, 0, v, 4096);
        }
        l.finish(27);
        let got: Vec<(u64, u64)> = l.entries.iter().map(|e| (e.time_ms, e.value)).collect();
        // (100+200+301+1000)/4 = 400.25 at 10 ms; then 50 and 7 share the window that
        // the 25 ms sample closes; nothing is left for the end.
        assert_eq!(got, vec![(10, 400), (25, 29)]);
    }
}
