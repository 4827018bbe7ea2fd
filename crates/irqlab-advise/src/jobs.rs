//! The user's own job on the platform, shaped as every command shapes it (irqlab-inputs'
//! `shape_jobs`, issue 23): its files mapped onto the platform's devices (`--map` rules,
//! else in order of first appearance), every job capped at the window; and the ramp
//! held to a fifth of the window, so that each candidate simulates mostly measurement.

use crate::AdviseError;
use irqlab_fio::JobSpec;
use irqlab_inputs::{MapRule, RunShape};
use irqlab_sim::Platform;

/// The jobs as they run, and what was done to them (one note each).
pub fn shape(
    jobs: Vec<JobSpec>,
    p: &Platform,
    maps: &[MapRule],
    window_ns: u64,
) -> Result<(Vec<JobSpec>, Vec<String>), AdviseError> {
    let devices = irqlab_sim::device_names(p);
    let shape = RunShape {
        maps: maps.to_vec(),
        max_runtime_ns: Some(window_ns),
    };
    let shaped =
        irqlab_inputs::shape_jobs(jobs, &devices, &shape, p.cpu.count, "the platform's CPUs")
            .map_err(|e| AdviseError::Job(e.to_string()))?;
    let mut notes: Vec<String> = shaped.notes.into_iter().map(|(_, n)| n).collect();
    let mut jobs = shaped.jobs;
    let mut ramps = 0;
    for j in &mut jobs {
        if j.ramp_time_ns > window_ns / 5 {
            j.ramp_time_ns = window_ns / 5;
            ramps += 1;
        }
    }
    if ramps > 0 {
        notes.push(format!(
            "ramp_time held to {:.1} ms (a fifth of the window) in {ramps} job(s)",
            window_ns as f64 / 5e6
        ));
    }
    Ok((jobs, notes))
}

/// The device groups (indices into `p.devices`) the jobs' files name.
pub fn groups_used(p: &Platform, jobs: &[JobSpec]) -> Vec<usize> {
    let mut group_of = Vec::new();
    for (g, d) in p.devices.iter().enumerate() {
        group_of.extend(std::iter::repeat_n(g, d.count));
    }
    let names = irqlab_sim::device_names(p);
    let mut used: Vec<usize> = jobs
        .iter()
        .flat_map(|j| j.filenames.iter())
        .filter_map(|f| irqlab_sim::device_of(f, &names))
        .filter_map(|i| group_of.get(i).copied())
        .collect();
    used.sort_unstable();
    used.dedup();
    used
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn files_map_onto_devices_and_runs_are_capped() {
        let jobs = irqlab_fio::parse_str(
            "[a]\nfilename=/data/x\nruntime=30\nramp_time=3\ntime_based\n[b]\nfilename=/data/y\nsize=1g\n",
            Path::new("j.fio"),
        )
        .unwrap();
        let p = irqlab_sim::Platform::load(
            &Path::new(env!("CARGO_MANIFEST_DIR")).join("../../platforms/example.toml"),
            &[],
        )
        .unwrap();
        let (jobs, notes) = shape(jobs, &p, &[], 10_000_000).unwrap();
        assert!(
            notes.iter().any(|n| n.contains("/data/x -> nvme0")),
            "{notes:?}"
        );
        assert!(jobs.iter().all(|j| j.runtime_ns == Some(10_000_000)));
        assert!(jobs.iter().all(|j| j.ramp_time_ns <= 2_000_000));
        assert_eq!(groups_used(&p, &jobs), vec![0]);
        let bad = MapRule::parse("/data/*=nvme9").unwrap();
        let jobs = irqlab_fio::parse_str("[a]\nfilename=/data/x\n", Path::new("j.fio")).unwrap();
        assert!(
            shape(jobs, &p, &[bad], 1_000_000)
                .unwrap_err()
                .to_string()
                .contains("nvme9")
        );
    }
}
