//! fio's reporting groups (stat.c __show_run_stats and sum_thread_stats): the per-clone
//! reports of an engine become fio's thread_stats, summing consecutive jobs that ask for
//! group_reporting and share a group id.

use crate::{DirReport, JobReport};

/// stat.c __show_run_stats: a job starts a new report unless it asks for
/// group_reporting and the report before it has the same group id.
pub fn group_reporting(jobs: Vec<JobReport>) -> Vec<JobReport> {
    let mut out: Vec<JobReport> = Vec::with_capacity(jobs.len());
    for job in jobs {
        match out.last_mut() {
            Some(prev) if job.group_reporting && prev.groupid == job.groupid => {
                add_member(prev, job)
            }
            _ => out.push(job),
        }
    }
    out
}

/// stat.c sum_thread_stats: latencies merge, bandwidth and IOPS samples add up, bytes
/// and I/Os add up, the window is the longest one; the job's total run time, CPU
/// times and histograms add up. Names and options stay the first member's.
fn add_member(dst: &mut JobReport, src: JobReport) {
    add_dir(&mut dst.read, &src.read);
    add_dir(&mut dst.write, &src.write);
    add_dir(&mut dst.trim, &src.trim);
    // stat.c: the first error of the group stays; the steady-state data are the last
    // member's (the job that holds the group's measurements).
    if dst.error.is_none() {
        dst.error = src.error.clone();
    }
    if src.steadystate.is_some() {
        dst.steadystate = src.steadystate.clone();
    }
    dst.no_io &= src.no_io;
    if let Some(z) = src.zone_resets {
        dst.zone_resets = Some(dst.zone_resets.unwrap_or(0) + z);
    }
    dst.members += src.members;
    dst.usr_ns += src.usr_ns;
    dst.sys_ns += src.sys_ns;
    dst.ctx += src.ctx;
    dst.migrations = match (dst.migrations, src.migrations) {
        (None, None) => None,
        (a, b) => Some(a.unwrap_or(0) + b.unwrap_or(0)),
    };
    dst.runtime_ns += src.runtime_ns;
    for (a, b) in dst.iodepth_level.iter_mut().zip(src.iodepth_level) {
        *a += b;
    }
    for (a, b) in dst.iodepth_submit.iter_mut().zip(src.iodepth_submit) {
        *a += b;
    }
    for (a, b) in dst.iodepth_complete.iter_mut().zip(src.iodepth_complete) {
        *a += b;
    }
    dst.submit_calls += src.submit_calls;
    dst.complete_calls += src.complete_calls;
    dst.logs.extend(src.logs);
}

fn add_dir(dst: &mut DirReport, src: &DirReport) {
    dst.total_ios += src.total_ios;
    dst.io_bytes += src.io_bytes;
    dst.runtime_ns = dst.runtime_ns.max(src.runtime_ns);
    dst.slat.merge(&src.slat);
    dst.clat.merge(&src.clat);
    dst.lat.merge(&src.lat);
    dst.bw_samples.add_group_member(&src.bw_samples);
    dst.iops_samples.add_group_member(&src.iops_samples);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job(name: &str, groupid: u32, grouped: bool, ios: u64) -> JobReport {
        let mut j = JobReport {
            name: name.into(),
            groupid,
            members: 1,
            group_reporting: grouped,
            runtime_ns: 10,
            ..JobReport::default()
        };
        j.read.total_ios = ios;
        j.read.runtime_ns = ios;
        j.read.clat.record(ios);
        j
    }

    #[test]
    fn consecutive_grouped_jobs_of_a_group_merge() {
        let jobs = vec![
            job("a", 0, true, 1),
            job("a", 0, true, 2),
            job("a", 0, true, 3),
            job("b", 0, false, 4),
            job("c", 1, true, 5),
            job("c", 1, true, 6),
        ];
        let out = group_reporting(jobs);
        let names: Vec<(&str, u32, u64)> = out
            .iter()
            .map(|j| (j.name.as_str(), j.members, j.read.total_ios))
            .collect();
        assert_eq!(names, vec![("a", 3, 6), ("b", 1, 4), ("c", 2, 11)]);
        assert_eq!(out[0].read.clat.count(), 3);
        assert_eq!(out[0].read.runtime_ns, 3, "the longest window");
        assert_eq!(out[0].runtime_ns, 30, "total_run_time adds up");
    }
}
