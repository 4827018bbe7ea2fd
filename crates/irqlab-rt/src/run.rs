//! One run: build the topology, start the controller and CPU threads, watch for stalls,
//! and gather what every thread measured into a [`RunReport`].

use crate::clock::now_ns;
use crate::config::{RtConfig, check_policy};
use crate::cpu::{CpuResult, CpuThread, RunClock};
use crate::ctrl::{Backend, Controller, VectorCounters, run_controllers};
use crate::error::RtError;
use crate::events::Events;
use crate::file_media::{FileTarget, UringMedia};
use crate::job::JobRun;
use crate::media::{Media, MediaClock};
use crate::pin::{allowed_cpus, pin_current};
use crate::report::{Measured, build_report};
use crate::shared::{CpuShared, Cpus, QueueShared};
use crate::topology::{ClonePlan, Placement, Topology};
use crate::trace::{Recorder, TraceSpec, replay};
use crate::usage::Usage;
use crate::wake_audit::WakeAudit;
use irqlab_core::delivery::DeliveryPath;
use irqlab_core::gsim::{GsimGlobal, GsimParams};
use irqlab_core::{Delivery, ModeratorKind, Policy};
use irqlab_fio::JobSpec;
use irqlab_report::RunReport;
use irqlab_report::observe::Observer;
use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering::*};
use std::sync::{Arc, Barrier, Mutex};
use std::thread::{Scope, ScopedJoinHandle};

/// Runs `jobs` under `policy` on real threads and reports what was measured.
pub fn run(jobs: &[JobSpec], policy: &Policy, cfg: &RtConfig) -> Result<RunReport, RtError> {
    run_traced(jobs, policy, cfg, TraceOptions::default()).map(|(r, _)| r)
}

/// What `--trace` and `--timeline` ask the threads to record.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
struct TraceOptions {
    on: bool,
    /// The wall time (ns from the start) a reader looks at: nothing is recorded after
    /// its end, and before its start only what the CPUs were doing.
    window: Option<Range<u64>>,
}

/// [`run`] that records what every thread did and, after the run, feeds it in time order
/// to `observer` (wall-clock ns since the threads started), the simulator's tracers
/// included. `window` bounds the recording to what a reader of that window needs.
pub fn run_observed(
    jobs: &[JobSpec],
    policy: &Policy,
    cfg: &RtConfig,
    window: Option<Range<u64>>,
    observer: &mut dyn Observer,
) -> Result<RunReport, RtError> {
    let opts = TraceOptions { on: true, window };
    let (mut report, trace) = run_traced(jobs, policy, cfg, opts)?;
    if let Some(t) = trace {
        let names: Vec<String> = report.vectors.iter().map(|v| v.name.clone()).collect();
        let dropped = replay(t.records, t.t0, &names, report.cpus.len(), observer);
        report
            .extra
            .push(("trace_events_dropped".into(), dropped as f64));
    }
    Ok(report)
}

/// The threads' records and their time origin.
struct Trace {
    records: Vec<Recorder>,
    t0: u64,
}

/// [`run`] under `opts`: the report and, when tracing, the threads' records.
fn run_traced(
    jobs: &[JobSpec],
    policy: &Policy,
    cfg: &RtConfig,
    opts: TraceOptions,
) -> Result<(RunReport, Option<Trace>), RtError> {
    check_inputs(jobs, policy, cfg)?;
    let file = open_file_target(jobs, cfg)?;
    // Device vectors end where the delivery path's system vectors begin.
    let first_system_vector = DeliveryPath::for_delivery(policy.delivery, 0)
        .map_or(irqlab_core::posted::FIRST_SYSTEM_VECTOR, |p| {
            p.first_system_vector()
        });
    let topo = Topology::build(
        jobs,
        Placement {
            cpu_threads: cfg.cpu_threads,
            all_polled: !policy.delivery.takes_interrupts(),
            hybrid: policy.delivery == Delivery::Hybrid,
            span: file.as_ref().map_or(cfg.namespace_bytes, |f| f.size),
            first_system_vector,
        },
    )?;
    let mut events = Events::plan(&cfg.events, policy, &topo, first_system_vector)?;
    let cpus = cpu_shared(&topo, policy, cfg)?;
    let gsim = gsim_global(policy)?;
    // Trace time 0: just before the threads start.
    let t_trace = now_ns();
    let spec = if opts.on {
        TraceSpec::on(t_trace, opts.window.clone())
    } else {
        TraceSpec::default()
    };
    let ctrl_threads = controller_threads(&topo, &cpus, policy, cfg, &file, spec)?;
    attach_live(cfg, &topo, &cpus)?;
    let pins = HostPins::new(cfg);
    let launch = CpuLaunch {
        policy: *policy,
        cfg,
        topo: &topo,
        gsim: &gsim,
        spec,
        min_ramp: min_ramp(&topo),
        pins: &pins,
    };
    let ran = run_threads(&cpus, ctrl_threads, &launch, &mut events);
    if ran.stalled {
        return Err(RtError::Stalled {
            secs: cfg.stall_timeout_ns / 1_000_000_000,
        });
    }
    let gathered = ran.gathered;
    if let Some(e) = gathered.media_errors.into_iter().next() {
        return Err(e);
    }
    let cpu_results: Vec<CpuResult> = ran.cpu_results.into_iter().collect::<Result<_, _>>()?;
    let wakeups = total_wakeups(&cpus, &cpu_results);
    let counters: Vec<((usize, usize), VectorCounters)> = ran.counters;
    let trace = opts.on.then_some(Trace {
        records: gathered.records,
        t0: t_trace,
    });
    let report = build_report(
        jobs,
        policy,
        cfg,
        &topo,
        &cpu_results,
        &counters,
        &Measured {
            wall_ns: ran.wall_ns,
            wakeups,
            usage: ran.usage,
            pinned: cfg.pin && gathered.pin_errors.is_empty(),
            window_start: ran.t0.saturating_add(launch.min_ramp),
            host_cpus: pins.host.len(),
            controller_off_cpu_ns: gathered.ctrl_off_cpu_ns,
            lost_wakeups: ran.audit.lost(),
            media: file.map_or_else(|| cfg.media.describe(), |f| f.describe()),
            events: (!cfg.events.is_empty()).then_some(events.counts),
        },
    );
    Ok((report, trace))
}

/// Refuses a policy, configuration or job file the runtime cannot run.
fn check_inputs(jobs: &[JobSpec], policy: &Policy, cfg: &RtConfig) -> Result<(), RtError> {
    check_policy(policy)?;
    cfg.check()?;
    if jobs.is_empty() {
        return Err(RtError::Refused("the job file defines no job".into()));
    }
    crate::fio_options::refuse_unmodelled(jobs)?;
    crate::fio_options::refuse_engines(jobs, policy)?;
    crate::fio_options::refuse_unfit_times(jobs)?;
    Ok(())
}

/// Opens `--media file:PATH`, sized for the largest block and any write; `None` for a
/// modelled medium.
fn open_file_target(jobs: &[JobSpec], cfg: &RtConfig) -> Result<Option<Arc<FileTarget>>, RtError> {
    Ok(match &cfg.media {
        Media::Model(_) => None,
        Media::File(path) => {
            let max_bs = jobs.iter().map(|j| j.bs.max(1)).max().unwrap_or(1);
            let aligned = jobs.iter().all(|j| j.bs.is_multiple_of(512));
            let write = jobs.iter().any(|j| j.rw.read_pct() < 100);
            Some(Arc::new(
                FileTarget::open(path, cfg.media_size, max_bs, aligned, write, &cfg.stop)
                    .map_err(RtError::Media)?,
            ))
        }
    })
}

/// The state each CPU thread shares with the controllers and its kernel threads: its
/// queues, numbered into one vector space across the CPUs.
fn cpu_shared(topo: &Topology, policy: &Policy, cfg: &RtConfig) -> Result<Arc<Cpus>, RtError> {
    let mut cpus = Vec::new();
    let mut vector_base = 0;
    let n = topo.cpus.len();
    for (i, plan) in topo.cpus.iter().enumerate() {
        let queues = plan
            .queues
            .iter()
            .map(|q| QueueShared::new(q.clone(), i, n))
            .collect::<Result<Vec<_>, _>>()?;
        let mut shared = CpuShared::new(
            i,
            DeliveryPath::for_delivery(policy.delivery, i as u32),
            queues,
        );
        shared.vector_base = vector_base;
        vector_base += plan.queues.len();
        if cfg.lazy_wake {
            shared.notifier = crate::wake::Notifier::lazy();
        }
        cpus.push(Arc::new(shared));
    }
    Ok(cpus.into())
}

/// GSIM's global half, when the policy's moderator is GSIM.
fn gsim_global(policy: &Policy) -> Result<Option<Arc<Mutex<GsimGlobal>>>, RtError> {
    // GSIM's global half (irq_mod_info), shared by every CPU thread; the parameters the
    // patch suggests, as the simulator uses.
    Ok((policy.moderator == ModeratorKind::Gsim)
        .then(|| GsimGlobal::new(GsimParams::suggested()))
        .transpose()
        .map_err(|e| RtError::Refused(format!("gsim: {e}")))?
        .map(|g| Arc::new(Mutex::new(g))))
}

/// Every controller with its queues and media, dealt round-robin over the controller
/// threads.
fn controller_threads(
    topo: &Topology,
    cpus: &Arc<Cpus>,
    policy: &Policy,
    cfg: &RtConfig,
    file: &Option<Arc<FileTarget>>,
    spec: TraceSpec,
) -> Result<Vec<Vec<Controller>>, RtError> {
    let mut ctrl_threads: Vec<Vec<Controller>> =
        (0..cfg.controller_threads).map(|_| Vec::new()).collect();
    for c in 0..topo.controllers.len() {
        let queues: Vec<(Arc<CpuShared>, usize)> = cpus
            .iter()
            .flat_map(|cpu| {
                cpu.queues
                    .iter()
                    .enumerate()
                    .filter(|(_, q)| q.plan.controller == c)
                    .map(|(qi, _)| (cpu.clone(), qi))
                    .collect::<Vec<_>>()
            })
            .collect();
        let media = match (&cfg.media, file) {
            (Media::File(_), Some(target)) => {
                let depth: u32 = queues
                    .iter()
                    .map(|(cpu, qi)| cpu.queues[*qi].plan.q_depth)
                    .sum();
                Backend::File(Box::new(UringMedia::new(target.clone(), depth)?))
            }
            (Media::Model(m), _) => Backend::model(MediaClock::new(*m)),
            (Media::File(p), None) => {
                return Err(RtError::Media(format!(
                    "--media file:{}: not opened",
                    p.display()
                )));
            }
        };
        ctrl_threads[c % cfg.controller_threads].push(Controller::new(
            media,
            queues,
            cpus.clone(),
            policy,
            spec,
        ));
    }
    Ok(ctrl_threads)
}

/// Hands the live counters the CPUs, the vectors' names and the I/Os the run will
/// complete (when known), so they can be read while it runs.
fn attach_live(cfg: &RtConfig, topo: &Topology, cpus: &Cpus) -> Result<(), RtError> {
    if let Some(live) = &cfg.live {
        let names = topo
            .cpus
            .iter()
            .flat_map(|p| p.queues.iter())
            .map(|q| q.name(&topo.controllers[q.controller]))
            .collect();
        live.attach(cpus.to_vec(), names, expected_ios(topo))?;
    }
    Ok(())
}

/// The host CPUs the threads are pinned to with `--pin`: the CPU threads first, then
/// the controller threads, wrapping around the host.
struct HostPins {
    on: bool,
    host: Vec<usize>,
    cpu_threads: usize,
}

impl HostPins {
    fn new(cfg: &RtConfig) -> HostPins {
        HostPins {
            on: cfg.pin,
            host: allowed_cpus(),
            cpu_threads: cfg.cpu_threads,
        }
    }

    fn cpu(&self, i: usize) -> Option<usize> {
        self.on.then(|| self.host[i % self.host.len()])
    }

    fn controller(&self, t: usize) -> Option<usize> {
        self.on
            .then(|| self.host[(self.cpu_threads + t) % self.host.len()])
    }
}

/// The measured window opens after the shortest ramp_time: the CPU rows cover it.
fn min_ramp(topo: &Topology) -> u64 {
    topo.cpus
        .iter()
        .flat_map(|c| c.clones.iter())
        .map(|c| c.plan.ramp_ns)
        .min()
        .unwrap_or(0)
}

/// What every CPU thread starts from.
struct CpuLaunch<'a> {
    policy: Policy,
    cfg: &'a RtConfig,
    topo: &'a Topology,
    gsim: &'a Option<Arc<Mutex<GsimGlobal>>>,
    spec: TraceSpec,
    min_ramp: u64,
    pins: &'a HostPins,
}

/// What the run's threads share: the start barrier and time, and the flags that end
/// the run.
struct RunSync {
    abort: AtomicBool,
    stop: AtomicBool,
    running: AtomicUsize,
    barrier: Barrier,
    start_cell: AtomicU64,
}

/// What the threads hand back besides their results, in the order they were joined:
/// the CPU threads first, then the controller threads.
#[derive(Default)]
struct Gathered {
    pin_errors: Vec<RtError>,
    media_errors: Vec<RtError>,
    records: Vec<Recorder>,
    ctrl_off_cpu_ns: u64,
}

/// What a controller thread hands back.
struct ControllerOut {
    counters: Vec<((usize, usize), VectorCounters)>,
    pinned: Option<RtError>,
    errors: Vec<RtError>,
    recs: Vec<Recorder>,
    off_cpu: u64,
}

type CpuOut = (Result<(CpuResult, Vec<Recorder>), RtError>, Option<RtError>);

/// What the threads of one run measured.
struct Ran {
    cpu_results: Vec<Result<CpuResult, RtError>>,
    counters: Vec<((usize, usize), VectorCounters)>,
    stalled: bool,
    /// The run's start, as every thread saw it.
    t0: u64,
    wall_ns: u64,
    usage: Usage,
    audit: WakeAudit,
    gathered: Gathered,
}

/// Starts the controller threads, then the CPU threads, releases them together, watches
/// them to their end, then stops and joins the controllers.
fn run_threads(
    cpus: &Arc<Cpus>,
    ctrl_threads: Vec<Vec<Controller>>,
    launch: &CpuLaunch,
    events: &mut Events,
) -> Ran {
    let cfg = launch.cfg;
    let sync = RunSync {
        abort: AtomicBool::new(false),
        stop: AtomicBool::new(false),
        running: AtomicUsize::new(cpus.len()),
        barrier: Barrier::new(cpus.len() + ctrl_threads.len() + 1),
        start_cell: AtomicU64::new(0),
    };
    let mut gathered = Gathered::default();
    let mut audit = WakeAudit::default();
    let u0 = Usage::process();
    let mut t0 = 0;
    let (cpu_results, counters, stalled) = std::thread::scope(|s| {
        let ctrl_handles = spawn_controllers(s, ctrl_threads, &sync, launch.pins);
        let cpu_handles = spawn_cpus(s, cpus, &sync, launch);
        t0 = release(&sync.barrier, &sync.start_cell);
        if let Some(live) = &cfg.live {
            live.mark_start(t0);
        }
        let stalled = watch(
            cpus,
            &sync.running,
            &sync.abort,
            cfg.stall_timeout_ns,
            &mut audit,
            (t0, events),
        );
        let cpu_results = join_cpus(cpu_handles, &mut gathered);
        if let Some(live) = &cfg.live {
            live.mark_end(now_ns());
        }
        sync.stop.store(true, SeqCst);
        let counters = join_controllers(ctrl_handles, &mut gathered);
        (cpu_results, counters, stalled)
    });
    let wall_ns = now_ns() - t0;
    let usage = Usage::process().since(&u0);
    Ran {
        cpu_results,
        counters,
        stalled,
        t0,
        wall_ns,
        usage,
        audit,
        gathered,
    }
}

/// Starts one thread per group of controllers: each waits at the start barrier, then
/// runs its controllers until `stop`.
fn spawn_controllers<'scope>(
    s: &'scope Scope<'scope, '_>,
    ctrl_threads: Vec<Vec<Controller>>,
    sync: &'scope RunSync,
    pins: &HostPins,
) -> Vec<ScopedJoinHandle<'scope, ControllerOut>> {
    let mut ctrl_handles = Vec::new();
    for (t, mut ctrls) in ctrl_threads.into_iter().enumerate() {
        let (barrier, stop, start_cell) = (&sync.barrier, &sync.stop, &sync.start_cell);
        let pin = pins.controller(t);
        ctrl_handles.push(s.spawn(move || {
            let pinned = pin.map(pin_current).transpose().err();
            release(barrier, start_cell);
            let off_cpu = run_controllers(&mut ctrls, stop);
            let counters: Vec<_> = ctrls.iter().flat_map(Controller::counters).collect();
            let errors: Vec<RtError> = ctrls
                .iter()
                .filter_map(Controller::media_error)
                .map(RtError::Media)
                .collect();
            let recs: Vec<Recorder> = ctrls.iter_mut().map(Controller::take_record).collect();
            ControllerOut {
                counters,
                pinned,
                errors,
                recs,
                off_cpu,
            }
        }));
    }
    ctrl_handles
}

/// Starts one thread per emulated CPU: each waits at the start barrier, then runs its
/// job clones to their end.
fn spawn_cpus<'scope>(
    s: &'scope Scope<'scope, '_>,
    cpus: &Arc<Cpus>,
    sync: &'scope RunSync,
    launch: &CpuLaunch,
) -> Vec<ScopedJoinHandle<'scope, CpuOut>> {
    let mut cpu_handles = Vec::new();
    for i in 0..cpus.len() {
        let (barrier, abort, running, start_cell) =
            (&sync.barrier, &sync.abort, &sync.running, &sync.start_cell);
        let all = cpus.clone();
        let plans = launch.topo.cpus[i].clones.clone();
        let pin = launch.pins.cpu(i);
        let seed = launch.cfg.seed;
        let policy = launch.policy;
        let gsim = launch.gsim.clone();
        let stop = launch.cfg.stop.clone();
        let (spec, min_ramp) = (launch.spec, launch.min_ramp);
        cpu_handles.push(s.spawn(move || {
            let pinned = pin.map(pin_current).transpose().err();
            let run_start = release(barrier, start_cell);
            let clock = RunClock {
                start: run_start,
                window_start: run_start.saturating_add(min_ramp),
            };
            // As in fio, a job's runtime counts from when its thread starts it: on a
            // loaded host that can be well after the run's start.
            let start = now_ns();
            let jobs = job_runs(plans, seed, start);
            let result = CpuThread::new(all, i, policy, jobs, gsim, spec, clock)
                .map(|t| t.run(abort, &stop));
            running.fetch_sub(1, SeqCst);
            (result, pinned)
        }));
    }
    cpu_handles
}

/// The job clones of one CPU thread, each with its own seed, their runtime counted
/// from `start`.
fn job_runs(plans: Vec<ClonePlan>, seed: u64, start: u64) -> Vec<JobRun> {
    plans
        .into_iter()
        .enumerate()
        .map(|(slot, c)| {
            let s = seed
                ^ ((c.plan.job as u64) << 32 | u64::from(c.clone))
                    .wrapping_mul(0x9e37_79b9_7f4a_7c15);
            JobRun::new(c.plan, slot as u32, s, start)
        })
        .collect()
}

/// Joins the CPU threads in order; a panicked one is an error in its place.
fn join_cpus(
    cpu_handles: Vec<ScopedJoinHandle<'_, CpuOut>>,
    gathered: &mut Gathered,
) -> Vec<Result<CpuResult, RtError>> {
    let mut cpu_results = Vec::new();
    for h in cpu_handles {
        let (r, pinned) = h.join().unwrap_or((Err(RtError::Panicked("CPU")), None));
        gathered.pin_errors.extend(pinned);
        cpu_results.push(r.map(|(res, recs)| {
            gathered.records.extend(recs);
            res
        }));
    }
    cpu_results
}

/// Joins the controller threads in order and returns their device counters; a panicked
/// one is a media error.
fn join_controllers(
    ctrl_handles: Vec<ScopedJoinHandle<'_, ControllerOut>>,
    gathered: &mut Gathered,
) -> Vec<((usize, usize), VectorCounters)> {
    let mut counters = Vec::new();
    for h in ctrl_handles {
        match h.join() {
            Ok(out) => {
                gathered.ctrl_off_cpu_ns += out.off_cpu;
                counters.extend(out.counters);
                gathered.pin_errors.extend(out.pinned);
                gathered.media_errors.extend(out.errors);
                gathered.records.extend(out.recs);
            }
            Err(_) => gathered.media_errors.push(RtError::Panicked("controller")),
        }
    }
    counters
}

/// Wake-ups of the CPU threads and of their kernel threads.
fn total_wakeups(cpus: &Cpus, cpu_results: &[CpuResult]) -> u64 {
    // Waking a kernel thread (irq thread, ksoftirqd, kworker) is a wake-up too.
    cpus.iter().map(|c| c.notifier.wakeups()).sum::<u64>()
        + cpu_results
            .iter()
            .map(|c| c.irq_thread_wakeups + c.ksoftirqd_wakeups + c.kworker_wakeups)
            .sum::<u64>()
}

/// Waits at the start barrier and returns the run's start: the time the last thread
/// arrived (it reads the clock; the others wait for it), the same for every thread.
fn release(barrier: &Barrier, start: &AtomicU64) -> u64 {
    if barrier.wait().is_leader() {
        start.store(now_ns().max(1), Release);
    }
    loop {
        let t = start.load(Acquire);
        if t != 0 {
            return t;
        }
        std::thread::yield_now();
    }
}

/// I/Os the run completes when every clone is bounded by I/O count alone.
fn expected_ios(topo: &Topology) -> Option<u64> {
    topo.cpus
        .iter()
        .flat_map(|c| c.clones.iter())
        .map(|c| match (c.plan.limit_ios, c.plan.limit_ns) {
            (Some(n), None) => Some(n),
            _ => None,
        })
        .sum()
}

/// Waits for the CPU threads, auditing their sleeps for lost wake-ups and carrying out
/// the `--event`s when due (ns after the run's start `t0`); aborts them when no CQ head
/// doorbell moved for `timeout_ns`. Returns whether it had to abort.
fn watch(
    cpus: &Cpus,
    running: &AtomicUsize,
    abort: &AtomicBool,
    timeout_ns: u64,
    audit: &mut WakeAudit,
    (t0, events): (u64, &mut Events),
) -> bool {
    let progress = || -> u64 {
        cpus.iter()
            .flat_map(|c| c.queues.iter())
            .map(|q| q.qp.cq.doorbell_writes() + u64::from(q.qp.sq.sq_tail()))
            .sum()
    };
    let mut last = progress();
    let mut since = now_ns();
    const INTERVAL_NS: u64 = 20_000_000;
    while running.load(SeqCst) > 0 {
        let now = now_ns() - t0;
        let wait = events
            .next_at()
            .map_or(INTERVAL_NS, |at| at.saturating_sub(now).min(INTERVAL_NS));
        std::thread::sleep(std::time::Duration::from_nanos(wait));
        events.apply_due(now_ns() - t0, cpus);
        audit.check(cpus);
        let p = progress();
        if p != last {
            last = p;
            since = now_ns();
        } else if now_ns() - since > timeout_ns {
            abort.store(true, SeqCst);
            for c in cpus {
                c.notifier.notify();
            }
            while running.load(SeqCst) > 0 {
                std::thread::sleep(std::time::Duration::from_millis(5));
            }
            return true;
        }
    }
    false
}
