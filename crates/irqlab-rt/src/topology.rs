//! Where everything runs: job clones on CPU threads, `filename=` names on emulated
//! controllers, and one NVMe queue pair (with its MSI-X vector) per CPU thread and
//! controller, as nvme-pci gives each CPU its own queue when vectors suffice.

use crate::error::RtError;
use crate::job::JobPlan;
use irqlab_core::posted::FIRST_EXTERNAL_VECTOR;
use irqlab_fio::{JobSpec, RunPlan};

/// One emulated controller.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ControllerPlan {
    /// The `filename=` it stands for.
    pub filename: String,
    /// nvme instance number: `/dev/nvme3n1` is 3; other names follow the highest one.
    pub instance: u32,
}

/// One queue pair between a CPU thread and a controller.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QueuePlan {
    pub controller: usize,
    /// NVMe queue id (1-based; 0 is the admin queue). Interrupt queues come first, then
    /// the poll queues (nvme-pci's HCTX_TYPE_POLL), as the kernel orders them.
    pub qid: u16,
    /// The vector on its CPU thread (posted PIR bit and IDT entry); poll queues have one
    /// too, for naming only.
    pub vector: u8,
    /// Created without NVME_CQ_IRQ_ENABLED: completions are found by polling.
    pub polled: bool,
    /// Entries per ring: more than the I/Os its jobs keep in flight.
    pub q_depth: u32,
}

impl QueuePlan {
    /// The kernel's vector name, "nvme0q1".
    pub fn name(&self, ctrl: &ControllerPlan) -> String {
        format!("nvme{}q{}", ctrl.instance, self.qid)
    }
}

/// One job clone placed on a CPU thread.
#[derive(Clone, Debug)]
pub struct ClonePlan {
    /// Its index in the run's [`RunPlan`] (fio's thread_number - 1).
    pub instance: usize,
    pub clone: u32,
    pub plan: JobPlan,
}

/// One CPU thread's share of the run.
#[derive(Clone, Debug, Default)]
pub struct CpuPlan {
    pub clones: Vec<ClonePlan>,
    pub queues: Vec<QueuePlan>,
}

impl CpuPlan {
    /// The queue serving `controller` for a clone that polls or not.
    pub fn queue_index(&self, controller: usize, polled: bool) -> Option<usize> {
        self.queues
            .iter()
            .position(|q| q.controller == controller && q.polled == polled)
    }
}

/// The whole placement.
#[derive(Clone, Debug, Default)]
pub struct Topology {
    /// The job file expanded: every clone with its files, CPUs and reporting group.
    pub plan: RunPlan,
    pub controllers: Vec<ControllerPlan>,
    pub cpus: Vec<CpuPlan>,
}

/// The nvme instance in a block-device name (`/dev/nvme3n1`, `nvme3n1p2`, `/dev/nvme3`).
fn nvme_instance(name: &str) -> Option<u32> {
    let base = name.rsplit('/').next()?;
    let rest = base.strip_prefix("nvme")?;
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    let tail = &rest[digits.len()..];
    if digits.is_empty() || !(tail.is_empty() || tail.starts_with('n')) {
        return None;
    }
    digits.parse().ok()
}

/// Whether a block-device name is a virtio-blk disk's (`/dev/vda`, `vdb1`, `vdaa`), which
/// virtio_blk names "vd" and letters (virtblk_name_format).
fn virtio_disk(name: &str) -> bool {
    let base = name.rsplit('/').next().unwrap_or(name);
    let Some(rest) = base.strip_prefix("vd") else {
        return false;
    };
    let letters = rest.chars().take_while(char::is_ascii_lowercase).count();
    letters > 0 && rest[letters..].chars().all(|c| c.is_ascii_digit())
}

/// The files clone `i` of the plan opens: fio names an unnamed job's file after the job.
fn files_of<'a>(jobs: &'a [JobSpec], i: &'a irqlab_fio::plan::Instance) -> &'a [String] {
    let job = &jobs[i.spec];
    if job.filenames.is_empty() {
        std::slice::from_ref(&job.name)
    } else {
        &i.files
    }
}

/// Maps every distinct `filename=` to a controller in first-seen order.
fn controllers_of(jobs: &[JobSpec], plan: &RunPlan) -> Vec<ControllerPlan> {
    let mut names: Vec<String> = Vec::new();
    for i in &plan.instances {
        for f in files_of(jobs, i) {
            if !names.contains(f) {
                names.push(f.clone());
            }
        }
    }
    let mut next = names
        .iter()
        .filter_map(|n| nvme_instance(n))
        .max()
        .map_or(0, |m| m + 1);
    let mut out: Vec<ControllerPlan> = Vec::new();
    for filename in names {
        let instance = match nvme_instance(&filename) {
            Some(i) if !out.iter().any(|c| c.instance == i) => i,
            _ => {
                next += 1;
                next - 1
            }
        };
        out.push(ControllerPlan { filename, instance });
    }
    out
}

/// The emulated controllers a run of `jobs` has, by name (`nvme0` up to the highest
/// instance it uses), for mapping the jobs' files onto them before the run.
pub fn controller_names(jobs: &[JobSpec]) -> Vec<String> {
    let n = controllers_of(jobs, &RunPlan::of(jobs))
        .iter()
        .map(|c| c.instance + 1)
        .max()
        .unwrap_or(0);
    (0..n).map(|i| format!("nvme{i}")).collect()
}

/// Inputs of [`Topology::build`] besides the jobs.
#[derive(Clone, Copy, Debug)]
pub struct Placement {
    pub cpu_threads: usize,
    /// Delivery is polled (or hybrid-polled) for every queue.
    pub all_polled: bool,
    /// Polling jobs sleep first (io_uring hybrid IOPOLL).
    pub hybrid: bool,
    /// Bytes each controller's namespace (or the real file) spans.
    pub span: u64,
    /// Device vectors end below this on every CPU thread (FIRST_SYSTEM_VECTOR, or a
    /// notification vector below it: `DeliveryPath::first_system_vector`).
    pub first_system_vector: u8,
}

impl Topology {
    /// Places `numjobs` clones of every job round robin over the CPU threads (a clone with
    /// `cpus_allowed` goes to CPU thread `first allowed CPU % cpu_threads`), and gives each
    /// CPU thread a queue pair per controller its clones use.
    pub fn build(jobs: &[JobSpec], p: Placement) -> Result<Topology, RtError> {
        if p.cpu_threads == 0 {
            return Err(RtError::Topology(
                "at least one CPU thread is needed".into(),
            ));
        }
        let plan = RunPlan::of(jobs);
        let controllers = controllers_of(jobs, &plan);
        if let Some(c) = controllers.iter().find(|c| virtio_disk(&c.filename)) {
            return Err(RtError::Topology(format!(
                "filename={}: a virtio-blk disk; the runtime emulates NVMe controllers only (its virtqueues, kicks and injected interrupts belong to a guest platform): simulate it with `irqlab run --platform firecracker-epyc-vm` (docs/runtime.md)",
                c.filename
            )));
        }
        let ctrl_of = |f: &str| controllers.iter().position(|c| c.filename == f);
        let mut cpus = vec![CpuPlan::default(); p.cpu_threads];
        let mut rr = 0usize;
        for (instance, i) in plan.instances.iter().enumerate() {
            let spec = &jobs[i.spec];
            let files: Vec<usize> = files_of(jobs, i)
                .iter()
                .filter_map(|f| ctrl_of(f))
                .collect();
            let cpu = match &i.cpus {
                Some(set) if !set.is_empty() => set[0] % p.cpu_threads,
                _ => {
                    rr += 1;
                    (rr - 1) % p.cpu_threads
                }
            };
            let job = JobPlan::new(i.spec, spec, files, p.span, p.all_polled, p.hybrid);
            cpus[cpu].clones.push(ClonePlan {
                instance,
                clone: i.clone,
                plan: job,
            });
        }
        let n_cpus = p.cpu_threads as u16;
        for (c, cpu) in cpus.iter_mut().enumerate() {
            for polled in [false, true] {
                for (ctrl, _) in controllers.iter().enumerate() {
                    let depth: u32 = cpu
                        .clones
                        .iter()
                        .filter(|cl| {
                            cl.plan.polled == polled && cl.plan.controllers.contains(&ctrl)
                        })
                        .map(|cl| cl.plan.iodepth)
                        .sum();
                    if depth == 0 {
                        continue;
                    }
                    let index = cpu.queues.len();
                    let vector = usize::from(FIRST_EXTERNAL_VECTOR) + index;
                    if vector >= usize::from(p.first_system_vector) {
                        return Err(RtError::Topology(format!(
                            "CPU thread {c} would need more than {} vectors; use more CPU threads",
                            p.first_system_vector - FIRST_EXTERNAL_VECTOR
                        )));
                    }
                    if depth >= 65536 {
                        return Err(RtError::Topology(format!(
                            "CPU thread {c} keeps {depth} I/Os in flight on one controller; \
                             an NVMe queue holds at most 65535"
                        )));
                    }
                    let qid = 1 + c as u16 + if polled { n_cpus } else { 0 };
                    cpu.queues.push(QueuePlan {
                        controller: ctrl,
                        qid,
                        vector: vector as u8,
                        polled,
                        q_depth: (depth + 1).next_power_of_two().max(2),
                    });
                }
            }
        }
        Ok(Topology {
            plan,
            controllers,
            cpus,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nvme_names_keep_their_instance_and_others_follow() {
        assert_eq!(nvme_instance("/dev/nvme0n1"), Some(0));
        assert_eq!(nvme_instance("/dev/nvme12n1p3"), Some(12));
        assert_eq!(nvme_instance("nvme3"), Some(3));
        assert_eq!(nvme_instance("/dev/sda"), None);
        assert_eq!(nvme_instance("/dev/nvmeXn1"), None);
        assert!(virtio_disk("/dev/vda") && virtio_disk("vdb1") && virtio_disk("/dev/vdaa"));
        assert!(!virtio_disk("/dev/vd") && !virtio_disk("/tmp/vdata.bin") && !virtio_disk("vdA"));
    }

    fn jobs(text: &str) -> Vec<JobSpec> {
        irqlab_fio::parse_str(text, std::path::Path::new("t.fio")).unwrap()
    }

    #[test]
    fn filenames_map_to_controllers_and_each_cpu_gets_its_queue() {
        let j = jobs(
            "[global]\nioengine=libaio\niodepth=16\n[a]\nfilename=/dev/nvme2n1:/tmp/f\n\
             [b]\nfilename=/dev/nvme0n1\nnumjobs=3\n",
        );
        let p = Placement {
            cpu_threads: 2,
            all_polled: false,
            hybrid: false,
            span: 1 << 20,
            first_system_vector: irqlab_core::posted::FIRST_SYSTEM_VECTOR,
        };
        let t = Topology::build(&j, p).unwrap();
        let inst: Vec<(&str, u32)> = t
            .controllers
            .iter()
            .map(|c| (c.filename.as_str(), c.instance))
            .collect();
        assert_eq!(
            inst,
            [("/dev/nvme2n1", 2), ("/tmp/f", 3), ("/dev/nvme0n1", 0)]
        );
        // Round robin: a, b0 -> cpu 0/1; b1 -> 0; b2 -> 1.
        assert_eq!(t.cpus[0].clones.len(), 2);
        assert_eq!(t.cpus[1].clones.len(), 2);
        let q = &t.cpus[1].queues;
        assert!(q.iter().all(|q| q.qid == 2 && !q.polled));
        // Two clones of 16 on nvme0 from CPU 1: 33 entries round up to 64.
        let nvme0 = q.iter().find(|q| q.controller == 2).unwrap();
        assert_eq!(nvme0.q_depth, 64);
        assert_eq!(nvme0.name(&t.controllers[2]), "nvme0q2");
    }

    #[test]
    fn cpus_allowed_places_clones_and_hipri_gets_poll_queues() {
        let j = jobs(
            "[a]\nioengine=io_uring\nhipri\nfilename=/dev/nvme0n1\ncpus_allowed=1,3\n\
             cpus_allowed_policy=split\nnumjobs=2\n",
        );
        let p = Placement {
            cpu_threads: 3,
            all_polled: false,
            hybrid: false,
            span: 1 << 20,
            first_system_vector: irqlab_core::posted::FIRST_SYSTEM_VECTOR,
        };
        let t = Topology::build(&j, p).unwrap();
        // Clone 0 -> CPU 1 -> thread 1; clone 1 -> CPU 3 -> thread 0.
        assert_eq!(t.cpus[1].clones[0].clone, 0);
        assert_eq!(t.cpus[0].clones[0].clone, 1);
        assert!(t.cpus[2].queues.is_empty());
        let q = &t.cpus[1].queues[0];
        assert!(q.polled);
        assert_eq!(
            q.qid,
            3 + 1 + 1,
            "poll queues follow the 3 interrupt queues"
        );
        assert_eq!(t.cpus[1].queue_index(0, true), Some(0));
        assert!(
            Topology::build(
                &j,
                Placement {
                    cpu_threads: 0,
                    ..p
                }
            )
            .is_err()
        );
    }
}
