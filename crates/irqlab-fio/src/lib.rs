//! fio job files as irqlab reads them: sections, `[global]` inheritance, bare flags,
//! `include`, size and time suffixes, and errors that name the file and line.
//!
//! ```
//! use std::path::Path;
//! let jobs = irqlab_fio::parse_str(
//!     "[global]\nioengine=io_uring\nfilename=/dev/nvme0n1\n[randread]\nrw=randread\niodepth=32\n",
//!     Path::new("jobs/a.fio"),
//! ).unwrap();
//! assert_eq!(jobs[0].iodepth, 32);
//! ```

mod error;
mod ini;
mod job;
mod options;
mod rate;
pub mod seeds;
mod spec;
mod values;

pub use error::JobFileError;
pub use options::{accepted as accepted_options, no_meaning};
pub use rate::RateClock;
pub use spec::{
    BlockSizes, CpusPolicy, IoEngine, JobOption, JobSpec, LogOptions, RateLimit, RateProcess,
    RwMode, ThinkTime,
};

use std::path::Path;

/// init.c add_job: each job's reporting group. A job with `stonewall` or `new_group`
/// starts a new group when the current one has jobs (clones share their job's group).
pub fn reporting_groups(jobs: &[JobSpec]) -> Vec<u32> {
    let (mut gid, mut in_group) = (0u32, 0u32);
    jobs.iter()
        .map(|j| {
            if (j.stonewall || j.new_group) && in_group > 0 {
                gid += 1;
                in_group = 0;
            }
            in_group += j.numjobs;
            gid
        })
        .collect()
}

/// backend.c run_threads: each job's wave. A `stonewall` job (after the first) waits
/// for every job above it to finish; the jobs below it start with it.
pub fn stonewall_waves(jobs: &[JobSpec]) -> Vec<u32> {
    let mut wave = 0u32;
    jobs.iter()
        .enumerate()
        .map(|(i, j)| {
            if j.stonewall && i > 0 {
                wave += 1;
            }
            wave
        })
        .collect()
}

/// fio's JSON "global options": what the `[global]` sections set, each option once
/// with its last value, in the order first written.
pub fn global_options(jobs: &[JobSpec]) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for (k, v) in jobs.iter().flat_map(JobSpec::global_options) {
        match out.iter_mut().find(|(gk, _)| *gk == k) {
            Some(e) => e.1 = v,
            None => out.push((k, v)),
        }
    }
    out
}

/// Reads and parses a job file.
pub fn parse_file(path: &Path) -> Result<Vec<JobSpec>, JobFileError> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        JobFileError::whole_file(path, format!("cannot read: {}", ini::io_reason(&e)))
    })?;
    parse_str(&text, path)
}

/// Parses job-file text; `path` names it in messages and anchors relative `include`s.
/// `${VAR}` comes from the process environment and `$ncpus` from the CPUs available.
pub fn parse_str(text: &str, path: &Path) -> Result<Vec<JobSpec>, JobFileError> {
    let var = |name: &str| std::env::var(name).ok();
    let ncpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    parse_with_env(text, path, &ini::Env { var: &var, ncpus })
}

fn parse_with_env(text: &str, path: &Path, env: &ini::Env) -> Result<Vec<JobSpec>, JobFileError> {
    let sections = ini::sections(text, path, env)?;
    let mut globals = Vec::new();
    let mut jobs = Vec::new();
    for section in &sections {
        if section.global {
            job::check_global(section)?;
            globals.push(section);
        } else {
            jobs.push(job::build(&globals, section)?);
        }
    }
    if jobs.is_empty() {
        return Err(JobFileError::whole_file(
            path,
            "no jobs; expected at least one [jobname] section besides [global]",
        ));
    }
    Ok(jobs)
}

#[cfg(test)]
mod group_tests {
    use super::*;

    #[test]
    fn groups_and_waves_follow_fio() {
        let jobs = parse_str(
            "[global]\nfilename=f\n[a]\nnumjobs=2\n[b]\nnew_group\n[c]\n[d]\nstonewall\n[e]\n",
            Path::new("g.fio"),
        )
        .unwrap();
        assert_eq!(reporting_groups(&jobs), vec![0, 1, 1, 2, 2]);
        assert_eq!(stonewall_waves(&jobs), vec![0, 0, 0, 1, 1]);
        let first = parse_str(
            "[a]\nfilename=f\nstonewall\nnew_group\n",
            Path::new("g.fio"),
        )
        .unwrap();
        assert_eq!(
            (reporting_groups(&first), stonewall_waves(&first)),
            (vec![0], vec![0])
        );
    }
}

#[cfg(test)]
mod env_tests {
    use super::*;

    #[test]
    fn env_expansion_reaches_values() {
        let var = |name: &str| (name == "DEV").then(|| "/dev/nvme1n1".to_string());
        let env = ini::Env {
            var: &var,
            ncpus: 4,
        };
        let text = "[j]\nfilename=${DEV}\nnumjobs=$ncpus\n";
        let jobs = parse_with_env(text, Path::new("e.fio"), &env).unwrap();
        assert_eq!(jobs[0].filenames, vec!["/dev/nvme1n1"]);
        assert_eq!(jobs[0].numjobs, 4);
        let err = parse_with_env("[j]\nfilename=${NOPE}\n", Path::new("e.fio"), &env)
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("e.fio:2: environment variable NOPE is not set"),
            "{err}"
        );
    }
}
