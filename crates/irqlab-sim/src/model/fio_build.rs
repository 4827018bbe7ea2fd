//! The last steps of the build for what fio does besides each job's I/O pattern: the
//! commands' media times (checked against what each job issues), the offload workers
//! and SQPOLL threads (threads of the model on their CPUs), flow groups, wait_for,
//! steady state, and cpuio's burn cycle; each refused at its option's line when the
//! platform cannot run it.

use super::commands::Cmd;
use super::fio_ctl::{FioPhase, FlowMember, Role};
use super::fio_job::{FioJob, FioRun};
use super::ids::{CpuId, JobId, QueueId, ThreadId};
use super::state::*;
use crate::SimError;
use crate::platform::Platform;
use irqlab_fio::plan::{RunPlan, Start};
use irqlab_fio::{JobSpec, SubmitMode};

/// zbd: the most emulated zones a job's range may have here (a write pointer each).
const MAX_ZONES: u64 = 1 << 20;

/// An error about job `s`'s option `names` (the last one written), at its line.
fn option_err(s: &JobSpec, names: &[&str], msg: impl Into<String>) -> SimError {
    let (file, line) = s.option_at(names).unwrap_or((s.file.as_path(), s.line));
    SimError::Job {
        file: file.display().to_string(),
        line,
        job: s.name.clone(),
        msg: msg.into(),
    }
}

/// Completes the machine `build` made: refuses what the platform cannot run, adds the
/// helper threads and sets up the run-wide mechanisms.
pub(crate) fn complete(
    specs: &[JobSpec],
    plan: &RunPlan,
    p: &Platform,
    names: &[String],
    jobs: &mut Vec<Job>,
    m: &mut super::build::Machine,
    fio: &mut FioRun,
) -> Result<(), SimError> {
    let main = jobs.len();
    for j in 0..main {
        let (si, k) = (plan.instances[j].spec, plan.instances[j].clone);
        check(&specs[si], p, names, &jobs[j], m)?;
        if specs[si].controls.submit_mode == SubmitMode::Offload {
            add_workers(&specs[si], k, j, p, jobs, m);
        }
        if let Some(sq) = specs[si].controls.sqpoll {
            add_sq_thread(&specs[si], sq.cpu, j, p, jobs, m);
        }
        if let Some(cfg) = specs[si].controls.cpuio
            && cfg.mode == irqlab_fio::CpuMode::Qsort
        {
            let ns = p.engine.cpuio_qsort_ns.ok_or_else(|| {
                option_err(
                    &specs[si],
                    &["cpumode"],
                    format!(
                        "cpumode=qsort burns one pass of fio's sort per cycle, and platform '{}' gives no time for it: set engine.cpuio_qsort_ns (or use cpumode=noop with cpuchunks)",
                        p.name
                    ),
                )
            })?;
            jobs[j].fio_mut().ctl_mut().set_qsort_cycle(ns);
        }
    }
    flows(specs, plan, jobs, fio);
    zone_maps(specs, plan, jobs, m, fio)?;
    wait_for(specs, plan, jobs, m)?;
    if let Some(s) = specs.iter().find(|s| s.controls.steadystate.is_some()) {
        fio.set_ss_interval_ms(Some(s.controls.ss_interval_ms));
        Sim::<crate::observer::NoObserver>::steadystate_setup(&mut jobs[..main]);
    }
    Ok(())
}

/// What the platform cannot run for job `j`: a command without a media time, an SQ
/// thread on a CPU it lacks, a zone map too large.
fn check(
    s: &JobSpec,
    p: &Platform,
    names: &[String],
    job: &Job,
    m: &super::build::Machine,
) -> Result<(), SimError> {
    let devices: Vec<usize> = job
        .queues()
        .iter()
        .map(|q| m.queues[q.ix()].device().ix())
        .collect();
    let mut cmds: Vec<(Cmd, &[&str])> = Vec::new();
    if s.rw.trims() && s.controls.zbd.is_none() && s.ioengine.has_device() {
        cmds.push((Cmd::Trim { ranges: 1 }, &["rw"]));
    }
    for &(w, _) in &s.controls.write_mix {
        cmds.push((Cmd::of_write(w), &["write_mode"]));
    }
    for (cmd, opt) in cmds {
        if let Some(&d) = devices.iter().find(|&&d| !m.devices[d].serves(cmd)) {
            return Err(option_err(
                s,
                opt,
                format!(
                    "the job issues {} commands and platform '{}' gives {} no media time for them: set devices.N.{} (N its device group)",
                    match cmd {
                        Cmd::Trim { .. } => "trim (Dataset Management)",
                        Cmd::WriteZeroes => "Write Zeroes",
                        Cmd::WriteUncor => "Write Uncorrectable",
                        _ => "Verify",
                    },
                    p.name,
                    names[d],
                    cmd.key()
                ),
            ));
        }
    }
    if let Some(sq) = s.controls.sqpoll
        && let Some(c) = sq.cpu
        && c >= p.cpu.count
    {
        return Err(option_err(
            s,
            &["sqthread_poll_cpu"],
            format!(
                "sqthread_poll_cpu={c}, but platform '{}' has CPUs 0-{}",
                p.name,
                p.cpu.count - 1
            ),
        ));
    }
    if let Some(z) = s.controls.zbd {
        if z.zones.is_some_and(|n| n > MAX_ZONES) {
            return Err(option_err(
                s,
                &["size", "zonesize"],
                format!(
                    "the job's range holds {} zones; the model keeps a write pointer for at most {MAX_ZONES}: a larger zonesize or a smaller size",
                    z.zones.unwrap_or(0)
                ),
            ));
        }
        if s.rw.writes() && z.capacity < s.block_sizes[1].min() {
            return Err(option_err(
                s,
                &["zonecapacity", "zonesize"],
                format!(
                    "zone capacity {} is smaller than the minimum block size {} (fio refuses it: ZCAP is less min_bs)",
                    z.capacity,
                    s.block_sizes[1].min()
                ),
            ));
        }
    }
    Ok(())
}

/// The queue CPU `c` submits to on the device of queue `like` (blk_mq_map_queues:
/// the queues of a set are contiguous, CPU c takes queue c × nq / ncpu).
fn queue_for_cpu(m: &super::build::Machine, like: QueueId, c: usize) -> QueueId {
    let q = &m.queues[like.ix()];
    let (dev, polled) = (q.device(), q.vector().is_none());
    let set: Vec<usize> = (0..m.queues.len())
        .filter(|&i| m.queues[i].device() == dev && m.queues[i].vector().is_none() == polled)
        .collect();
    let ncpu = m.cpus.len();
    QueueId::new(set[c * set.len() / ncpu])
}

/// A helper job of `role` on CPU `cpu` with the parent's engine and the queues its CPU
/// submits to, iodepth 1, statistics only its parent's.
fn helper_job(
    s: &JobSpec,
    parent: usize,
    role: Role,
    cpu: usize,
    phase: super::fio_ctl::FioPhase,
    jobs: &mut Vec<Job>,
    m: &mut super::build::Machine,
) -> usize {
    let id = jobs.len();
    m.threads.push(Thread::new(
        ThreadKind::Job(JobId::new(id)),
        CpuId::new(cpu),
    ));
    let thread = ThreadId::new(m.threads.len() - 1);
    let p = &jobs[parent];
    let queues: Vec<QueueId> = p
        .queues()
        .iter()
        .map(|&q| queue_for_cpu(m, q, cpu))
        .collect();
    if p.polled() {
        for &q in &queues {
            m.queues[q.ix()].add_spinner(thread);
        }
    }
    let fio = FioJob::helper(s, p.fio().thread_number(), p.fio().wave(), role);
    let job = Job::helper(
        p,
        format!("{}:{}", p.name(), id),
        thread,
        queues,
        fio,
        JobPhase::Fio(phase),
    );
    jobs.push(job);
    id
}

/// The CPUs job clone `k` of `s` may run on.
fn allowed(s: &JobSpec, k: u32, p: &Platform) -> Vec<usize> {
    s.clone_cpus(k)
        .unwrap_or_else(|| (0..p.cpu.count).collect())
}

/// rate_submit_init: `iodepth` workers. They inherit the job's CPU affinity; created
/// from a busy thread, each goes to the next CPU of its set (fork balancing picks an
/// idle one), round robin from the job's.
fn add_workers(
    s: &JobSpec,
    k: u32,
    j: usize,
    p: &Platform,
    jobs: &mut Vec<Job>,
    m: &mut super::build::Machine,
) {
    let set = allowed(s, k, p);
    let home = m.threads[jobs[j].thread().ix()].cpu().ix();
    let pos = set.iter().position(|&c| c == home).unwrap_or(0);
    let mut workers = Vec::new();
    for w in 0..jobs[j].iodepth() as usize {
        let cpu = set[(pos + 1 + w) % set.len()];
        let id = helper_job(
            s,
            j,
            Role::Worker {
                parent: JobId::new(j),
            },
            cpu,
            FioPhase::Idle,
            jobs,
            m,
        );
        jobs[id].fio_mut().ctl_mut().make_worker();
        workers.push(JobId::new(id));
    }
    jobs[j].fio_mut().ctl_mut().offload_to(workers);
}

/// io_uring_setup with IORING_SETUP_SQPOLL: the ring's kernel thread, on
/// sqthread_poll_cpu (IORING_SETUP_SQ_AFF) or else any CPU (io_sq_thread allows every
/// online one): the one after the job's, where the balancer would move a spinning
/// thread off its creator's. With hipri the thread polls, and the job does not.
fn add_sq_thread(
    s: &JobSpec,
    cpu: Option<usize>,
    j: usize,
    p: &Platform,
    jobs: &mut Vec<Job>,
    m: &mut super::build::Machine,
) {
    let home = m.threads[jobs[j].thread().ix()].cpu().ix();
    let cpu = cpu.unwrap_or((home + 1) % p.cpu.count);
    let iopoll = jobs[j].polled();
    let id = helper_job(
        s,
        j,
        Role::SqThread {
            owner: JobId::new(j),
        },
        cpu,
        FioPhase::SqLoop,
        jobs,
        m,
    );
    // The job spins on its CQ ring instead of polling the device's queues.
    let owner_thread = jobs[j].thread();
    for &q in jobs[j].queues() {
        m.queues[q.ix()].remove_spinner(owner_thread);
    }
    jobs[j].hand_polling_to_sqpoll();
    jobs[id].poll_without_sleep();
    jobs[j]
        .fio_mut()
        .ctl_mut()
        .setup_sqpoll(JobId::new(id), iopoll);
}

/// Each device's emulated zones, from the zoned jobs that write it (one zone size per
/// device, as fio's zbd_info per file has).
fn zone_maps(
    specs: &[JobSpec],
    plan: &RunPlan,
    jobs: &[Job],
    m: &super::build::Machine,
    fio: &mut FioRun,
) -> Result<(), SimError> {
    let mut maps = vec![None; m.devices.len()];
    for (d, slot) in maps.iter_mut().enumerate() {
        let mut cfgs: Vec<(usize, irqlab_fio::Zbd)> = Vec::new();
        for (j, i) in plan.instances.iter().enumerate() {
            let si = i.spec;
            let Some(z) = specs[si].controls.zbd else {
                continue;
            };
            if jobs[j]
                .queues()
                .iter()
                .any(|q| m.queues[q.ix()].device().ix() == d)
            {
                cfgs.push((si, z));
            }
        }
        let Some(&(_, first)) = cfgs.first() else {
            continue;
        };
        if let Some(&(si, _)) = cfgs.iter().find(|(_, z)| z.zone_bytes != first.zone_bytes) {
            return Err(option_err(
                &specs[si],
                &["zonesize"],
                "a zonesize other than that of the other zoned jobs of its device: fio keeps one zone size per file",
            ));
        }
        let list: Vec<irqlab_fio::Zbd> = cfgs.iter().map(|c| c.1).collect();
        *slot = Some(super::zbd::ZoneMap::of(&list));
    }
    fio.set_zone_maps(maps);
    Ok(())
}

/// flow.c flow_init_job: every job with a weight joins its flow id's group (its weight
/// counted from the start, as fio counts it when the job is added).
fn flows(specs: &[JobSpec], plan: &RunPlan, jobs: &mut [Job], fio: &mut FioRun) {
    for (j, i) in plan.instances.iter().enumerate() {
        let Some(f) = specs[i.spec].controls.flow else {
            continue;
        };
        let g = fio.join_flow(f.id, JobId::new(j), f.weight);
        jobs[j]
            .fio_mut()
            .ctl_mut()
            .join_flow(FlowMember::new(g, f.weight, f.sleep_ns));
    }
}

/// wait_for: the clones of the named job; a job that waits does not start at time 0.
fn wait_for(
    specs: &[JobSpec],
    plan: &RunPlan,
    jobs: &mut [Job],
    m: &mut super::build::Machine,
) -> Result<(), SimError> {
    for (j, i) in plan.instances.iter().enumerate() {
        let above = match plan.sections[i.spec].start {
            Start::Wave => continue,
            Start::After(above) => above,
            // The parser checked it names one job above (init.c wait_for_ok).
            Start::Unresolved => {
                let name = specs[i.spec]
                    .controls
                    .wait_for
                    .as_deref()
                    .unwrap_or_default();
                return Err(option_err(
                    &specs[i.spec],
                    &["wait_for"],
                    format!(
                        "waitee job {name} unknown: wait_for names a job defined above this one"
                    ),
                ));
            }
        };
        let waitees = plan.clones_of(above).map(JobId::new).collect();
        jobs[j].fio_mut().ctl_mut().set_wait_for(waitees);
        // It starts when they have exited (job.rs start_waiters), not with its wave.
        let job = &mut jobs[j];
        if job.hold_for_waitees() {
            m.threads[job.thread().ix()].hold_at_start();
        }
    }
    Ok(())
}
