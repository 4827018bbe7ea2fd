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
mod spec;
mod values;

pub use error::JobFileError;
pub use spec::{CpusPolicy, IoEngine, JobSpec, RwMode};

use std::path::Path;

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
