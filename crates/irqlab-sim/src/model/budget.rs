//! The resource budget: before a model is built, its memory and its event count are
//! estimated from the topology and the jobs alone (nothing proportional to a count is
//! allocated first), and a run past the budget is refused with what to shrink.

use super::controller::Device;
use super::fio_job::FioJob;
use super::queue::Queue;
use super::state::{Cpu, Io, Job, Thread};
use super::vector::Vector;
use crate::platform::Platform;
use crate::{Budget, Estimate, SimError};
use irqlab_core::moderator::{LEVEL_COURSE_INTERVALS, Moderator};
use irqlab_core::{Delivery, Policy};
use irqlab_fio::JobSpec;
use irqlab_fio::plan::RunPlan;
use std::mem::size_of;

/// The longest run (startdelay + ramp_time + runtime) a job may have, and the bound of a
/// job limited by size, loops or number_ios instead of time.
pub(crate) const MAX_SIMULATED_NS: u64 = 600_000_000_000;
/// Events per completed I/O: the most measured over the scenarios in scenarios/ (2.5 for
/// polled io_uring to 21 for posted 128 KiB libaio), rounded up.
const EVENTS_PER_IO: u64 = 24;
/// fio's FIO_IO_U_PLAT_NR latency buckets of 8 bytes: the largest a latency histogram
/// grows to (slat, clat and lat per direction, and the report's copy).
const LATENCY_BYTES: u64 = 1856 * 8;
/// One entry of a fio log file kept in memory until the report.
const LOG_ENTRY_BYTES: u64 = 32;
/// One job option of one clone: its JobOption (name, value, file path), the model's
/// (name, value) pair and the report's copy, with allocator slack.
const OPTION_BYTES: u64 = 320;
/// Per queue entry: command-id map (4), free tag (2), SQ slot (8), CQ slot (16), slack.
const QUEUE_ENTRY_BYTES: u64 = 40;

/// The largest fio runs: fio.h REAL_MAX_JOBS.
const MAX_CLONES: u64 = irqlab_fio::MAX_JOBS;

fn size<T>() -> u64 {
    size_of::<T>() as u64
}

/// What one job spec asks of the model, before its clones exist.
struct JobDemand {
    clones: u64,
    iodepth: u64,
    /// Simulated time it may take: its time bound, or the time its I/O count takes at
    /// its highest possible rate (at most [`MAX_SIMULATED_NS`]).
    span_ns: u64,
    /// I/Os it may complete.
    ios: u64,
}

/// Estimates memory and events of simulating `specs`, expanded as `plan`, on `p`.
pub(crate) fn estimate(
    specs: &[JobSpec],
    plan: &RunPlan,
    p: &Platform,
    policy: &Policy,
) -> Result<Estimate, SimError> {
    let clones = plan.instances.len() as u64;
    if clones > MAX_CLONES {
        return Err(SimError::Config(format!(
            "the jobs add up to {clones} clones (numjobs, --disks x --jobs-per-disk); fio runs at most {MAX_CLONES} (REAL_MAX_JOBS)"
        )));
    }
    let work = work(specs, plan, p)?;
    let mut parts = memory_parts(specs, plan, p, policy, &work.demands);
    parts.sort_by_key(|p| std::cmp::Reverse(p.1));
    let memory_bytes = parts.iter().fold(0u64, |a, p| a.saturating_add(p.1));
    Ok(Estimate {
        memory_bytes,
        events: work.events,
        simulated_ns: work.simulated_ns,
        ios: work.ios,
        ticks: work.ticks,
        memory_parts: parts,
    })
}

/// How much simulating the jobs is: each job's demand, the run's span, its I/Os (the
/// jobs' or the devices' capacity, the lower), timer ticks and events.
struct Work {
    demands: Vec<JobDemand>,
    simulated_ns: u64,
    ios: u64,
    ticks: u64,
    events: u64,
}

fn work(specs: &[JobSpec], plan: &RunPlan, p: &Platform) -> Result<Work, SimError> {
    let ncpu = p.cpu.count as u64;
    // The fastest a media command completes, and the devices' combined capacity.
    let mut fastest_ns = u64::MAX;
    let mut capacity = 0f64;
    for g in &p.devices {
        let (servers, read_ns) = super::controller::media_units(g);
        fastest_ns = fastest_ns.min(read_ns).min(g.write_ns);
        let units = f64::from(servers) + super::controller::partial_unit(g).unwrap_or(0.0);
        let per_device = units * 1e9 / read_ns.min(g.write_ns).max(1) as f64;
        capacity += per_device * g.count as f64;
    }
    let fastest_ns = fastest_ns.max(1);
    let demands: Vec<JobDemand> = specs
        .iter()
        .zip(&plan.sections)
        .map(|(s, sp)| demand(s, sp.count as u64, fastest_ns, cpu_floor_ns(s, p)))
        .collect::<Result<_, _>>()?;
    // Waves run one after the other; the run lasts the sum of their longest jobs.
    let mut wave_span = vec![0u64; plan.waves as usize];
    for (d, sp) in demands.iter().zip(&plan.sections) {
        let w = sp.wave as usize;
        wave_span[w] = wave_span[w].max(d.span_ns);
    }
    let simulated_ns = wave_span.iter().fold(0u64, |a, &b| a.saturating_add(b));
    let job_ios = demands.iter().fold(0u64, |a, d| a.saturating_add(d.ios));
    let device_ios = (capacity * simulated_ns as f64 / 1e9).min(u64::MAX as f64) as u64;
    let ios = job_ios.min(device_ios);
    // NOHZ stops an idle CPU's tick, but the tick event still fires on every CPU.
    let ticks = (ncpu as f64 * p.cpu.tick_hz as f64 * simulated_ns as f64 / 1e9) as u64;
    let events = ticks.saturating_add(ios.saturating_mul(EVENTS_PER_IO));

    Ok(Work {
        demands,
        simulated_ns,
        ios,
        ticks,
        events,
    })
}

/// The model's memory, by part (queues, vectors, CPUs, clones, I/Os in flight, devices,
/// fio logs), from the topology and the jobs' demands.
fn memory_parts(
    specs: &[JobSpec],
    plan: &RunPlan,
    p: &Platform,
    policy: &Policy,
    demands: &[JobDemand],
) -> Vec<(String, u64)> {
    let ncpu = p.cpu.count as u64;
    let clones = plan.instances.len() as u64;
    let ndevices: u64 = p.devices.iter().map(|g| g.count as u64).sum();
    let all_poll = matches!(policy.delivery, Delivery::Polled | Delivery::Hybrid);
    let any_polled = all_poll || specs.iter().any(|s| s.hipri);
    let any_irq = !all_poll && specs.iter().any(|s| !s.hipri);
    let sets = u64::from(any_polled) + u64::from(any_irq);
    // Only devices the jobs name get queues; more names than devices is every device.
    let named: u64 = specs.iter().map(|s| s.filenames.len() as u64).sum();
    let mut used_left = named.min(ndevices);
    let (mut queues, mut entries, mut vectors, mut striped_units) = (0u64, 0u64, 0u64, 0u64);
    for g in &p.devices {
        let used = used_left.min(g.count as u64);
        used_left -= used;
        let nq = if g.queues == 0 {
            ncpu
        } else {
            (g.queues as u64).min(ncpu)
        };
        queues += used * nq * sets;
        entries += used * nq * sets * u64::from(g.queue_depth);
        if any_irq {
            vectors += used * nq;
        }
        if g.striped {
            striped_units += used * u64::from(super::controller::media_units(g).0);
        }
    }
    let in_flight: u64 = demands.iter().map(|d| d.clones * d.iodepth).sum();
    let logs: u64 = specs
        .iter()
        .zip(demands)
        .map(|(s, d)| log_entries(s, d).saturating_mul(d.clones))
        .fold(0u64, u64::saturating_add);
    // Every clone holds its spec's options (file and line), the model's pairs and the
    // report's copy of them.
    let options: u64 = specs
        .iter()
        .zip(demands)
        .map(|(s, d)| d.clones * s.options.len() as u64 * OPTION_BYTES)
        .sum();
    // A per-queue moderator keeps its level histogram per interval of the run (at most
    // LEVEL_COURSE_INTERVALS of them), in the model and in the report.
    let levels = Moderator::new(policy.moderator, None)
        .ok()
        .flatten()
        .map_or(0, |m| m.levels().len() as u64);
    let course_bytes = 2 * LEVEL_COURSE_INTERVALS as u64 * levels * 8;
    vec![
        (
            format!("{queues} queues x their entries ({entries} in all)"),
            queues * size::<Queue>() + entries * QUEUE_ENTRY_BYTES,
        ),
        (
            // Each vector counts its handler runs per CPU, in the model and the report, and
            // the /proc/interrupts table prints a column per CPU for it.
            format!("{vectors} vectors x {ncpu} CPUs of counters"),
            vectors * (size::<Vector>() + ncpu * (8 + 8 + 11) + course_bytes),
        ),
        (
            format!("{ncpu} CPUs"),
            ncpu * (size::<Cpu>() + 4096 + 2 * LATENCY_BYTES + size::<Thread>())
                + ndevices * sets * ncpu * 4,
        ),
        (
            format!("{clones} job clones"),
            clones
                * (size::<Job>() + size::<FioJob>() + size::<Thread>() + 12 * LATENCY_BYTES + 4096)
                + options,
        ),
        (
            format!("{in_flight} I/Os in flight"),
            in_flight * (size::<Io>() + 4 + 2 * 32),
        ),
        (
            format!("{ndevices} devices"),
            ndevices * size::<Device>() + striped_units * 40,
        ),
        (
            format!("fio log entries ({logs})"),
            logs.saturating_mul(LOG_ENTRY_BYTES),
        ),
    ]
}

/// The least CPU time a clone of `s` spends per I/O on its own CPU: fio's user-space
/// work and the engine's per-I/O submit and reap costs (model/job.rs charges these).
fn cpu_floor_ns(s: &JobSpec, p: &Platform) -> u64 {
    // A device's own submitter (DSA) replaces the engine's costs: no floor to trust.
    if p.devices.iter().any(|g| g.submitter.is_some()) {
        return 1;
    }
    let e = &p.engine;
    let Some(sc) = super::build::syscall_costs(e, s.ioengine) else {
        return e.usr_io_ns.max(1);
    };
    let batch = u64::from(s.iodepth_batch_submit.max(1));
    (e.usr_io_ns + sc.submit_io_ns + sc.reap_io_ns + sc.submit_call_ns / batch).max(1)
}

/// One spec's `clones`, depth, time span and I/O count, with its count limit checked
/// against the run-time limit.
fn demand(s: &JobSpec, clones: u64, fastest_ns: u64, cpu_ns: u64) -> Result<JobDemand, SimError> {
    let iodepth = u64::from(s.effective_iodepth().max(1));
    // The most I/Os a second one clone can complete: its depth over the fastest media
    // command, its own CPU time per I/O, or its rate limit.
    let mut rate = (iodepth as f64 * 1e9 / fastest_ns as f64).min(1e9 / cpu_ns as f64);
    if s.rate.is_set() {
        let min_bs = s
            .block_sizes
            .iter()
            .map(|b| b.min())
            .min()
            .unwrap_or(1)
            .max(1);
        let limit: f64 = (0..2)
            .map(|d| {
                let by_bytes = s.rate.bytes_per_sec[d] as f64 / min_bs as f64;
                match (s.rate.iops[d], s.rate.bytes_per_sec[d]) {
                    (0, 0) => f64::INFINITY,
                    (0, _) => by_bytes,
                    (i, 0) => i as f64,
                    (i, _) => (i as f64).min(by_bytes),
                }
            })
            .sum();
        rate = rate.min(limit);
    }
    let delay = s.startdelay_ns.1;
    let count = match (s.number_ios, s.size) {
        (Some(n), Some(b)) => Some(n.min(b / s.bs.max(1))),
        (Some(n), None) => Some(n),
        (None, Some(b)) => Some(b / s.bs.max(1)),
        (None, None) => None,
    };
    let (span_ns, ios) = match (s.time_based, s.total_time_ns(), count) {
        (false, Some(t), Some(n)) => {
            let by_time = (rate * t as f64 / 1e9) as u64;
            let need = (n as f64 / rate * 1e9) as u64;
            (need.saturating_add(s.ramp_time_ns).min(t), n.min(by_time))
        }
        (_, Some(t), _) => (t, (rate * t as f64 / 1e9) as u64),
        (_, None, Some(n)) => {
            // Even at its highest rate the job needs this long: past the limit, no run.
            let need = n as f64 / rate * 1e9;
            if need > MAX_SIMULATED_NS as f64 {
                // Named at the option that sets the count, not the section header.
                let (file, line) = s
                    .option_at(&["size", "number_ios", "loops"])
                    .unwrap_or((s.file.as_path(), s.line));
                return Err(SimError::Job {
                    file: file.display().to_string(),
                    line,
                    job: s.name.clone(),
                    msg: format!(
                        "{n} I/Os (size, loops or number_ios) need at least {:.0} s of simulated time at the job's highest rate ({:.0} IOPS), over the 600 s limit of a run; expected a smaller size or number_ios, or a runtime",
                        need / 1e9,
                        rate
                    ),
                });
            }
            (
                (need as u64)
                    .saturating_add(s.ramp_time_ns)
                    .min(MAX_SIMULATED_NS),
                n,
            )
        }
        (_, None, None) => (MAX_SIMULATED_NS, (rate * 600.0) as u64),
    };
    Ok(JobDemand {
        clones,
        iodepth,
        span_ns: span_ns.saturating_add(delay),
        ios: ios.saturating_mul(clones),
    })
}

/// Entries one clone's fio logs keep: per I/O without averaging, else per interval.
fn log_entries(s: &JobSpec, d: &JobDemand) -> u64 {
    let per_clone_ios = d.ios / d.clones.max(1);
    let per = |avg_ms: u64| match avg_ms {
        0 => per_clone_ios,
        ms => d.span_ns / (ms * 1_000_000),
    };
    let mut n = 0u64;
    if s.logs.lat.is_some() {
        n = n.saturating_add(per(s.logs.avg_msec).saturating_mul(3));
    }
    if s.logs.bw.is_some() {
        n = n.saturating_add(per(s.bw_avg_ms));
    }
    if s.logs.iops.is_some() {
        n = n.saturating_add(per(s.iops_avg_ms));
    }
    n
}

/// Refuses a run past `budget`, saying what to shrink.
pub(crate) fn check(e: &Estimate, budget: &Budget) -> Result<(), SimError> {
    if e.memory_bytes > budget.max_memory_bytes {
        let top: Vec<String> = e
            .memory_parts
            .iter()
            .take(3)
            .filter(|p| p.1 > 0)
            .map(|(what, b)| format!("{what}: {}", bytes(*b)))
            .collect();
        return Err(SimError::OverBudget(format!(
            "the model would need about {} of memory ({}), over the budget of {}: use fewer CPUs (cpu.count), disks (--disks, devices.N.count), queues (devices.N.queues), a smaller devices.N.queue_depth, fewer jobs (numjobs, --jobs-per-disk) or log_avg_msec for fio logs; --max-memory raises the budget",
            bytes(e.memory_bytes),
            top.join("; "),
            bytes(budget.max_memory_bytes)
        )));
    }
    if e.events > budget.max_events {
        return Err(SimError::OverBudget(format!(
            "the run would take about {:.1e} events ({:.1e} I/Os and {:.1e} timer ticks over {:.3} s of simulated time), over the budget of {:.1e} events (the model runs a few million events per second of wall time): shorten runtime, size or number_ios, or use fewer CPUs, disks or jobs; --max-events raises the budget",
            e.events as f64,
            e.ios as f64,
            e.ticks as f64,
            e.simulated_ns as f64 / 1e9,
            budget.max_events as f64
        )));
    }
    Ok(())
}

/// Bytes as "1.5 GiB".
fn bytes(b: u64) -> String {
    let b = b as f64;
    if b >= (1u64 << 30) as f64 {
        format!("{:.1} GiB", b / (1u64 << 30) as f64)
    } else {
        format!("{:.0} MiB", (b / (1u64 << 20) as f64).ceil())
    }
}
