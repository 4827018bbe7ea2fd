//! A sweep's plan: everything needed to build the inputs of any point, checked before
//! anything runs. A plan is a pure function from a point's index to its metrics, so a
//! point gives the same numbers on any thread, process or machine; [`Plan::portable`]
//! carries it there as JSON with the job and platform text inside.

use crate::SweepError;
use crate::fio_dir;
use crate::grid::{Grid, KeyKind};
use crate::metrics;
use crate::output::PointResult;
use irqlab_fio::JobSpec;
use irqlab_inputs::{JobSource, MapRule, PolicyArgs, PolicyParseError, RunShape, resolve_platform};
use irqlab_sim::{Budget, Platform, SimOptions};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// What to sweep, as the command line or the Python package says it.
#[derive(Clone, Debug, PartialEq)]
pub struct SweepSpec {
    pub job: JobSource,
    /// A platform file or a bare name.
    pub platform: String,
    /// The base policy; swept policy keys override it.
    pub policy: PolicyArgs,
    /// `KEY=VALUES`, the first varying slowest.
    pub sets: Vec<String>,
    /// Seed of every stream of every point (unless `seed` is swept).
    pub seed: u64,
    /// Also write every point's fio JSON and logs here (fio-plot's layout).
    pub fio_dir: Option<PathBuf>,
    /// The resource budget of every point (each point is checked on its own).
    pub budget: Budget,
    /// How the job's files map onto each point's platform, and the runtime cap.
    pub shape: RunShape,
}

/// A plan as it travels: the job and platform as text, the policy as options.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
struct Portable {
    job_name: String,
    job_text: String,
    platform_text: String,
    platform_origin: String,
    policy: Vec<String>,
    sets: Vec<String>,
    seed: u64,
    max_memory_bytes: u64,
    max_events: u64,
    /// `--map` rules as PATTERN=DEVICE.
    #[serde(default)]
    maps: Vec<String>,
    #[serde(default)]
    max_runtime_ns: Option<u64>,
}

/// Everything needed to build the inputs of any point.
#[derive(Clone, Debug)]
pub struct Plan {
    job_path: PathBuf,
    job_text: String,
    jobs: Vec<JobSpec>,
    platform_text: String,
    platform_origin: String,
    platform_name: String,
    policy: PolicyArgs,
    seed: u64,
    budget: Budget,
    sets: Vec<String>,
    grid: Grid,
    fio_dir: Option<PathBuf>,
    shape: RunShape,
    /// The base platform's CPU count (`$ncpus` of the jobs parsed once).
    ncpus: usize,
}

impl Plan {
    /// Reads the job and platform, parses the grid and checks every value of every key.
    pub fn new(spec: &SweepSpec) -> Result<Plan, SweepError> {
        let (job_text, job_path) = spec.job.read()?;
        let path = resolve_platform(&spec.platform)?;
        // The platform resolved (its shared tables read beside it) into a self-contained
        // file, so a point builds the same platform in any process.
        let platform_text = Platform::load(&path, &[])
            .and_then(|p| p.to_toml())
            .map_err(irqlab_inputs::InputError::from)?;
        Plan::from_parts(Portable {
            job_name: job_path.display().to_string(),
            job_text,
            platform_text,
            platform_origin: path.display().to_string(),
            policy: spec.policy.to_args(),
            sets: spec.sets.clone(),
            seed: spec.seed,
            max_memory_bytes: spec.budget.max_memory_bytes,
            max_events: spec.budget.max_events,
            maps: spec
                .shape
                .maps
                .iter()
                .map(|r| format!("{}={}", r.pattern, r.device))
                .collect(),
            max_runtime_ns: spec.shape.max_runtime_ns,
        })
        .map(|p| Plan {
            fio_dir: spec.fio_dir.clone(),
            ..p
        })
    }

    fn from_parts(p: Portable) -> Result<Plan, SweepError> {
        let grid = Grid::parse(&p.sets)?;
        let job_path = PathBuf::from(&p.job_name);
        let platform = Platform::from_toml(&p.platform_text, &p.platform_origin, &[])
            .map_err(irqlab_inputs::InputError::from)?;
        let jobs = irqlab_fio::parse_str_for(&p.job_text, &job_path, platform.cpu.count)
            .map_err(irqlab_inputs::InputError::from)?;
        let maps = p
            .maps
            .iter()
            .map(|m| MapRule::parse(m))
            .collect::<Result<Vec<_>, _>>()?;
        let policy = PolicyArgs::from_args(&p.policy).map_err(|PolicyParseError(message)| {
            irqlab_inputs::InputError::Policy {
                text: p.policy.join(" "),
                message,
            }
        })?;
        let plan = Plan {
            job_path,
            job_text: p.job_text,
            jobs,
            platform_text: p.platform_text,
            platform_origin: p.platform_origin,
            platform_name: platform.name,
            policy,
            seed: p.seed,
            budget: Budget {
                max_memory_bytes: p.max_memory_bytes,
                max_events: p.max_events,
            },
            sets: p.sets,
            grid,
            fio_dir: None,
            shape: RunShape {
                maps,
                max_runtime_ns: p.max_runtime_ns,
            },
            ncpus: platform.cpu.count,
        };
        plan.check_values()?;
        Ok(plan)
    }

    /// The plan as JSON for another process or machine (without `fio_dir`: files are
    /// written where the sweep is driven).
    pub fn portable(&self) -> String {
        let p = Portable {
            job_name: self.job_path.display().to_string(),
            job_text: self.job_text.clone(),
            platform_text: self.platform_text.clone(),
            platform_origin: self.platform_origin.clone(),
            policy: self.policy.to_args(),
            sets: self.sets.clone(),
            seed: self.seed,
            max_memory_bytes: self.budget.max_memory_bytes,
            max_events: self.budget.max_events,
            maps: self
                .shape
                .maps
                .iter()
                .map(|r| format!("{}={}", r.pattern, r.device))
                .collect(),
            max_runtime_ns: self.shape.max_runtime_ns,
        };
        serde_json::to_string(&p).unwrap_or_default()
    }

    /// The plan [`Plan::portable`] wrote.
    pub fn from_portable(text: &str) -> Result<Plan, SweepError> {
        let p: Portable =
            serde_json::from_str(text).map_err(|e| SweepError::Portable(e.to_string()))?;
        Plan::from_parts(p)
    }

    pub fn grid(&self) -> &Grid {
        &self.grid
    }

    /// Points in the grid.
    pub fn len(&self) -> usize {
        self.grid.len()
    }

    pub fn is_empty(&self) -> bool {
        self.grid.len() == 0
    }

    pub fn writes_fio_dir(&self) -> bool {
        self.fio_dir.is_some()
    }

    /// Every value of every key on its own, so a typo fails before hours of simulation
    /// and the message names the value. A policy the platform refuses (posted MSI on a
    /// guest) fails here too, with the platform's reason.
    fn check_values(&self) -> Result<(), SweepError> {
        let platform = Platform::from_toml(&self.platform_text, &self.platform_origin, &[])
            .map_err(irqlab_inputs::InputError::from)?;
        if !self.grid.dims.iter().any(|d| d.key == "delivery") {
            platform
                .allows(&self.policy.policy())
                .map_err(SweepError::Refused)?;
        }
        for d in &self.grid.dims {
            for v in &d.values {
                let fail = |e: &dyn std::fmt::Display| SweepError::Value {
                    key: d.key.clone(),
                    value: v.clone(),
                    message: e.to_string(),
                };
                match &d.kind {
                    KeyKind::Policy(k) => {
                        let mut policy = self.policy.clone();
                        k.apply(&mut policy, v).map_err(|e| fail(&e))?;
                        platform.allows(&policy.policy()).map_err(|e| fail(&e))?;
                    }
                    KeyKind::Seed => {
                        v.parse::<u64>()
                            .map_err(|_| fail(&"a seed is a non-negative integer"))?;
                    }
                    KeyKind::Platform => {
                        Platform::from_toml(
                            &self.platform_text,
                            &self.platform_origin,
                            &[format!("{}={v}", d.key)],
                        )
                        .map_err(|e| fail(&e))?;
                    }
                    KeyKind::Job(opt) => {
                        self.jobs_with(&[(opt.as_str(), v.as_str())], self.ncpus)
                            .map_err(|e| fail(&e))?;
                    }
                }
            }
        }
        // Every point's policy, with the base's options: one that contradicts itself
        // is refused before any point runs.
        self.policy.checked_policy()?;
        let policy_dims: Vec<usize> = (0..self.grid.dims.len())
            .filter(|&i| matches!(self.grid.dims[i].kind, KeyKind::Policy(_)))
            .collect();
        if !policy_dims.is_empty() {
            for i in 0..self.grid.len() {
                let values = self.grid.values(i);
                let mut policy = self.policy.clone();
                for &d in &policy_dims {
                    if let KeyKind::Policy(k) = &self.grid.dims[d].kind {
                        k.apply(&mut policy, values[d])?;
                    }
                }
                if let Err(e) = policy.checked_policy() {
                    return Err(SweepError::Point {
                        at: self.describe(i),
                        message: e.to_string(),
                    });
                }
            }
        }
        Ok(())
    }

    /// The jobs with `options` appended to every job section (a job's own last value
    /// wins in fio, so this overrides the file and its [global]).
    fn jobs_with(
        &self,
        options: &[(&str, &str)],
        ncpus: usize,
    ) -> Result<Vec<JobSpec>, irqlab_fio::JobFileError> {
        if options.is_empty() && ncpus == self.ncpus {
            return Ok(self.jobs.clone());
        }
        let text = with_job_options(&self.job_text, options);
        irqlab_fio::parse_str_for(&text, &self.job_path, ncpus)
    }

    /// Simulates point `i` (and writes its fio JSON and logs when the plan has a
    /// fio directory).
    pub fn run_point(&self, i: usize) -> Result<PointResult, SweepError> {
        if i >= self.len() {
            return Err(SweepError::NoSuchPoint {
                index: i,
                points: self.len(),
            });
        }
        let at = |e: &dyn std::fmt::Display| SweepError::Point {
            at: self.describe(i),
            message: e.to_string(),
        };
        let values = self.grid.values(i);
        let mut policy = self.policy.clone();
        let mut seed = self.seed;
        let mut sets = Vec::new();
        let mut job_opts = Vec::new();
        for (d, v) in self.grid.dims.iter().zip(&values) {
            match &d.kind {
                KeyKind::Policy(k) => k.apply(&mut policy, v).map_err(|e| at(&e))?,
                KeyKind::Seed => seed = v.parse().map_err(|_| at(&format!("seed '{v}'")))?,
                KeyKind::Platform => sets.push(format!("{}={v}", d.key)),
                KeyKind::Job(opt) => job_opts.push((opt.as_str(), *v)),
            }
        }
        let platform = Platform::from_toml(&self.platform_text, &self.platform_origin, &sets)
            .map_err(|e| at(&e))?;
        let ncpus = platform.cpu.count;
        let mut jobs = self.jobs_with(&job_opts, ncpus).map_err(|e| at(&e))?;
        // With a fio directory every point also writes fio logs named as bench-fio names
        // them.
        let fio_point = self.fio_dir.as_ref().map(|base| {
            let prefix = fio_dir::prefix(&jobs);
            (fio_dir::point_dir(base, &self.grid, &values), prefix)
        });
        if let Some((_, prefix)) = &fio_point {
            let logs = fio_dir::log_options(prefix);
            let mut with_logs = job_opts.clone();
            with_logs.extend(logs.iter().map(|(k, v)| (*k, v.as_str())));
            jobs = self.jobs_with(&with_logs, ncpus).map_err(|e| at(&e))?;
        }
        let jobs = irqlab_inputs::shape_jobs(
            jobs,
            &irqlab_sim::device_names(&platform),
            &self.shape,
            ncpus,
            "the platform's CPUs",
        )
        .map_err(|e| at(&e))?
        .jobs;
        let policy = policy.checked_policy().map_err(|e| at(&e))?;
        let report = irqlab_sim::simulate(
            &jobs,
            &platform,
            &policy,
            &SimOptions::overriding(seed).with_budget(self.budget),
        )
        .map_err(|e| at(&e))?;
        if let Some((dir, prefix)) = &fio_point {
            fio_dir::write(dir, prefix, &report)?;
        }
        let devices: std::collections::BTreeSet<&str> = jobs
            .iter()
            .flat_map(|j| j.filenames.iter().map(String::as_str))
            .collect();
        Ok(PointResult {
            metrics: metrics::measure(&report, devices.len()),
        })
    }

    /// "key=value key=value" of point `i`.
    pub fn describe(&self, i: usize) -> String {
        self.grid
            .dims
            .iter()
            .zip(self.grid.values(i))
            .map(|(d, v)| format!("{}={v}", d.key))
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// "JOB on PLATFORM" for plot titles.
    pub fn context(&self) -> String {
        let job = self.job_path.file_name().map_or_else(
            || self.job_path.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        );
        format!("{job} on {}", self.platform_name)
    }
}

/// Appends `key=value` lines at the end of every job section (not [global]).
pub fn with_job_options(text: &str, options: &[(&str, &str)]) -> String {
    let mut out = String::with_capacity(text.len() + 64);
    let mut in_job = false;
    let close = |out: &mut String, in_job: bool| {
        if in_job {
            for (k, v) in options {
                out.push_str(k);
                out.push('=');
                out.push_str(v);
                out.push('\n');
            }
        }
    };
    for line in text.lines() {
        let t = line.trim();
        if t.starts_with('[') {
            close(&mut out, in_job);
            in_job = !t.eq_ignore_ascii_case("[global]");
        }
        out.push_str(line);
        out.push('\n');
    }
    close(&mut out, in_job);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const JOB: &str = "[global]\nioengine=libaio\ndirect=1\nrw=randread\nbs=4k\niodepth=4\n\
        time_based\nruntime=1ms\n[a]\nfilename=/dev/nvme0n1\ncpus_allowed=0\n";

    fn spec(sets: &[&str]) -> SweepSpec {
        SweepSpec {
            job: JobSource::Text {
                text: JOB.into(),
                name: "two.fio".into(),
            },
            platform: concat!(env!("CARGO_MANIFEST_DIR"), "/../../platforms/example.toml").into(),
            policy: PolicyArgs::default(),
            sets: sets.iter().map(|s| s.to_string()).collect(),
            seed: 3,
            fio_dir: None,
            budget: Budget::DEFAULT,
            shape: RunShape::default(),
        }
    }

    #[test]
    fn job_options_go_to_every_job_section() {
        let two = format!("{JOB}[b]\nfilename=/dev/nvme1n1\n");
        let text = with_job_options(&two, &[("iodepth", "16")]);
        let jobs = irqlab_fio::parse_str(&text, "t.fio".as_ref()).unwrap();
        assert!(jobs.iter().all(|j| j.iodepth == 16));
        assert_eq!(text.matches("iodepth=16").count(), 2, "not in [global]");
    }

    #[test]
    fn a_portable_plan_gives_the_same_points() {
        let plan = Plan::new(&spec(&["delivery=remapped,posted", "job.iodepth=1,8"])).unwrap();
        let there = Plan::from_portable(&plan.portable()).unwrap();
        assert_eq!(there.len(), 4);
        for i in 0..plan.len() {
            assert_eq!(plan.run_point(i).unwrap(), there.run_point(i).unwrap());
        }
        assert_ne!(plan.run_point(0).unwrap(), plan.run_point(3).unwrap());
        assert!(matches!(
            plan.run_point(4),
            Err(SweepError::NoSuchPoint { index: 4, .. })
        ));
        assert!(Plan::from_portable("{}").is_err());
    }

    #[test]
    fn a_bad_value_fails_before_running_and_names_itself() {
        let e = Plan::new(&spec(&["max_loop=0..2"]))
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("--set max_loop=0: max_loop"), "{e}");
        let e = Plan::new(&spec(&["job.iodepth=1,x"]))
            .unwrap_err()
            .to_string();
        assert!(e.contains("job.iodepth=x"), "{e}");
    }
}
