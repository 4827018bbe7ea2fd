//! Turns what the threads measured into the shared [`RunReport`], so `irqlab rt` prints
//! the same report and JSON as `irqlab run`, plus the host measures only it has.

use crate::config::RtConfig;
use crate::cpu::CpuResult;
use crate::cpu_time::settle;
use crate::ctrl::VectorCounters;
use crate::events::EventCounts;
use crate::job::JobStats;
use crate::media::Media;
use crate::topology::Topology;
use crate::usage::Usage;
use irqlab_core::irq_poll::IrqPollUntil;
use irqlab_core::{Delivery, HandlerStyle, ModeratorKind, Policy};
use irqlab_fio::{JobSpec, RunPlan};
use irqlab_report::observe::SliceKind;
use irqlab_report::{
    CHIP_POLLED, CpuReport, DirReport, Engine, HostMeasures, JobReport, Latency, RunReport,
    VectorReport, pci_address,
};

/// Process-wide measures of one run.
#[derive(Clone, Debug)]
pub struct Measured {
    pub wall_ns: u64,
    pub wakeups: u64,
    /// getrusage(RUSAGE_SELF) over the run: every thread, controllers included.
    pub usage: Usage,
    pub pinned: bool,
    /// When the measured window opens (monotonic ns): the run's start plus the shortest
    /// ramp_time. It ends when the last CPU thread ends.
    pub window_start: u64,
    pub host_cpus: usize,
    /// The media as the platform line shows it (a file says O_DIRECT or why not).
    pub media: String,
    /// Time the controller threads spent off their CPUs (they spin: any gap is the
    /// host taking the CPU away), summed over the threads.
    pub controller_off_cpu_ns: u64,
    /// CPU threads found asleep next to work whose delivery had ended (must stay 0).
    pub lost_wakeups: u64,
    /// What the `--event`s did, when the run had some.
    pub events: Option<EventCounts>,
}

fn merge_dir(into: &mut DirReport, from: &DirReport, window_ns: u64) {
    into.total_ios += from.total_ios;
    into.io_bytes += from.io_bytes;
    into.slat.merge(&from.slat);
    into.clat.merge(&from.clat);
    into.lat.merge(&from.lat);
    if from.total_ios > 0 {
        into.runtime_ns = into.runtime_ns.max(window_ns);
    }
}

/// One clone's stats with its share of its CPU thread's CPU time.
struct CloneOut<'a> {
    job: usize,
    /// Its index in the run's plan.
    instance: usize,
    stats: &'a JobStats,
    window_ns: u64,
    usr_ns: u64,
    sys_ns: u64,
    ctx: u64,
}

/// Splits each CPU thread's usage over its clones by the I/Os each completed.
fn clone_outputs<'a>(topo: &Topology, cpus: &'a [CpuResult]) -> Vec<CloneOut<'a>> {
    let mut out = Vec::new();
    for r in cpus {
        let ios = |s: &JobStats| s.read.total_ios + s.write.total_ios;
        let total: u64 = r.clones.iter().map(|(_, s, _, _)| ios(s)).sum();
        let n = r.clones.len() as u64;
        for (slot, stats, start, end) in &r.clones {
            let share = |v: u64| {
                if total == 0 {
                    v / n.max(1)
                } else {
                    (u128::from(v) * u128::from(ios(stats)) / u128::from(total)) as u64
                }
            };
            let plan = &topo.cpus[r.index].clones[*slot];
            let window_ns = end - start;
            // The thread's usage spans its whole life: within the window it can have had
            // at most the window's length (a 1 µs window showed 150% usr).
            let (usr, sys) = (share(r.usage.usr_ns), share(r.usage.sys_ns));
            let (usr_ns, sys_ns) = match usr.checked_add(sys) {
                Some(cpu) if cpu <= window_ns => (usr, sys),
                _ => {
                    let cpu = u128::from(usr) + u128::from(sys);
                    let usr_in = (u128::from(usr) * u128::from(window_ns) / cpu.max(1)) as u64;
                    (usr_in, window_ns - usr_in)
                }
            };
            out.push(CloneOut {
                job: plan.plan.job,
                instance: plan.instance,
                stats,
                window_ns,
                usr_ns,
                sys_ns,
                ctx: share(r.usage.ctx()),
            });
        }
    }
    out
}

/// One report per clone in fio's job order, summed by fio's group_reporting rules.
fn job_reports(
    jobs: &[JobSpec],
    plan: &RunPlan,
    clones: &[CloneOut],
    start_ns: u64,
) -> Vec<JobReport> {
    let mut order: Vec<&CloneOut> = clones.iter().collect();
    order.sort_by_key(|c| c.instance);
    let mut thread_number = 0;
    let out = order
        .into_iter()
        .map(|c| {
            let spec = &jobs[c.job];
            thread_number += 1;
            let mut r = JobReport {
                name: spec.name.clone(),
                groupid: plan.section_of(c.instance).group,
                members: 1,
                thread_number,
                group_reporting: spec.group_reporting,
                description: spec.description.clone(),
                options: spec.job_options(),
                usr_ns: c.usr_ns,
                sys_ns: c.sys_ns,
                ctx: c.ctx,
                runtime_ns: c.window_ns,
                iodepth_level: c.stats.iodepth_level,
                job_start_ns: start_ns,
                latency_depth: spec.effective_iodepth(),
                clat_percentiles: spec.clat_percentiles,
                ..JobReport::default()
            };
            merge_dir(&mut r.read, &c.stats.read, c.window_ns);
            merge_dir(&mut r.write, &c.stats.write, c.window_ns);
            r
        })
        .collect();
    irqlab_report::group_reporting(out)
}

/// CPU time of a CPU thread's kernel threads (irq thread, ksoftirqd, kworker).
fn kernel_threads_usage(r: &CpuResult) -> [Usage; 3] {
    [r.irq_thread.usage, r.ksoftirqd.usage, r.kworker.usage]
}

/// Per CPU thread, its row over the measured window (which ends at `window_end`) and
/// the time the host stole from it: the CPU's clock time by kind ([`crate::cpu_time`])
/// settled against the CPU time its threads got ([`settle`]). Row and stolen time add
/// up to the window exactly.
fn cpu_reports(cpus: &[CpuResult], window_end: u64) -> (Vec<CpuReport>, Vec<u64>) {
    let mut stolen = Vec::new();
    let rows = cpus
        .iter()
        .map(|r| {
            let (kept, lost) = settle(&r.time.over(window_end), r.window_cpu_ns);
            stolen.push(lost);
            CpuReport {
                cpu: r.index,
                usr_ns: kept.get(SliceKind::Usr),
                // Polling the CQs, the kworker's work items, the halt's system calls.
                sys_ns: kept.get(SliceKind::Sys),
                hardirq_ns: kept.get(SliceKind::HardIrq),
                softirq_ns: kept.get(SliceKind::SoftIrq),
                ksoftirqd_ns: kept.get(SliceKind::Ksoftirqd),
                irq_thread_ns: kept.get(SliceKind::IrqThread),
                idle_ns: kept.get(SliceKind::Idle),
                ctx_switches: r.usage.ctx()
                    + kernel_threads_usage(r).iter().map(Usage::ctx).sum::<u64>(),
                hardirqs: r.hardirqs,
                pmn: r.pmn,
                timer_ticks: r.timer_ticks,
                tick_lateness: r.tick_lateness.clone(),
                ksoftirqd_wakeups: r.ksoftirqd_wakeups,
            }
        })
        .collect();
    (rows, stolen)
}

fn vector_reports(
    policy: &Policy,
    topo: &Topology,
    cpus: &[CpuResult],
    counters: &[((usize, usize), VectorCounters)],
) -> Vec<VectorReport> {
    let mut out = Vec::new();
    for (c, plan) in topo.cpus.iter().enumerate() {
        for (q, qp) in plan.queues.iter().enumerate() {
            let chip = match policy.delivery.chip() {
                Some(chip) if !qp.polled => chip.name(),
                _ => CHIP_POLLED,
            };
            let dev = counters
                .iter()
                .find(|(k, _)| *k == (c, q))
                .map(|(_, v)| *v)
                .unwrap_or_default();
            let mut per_cpu = cpus[c].vec_handled_on.get(q).cloned().unwrap_or_default();
            per_cpu.resize(topo.cpus.len(), 0);
            out.push(VectorReport {
                name: qp.name(&topo.controllers[qp.controller]),
                chip: chip.to_string(),
                device: pci_address(qp.controller),
                hwirq: u32::from(qp.qid),
                messages: dev.messages,
                per_cpu,
                device_coalesced: dev.coalesced,
                completions: cpus[c].vec_completions[q],
                moderation: cpus[c].moderation.get(q).cloned().flatten(),
            });
        }
    }
    out
}

fn ratio(a: u64, b: u64) -> f64 {
    if b == 0 { 0.0 } else { a as f64 / b as f64 }
}

/// Counters of the mechanisms the policy turned on, in a stable order.
fn mechanism_counters(policy: &Policy, cpus: &[CpuResult]) -> Vec<(String, f64)> {
    let sum = |f: &dyn Fn(&CpuResult) -> u64| cpus.iter().map(f).sum::<u64>() as f64;
    let mut out: Vec<(String, f64)> = Vec::new();
    let mut push = |k: &str, v: f64| out.push((k.to_string(), v));
    if matches!(policy.handler, HandlerStyle::IrqPoll { .. }) {
        push("softirq_invocations", sum(&|c| c.softirq.invocations));
        push("softirq_restarts", sum(&|c| c.softirq.restarts));
        push("softirq_handovers", sum(&|c| c.softirq.ksoftirqd_wakeups));
        push("ksoftirqd_runs", sum(&|c| c.ksoftirqd.runs));
        push("ksoftirqd_completions", sum(&|c| c.ksoftirqd.completions));
        push("irq_poll_polls", sum(&|c| c.irq_poll.polls));
        push(
            "irq_poll_budget_exhausted",
            sum(&|c| c.irq_poll.budget_exhausted),
        );
        push("irq_poll_time_limit", sum(&|c| c.irq_poll.time_limit));
    }
    if policy.irq_poll_until == IrqPollUntil::Resched {
        push("irq_poll_need_resched", sum(&|c| c.irq_poll.need_resched));
    }
    if let HandlerStyle::NapiDefer { .. } = policy.handler {
        push("softirq_invocations", sum(&|c| c.softirq.invocations));
        push("ksoftirqd_runs", sum(&|c| c.ksoftirqd.runs));
        push("irq_poll_polls", sum(&|c| c.irq_poll.polls));
        push("napi_deferrals", sum(&|c| c.napi_deferrals));
    }
    if !matches!(
        policy.handler,
        HandlerStyle::Hardirq | HandlerStyle::Threaded
    ) || policy.moderator == ModeratorKind::Gsim
    {
        push("irq_pended", sum(&|c| c.held_disabled));
        push("irq_resent", sum(&|c| c.resent));
    }
    if let Some((mode, _)) = policy.delivery.posted_mode() {
        if mode.self_ipi {
            push("self_ipis", sum(&|c| c.self_ipis));
        }
        if mode.preemptable {
            push("demux_preempted", sum(&|c| c.preempted));
        }
    }
    if policy.handler == HandlerStyle::Threaded {
        push(
            "irq_thread_fifo",
            f64::from(u8::from(cpus.iter().all(|c| c.irq_thread.fifo))),
        );
        push("irq_thread_cq_busy", sum(&|c| c.irq_thread.cq_busy));
    }
    if !matches!(policy.moderator, ModeratorKind::None | ModeratorKind::Gsim) {
        let mut delay = Latency::new();
        for c in cpus {
            delay.merge(&c.kworker.delay);
        }
        push("kworker_wakeups", sum(&|c| c.kworker_wakeups));
        push("moderator_work_items", delay.count() as f64);
        push("moderator_work_delay_mean_ns", delay.mean().round());
        push("moderator_work_delay_p99_ns", delay.percentile(99.0) as f64);
        push("moderator_work_delay_max_ns", delay.max() as f64);
    }
    if policy.moderator == ModeratorKind::Gsim {
        let g = |f: &dyn Fn(&irqlab_core::gsim::GsimStats) -> u32| {
            cpus.iter()
                .filter_map(|c| c.gsim.as_ref())
                .map(|s| u64::from(f(s)))
                .sum::<u64>() as f64
        };
        push("gsim_disables", sum(&|c| c.gsim_disables));
        push("gsim_timer_set", g(&|s| s.timer_set));
        push("gsim_enqueue", g(&|s| s.enqueue));
        push("gsim_epochs", g(&|s| s.epochs));
    }
    if policy.flood_detection {
        let avg = cpus
            .iter()
            .filter_map(|c| c.flood_avg_interval_ns)
            .min()
            .unwrap_or(0);
        push("flood_min_avg_interval_ns", avg as f64);
        push("flooded_interrupts", sum(&|c| c.flooded_interrupts));
        // Every runtime queue serves one CPU thread: no vector asks for a rescue thread.
        push("flood_rescued", 0.0);
    }
    if policy.delivery == Delivery::Hybrid {
        push("hybrid_sleeps", sum(&|c| c.hybrid_sleeps));
        push("hybrid_sleep_ns", sum(&|c| c.hybrid_sleep_ns));
    }
    out
}

/// The whole report.
pub fn build_report(
    jobs: &[JobSpec],
    policy: &Policy,
    cfg: &RtConfig,
    topo: &Topology,
    cpus: &[CpuResult],
    counters: &[((usize, usize), VectorCounters)],
    m: &Measured,
) -> RunReport {
    let clones = clone_outputs(topo, cpus);
    // The wall clock of the report, and of the start (the run's length before it).
    let end_ns = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    let job_reports = job_reports(jobs, &topo.plan, &clones, end_ns.saturating_sub(m.wall_ns));
    // The measured window: from the shortest ramp's end to the last CPU thread's end.
    let window_end = cpus
        .iter()
        .map(|c| c.time.closed_at)
        .max()
        .unwrap_or(0)
        .max(m.window_start);
    let duration_ns = window_end - m.window_start;
    let (cpu_rows, cpu_stolen_ns) = cpu_reports(cpus, window_end);
    let totals = Totals::of(policy, cpus, &clones, &job_reports);
    let mut extra = setup_counters(cfg, m);
    extra.extend(cost_counters(cfg, cpus, m, &totals));
    extra.extend(path_counters(cpus, counters, m));
    extra.extend(mechanism_counters(policy, cpus));
    if let Some(e) = m.events {
        extra.extend([
            (
                irqlab_report::EXTRA_IRQ_MIGRATIONS.to_string(),
                e.migrations as f64,
            ),
            (
                irqlab_report::EXTRA_CPUS_OFFLINED.to_string(),
                e.offlined as f64,
            ),
            (
                irqlab_report::EXTRA_OFFLINE_RETRIGGERED.to_string(),
                e.retriggered as f64,
            ),
            (
                irqlab_report::EXTRA_VECTOR_CLEANUP_REARMS.to_string(),
                cpus.iter().map(|c| c.cleanup_rearms).sum::<u64>() as f64,
            ),
        ]);
    }
    if cpus.iter().any(|c| c.interrupted) {
        extra.push((irqlab_report::EXTRA_INTERRUPTED.to_string(), 1.0));
    }
    RunReport {
        engine: Engine::RealThreads,
        platform: platform_line(cfg, m),
        policy: policy.describe(),
        seed: cfg.seed,
        duration_ns,
        end_ns,
        global_options: irqlab_fio::global_options(jobs),
        jobs: job_reports,
        disks: Vec::new(),
        cpus: cpu_rows,
        vectors: vector_reports(policy, topo, cpus, counters),
        measured: Some(HostMeasures {
            wall_ns: m.wall_ns,
            wakeups: m.wakeups,
            voluntary_ctx: m.usage.voluntary_ctx,
            involuntary_ctx: m.usage.involuntary_ctx,
            usr_ns: m.usage.usr_ns,
            sys_ns: m.usage.sys_ns,
            cpu_stolen_ns,
        }),
        extra,
        notes: Vec::new(),
    }
}

/// The platform line: the host and how the run used it.
fn platform_line(cfg: &RtConfig, m: &Measured) -> String {
    let media = &m.media;
    format!(
        "this host ({} CPUs): {} CPU thread(s), {} controller thread(s), {}, media {}",
        m.host_cpus,
        cfg.cpu_threads,
        cfg.controller_threads,
        if m.pinned { "pinned" } else { "not pinned" },
        media
    )
}

/// The run's totals the cost counters divide.
#[derive(Clone, Copy)]
struct Totals {
    /// I/Os the jobs completed in the measured window.
    window_ios: u64,
    /// Completions reaped over the whole run, by every path.
    completions: u64,
    /// CPU time of the CPU threads and their kernel threads over the run.
    thread_cpu: u64,
    /// CPU time that served the window's I/Os.
    window_cpu: u64,
    notifications: u64,
}

impl Totals {
    fn of(
        policy: &Policy,
        cpus: &[CpuResult],
        clones: &[CloneOut],
        job_reports: &[JobReport],
    ) -> Totals {
        let window_ios: u64 = job_reports
            .iter()
            .map(|j| j.read.total_ios + j.write.total_ios)
            .sum();
        let completions: u64 = cpus
            .iter()
            .flat_map(|c| c.vec_completions.iter())
            .sum::<u64>()
            + cpus.iter().map(|c| c.reaped_after_submit).sum::<u64>();
        let kernel_cpu: u64 = cpus
            .iter()
            .flat_map(kernel_threads_usage)
            .map(|u| u.cpu_ns())
            .sum();
        let thread_cpu: u64 = cpus.iter().map(|c| c.usage.cpu_ns()).sum::<u64>() + kernel_cpu;
        // An emulated CPU's kernel threads work for its I/Os too.
        let window_cpu: u64 = clones.iter().map(|c| c.usr_ns + c.sys_ns).sum::<u64>() + kernel_cpu;
        // The IOMMU's interrupts: posted notifications, or remapped device vectors.
        let notifications: u64 = if policy.delivery.is_posted() {
            cpus.iter().map(|c| c.pmn).sum::<u64>()
        } else {
            cpus.iter().map(|c| c.device_irqs).sum::<u64>()
        };
        Totals {
            window_ios,
            completions,
            thread_cpu,
            window_cpu,
            notifications,
        }
    }
}

/// How the run was set up: threads, pinning, the modelled media.
fn setup_counters(cfg: &RtConfig, m: &Measured) -> Vec<(String, f64)> {
    let (lat, iops) = match &cfg.media {
        Media::Model(mm) => (mm.latency_ns as f64, mm.iops as f64),
        Media::File(_) => (0.0, 0.0),
    };
    vec![
        ("cpu_threads".into(), cfg.cpu_threads as f64),
        ("controller_threads".into(), cfg.controller_threads as f64),
        ("pinned".into(), f64::from(u8::from(m.pinned))),
        ("media_latency_ns".into(), lat),
        ("media_iops".into(), iops),
    ]
}

/// What the completions cost: CPU time, notifications, wake-ups, sleeps, and the
/// controllers' time off their CPUs.
fn cost_counters(
    cfg: &RtConfig,
    cpus: &[CpuResult],
    m: &Measured,
    t: &Totals,
) -> Vec<(String, f64)> {
    let sum = |f: fn(&CpuResult) -> u64| cpus.iter().map(f).sum::<u64>();
    let Totals {
        window_ios,
        completions,
        thread_cpu,
        window_cpu,
        notifications,
    } = *t;
    vec![
        ("completions".into(), completions as f64),
        // CPU threads only: the controllers stand for hardware and spin by design.
        ("cpu_ns_per_io".into(), ratio(window_cpu, window_ios)),
        ("cpu_thread_cpu_ns".into(), thread_cpu as f64),
        (
            "process_cpu_ns_per_io".into(),
            ratio(m.usage.cpu_ns(), completions),
        ),
        ("notifications".into(), notifications as f64),
        (
            "notifications_per_completion".into(),
            ratio(notifications, completions),
        ),
        (
            "wakeups_per_completion".into(),
            ratio(m.wakeups, completions),
        ),
        ("cpu_thread_sleeps".into(), sum(|c| c.sleeps) as f64),
        // Share of the wall time the spinning controllers lost to the host (its other
        // processes, or a hypervisor taking the vCPU away): the device was stopped.
        (
            "controller_off_cpu_pct".into(),
            100.0
                * ratio(
                    m.controller_off_cpu_ns,
                    m.wall_ns * cfg.controller_threads as u64,
                ),
        ),
    ]
}

/// Which path each completion and interrupt took, and the counters that must stay 0.
fn path_counters(
    cpus: &[CpuResult],
    counters: &[((usize, usize), VectorCounters)],
    m: &Measured,
) -> Vec<(String, f64)> {
    let sum = |f: fn(&CpuResult) -> u64| cpus.iter().map(f).sum::<u64>();
    let dev_sum = |f: fn(&VectorCounters) -> u64| counters.iter().map(|(_, v)| f(v)).sum::<u64>();
    vec![
        ("spurious_interrupts".into(), sum(|c| c.spurious) as f64),
        (
            "posted_extra_round_vectors".into(),
            sum(|c| c.posted.extra_round_vectors) as f64,
        ),
        (
            "reaped_after_submit".into(),
            sum(|c| c.reaped_after_submit) as f64,
        ),
        (
            "polled_completions".into(),
            sum(|c| c.polled_completions) as f64,
        ),
        (
            "irq_poll_runs".into(),
            sum(|c| c.irq_poll.softirq_runs) as f64,
        ),
        ("irq_thread_runs".into(), sum(|c| c.irq_thread.runs) as f64),
        (
            "irq_thread_wakeups".into(),
            sum(|c| c.irq_thread_wakeups) as f64,
        ),
        (
            "moderator_programs".into(),
            cpus.iter()
                .flat_map(|c| c.moderation.iter().flatten())
                .map(|m| m.programs)
                .sum::<u64>() as f64,
        ),
        (
            "interrupts_held_disabled".into(),
            sum(|c| c.held_disabled) as f64,
        ),
        ("gated_raises".into(), dev_sum(|v| v.gated) as f64),
        ("stale_raises".into(), dev_sum(|v| v.stale_raises) as f64),
        ("cq_full_stalls".into(), dev_sum(|v| v.cq_full) as f64),
        ("unknown_cqes".into(), sum(|c| c.unknown_cqes) as f64),
        ("lost_wakeups".into(), m.lost_wakeups as f64),
        ("submit_overflow".into(), sum(|c| c.overflow) as f64),
    ]
}
