//! A job file expanded once: every job fio starts (each section's numjobs clones, in
//! fio's thread order) with its files, CPUs, reporting group, stonewall wave and when it
//! starts. Both engines, the budget, the reports and the observers read this plan
//! instead of working the clones, groups and waves out again.

use crate::JobSpec;
use std::sync::Arc;

/// One job fio runs: clone `clone` of section `spec`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Instance {
    /// The section it is a clone of (index into the job file's jobs).
    pub spec: usize,
    /// Its clone number, 0 to numjobs - 1 (fio's `$jobnum`).
    pub clone: u32,
    /// The files it opens (fio's add_file per clone; empty when the section names none).
    /// Clones that open the same files share one list (up to 4096 names x 4096 clones).
    pub files: Arc<[String]>,
    /// The CPUs it may run on (cpus_allowed under cpus_allowed_policy); None: any.
    pub cpus: Option<Vec<usize>>,
}

/// When a section's clones start.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Start {
    /// With its stonewall wave: wave 0 at its startdelay, a later wave when every job
    /// of the wave before has finished (backend.c run_threads).
    Wave,
    /// `wait_for`: when every clone of section `spec` (one above it) has finished.
    After(usize),
    /// `wait_for` names no single section above it (the parser refuses that; a spec
    /// built by hand may still have it).
    Unresolved,
}

/// What a section's clones share.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SectionPlan {
    /// init.c add_job: its reporting group (stonewall and new_group start one).
    pub group: u32,
    /// backend.c run_threads: its stonewall wave.
    pub wave: u32,
    pub start: Start,
    /// Its clones: `instances[first..first + count]`.
    pub first: usize,
    pub count: usize,
}

/// The expanded job file.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RunPlan {
    /// Every job in fio's order (thread_number - 1).
    pub instances: Vec<Instance>,
    /// One entry per section, in file order.
    pub sections: Vec<SectionPlan>,
    /// How many stonewall waves run one after the other (at least 1).
    pub waves: u32,
    /// Where the measured window opens: the longest ramp_time of the first wave.
    pub window_start_ns: u64,
    /// The longest ramp_time of any section.
    pub longest_ramp_ns: u64,
    /// The longest startdelay-free run (ramp_time + runtime) when every section is
    /// time-bounded, else None: size-bounded jobs have no known end.
    pub time_bound_ns: Option<u64>,
}

impl RunPlan {
    /// Expands `specs`: each section's clones (at least one), its group, wave and start.
    pub fn of(specs: &[JobSpec]) -> RunPlan {
        let groups = reporting_groups(specs);
        let waves = stonewall_waves(specs);
        let mut instances = Vec::new();
        let mut sections = Vec::with_capacity(specs.len());
        for (si, s) in specs.iter().enumerate() {
            let first = instances.len();
            let shared: Arc<[String]> = s.filenames.as_slice().into();
            for k in 0..s.numjobs.max(1) {
                let files = match s.clone_filenames.get(k as usize) {
                    Some(own) => own.as_slice().into(),
                    None => shared.clone(),
                };
                instances.push(Instance {
                    spec: si,
                    clone: k,
                    files,
                    cpus: s.clone_cpus(k),
                });
            }
            let start = match &s.controls.wait_for {
                None => Start::Wave,
                Some(name) => specs[..si]
                    .iter()
                    .position(|o| o.name == *name)
                    .map_or(Start::Unresolved, Start::After),
            };
            sections.push(SectionPlan {
                group: groups[si],
                wave: waves[si],
                start,
                first,
                count: instances.len() - first,
            });
        }
        let window_start_ns = specs
            .iter()
            .zip(&waves)
            .filter(|(_, w)| **w == 0)
            .map(|(s, _)| s.ramp_time_ns)
            .max()
            .unwrap_or(0);
        RunPlan {
            instances,
            sections,
            waves: waves.last().map_or(1, |&w| w + 1),
            window_start_ns,
            longest_ramp_ns: specs.iter().map(|s| s.ramp_time_ns).max().unwrap_or(0),
            time_bound_ns: specs
                .iter()
                .map(JobSpec::total_time_ns)
                .try_fold(0u64, |acc, t| t.map(|t| acc.max(t))),
        }
    }

    /// The section instance `i` is a clone of.
    pub fn section_of(&self, i: usize) -> &SectionPlan {
        &self.sections[self.instances[i].spec]
    }

    /// The instances (indices) of section `spec`.
    pub fn clones_of(&self, spec: usize) -> std::ops::Range<usize> {
        let s = &self.sections[spec];
        s.first..s.first + s.count
    }
}

/// init.c add_job: each job's reporting group. A job with `stonewall` or `new_group`
/// starts a new group when the current one has jobs (clones share their job's group).
fn reporting_groups(jobs: &[JobSpec]) -> Vec<u32> {
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
fn stonewall_waves(jobs: &[JobSpec]) -> Vec<u32> {
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn plan(text: &str) -> RunPlan {
        RunPlan::of(&crate::parse_str(text, Path::new("g.fio")).unwrap())
    }

    #[test]
    fn groups_and_waves_follow_fio() {
        let p = plan(
            "[global]\nfilename=f\n[a]\nnumjobs=2\n[b]\nnew_group\n[c]\n[d]\nstonewall\n[e]\n",
        );
        let of = |f: fn(&SectionPlan) -> u32| p.sections.iter().map(f).collect::<Vec<_>>();
        assert_eq!(of(|s| s.group), vec![0, 1, 1, 2, 2]);
        assert_eq!(of(|s| s.wave), vec![0, 0, 0, 1, 1]);
        assert_eq!(p.waves, 2);
        assert_eq!(p.instances.len(), 6, "a's two clones, then one each");
        assert_eq!(p.clones_of(1), 2..3);
        assert_eq!(p.section_of(1).group, 0, "a's second clone is in a's group");
        let first = plan("[a]\nfilename=f\nstonewall\nnew_group\n");
        assert_eq!((first.sections[0].group, first.waves), (0, 1));
    }

    #[test]
    fn clones_carry_their_files_cpus_and_start() {
        let p = plan(
            "[a]\nfilename=/dev/nvme0n1\nramp_time=2ms\nruntime=10ms\n\
             [b]\nnumjobs=3\nfilename_format=f.$jobnum\ncpus_allowed=4-5\n\
             cpus_allowed_policy=split\nwait_for=a\nsize=1m\n\
             [c]\nstonewall\nfilename=x\nramp_time=5ms\nruntime=1ms\n",
        );
        let b: Vec<&Instance> = p.instances[p.clones_of(1)].iter().collect();
        assert_eq!(*b[2].files, ["f.2".to_string()]);
        let a = &p.instances[0];
        assert_eq!(*a.files, ["/dev/nvme0n1".to_string()]);
        assert_eq!(b[2].clone, 2);
        assert_eq!(
            b.iter().map(|i| i.cpus.clone()).collect::<Vec<_>>(),
            vec![Some(vec![4]), Some(vec![5]), Some(vec![4])]
        );
        assert_eq!(p.sections[1].start, Start::After(0));
        assert_eq!(p.sections[0].start, Start::Wave);
        // The window opens after wave 0's ramp, not c's (it starts later).
        assert_eq!(
            (p.window_start_ns, p.longest_ramp_ns),
            (2_000_000, 5_000_000)
        );
        assert_eq!(p.time_bound_ns, None, "b is bounded by size");
        // Up to 4096 names x 4096 clones: the clones share one list, not a copy each.
        let names: Vec<String> = (0..512).map(|i| format!("/dev/nvme{i}n1")).collect();
        let wide = plan(&format!("[w]\nnumjobs=512\nfilename={}\n", names.join(":")));
        assert_eq!(wide.instances.len(), 512);
        assert!(
            wide.instances
                .iter()
                .all(|i| Arc::ptr_eq(&i.files, &wide.instances[0].files))
        );
        assert!(
            !Arc::ptr_eq(&b[0].files, &b[1].files),
            "b's clones name their own"
        );
    }
}
