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

pub mod catalogue;
pub mod control;
mod control_opts;
pub mod engines;
mod entry_value;
mod error;
mod inert;
mod ini;
pub mod input;
mod job;
mod options;
pub mod plan;
mod rate;
pub mod refused;
pub mod seeds;
mod spec;
mod values;

pub use control::{
    Controls, CpuIo, CpuMode, ExitRule, ExitWhat, Flow, LatencyTarget, RateMin, SqPoll, SsMetric,
    SteadyState, SubmitMode, WriteCmd, Zbd,
};
pub use error::{JobFileError, escape_controls};
pub use options::{accepted as accepted_options, no_meaning};
pub use plan::RunPlan;
pub use rate::RateClock;
pub use spec::{
    BlockSizes, CpusPolicy, IoEngine, JobOption, JobSpec, LogOptions, RateLimit, RateProcess,
    RwMode, ThinkTime,
};

use std::path::Path;

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

/// fio.h REAL_MAX_JOBS: fio runs at most this many jobs (clones included) at once
/// (init.c get_new_job: "maximum number of jobs (4096) reached").
pub const MAX_JOBS: u64 = 4096;

/// Option lines applied over the whole file, each job counting the `[global]` options
/// above it: 4096 jobs under 60 global options fit; a file that would make the parser
/// apply millions is refused at the job that crosses the limit.
const MAX_OPTIONS_APPLIED: usize = 250_000;

/// A size in bytes as fio reads one (`4k`, `1p`, `0x1000`; kb_base 1024), for command-line
/// options that take fio's sizes. Err is what was expected.
pub fn parse_size(s: &str) -> Result<u64, &'static str> {
    values::size(s, 1024)
}

/// A duration as fio reads one (`5ms`, `30s`, `100us`; a bare number is seconds), in
/// ns. Err is what was expected.
pub fn parse_time(s: &str) -> Result<u64, &'static str> {
    values::time_ns(s)
}

/// Reads and parses a job file (a regular text file of at most
/// [`input::MAX_INPUT_BYTES`]); `$ncpus` is the host's CPU count (see
/// [`parse_file_for`]).
pub fn parse_file(path: &Path) -> Result<Vec<JobSpec>, JobFileError> {
    let ncpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    parse_file_for(path, ncpus)
}

/// Parses job-file text; `path` names it in messages and anchors relative `include`s.
/// `${VAR}` comes from the process environment and `$ncpus` from the CPUs available.
pub fn parse_str(text: &str, path: &Path) -> Result<Vec<JobSpec>, JobFileError> {
    let ncpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    parse_str_for(text, path, ncpus)
}

/// [`parse_file`] for a machine of `ncpus` CPUs: `$ncpus` is that count (the platform's
/// CPUs, not the host's, so one job file means the same run on every host).
pub fn parse_file_for(path: &Path, ncpus: usize) -> Result<Vec<JobSpec>, JobFileError> {
    let text = input::read_text(path, input::MAX_INPUT_BYTES)
        .map_err(|e| JobFileError::whole_file(path, e.to_string()))?;
    parse_str_for(&text, path, ncpus)
}

/// [`parse_str`] for a machine of `ncpus` CPUs (see [`parse_file_for`]).
pub fn parse_str_for(text: &str, path: &Path, ncpus: usize) -> Result<Vec<JobSpec>, JobFileError> {
    let var = |name: &str| std::env::var(name).ok();
    parse_with_env(text, path, &ini::Env { var: &var, ncpus })
}

fn parse_with_env(text: &str, path: &Path, env: &ini::Env) -> Result<Vec<JobSpec>, JobFileError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let sections = ini::sections(text, path, env)?;
    let mut globals = Vec::new();
    let mut jobs: Vec<JobSpec> = Vec::new();
    let (mut clones, mut applied, mut global_entries) = (0u64, 0usize, 0usize);
    for section in &sections {
        if section.global {
            job::check_global(section)?;
            global_entries += section.entries.len();
            globals.push(section);
            continue;
        }
        applied += global_entries + section.entries.len();
        if applied > MAX_OPTIONS_APPLIED {
            return Err(JobFileError::at(
                &section.file,
                section.line,
                format!(
                    "job '{}' brings the options applied over the file past {MAX_OPTIONS_APPLIED} ({} from [global] sections above it)",
                    section.name, global_entries
                ),
                "fewer jobs or fewer [global] options",
            ));
        }
        let job = job::build(&globals, section)?;
        clones += u64::from(job.numjobs);
        if clones > MAX_JOBS {
            let at = job
                .option("numjobs")
                .map_or((&section.file, section.line), |o| (&o.file, o.line));
            return Err(JobFileError::at(
                at.0,
                at.1,
                format!(
                    "job '{}' brings the file to {clones} jobs (numjobs clones counted)",
                    section.name
                ),
                "at most 4096 jobs in all, fio's REAL_MAX_JOBS",
            ));
        }
        jobs.push(job);
    }
    if jobs.is_empty() {
        return Err(JobFileError::whole_file(
            path,
            "no jobs; expected at least one [jobname] section besides [global]",
        ));
    }
    // options.c str_exitall_cb sets a process-wide flag: any section's exitall is every
    // job's.
    if jobs.iter().any(|j| j.controls.exit.exitall)
        || sections.iter().any(|s| {
            s.global
                && s.entries
                    .iter()
                    .any(|e| e.key == "exitall" && e.value.as_deref() != Some("0"))
        })
    {
        for j in &mut jobs {
            j.controls.exit.exitall = true;
        }
    }
    check_ss_intervals(&jobs)?;
    check_wait_for(&jobs)?;
    Ok(jobs)
}

/// init.c wait_for_ok: a job waits for one job defined above it, not for itself.
fn check_wait_for(jobs: &[JobSpec]) -> Result<(), JobFileError> {
    for (i, j) in jobs.iter().enumerate() {
        let Some(name) = &j.controls.wait_for else {
            continue;
        };
        let above = jobs[..i].iter().filter(|o| o.name == *name).count();
        let problem = if j.name == *name {
            format!("a job cannot wait for itself (wait_for={name})")
        } else if above == 0 {
            format!("waitee job {name} unknown: wait_for names a job defined above this one")
        } else if above > 1 {
            format!(
                "multiple waitees {name} found: fio refuses wait_for on a name several jobs have"
            )
        } else {
            continue;
        };
        let (file, line) = j
            .option_at(&["wait_for"])
            .unwrap_or((j.file.as_path(), j.line));
        return Err(JobFileError::at(
            file,
            line,
            format!("job '{}': {problem}", j.name),
            "wait_for=NAME of one job above",
        ));
    }
    Ok(())
}

/// init.c: the helper thread checks steady state at one interval, so every job must
/// have the same `steadystate_check_interval` ("must be globally equal").
fn check_ss_intervals(jobs: &[JobSpec]) -> Result<(), JobFileError> {
    let Some(first) = jobs.first() else {
        return Ok(());
    };
    if let Some(j) = jobs
        .iter()
        .find(|j| j.controls.ss_interval_ms != first.controls.ss_interval_ms)
    {
        let odd = [j, first]
            .into_iter()
            .find(|j| j.option("steadystate_check_interval").is_some())
            .unwrap_or(j);
        let (file, line) = odd
            .option_at(&["steadystate_check_interval"])
            .unwrap_or((odd.file.as_path(), odd.line));
        return Err(JobFileError::at(
            file,
            line,
            format!(
                "conflicting ss_check_interval: {} ms in job '{}' and {} ms in job '{}' (fio checks steady state at one interval for all jobs)",
                first.controls.ss_interval_ms, first.name, j.controls.ss_interval_ms, j.name
            ),
            "the same steadystate_check_interval in every job (put it in [global])",
        ));
    }
    Ok(())
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
        assert!(jobs[0].uses_ncpus);
        // fio puts an empty string for an unset variable; the option's check says so.
        let err = parse_with_env("[j]\nfilename=x\nrw=${NOPE}\n", Path::new("e.fio"), &env)
            .unwrap_err()
            .to_string();
        assert!(
            err.starts_with("e.fio:3: rw has an empty value (${NOPE} not set"),
            "{err}"
        );
        let ok = parse_with_env(
            "[j]\nfilename=x\ndescription=a${NOPE}\n",
            Path::new("e.fio"),
            &env,
        )
        .unwrap();
        assert_eq!(ok[0].description.as_deref(), Some("a"));
    }
}
