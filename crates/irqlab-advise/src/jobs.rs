//! The user's own job on the platform: its files mapped onto the platform's devices,
//! and every job's runtime capped so that each candidate simulates a short window.
//!
//! The mapping is issue 23's default rule (files the platform does not name take its
//! devices in order of first appearance); its library function (irqlab-inputs'
//! `shape_jobs`) replaces [`map_files`] once it is in this build.

use irqlab_fio::JobSpec;
use irqlab_sim::Platform;

/// The platform's device names in order: prefix0, prefix1, ... per prefix (the
/// simulator's naming).
pub fn device_names(p: &Platform) -> Vec<String> {
    let mut seen: Vec<(String, usize)> = Vec::new();
    let mut names = Vec::new();
    for g in &p.devices {
        for _ in 0..g.count {
            let n = match seen.iter_mut().find(|(pre, _)| *pre == g.prefix) {
                Some((_, n)) => {
                    *n += 1;
                    *n
                }
                None => {
                    seen.push((g.prefix.clone(), 0));
                    0
                }
            };
            names.push(format!("{}{n}", g.prefix));
        }
    }
    names
}

/// The device groups (indices into `p.devices`) the jobs' files name.
pub fn groups_used(p: &Platform, jobs: &[JobSpec]) -> Vec<usize> {
    let mut group_of = Vec::new();
    for (g, d) in p.devices.iter().enumerate() {
        group_of.extend(std::iter::repeat_n(g, d.count));
    }
    let names = device_names(p);
    let mut used: Vec<usize> = jobs
        .iter()
        .flat_map(|j| j.filenames.iter())
        .filter_map(|f| names.iter().position(|d| names_device(f, d)))
        .map(|i| group_of[i])
        .collect();
    used.sort_unstable();
    used.dedup();
    used
}

/// Whether `file` names device `dev` the way the simulator reads it (`/dev/nvme0n1`,
/// `nvme0n1`, `nvme0`).
fn names_device(file: &str, dev: &str) -> bool {
    let base = file.strip_prefix("/dev/").unwrap_or(file);
    base == dev
        || base
            .strip_prefix(dev)
            .and_then(|r| r.strip_prefix('n'))
            .is_some_and(|r| !r.is_empty() && r.chars().all(|c| c.is_ascii_digit()))
}

/// Maps every file the platform does not name onto its devices, in order of first
/// appearance; returns the notes `FILE -> DEVICE`.
pub fn map_files(jobs: &mut [JobSpec], devices: &[String]) -> Vec<String> {
    let mut mapped: Vec<(String, String)> = Vec::new();
    let mut next = 0usize;
    for j in jobs.iter_mut() {
        for f in &mut j.filenames {
            if devices.iter().any(|d| names_device(f, d)) || devices.is_empty() {
                continue;
            }
            let to = match mapped.iter().find(|(from, _)| from == f) {
                Some((_, to)) => to.clone(),
                None => {
                    let to = format!("/dev/{}", devices[next % devices.len()]);
                    next += 1;
                    mapped.push((f.clone(), to.clone()));
                    to
                }
            };
            *f = to;
        }
    }
    mapped
        .into_iter()
        .map(|(a, b)| format!("{a} -> {b}"))
        .collect()
}

/// Caps every job's runtime at `cap_ns` (ramp at a fifth of it) and makes it time-bound;
/// returns a note when it changed anything.
pub fn cap_runtime(jobs: &mut [JobSpec], cap_ns: u64) -> Option<String> {
    let mut changed = false;
    for j in jobs.iter_mut() {
        let ramp = j.ramp_time_ns.min(cap_ns / 5);
        let run = j.runtime_ns.map_or(cap_ns, |r| r.min(cap_ns));
        if !j.time_based || j.runtime_ns != Some(run) || j.ramp_time_ns != ramp {
            changed = true;
        }
        j.ramp_time_ns = ramp;
        j.runtime_ns = Some(run);
        j.time_based = true;
        j.size = None;
        j.number_ios = None;
    }
    changed.then(|| {
        format!(
            "every job runs {:.1} ms of simulated time (time_based; ramp at most a fifth): a window, not the job's whole length",
            cap_ns as f64 / 1e6
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    #[test]
    fn files_take_devices_in_order_of_first_appearance_and_runs_are_capped() {
        let mut jobs = irqlab_fio::parse_str(
            "[a]\nfilename=/data/x\nruntime=30\ntime_based\n[b]\nfilename=/data/y:/data/x:/dev/nvme1n1\nsize=1g\n",
            Path::new("j.fio"),
        )
        .unwrap();
        let devs = vec!["nvme0".to_string(), "nvme1".to_string()];
        let notes = map_files(&mut jobs, &devs);
        assert_eq!(
            notes,
            vec!["/data/x -> /dev/nvme0", "/data/y -> /dev/nvme1"]
        );
        assert_eq!(
            jobs[1].filenames,
            vec!["/dev/nvme1", "/dev/nvme0", "/dev/nvme1n1"]
        );
        assert!(cap_runtime(&mut jobs, 10_000_000).is_some());
        assert!(
            jobs.iter()
                .all(|j| j.time_based && j.runtime_ns == Some(10_000_000))
        );
        assert!(names_device("nvme3n1", "nvme3") && !names_device("nvme31", "nvme3"));
    }
}
