//! Builds the model from a platform, the jobs and a policy: names devices, maps CPUs to
//! queues (blk_mq_map_queues: contiguous CPU ranges per queue), gives each queue's MSI-X
//! vector an IDT vector on its CPU (managed affinity: the first CPU of the range), creates
//! job threads, ksoftirqd and irq threads, and checks every request against the machine.

use super::controller::Device;
use super::fio_job::{DiskAcct, FioJob, FioRun};
use super::ids::{CpuId, DeviceId, JobId, PortId, QueueId, ThreadId, VectorId};
use super::job_life::JobShape;
use super::queue::Queue;
use super::state::*;
use super::vector::Vector;
use crate::engine::EventQueue;
use crate::observer::Observer;
use crate::platform::{ManagedAffinity, Platform};
use crate::{SimError, SimOptions};
use irqlab_core::delivery::{DeliveryPath, RemappedTarget};
use irqlab_core::gsim::{GsimCpu, GsimGlobal, GsimParams};
use irqlab_core::irq_poll::{IrqPollCpu, IrqPollUntil};
use irqlab_core::moderator::Moderator;
use irqlab_core::nvme::{CoalesceParams, DeviceIrq, MsiRule, MsixVector, QueuePair};
use irqlab_core::softirq::{SoftirqConfig, SoftirqCpu};
use irqlab_core::{Delivery, HandlerStyle, ModeratorKind, Policy};
use irqlab_fio::plan::{Instance, RunPlan};
use irqlab_fio::{IoEngine, JobSpec};

use super::budget::MAX_SIMULATED_NS;
/// The largest I/O the model accepts: bigger ones would be split by the block layer.
const MAX_BS: u64 = 16 << 20;

/// The device names of a platform, in order: prefix0, prefix1, ... per prefix.
pub(crate) fn device_names(p: &Platform) -> Vec<String> {
    let mut names = Vec::new();
    let mut seen: Vec<(String, usize)> = Vec::new();
    for g in &p.devices {
        let next = match seen.iter_mut().find(|(pre, _)| *pre == g.prefix) {
            Some((_, n)) => n,
            None => {
                seen.push((g.prefix.clone(), 0));
                &mut seen.last_mut().expect("just pushed").1
            }
        };
        for _ in 0..g.count {
            // virtio_blk names its disks vda, vdb, ... (virtblk_name_format).
            names.push(if g.kind == crate::platform::DeviceKind::VirtioBlk {
                format!("{}{}", g.prefix, super::virtio::disk_letters(*next))
            } else {
                format!("{}{}", g.prefix, *next)
            });
            *next += 1;
        }
    }
    names
}

/// `/dev/nvme0n1`, `nvme0n1` and `nvme0` all name device `nvme0`.
pub(crate) fn resolve_file(name: &str, names: &[String]) -> Option<usize> {
    let base = name.strip_prefix("/dev/").unwrap_or(name);
    names.iter().position(|d| {
        base == d
            || base
                .strip_prefix(d.as_str())
                .and_then(|rest| rest.strip_prefix('n'))
                .is_some_and(|ns| !ns.is_empty() && ns.chars().all(|c| c.is_ascii_digit()))
    })
}

/// An error about the job's option `names` (the last one written), at its line; at the
/// section header when the file sets none of them.
fn option_err(spec: &JobSpec, names: &[&str], msg: impl Into<String>) -> SimError {
    let (file, line) = spec
        .option_at(names)
        .unwrap_or((spec.file.as_path(), spec.line));
    SimError::Job {
        file: file.display().to_string(),
        line,
        job: spec.name.clone(),
        msg: msg.into(),
    }
}

/// The options that name a job's files.
const FILE_OPTIONS: &[&str] = &[
    "filename",
    "directory",
    "filename_format",
    "nrfiles",
    "libblkio_path",
];

fn costs(p: &Platform) -> Costs {
    let c = &p.cpu;
    let k = &p.kernel;
    // A guest's exits and injections on top of the native costs (crate::guest).
    let g = p.guest_adds();
    Costs {
        irq_entry: c.irq_entry_ns + g.irq_entry,
        irq_exit: c.irq_exit_ns,
        eoi: c.eoi_ns + g.eoi,
        idle_exit: c.idle_exit_ns,
        ctx_switch: c.ctx_switch_ns,
        wakeup: c.wakeup_ns,
        ipi: c.ipi_ns,
        tick_period: 1_000_000_000 / c.tick_hz,
        tick: c.tick_ns,
        hz: c.tick_hz as u32,
        slice: c.sched_slice_ns,
        cqe: k.cqe_ns,
        cq_doorbell: k.cq_doorbell_ns,
        sq_doorbell: k.sq_doorbell_ns,
        mmio_flight: k.mmio_flight_ns,
        poll_check: k.poll_check_ns.max(1),
        pir_round: k.pir_round_ns,
        pir_round_clean: k.pir_round_clean_ns,
        irq_poll_call: k.irq_poll_call_ns,
        softirq: k.softirq_ns,
        irq_thread: k.irq_thread_ns,
        hrtimer: k.hrtimer_ns,
        moderation_program: k.moderation_program_ns,
        irq_mask: k.irq_mask_ns + g.irq_mask,
        irq_unmask: k.irq_mask_ns + g.irq_mask + g.irq_unmask,
        usr_io: p.engine.usr_io_ns,
        vcpu_wake: g.vcpu_wake,
        guest_halt_poll: g.guest_halt_poll,
        kick: g.kick,
        has_virtio: super::virtio::any(p),
        resend_tasklet: g.resend_tasklet,
    }
}

/// The vector's interrupt policy: the run's, or the device's own aggregation when the
/// policy leaves coalescing off (a device can coalesce although feature 08h reads zero).
fn device_irq(policy: &Policy, g: &crate::platform::DeviceGroup) -> DeviceIrq {
    let own = CoalesceParams {
        count: g.coalesce_count.max(1),
        time_ns: g.coalesce_time_ns,
    };
    if policy.coalescing == irqlab_core::DeviceCoalescing::Off && !own.is_off() {
        let c = irqlab_core::nvme::NvmeCoalescer::new(own);
        DeviceIrq::Nvme(match g.coalesce_from {
            crate::platform::CoalesceFrom::FirstWithheld => c,
            crate::platform::CoalesceFrom::FirstUnacked => c.acknowledging(),
        })
    } else {
        DeviceIrq::from_policy(policy.coalescing)
    }
}

/// A CPU at boot: idle, no thread, its own softirq, irq_poll and GSIM state.
pub(crate) fn new_cpu(
    c: usize,
    p: &Platform,
    costs: &Costs,
    delivery: Delivery,
    irq_poll_until: IrqPollUntil,
    gsim_global: Option<&GsimGlobal>,
) -> Cpu {
    Cpu::new(
        // A polled run's interrupt-driven queues (jobs without hipri) take remapped MSIs.
        LocalApic::new(
            DeliveryPath::for_delivery(delivery, c as u32)
                .unwrap_or(DeliveryPath::Remapped(RemappedTarget::new(c as u32))),
        ),
        CpuSoftirq::new(
            SoftirqCpu::new(SoftirqConfig {
                defer_to_running_ksoftirqd: p.kernel.softirq_defer_to_ksoftirqd,
                ..SoftirqConfig::new(costs.hz)
            }),
            IrqPollCpu::with_until(irq_poll_until),
        ),
        SoftModeration::new(gsim_global.map(|g| GsimCpu::new(g, 0))),
    )
}

/// What every step of the build reads.
pub(crate) struct Inputs<'a> {
    pub p: &'a Platform,
    pub policy: &'a Policy,
    pub opts: &'a SimOptions,
    pub costs: Costs,
    /// The platform's device names (nvme0, nvme1, ...), by device index.
    pub names: Vec<String>,
}

/// The machine while the build assembles it: the arenas the ids index.
#[derive(Default)]
pub(crate) struct Machine {
    pub cpus: Vec<Cpu>,
    pub threads: Vec<Thread>,
    pub devices: Vec<super::controller::Device>,
    pub queues: Vec<Queue>,
    pub vectors: Vec<Vector>,
    /// Managed vectors activated on each CPU so far (the vector matrix).
    pub managed: Vec<u32>,
}

/// The platform's costs of `engine` (None for fio's null engine, which makes no syscall).
pub(crate) fn syscall_costs(
    e: &crate::platform::EngineCosts,
    engine: IoEngine,
) -> Option<&crate::platform::SyscallCosts> {
    match engine {
        IoEngine::Libaio => Some(&e.libaio),
        IoEngine::IoUring => Some(&e.io_uring),
        IoEngine::Pvsync2 | IoEngine::Psync | IoEngine::PosixAio => Some(&e.pvsync2),
        IoEngine::Null | IoEngine::CpuIo => None,
    }
}

/// Where one job of the plan (an instance) goes on this machine: its CPU and devices.
struct JobClone {
    cpu: usize,
    devices: Vec<usize>,
    polled: bool,
    /// cpus_allowed given: the clone runs on `cpu` only. Without it the scheduler
    /// places it (model/placement.rs).
    pinned: bool,
}

/// Builds the machine one component at a time, in id order: the host's CPUs, each
/// device with its queues and their vectors (and irq threads), the NVMe over RDMA
/// targets' cores and queues, the jobs' threads and jobs, each CPU's ksoftirqd, then
/// the run's time bound and fio's run-wide state.
pub(crate) fn build<'a, O: Observer>(
    specs: &[JobSpec],
    plan: &RunPlan,
    p: &Platform,
    policy: &Policy,
    opts: &SimOptions,
    obs: &'a mut O,
) -> Result<Sim<'a, O>, SimError> {
    p.validate().map_err(|e| SimError::Platform(e.0))?;
    p.allows(policy).map_err(SimError::Refused)?;
    check_policy(policy)?;
    super::virtio::check_policy(p, policy)?;
    if specs.is_empty() {
        return Err(SimError::Config("the job file defines no jobs".into()));
    }
    let inp = Inputs {
        p,
        policy,
        opts,
        costs: costs(p),
        names: device_names(p),
    };
    let clones = job_clones(specs, plan, &inp)?;
    // The machine's window opens when the first wave's ramp_time ends.
    let window_start = plan.window_start_ns;
    // GSIM with the proposal's suggested settings (delay 100 µs, 1 M interrupts/s).
    let gsim = (policy.moderator == ModeratorKind::Gsim)
        .then(|| GsimGlobal::new(GsimParams::suggested()))
        .transpose()
        .map_err(|e| SimError::Config(format!("gsim: {e}")))?;
    let mut m = Machine {
        cpus: (0..p.cpu.count)
            .map(|c| {
                // --irq-poll-until: the IRQ_POLL softirq's stop rule.
                let until = policy.irq_poll_until;
                new_cpu(c, p, &inp.costs, policy.delivery, until, gsim.as_ref())
            })
            .collect(),
        managed: vec![0; p.cpu.count],
        ..Machine::default()
    };
    let queue_of = add_devices(&inp, &clones, &mut m)?;
    super::target::add_targets(&inp, gsim.as_ref(), &mut m)?;
    let (jobs, waves) = add_jobs(specs, plan, &inp, &clones, &queue_of, &mut m)?;
    super::virtio::check_depths(&jobs, &inp, &m)?;
    check_queue_depths(&jobs, &clones, &inp, &m)?;
    add_ksoftirqds(&mut m);
    add_kworkers(&mut m);
    let run_end = run_end(&waves, &jobs);
    // A run always ends: 1 s of simulated time per wave after its jobs' bound.
    let stop_at = run_end.saturating_add(1_000_000_000u64.saturating_mul(waves.len() as u64));
    let mut fio = fio_run(specs, &clones, waves, m.devices.len());
    // Helper threads, flows, wait_for, steady state, commands (model/fio_build.rs).
    let mut jobs = jobs;
    super::fio_build::complete(specs, plan, p, &inp.names, &mut jobs, &mut m, &mut fio)?;
    let topo = super::topo::Topology::new(&p.cpu);
    // Placement is on when a job may move; a run of pinned jobs keeps no such state.
    let place = clones.iter().any(|c| !c.pinned).then(|| {
        let llcs = p.cpu.count.div_ceil(topo.llc_size(0));
        Box::new(super::placement::Placement::new(
            super::placement::Rules::of(p.cpu.scheduler),
            llcs,
        ))
    });
    let mut sim = Sim {
        now: 0,
        q: EventQueue::new(),
        costs: inp.costs,
        engine: p.engine.clone(),
        policy: *policy,
        scheduler: p.cpu.scheduler,
        platform_name: p.name.clone(),
        seed: opts.seed,
        jobs_live: jobs.len(),
        cpus: m.cpus,
        threads: m.threads,
        jobs,
        devices: m.devices,
        queues: m.queues,
        vectors: m.vectors,
        fabric: super::fabric::Fabric::new(p),
        ios: Vec::with_capacity(4096),
        free_ios: Vec::new(),
        draining: false,
        stop_at,
        cut_short: false,
        stop: opts.stop.clone(),
        interrupted: false,
        measuring: false,
        window_start,
        window_end: 0,
        totals: Totals::default(),
        merged_events: 0,
        gsim,
        resend: Default::default(),
        fio,
        topo,
        place,
        queue_map: queue_of,
        moves: None,
        obs,
    };
    sim.moves = super::irq_move::plan(&sim, &opts.events, run_end)?;
    Ok(sim)
}

// ---------------------------------------------------------------- jobs

/// Checks every job section against the machine and places each job of the plan:
/// its CPU (cpus_allowed round robin, or the next CPU in turn) and devices.
fn job_clones(
    specs: &[JobSpec],
    plan: &RunPlan,
    inp: &Inputs<'_>,
) -> Result<Vec<JobClone>, SimError> {
    let ncpu = inp.p.cpu.count;
    // Every spec is checked, and the resource budget asked, before anything is made per
    // clone, queue or vector.
    let resolved = specs
        .iter()
        .enumerate()
        .map(|(si, s)| check_job(s, &plan.instances[plan.clones_of(si)], inp))
        .collect::<Result<Vec<_>, _>>()?;
    let estimate = super::budget::estimate(specs, plan, inp.p, inp.policy)?;
    super::budget::check(&estimate, &inp.opts.budget)?;
    let mut clones = Vec::with_capacity(plan.instances.len());
    let mut any_index = 0usize;
    for (si, (per_clone, polled)) in resolved.into_iter().enumerate() {
        for (k, i) in plan.instances[plan.clones_of(si)].iter().enumerate() {
            let devices = per_clone
                .get(k)
                .or(per_clone.first())
                .cloned()
                .unwrap_or_default();
            let cpu = match &i.cpus {
                Some(set) => set[i.clone as usize % set.len()],
                None => {
                    let c = any_index % ncpu;
                    any_index += 1;
                    c
                }
            };
            clones.push(JobClone {
                cpu,
                devices,
                polled,
                pinned: i.cpus.is_some(),
            });
        }
    }
    Ok(clones)
}

/// What the model refuses in a job section (with the file, line and what was expected);
/// returns the devices the files of each of its `clones` name (one list when they share
/// their files; none for fio's null engine) and whether it polls for completions.
fn check_job(
    s: &JobSpec,
    clones: &[Instance],
    inp: &Inputs<'_>,
) -> Result<(Vec<Vec<usize>>, bool), SimError> {
    let p = inp.p;
    let ncpu = p.cpu.count;
    if s.iodepth == 0 {
        return Err(option_err(
            s,
            &["iodepth"],
            "iodepth=0: at least one I/O must be in flight",
        ));
    }
    if s.bs == 0 {
        return Err(option_err(
            s,
            &["bs"],
            "bs=0: the block size must be at least 1 byte",
        ));
    }
    if s.numjobs == 0 {
        return Err(option_err(
            s,
            &["numjobs"],
            "numjobs=0: at least one job is needed",
        ));
    }
    if let Some(set) = &s.cpus_allowed {
        if set.is_empty() {
            return Err(option_err(s, &["cpus_allowed"], "cpus_allowed is empty"));
        }
        if let Some(bad) = set.iter().find(|&&c| c >= ncpu) {
            return Err(option_err(
                s,
                &["cpus_allowed"],
                format!(
                    "cpus_allowed names CPU {bad}, but platform '{}' has CPUs 0-{}",
                    p.name,
                    ncpu - 1
                ),
            ));
        }
    }
    if let Some(nodes) = &s.numa_cpu_nodes
        && let Some(bad) = nodes.iter().find(|&&n| n > 0)
    {
        return Err(option_err(
            s,
            &["numa_cpu_nodes"],
            format!(
                "numa_cpu_nodes names node {bad}, but platform '{}' is one NUMA node (0); expected numa_cpu_nodes=0 or all",
                p.name
            ),
        ));
    }
    // fio's null engine opens no file: its jobs have no device.
    // Clones sharing their files (one list in the plan) resolve them once.
    let shared = clones
        .iter()
        .all(|i| std::sync::Arc::ptr_eq(&i.files, &clones[0].files));
    let devices = if !s.ioengine.has_device() {
        vec![Vec::new()]
    } else {
        let distinct = if shared { &clones[..1] } else { clones };
        distinct
            .iter()
            .map(|i| resolve_files(s, &i.files, inp))
            .collect::<Result<Vec<_>, _>>()?
    };
    let polled = s.hipri || matches!(inp.policy.delivery, Delivery::Polled | Delivery::Hybrid);
    if polled && !s.ioengine.can_poll() {
        return Err(option_err(
            s,
            &["ioengine"],
            format!("{} {}", s.ioengine.name(), IoEngine::NO_POLL),
        ));
    }
    check_job_length(s)?;
    Ok((devices, polled))
}

/// The devices `files` name, each at least once; an error at the option that named a file
/// the platform does not have.
fn resolve_files(s: &JobSpec, files: &[String], inp: &Inputs<'_>) -> Result<Vec<usize>, SimError> {
    let (p, names) = (inp.p, &inp.names);
    if files.is_empty() {
        return Err(option_err(
            s,
            FILE_OPTIONS,
            format!(
                "no filename=; name a device of the platform: {}",
                names.join(", ")
            ),
        ));
    }
    files
        .iter()
        .map(|f| {
            resolve_file(f, names).ok_or_else(|| {
                option_err(
                    s,
                    FILE_OPTIONS,
                    format!(
                        "filename '{f}' is not a device of platform '{}'; it has {} (as /dev/NAMEn1, NAMEn1 or NAME; irqlab run maps other names onto them)",
                        p.name,
                        names.join(", ")
                    ),
                )
            })
        })
        .collect()
}

/// A job must end, within the model's bounds of run time and I/O size.
fn check_job_length(s: &JobSpec) -> Result<(), SimError> {
    if s.time_based && s.runtime_ns.is_none() {
        return Err(option_err(
            s,
            &["time_based"],
            "time_based needs runtime= (or irqlab run --max-runtime, which caps every job)",
        ));
    }
    if s.runtime_ns.is_none() && s.size.is_none() && s.number_ios.is_none() {
        return Err(option_err(
            s,
            &["size", "fill_device", "filesize"],
            "the job never ends: give runtime=, size= or number_ios= (or irqlab run --max-runtime, which caps every job)",
        ));
    }
    if s.total_time_ns().is_some_and(|t| t > MAX_SIMULATED_NS) {
        return Err(option_err(
            s,
            &["runtime", "ramp_time"],
            "runtime + ramp_time is over 600 s; the model simulates about a second of a busy server per few seconds of wall time: expected a shorter runtime (figures settle within tens of ms)",
        ));
    }
    // Checked sums: a start delay past the limit would schedule events no run reaches.
    let delayed = s
        .startdelay_ns
        .1
        .checked_add(s.total_time_ns().unwrap_or(s.ramp_time_ns));
    if delayed.is_none_or(|t| t > MAX_SIMULATED_NS) {
        return Err(option_err(
            s,
            &["startdelay"],
            "startdelay + ramp_time + runtime is over 600 s, the limit of a run; expected a shorter startdelay",
        ));
    }
    if s.thinktime.is_some_and(|t| t.ns > MAX_SIMULATED_NS) {
        return Err(option_err(
            s,
            &["thinktime"],
            "thinktime is over 600 s, the limit of a run; expected a shorter thinktime",
        ));
    }
    // Discards are not split by max_sectors_kb (their own limit is GiBs per range).
    let only_trims = matches!(
        s.rw,
        irqlab_fio::RwMode::Trim | irqlab_fio::RwMode::RandTrim
    );
    if s.bs > MAX_BS && !only_trims {
        return Err(option_err(
            s,
            &["bs", "bsrange", "bssplit"],
            "bs is over 16 MiB: the block layer would split such I/Os into max_sectors_kb pieces, which the model does not do; expected bs <= 16m",
        ));
    }
    Ok(())
}

/// Every clone's thread (blocked, or runnable when it starts at once) and job, in clone
/// order, a polled one spinning on its queues; and the jobs of each stonewall wave.
fn add_jobs(
    specs: &[JobSpec],
    plan: &RunPlan,
    inp: &Inputs<'_>,
    clones: &[JobClone],
    queue_of: &[[Vec<QueueId>; 2]],
    m: &mut Machine,
) -> Result<(Vec<Job>, Vec<Vec<JobId>>), SimError> {
    let mut waves: Vec<Vec<JobId>> = vec![Vec::new(); plan.waves as usize];
    let mut jobs = Vec::new();
    let seed = inp.opts.seed;
    let seed_override = inp.opts.override_randseed.then_some(seed);
    for (ji, c) in clones.iter().enumerate() {
        let section = plan.section_of(ji);
        let s = &specs[plan.instances[ji].spec];
        let set = usize::from(c.polled);
        let queues: Vec<QueueId> = c.devices.iter().map(|&d| queue_of[d][set][c.cpu]).collect();
        let mut fio = FioJob::new(s, ji as u32 + 1, section.wave, seed_override, seed);
        waves[section.wave as usize].push(JobId::new(ji));
        // Jobs of the first wave start at their startdelay; later waves when the one
        // before is over (job.rs job_exit).
        // (Their first events are scheduled by Sim::start.)
        let starts_now = section.wave == 0 && fio.startdelay_ns() == 0;
        if starts_now {
            fio.start(0, plan.window_start_ns);
        }
        m.threads.push(Thread::job(
            JobId::new(ji),
            CpuId::new(c.cpu),
            c.pinned,
            starts_now,
        ));
        let thread = ThreadId::new(m.threads.len() - 1);
        if c.polled {
            for &q in &queues {
                m.queues[q.ix()].add_spinner(thread);
            }
        }
        jobs.push(new_job(s, section.group, c, thread, queues, fio, inp));
    }
    Ok((jobs, waves))
}

/// A job of the file as fio's loop starts it: nothing issued, its batch sizes from the
/// section.
fn new_job(
    s: &JobSpec,
    groupid: u32,
    c: &JobClone,
    thread: ThreadId,
    queues: Vec<QueueId>,
    fio: FioJob,
    inp: &Inputs<'_>,
) -> Job {
    let iodepth = s.effective_iodepth();
    // A device no fio engine drives (DSA) brings its own submitter costs.
    let submitter = c
        .devices
        .first()
        .and_then(|&d| inp.p.device_group(d).submitter.clone());
    let usr_io = if submitter.is_some() {
        0
    } else {
        inp.costs.usr_io
    };
    let devices = c.devices.iter().map(|&d| DeviceId::new(d)).collect();
    let shape = JobShape {
        groupid,
        options: s.job_options(),
        submitter,
        usr_io,
        iodepth,
        // The parser resolved the batch sizes as fio's init.c does (JobSpec's fields).
        batch_submit: s.iodepth_batch_submit,
        complete_min: s.iodepth_batch_complete_min,
        complete_max: s.iodepth_batch_complete_max,
        polled: c.polled,
        hybrid: c.polled && inp.policy.delivery == Delivery::Hybrid,
        ramp_end: fio.measure_from(),
        end: if fio.started() {
            s.total_time_ns()
        } else {
            None
        },
        // number_ios here; size is a byte budget (FioJob::byte_limit).
        io_limit: if s.time_based { None } else { s.number_ios },
    };
    Job::of_file(
        s.name.clone(),
        thread,
        s.ioengine,
        queues,
        devices,
        fio,
        shape,
    )
}

/// Every queue has room for what its pinned jobs may have in flight (one entry stays
/// free). A job the scheduler moves may find a queue's tags taken and sleeps for one
/// (job.rs, blk_mq_get_tag).
fn check_queue_depths(
    jobs: &[Job],
    clones: &[JobClone],
    inp: &Inputs<'_>,
    m: &Machine,
) -> Result<(), SimError> {
    let mut depth = vec![0u64; m.queues.len()];
    for (job, c) in jobs.iter().zip(clones) {
        if !c.pinned {
            continue;
        }
        for &q in job.queues() {
            depth[q.ix()] += u64::from(job.iodepth());
        }
    }
    for (queue, &d) in m.queues.iter().zip(&depth) {
        let cap = u64::from(queue.depth()) - 1;
        if d > cap {
            return Err(SimError::Config(format!(
                "{} I/Os may be in flight on a queue of {} with room for {cap}: lower iodepth or numjobs, or raise devices.N.queue_depth",
                d,
                inp.names[queue.device().ix()]
            )));
        }
    }
    Ok(())
}

/// When the jobs end at the latest: every job by its runtime, or by the run-time limit
/// when size, loops or number_ios bound it instead, wave after wave. The run's time bound
/// adds 1 s of drain per wave.
fn run_end(waves: &[Vec<JobId>], jobs: &[Job]) -> u64 {
    let wave_span = |wave: &Vec<JobId>| -> u64 {
        wave.iter().fold(0u64, |m, &j| {
            let f = jobs[j.ix()].fio();
            let bound = f.total_ns().unwrap_or(MAX_SIMULATED_NS);
            m.max(f.startdelay_ns().saturating_add(bound))
        })
    };
    waves.iter().map(wave_span).fold(0u64, u64::saturating_add)
}

/// fio's run-wide state: the waves (none started), the disks the jobs use, the global
/// options.
fn fio_run(
    specs: &[JobSpec],
    clones: &[JobClone],
    waves: Vec<Vec<JobId>>,
    ndevices: usize,
) -> FioRun {
    let mut used = vec![false; ndevices];
    for &d in clones.iter().flat_map(|c| &c.devices) {
        used[d] = true;
    }
    let disks = used.into_iter().map(DiskAcct::new).collect();
    FioRun::new(waves, disks, irqlab_fio::global_options(specs))
}

// ---------------------------------------------------------------- kernel threads

/// A kworker on each CPU whose vectors run an adaptive moderator: its work item programs
/// the level (schedule_work queues it on the local CPU's pool), after the ksoftirqds.
fn add_kworkers(m: &mut Machine) {
    let mut wanted = vec![false; m.cpus.len()];
    for v in m.vectors.iter().filter(|v| v.has_moderator()) {
        wanted[v.cpu().ix()] = true;
    }
    for (c, cpu) in m.cpus.iter_mut().enumerate() {
        if wanted[c] {
            let cpu_id = CpuId::new(c);
            m.threads
                .push(Thread::new(ThreadKind::Kworker(cpu_id), cpu_id));
            cpu.wq.set_kworker(ThreadId::new(m.threads.len() - 1));
        }
    }
}

/// Each CPU's ksoftirqd, after every other thread.
fn add_ksoftirqds(m: &mut Machine) {
    for (c, cpu) in m.cpus.iter_mut().enumerate() {
        let cpu_id = CpuId::new(c);
        m.threads
            .push(Thread::new(ThreadKind::Ksoftirqd(cpu_id), cpu_id));
        cpu.soft.set_ksoftirqd(ThreadId::new(m.threads.len() - 1));
    }
}

// ---------------------------------------------------------------- devices

/// Every device of the platform, group by group, with the queues its jobs need. Returns,
/// per device, each CPU's queue in the interrupt-driven set [0] and the polled set [1]
/// (empty when no job needs that set).
fn add_devices(
    inp: &Inputs<'_>,
    clones: &[JobClone],
    m: &mut Machine,
) -> Result<Vec<[Vec<QueueId>; 2]>, SimError> {
    let p = inp.p;
    let mut queue_of = Vec::new();
    for g in &p.devices {
        // A virtio-blk device has no root port: its completions never enter one.
        let port = if g.kind == crate::platform::DeviceKind::VirtioBlk {
            0
        } else {
            p.root_ports
                .iter()
                .position(|rp| rp.name == g.port)
                .expect("validated port")
        };
        for _ in 0..g.count {
            let d = m.devices.len();
            m.devices.push(Device::new(
                g,
                &inp.names[d],
                PortId::new(port),
                inp.opts.seed,
                d,
            ));
            let wanted = |polled: bool| {
                clones
                    .iter()
                    .any(|c| c.polled == polled && c.devices.contains(&d))
            };
            let mut sets: [Vec<QueueId>; 2] = [Vec::new(), Vec::new()];
            for (set, polled) in [(0, false), (1, true)] {
                if wanted(polled) {
                    sets[set] = add_queue_set(inp, g, d, set, m)?;
                }
            }
            queue_of.push(sets);
        }
    }
    Ok(queue_of)
}

/// One set of device `d`'s queues (set 0: interrupt-driven, each with its MSI-X
/// vector; set 1: polled, none), each CPU mapped to one and each vector given its CPU
/// by `kernel.managed_irq_affinity` (model/affinity.rs). Returns each CPU's queue.
fn add_queue_set(
    inp: &Inputs<'_>,
    g: &crate::platform::DeviceGroup,
    d: usize,
    set: usize,
    m: &mut Machine,
) -> Result<Vec<QueueId>, SimError> {
    if g.kind == crate::platform::DeviceKind::VirtioBlk {
        return super::virtio::add_queue_set(inp, g, d, set, m);
    }
    let (p, policy) = (inp.p, inp.policy);
    let ncpu = p.cpu.count;
    let nq = if g.queues == 0 {
        ncpu
    } else {
        g.queues.min(ncpu)
    };
    let name = &inp.names[d];
    let first_q = m.queues.len();
    // Polled queues have no vectors: blk_mq_map_queues' ranges.
    let layout = match (set, p.kernel.managed_irq_affinity) {
        (0, ManagedAffinity::Spread) => {
            super::affinity::spread(g, ncpu, nq, p.cpu.node_cpus, &mut m.managed)
        }
        _ => super::affinity::contiguous(g, ncpu, nq),
    };
    let rdma = g.kind == crate::platform::DeviceKind::Rdma;
    for q in 0..nq {
        let qid = (set * nq + q + 1) as u16;
        let qp = if rdma {
            QueuePair::with_cq_depth(qid, qid, g.queue_depth, rdma_cq_depth(g.queue_depth))
        } else {
            QueuePair::new(qid, qid, g.queue_depth)
        }
        .map_err(|e| SimError::Platform(format!("device {name}: {e}")))?;
        let cpus_here = layout.cpu_queue.iter().filter(|&&x| x == q).count();
        let vector = if set == 0 {
            let spec = VectorSpec {
                name: format!("{name}q{}", q + 1),
                queue: QueueId::new(first_q + q),
                cpu: layout.vector_cpu[q],
                rule: g.msi_rule(),
                group: g,
                rescue_thread: policy.flood_detection && cpus_here > 1,
                iv: Some(qid),
                // nvme-rdma's CQs: ib_alloc_cq(..., IB_POLL_SOFTIRQ).
                ib_softirq: rdma,
            };
            Some(add_vector(spec, m, policy, p)?)
        } else {
            None
        };
        // nvme_irq: nvme_poll_cq rings the doorbell, then nvme_pci_complete_batch runs.
        let complete_ns =
            (g.kind == crate::platform::DeviceKind::Nvme).then_some(p.kernel.complete_io_ns);
        // nvme-rdma signals every SEND (since v4.15, "nvme-rdma: don't suppress send
        // completions"), and a request completes once its SEND and RECV are both in.
        let depth = g.queue_depth as usize;
        let (wc_ref, peer_tag) = if rdma {
            (vec![0; depth], vec![0; depth])
        } else {
            (Vec::new(), Vec::new())
        };
        m.queues.push(
            Queue::new(
                DeviceId::new(d),
                vector,
                qp,
                g.completion_ns.unwrap_or(inp.costs.cqe),
            )
            .with_handler(g.kind.has_cq_doorbell(), complete_ns)
            .with_shared(cpus_here > 1)
            .with_rdma(wc_ref, peer_tag, g.send_wc_ns.unwrap_or(0)),
        );
    }
    Ok(layout
        .cpu_queue
        .iter()
        .map(|&q| QueueId::new(first_q + q))
        .collect())
}

/// An RDMA CQ's entries for a queue of `depth` commands: nvme-rdma sizes it
/// `cq_factor * queue_size + 1` with cq_factor 3 (send, receive, invalidate), and
/// nvmet-rdma `recv_queue_size + 2 * send_queue_size`.
pub(crate) fn rdma_cq_depth(depth: u32) -> u32 {
    (3 * depth + 1).min(65536)
}

// ---------------------------------------------------------------- vectors

/// What [`add_vector`] needs to know about one MSI-X vector.
pub(crate) struct VectorSpec<'g> {
    pub name: String,
    pub queue: QueueId,
    pub cpu: usize,
    pub rule: MsiRule,
    pub group: &'g crate::platform::DeviceGroup,
    /// Flood detection's rescue thread (vectors whose affinity spans several CPUs).
    pub rescue_thread: bool,
    /// The NVMe interrupt vector number feature 09h addresses (nvme-pci: I/O queue N
    /// interrupts on vector N); None for the other device kinds.
    pub iv: Option<u16>,
    /// An RDMA CQ polled in softirq (IB_POLL_SOFTIRQ): its handler is the EQ's, and
    /// ib_poll_handler runs from irq_poll with IB_POLL_BUDGET_IRQ.
    pub ib_softirq: bool,
}

/// Adds queue `spec.queue`'s MSI-X vector on CPU `spec.cpu`: the next free IDT vector
/// there, its irq_poll instance and irq thread when the handler needs them, the adaptive
/// moderator, and the device-side coalescing at the moderator's start profile.
pub(crate) fn add_vector(
    spec: VectorSpec<'_>,
    m: &mut Machine,
    policy: &Policy,
    p: &Platform,
) -> Result<VectorId, SimError> {
    let cpu = spec.cpu;
    let v = VectorId::new(m.vectors.len());
    let cpu_s = &mut m.cpus[cpu];
    // Attempt #2's notification vector (0xdf) ends the device range below the kernel's.
    let Some(idt) = cpu_s.apic.allocate(v) else {
        return Err(SimError::Config(format!(
            "CPU {cpu} has no free interrupt vector for {}: too many device vectors on one CPU",
            spec.name
        )));
    };
    // idxd registers a threaded handler for kernel work queues whatever the policy.
    let idxd = spec.group.kind == crate::platform::DeviceKind::Dsa;
    let iop = match policy.handler {
        // drivers/infiniband/core/cq.c: irq_poll_init(&cq->iop, IB_POLL_BUDGET_IRQ, ...).
        _ if spec.ib_softirq => {
            let id = cpu_s
                .soft
                .add_poller(v, IB_POLL_BUDGET_IRQ)
                .map_err(|e| SimError::Config(format!("irq_poll: {e}")))?;
            Some(id)
        }
        HandlerStyle::IrqPoll { weight, .. } if !idxd => {
            let id = cpu_s
                .soft
                .add_poller(v, weight)
                .map_err(|e| SimError::Config(format!("irq_poll: {e}")))?;
            Some(id)
        }
        _ => None,
    };
    // Threaded handlers, and flood detection's rescue thread.
    let wants_thread = (policy.handler == HandlerStyle::Threaded && !spec.ib_softirq)
        || spec.rescue_thread
        || idxd;
    let thread = wants_thread.then(|| {
        m.threads
            .push(Thread::new(ThreadKind::IrqThread(v), CpuId::new(cpu)));
        ThreadId::new(m.threads.len() - 1)
    });
    let (mut irq, moderator) = vector_irq(policy, p, spec.group)?;
    // Feature 09h: Coalescing Disable on this vector turns 08h aggregation off.
    if let (Some(iv), DeviceIrq::Nvme(n)) = (spec.iv, &mut irq) {
        n.set_vector_config(policy.coalescing_disable.config(iv));
    }
    let ncpu = m.cpus.len();
    m.vectors.push(
        Vector::new(
            spec.name,
            spec.queue,
            CpuId::new(cpu),
            idt,
            MsixVector::new(irq, spec.rule),
            ncpu,
        )
        .with_irq_poll(iop)
        .with_thread(thread, idxd)
        .with_ib_eq(spec.ib_softirq.then(|| spec.group.eq_ns.unwrap_or(0)))
        .with_moderator(moderator),
    );
    Ok(v)
}

/// A vector's device-side interrupt policy and its adaptive moderator, the coalescing
/// programmed at the moderator's start profile.
fn vector_irq(
    policy: &Policy,
    p: &Platform,
    g: &crate::platform::DeviceGroup,
) -> Result<(DeviceIrq, Option<Moderator>), SimError> {
    let moderator = Moderator::new(policy.moderator, None)
        .and_then(|m| {
            m.map(|m| m.with_nr_events(p.kernel.irq_am_nr_events))
                .transpose()
        })
        .map_err(|e| SimError::Config(e.to_string()))?;
    let mut irq = device_irq(policy, g);
    if let Some(m) = &moderator {
        // The CQ starts at the moderator's start profile.
        let p = m.profile();
        irq.program(
            CoalesceParams::from_usec_count(u32::from(p.usec), u32::from(p.count)),
            0,
        );
    }
    Ok((irq, moderator))
}

fn check_policy(policy: &Policy) -> Result<(), SimError> {
    if let Some(what) = not_simulated(policy) {
        return Err(SimError::Unsupported(format!(
            "{what} is not simulated yet; `irqlab rt` runs it"
        )));
    }
    if policy.moderator == ModeratorKind::Gsim
        && matches!(policy.handler, HandlerStyle::IrqPoll { .. })
    {
        return Err(SimError::Unsupported(
            "--moderator gsim with --handler irq-poll: both mask the vector; choose one".into(),
        ));
    }
    Ok(())
}

/// The policy choice irqlab-core and the runtime have and this model does not run yet
/// (issue 22's phase 2), as the option that asks for it.
fn not_simulated(policy: &Policy) -> Option<String> {
    if matches!(policy.handler, HandlerStyle::NapiDefer { .. }) {
        return Some("--handler napi-defer".into());
    }
    None
}

/// Queue names as the kernel would call their vectors (nvme0q1, ...), polled ones too.
pub(crate) fn queue_names<O: Observer>(sim: &Sim<'_, O>) -> Vec<String> {
    let mut per_dev = vec![0usize; sim.devices.len()];
    sim.queues
        .iter()
        .map(|q| {
            let d = q.device().ix();
            per_dev[d] += 1;
            match q.vector() {
                Some(v) => sim.vectors[v.ix()].name().to_string(),
                None => format!("{}q{}", sim.devices[d].name(), per_dev[d]),
            }
        })
        .collect()
}
