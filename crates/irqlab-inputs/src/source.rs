//! A job given as a path or as its text, and the jobs and platform of one run with the
//! platform's `--set` overrides and the topology knobs applied (what `irqlab run` and
//! `irqlab.run()` simulate).

use crate::{InputError, RunShape, Topology, resolve_platform};
use irqlab_fio::JobSpec;
use irqlab_sim::Platform;
use std::path::PathBuf;

/// Where the fio job comes from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum JobSource {
    /// A job file.
    Path(PathBuf),
    /// Job text; `name` stands for the file in messages (FILE:LINE) and resolves
    /// `include` lines.
    Text { text: String, name: PathBuf },
}

impl JobSource {
    /// A file when one is there; otherwise text when it looks like a job file (several
    /// lines, or a `[section]`); otherwise an error naming the missing file.
    pub fn guess(s: &str) -> Result<JobSource, InputError> {
        let path = PathBuf::from(s);
        if path.is_file() {
            return Ok(JobSource::Path(path));
        }
        if s.contains('\n') || s.trim_start().starts_with('[') {
            return Ok(JobSource::Text {
                text: s.to_string(),
                name: PathBuf::from("<job text>"),
            });
        }
        Err(InputError::NoJob(s.to_string()))
    }

    /// The job text and the name it goes by in messages.
    pub fn read(&self) -> Result<(String, PathBuf), InputError> {
        match self {
            JobSource::Path(p) => {
                let text = irqlab_fio::input::read_text(p, irqlab_fio::input::MAX_INPUT_BYTES)
                    .map_err(|e| InputError::Read {
                        path: p.clone(),
                        message: e.to_string(),
                    })?;
                Ok((text, p.clone()))
            }
            JobSource::Text { text, name } => Ok((text.clone(), name.clone())),
        }
    }

    /// The parsed jobs, `$ncpus` being the host's CPU count.
    pub fn jobs(&self) -> Result<Vec<JobSpec>, InputError> {
        let ncpus = std::thread::available_parallelism().map_or(1, |n| n.get());
        self.jobs_for(ncpus)
    }

    /// The parsed jobs for a machine of `ncpus` CPUs (`$ncpus`).
    pub fn jobs_for(&self, ncpus: usize) -> Result<Vec<JobSpec>, InputError> {
        match self {
            JobSource::Path(p) => Ok(irqlab_fio::parse_file_for(p, ncpus)?),
            JobSource::Text { text, name } => Ok(irqlab_fio::parse_str_for(text, name, ncpus)?),
        }
    }
}

/// The jobs and the platform of one run, ready to simulate.
#[derive(Clone, Debug)]
pub struct Inputs {
    pub jobs: Vec<JobSpec>,
    pub platform: Platform,
    /// What shaping did (files mapped, runtimes capped, `$ncpus`), for the report.
    pub notes: Vec<(String, String)>,
}

impl Inputs {
    /// Finds and loads the platform (a file or a bare name) with `sets` applied in
    /// order, reads the job with `$ncpus` the platform's CPU count, applies `topology`
    /// to both, then maps the files and caps the runtimes as `shape` asks.
    pub fn prepare(
        job: &JobSource,
        platform: &str,
        sets: &[String],
        topology: &Topology,
        shape: &RunShape,
    ) -> Result<Inputs, InputError> {
        let path = resolve_platform(platform)?;
        let platform = Platform::load(&path, sets)?;
        let jobs = job.jobs_for(platform.cpu.count)?;
        let topo_sets = topology.platform_sets(&platform);
        let platform = platform.with_overrides(&topo_sets)?;
        let jobs = topology.apply_jobs(&jobs, &platform)?;
        let shaped = crate::shape_jobs(
            jobs,
            &irqlab_sim::device_names(&platform),
            shape,
            platform.cpu.count,
            "the platform's CPUs",
        )?;
        Ok(Inputs {
            jobs: shaped.jobs,
            platform,
            notes: shaped.notes,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_paths_and_nonsense_are_told_apart() {
        let text = "[a]\nfilename=/dev/nvme0n1\nruntime=1ms\n";
        assert!(matches!(JobSource::guess(text), Ok(JobSource::Text { .. })));
        let e = JobSource::guess("no/such.fio").unwrap_err();
        assert!(e.to_string().contains("no such job file"), "{e}");
        let jobs = JobSource::guess(text).unwrap().jobs().unwrap();
        assert_eq!(jobs[0].filenames, ["/dev/nvme0n1"]);
        let bad = JobSource::guess("[a]\nfrobnicate=1\n").unwrap().jobs();
        assert!(bad.unwrap_err().to_string().contains("<job text>:2"));
    }
}
