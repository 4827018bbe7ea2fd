//! Topology knobs: how many disks, jobs per disk and device vectors per CPU a run uses,
//! applied to a job file and a platform without editing either. `irqlab run`, scenario
//! files and `irqlab calibrate` share them, so one platform answers "and with 4 disks?".

use crate::InputError;
use irqlab_fio::{CpusPolicy, JobSpec};
use irqlab_sim::Platform;

/// The most disks a topology may ask for: a platform's device limit.
pub const MAX_DISKS: u64 = irqlab_sim::platform::MAX_DEVICES as u64;
/// The most fio clones per disk: fio's job limit.
pub const MAX_JOBS_PER_DISK: u64 = irqlab_fio::MAX_JOBS;
/// Job options copied into expanded per-disk jobs (about 100 bytes each).
const MAX_OPTION_COPIES: u64 = 1_000_000;
/// The most device vectors per interrupt CPU (devices.N.vectors_per_cpu).
pub const MAX_VECTORS_PER_CPU: u64 = 256;

/// The topology knobs as command-line options (`irqlab run`).
#[derive(Clone, Debug, Default, clap::Args)]
pub struct TopologyArgs {
    /// Use N disks: each job of the file becomes one job per disk (nvme0..nvmeN-1),
    /// its clones pinned to distinct CPUs; the platform grows if it has fewer.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..=MAX_DISKS))]
    pub disks: Option<u64>,
    /// fio clones per disk (numjobs of each per-disk job).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=MAX_JOBS_PER_DISK as i64))]
    pub jobs_per_disk: Option<u32>,
    /// Device vectors each interrupt CPU hosts (devices.N.vectors_per_cpu; 0: managed
    /// affinity, one per queue's first CPU).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(0..=MAX_VECTORS_PER_CPU))]
    pub vectors_per_cpu: Option<u64>,
}

impl TopologyArgs {
    pub fn topology(&self) -> Topology {
        Topology {
            disks: self.disks.map(|n| n as usize),
            jobs_per_disk: self.jobs_per_disk,
            vectors_per_cpu: self.vectors_per_cpu.map(|n| n as usize),
        }
    }
}

/// Changes of topology; `None` keeps what the job file and platform say.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Topology {
    /// Disks used: the first N devices named by the first device group's prefix (groups
    /// sharing it grow if there are fewer), and every job of the file becomes one job per
    /// disk (`filename=` that disk).
    pub disks: Option<usize>,
    /// fio clones per disk (`numjobs` of each per-disk job).
    pub jobs_per_disk: Option<u32>,
    /// Device vectors each interrupt-handling CPU hosts (the platform's
    /// `devices.N.vectors_per_cpu`; 0 is managed affinity, one vector per CPU and device).
    pub vectors_per_cpu: Option<usize>,
}

impl Topology {
    /// Refuses knobs past their limits (the command line's own ranges), so a scenario
    /// file cannot ask for more than `irqlab run` accepts.
    pub fn check(&self) -> Result<(), InputError> {
        let bad = |key: &str, v: u64, lo: u64, hi: u64| {
            InputError::Topology(format!("topology.{key} = {v} is not in {lo}..={hi}"))
        };
        if let Some(d) = self.disks
            && !(1..=MAX_DISKS).contains(&(d as u64))
        {
            return Err(bad("disks", d as u64, 1, MAX_DISKS));
        }
        if let Some(j) = self.jobs_per_disk
            && !(1..=MAX_JOBS_PER_DISK).contains(&u64::from(j))
        {
            return Err(bad("jobs_per_disk", u64::from(j), 1, MAX_JOBS_PER_DISK));
        }
        if let Some(v) = self.vectors_per_cpu
            && v as u64 > MAX_VECTORS_PER_CPU
        {
            return Err(bad("vectors_per_cpu", v as u64, 0, MAX_VECTORS_PER_CPU));
        }
        Ok(())
    }

    /// Platform overrides (`--set` syntax) this topology implies, for `Platform::load`.
    pub fn platform_sets(&self, platform: &Platform) -> Vec<String> {
        let mut sets = Vec::new();
        if let Some(n) = self.disks
            && let Some(first) = platform.devices.first()
        {
            // Disks are named across the groups of the first prefix (nvme0-3 on rp0,
            // nvme4-7 in a second group): only a shortfall grows the last of those groups.
            let same: Vec<usize> = (0..platform.devices.len())
                .filter(|&i| platform.devices[i].prefix == first.prefix)
                .collect();
            let have: usize = same.iter().map(|&i| platform.devices[i].count).sum();
            if let Some(&last) = same.last()
                && have < n
            {
                let count = platform.devices[last].count + n - have;
                sets.push(format!("devices.{last}.count={count}"));
            }
        }
        if let Some(v) = self.vectors_per_cpu {
            for i in 0..platform.devices.len() {
                sets.push(format!("devices.{i}.vectors_per_cpu={v}"));
            }
        }
        sets
    }

    /// fio clones of `template` on each disk: `jobs_per_disk`, else the file's numjobs.
    fn clones_per_disk(&self, template: &JobSpec) -> u32 {
        self.jobs_per_disk.unwrap_or(template.numjobs).max(1)
    }

    /// The jobs this topology asks for. With `disks`, each job of the file becomes one
    /// job per disk of the first device group, its clones pinned to distinct CPUs
    /// (disk-interleaved, so the clones of one disk spread over the machine) unless the
    /// file pins them itself.
    pub fn apply_jobs(
        &self,
        jobs: &[JobSpec],
        platform: &Platform,
    ) -> Result<Vec<JobSpec>, InputError> {
        self.check()?;
        // Counted before anything is expanded: fio runs at most 4096 jobs.
        let total: u64 = jobs
            .iter()
            .map(|t| {
                let per_disk = u64::from(self.clones_per_disk(t));
                match self.disks {
                    Some(d) => per_disk * d as u64,
                    None if self.jobs_per_disk.is_some() => {
                        per_disk * t.filenames.len().max(1) as u64
                    }
                    None => u64::from(t.numjobs),
                }
            })
            .sum();
        if total > irqlab_fio::MAX_JOBS {
            return Err(InputError::Topology(format!(
                "the topology asks for {total} jobs ({} disks x {} jobs per disk over {} job sections); fio runs at most {} (REAL_MAX_JOBS): use fewer disks or jobs per disk",
                self.disks
                    .map_or("the file's".to_string(), |d| d.to_string()),
                self.jobs_per_disk
                    .map_or("numjobs".to_string(), |j| j.to_string()),
                jobs.len(),
                irqlab_fio::MAX_JOBS
            )));
        }
        // Each expanded job copies its template's options: a long job file times 4096
        // disks would take gigabytes before the simulator's budget is ever asked.
        let copies: u64 = jobs
            .iter()
            .map(|t| {
                let per_disk = u64::from(self.clones_per_disk(t));
                self.disks.map_or(1, |d| per_disk * d as u64) * t.options.len() as u64
            })
            .sum();
        if copies > MAX_OPTION_COPIES {
            return Err(InputError::Topology(format!(
                "the topology would copy the job file's options {copies} times ({} disks); expected at most {MAX_OPTION_COPIES}: fewer options in the job file, or fewer disks or jobs per disk",
                self.disks
                    .map_or("the file's".to_string(), |d| d.to_string())
            )));
        }
        let Some(disks) = self.disks else {
            let mut out = jobs.to_vec();
            if let Some(n) = self.jobs_per_disk {
                for j in &mut out {
                    j.numjobs = n * j.filenames.len().max(1) as u32;
                }
            }
            return Ok(out);
        };
        if disks == 0 {
            return Err(InputError::Topology("--disks must be at least 1".into()));
        }
        let group = platform
            .devices
            .first()
            .ok_or_else(|| InputError::Topology("the platform has no devices".into()))?;
        let ncpu = platform.cpu.count;
        let mut out = Vec::new();
        for template in jobs {
            let per_disk = self.clones_per_disk(template);
            for d in 0..disks {
                for k in 0..per_disk {
                    let mut j = template.clone();
                    j.name = format!("{}.{}{}.{}", template.name, group.prefix, d, k);
                    j.filenames = vec![format!("/dev/{}{}n1", group.prefix, d)];
                    j.numjobs = 1;
                    let slot = k as usize * disks + d;
                    let cpu = match &template.cpus_allowed {
                        Some(set) if !set.is_empty() => set[slot % set.len()],
                        _ => slot % ncpu,
                    };
                    j.cpus_allowed = Some(vec![cpu]);
                    j.cpus_allowed_policy = CpusPolicy::Split;
                    out.push(j);
                }
            }
        }
        Ok(out)
    }
}

/// Distinct devices the jobs use (for per-disk metrics): `/dev/nvme0n1`, `nvme0n1` and
/// `nvme0` count as one.
pub fn disks_used(jobs: &[JobSpec]) -> usize {
    let mut names: Vec<String> = jobs
        .iter()
        .flat_map(|j| j.filenames.iter())
        .map(|f| {
            let base = f.strip_prefix("/dev/").unwrap_or(f);
            match base.rfind('n') {
                Some(i)
                    if i > 0
                        && base[i + 1..].chars().all(|c| c.is_ascii_digit())
                        && i + 1 < base.len() =>
                {
                    base[..i].to_string()
                }
                _ => base.to_string(),
            }
        })
        .collect();
    names.sort();
    names.dedup();
    names.len()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    const PLATFORM: &str = include_str!("../../../platforms/example.toml");

    fn jobs(text: &str) -> Vec<JobSpec> {
        irqlab_fio::parse_str(text, Path::new("t.fio")).unwrap()
    }

    #[test]
    fn disks_expand_one_job_per_disk_on_distinct_cpus() {
        let p = Platform::from_toml(PLATFORM, "example", &[]).unwrap();
        let js = jobs(
            "[r]\nioengine=libaio\nrw=randread\nbs=4k\niodepth=8\nfilename=/dev/nvme0n1\nruntime=1ms\n",
        );
        let t = Topology {
            disks: Some(3),
            jobs_per_disk: Some(2),
            ..Default::default()
        };
        let out = t.apply_jobs(&js, &p).unwrap();
        assert_eq!(out.len(), 6);
        let mut cpus: Vec<usize> = out
            .iter()
            .map(|j| j.cpus_allowed.as_ref().unwrap()[0])
            .collect();
        cpus.sort();
        cpus.dedup();
        assert_eq!(cpus.len(), 6, "every clone gets its own CPU");
        assert_eq!(disks_used(&out), 3);
        assert_eq!(out[2].filenames, vec!["/dev/nvme1n1".to_string()]);
    }

    #[test]
    fn more_disks_than_the_platform_has_raise_its_count() {
        let p = Platform::from_toml(PLATFORM, "example", &[]).unwrap();
        let t = Topology {
            disks: Some(8),
            ..Default::default()
        };
        assert_eq!(t.platform_sets(&p), vec!["devices.0.count=8".to_string()]);
        let t = Topology {
            disks: Some(2),
            ..Default::default()
        };
        assert!(t.platform_sets(&p).is_empty());
    }

    #[test]
    fn command_line_knobs_become_a_topology() {
        use clap::Parser;
        #[derive(Parser)]
        struct Cli {
            #[command(flatten)]
            t: TopologyArgs,
        }
        let cli = Cli::try_parse_from([
            "x",
            "--disks",
            "4",
            "--jobs-per-disk",
            "2",
            "--vectors-per-cpu",
            "1",
        ])
        .unwrap();
        assert_eq!(
            cli.t.topology(),
            Topology {
                disks: Some(4),
                jobs_per_disk: Some(2),
                vectors_per_cpu: Some(1),
            }
        );
        assert!(Cli::try_parse_from(["x", "--disks", "0"]).is_err());
        assert!(Cli::try_parse_from(["x", "--disks", "4097"]).is_err());
        let p = Platform::from_toml(PLATFORM, "example", &[]).unwrap();
        let sets = cli.t.topology().platform_sets(&p);
        assert!(sets.contains(&"devices.0.vectors_per_cpu=1".to_string()));
        assert!(
            p.with_overrides(&sets).is_ok(),
            "the platform accepts the knob"
        );
    }

    #[test]
    fn jobs_are_counted_before_they_are_expanded() {
        let p = Platform::from_toml(PLATFORM, "example", &[]).unwrap();
        let js = jobs("[r]\nfilename=/dev/nvme0n1\nruntime=1ms\n");
        let t = Topology {
            disks: Some(4096),
            jobs_per_disk: Some(4096),
            ..Default::default()
        };
        let e = t.apply_jobs(&js, &p).unwrap_err().to_string();
        assert!(e.contains("16777216 jobs") && e.contains("4096"), "{e}");
        let t = Topology {
            disks: Some(1 << 40),
            ..Default::default()
        };
        assert!(
            t.check()
                .unwrap_err()
                .to_string()
                .contains("topology.disks")
        );
        // A long job file expanded over many disks is refused before it is copied.
        let long = format!(
            "[global]\n{}[r]\nfilename=/dev/nvme0n1\nruntime=1ms\n",
            "ioengine=libaio\n".repeat(2000)
        );
        let t = Topology {
            disks: Some(4095),
            ..Default::default()
        };
        let e = t.apply_jobs(&jobs(&long), &p).unwrap_err().to_string();
        assert!(e.contains("copy the job file's options"), "{e}");
    }

    #[test]
    fn disks_used_counts_namespaces_of_one_device_once() {
        let js = jobs("[a]\nfilename=/dev/nvme0n1:nvme0:nvme1n1\nruntime=1ms\n");
        assert_eq!(disks_used(&js), 2);
    }
}
