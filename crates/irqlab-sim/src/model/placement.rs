//! Task placement for threads that may run on any CPU (fio jobs without cpus_allowed):
//! kernel/sched/fair.c select_task_rq_fair, at fork (find_idlest_cpu) and at every
//! wake-up (wake_affine, wake_wide, select_idle_sibling), as v5.3 does it with
//! `cpu.scheduler = "cfs"` and as v6.6 does it with `"eevdf"`. A pinned thread
//! (nr_cpus_allowed == 1: kernel threads, jobs with cpus_allowed) skips the class's
//! placement (kernel/sched/core.c select_task_rq).
//!
//! The waker is the CPU that runs try_to_wake_up and `current` is whatever runs there:
//! a completion interrupt's wake-up charges record_wakee to the interrupted task, or to
//! the idle task of an idle CPU. Loads are PELT's (model/pelt.rs): v5.3 compares
//! runnable loads (cpu_runnable_load), v6.6 the cfs_rq's load_avg with the blocked
//! load of the tasks that last ran there.
//!
//! Not modelled: load balancing (periodic, idle and newly idle), so a runnable task only
//! moves when it wakes; the idle-scan's own time (SIS_PROP's avg_scan_cost is 0, so the
//! v5.3 scan is not shortened by its cost); cpuidle exit latencies (find_idlest_group_cpu
//! picks the most recently idled CPU); CPU capacity below 1024 (RT and IRQ pressure).

use super::ids::{QueueId, ThreadId};
use super::pelt::SCALE;
use super::state::*;
use super::topo::{Level, wrap};
use crate::observer::Observer;
use crate::platform::Scheduler;
use irqlab_core::irq_poll::jiffies;

/// Which kernel's placement rules apply.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Rules {
    /// v5.3 (CFS): wake_affine_idle without the prev-idle clause, wake_affine_weight on
    /// runnable loads, select_idle_sibling with SIS_PROP.
    V5_3,
    /// v6.6 (EEVDF): the prev-idle clause, load_avg, the per-CPU kthread rule, SIS_UTIL.
    V6_6,
}

impl Rules {
    pub fn of(s: Scheduler) -> Rules {
        match s {
            Scheduler::Cfs => Rules::V5_3,
            Scheduler::Eevdf => Rules::V6_6,
        }
    }
}

/// sd_llc_shared of one LLC.
#[derive(Clone, Copy, Debug)]
struct LlcShared {
    /// test_idle_cores / set_idle_cores.
    has_idle_cores: bool,
    /// SIS_UTIL's nr_idle_scan and when update_idle_cpu_scan last ran (v6.6).
    nr_idle_scan: usize,
    scan_at: Option<u64>,
}

/// Placement state of a run with movable threads.
#[derive(Clone, Debug)]
pub(crate) struct Placement {
    rules: Rules,
    llc: Vec<LlcShared>,
}

/// 2 × sysctl_sched_migration_cost: rq->avg_idle's start and (with max_idle_balance_cost
/// at its start) its cap, ns.
pub(crate) const AVG_IDLE_MAX: u64 = 1_000_000;
/// fio's parent, which forks the jobs (the model's choice: CPU 0).
const PARENT_CPU: usize = 0;

impl Placement {
    pub fn new(rules: Rules, llcs: usize) -> Placement {
        Placement {
            rules,
            llc: vec![
                LlcShared {
                    has_idle_cores: true,
                    nr_idle_scan: 0,
                    scan_at: None,
                };
                llcs
            ],
        }
    }
}

/// Who `current` is on a CPU, for record_wakee.
#[derive(Clone, Copy)]
enum Current {
    Idle(usize),
    Task(usize),
}

impl<O: Observer> Sim<'_, O> {
    /// Sets thread `t`'s state, its load tracking brought up to now first (while
    /// placement is on).
    #[inline]
    pub(crate) fn set_state(&mut self, t: usize, state: TState) {
        let tracking = self.place.is_some();
        self.threads[t].set_state(state, self.now, tracking);
    }

    /// Thread `t`'s (load_avg, util_avg) as of now, without storing it.
    fn pelt_now(&self, t: usize) -> (u64, u64) {
        self.threads[t].pelt_at(self.now)
    }

    /// available_idle_cpu: nothing runs and nothing waits (the idle task is current,
    /// even while it takes an interrupt).
    pub(crate) fn idle_cpu(&self, c: usize) -> bool {
        self.cpus[c].rq.is_idle()
    }

    /// v5.3 cpu_runnable_load: the runnable load of the fair tasks enqueued on `c`.
    fn runnable_load(&self, c: usize) -> u64 {
        let cpu = &self.cpus[c];
        cpu.rq
            .current()
            .into_iter()
            .chain(cpu.rq.waiters())
            .map(|t| t.ix())
            .filter(|&t| !self.threads[t].fifo())
            .map(|t| self.pelt_now(t).0)
            .sum()
    }

    /// cfs_rq->avg.load_avg (v6.6 cpu_load) or util_avg of `c`: every fair task whose
    /// CPU it is, a sleeping one's blocked load included.
    fn attached(&self, c: usize) -> (u64, u64) {
        self.threads
            .iter()
            .enumerate()
            .filter(|(_, th)| th.cpu().ix() == c && !th.fifo() && th.state() != TState::Exited)
            .map(|(t, _)| self.pelt_now(t))
            .fold((0, 0), |(l, u), (a, b)| (l + a, u + b))
    }

    /// The load wake_affine_weight compares: v5.3 runnable, v6.6 load_avg.
    fn cpu_load(&self, c: usize, rules: Rules) -> u64 {
        match rules {
            Rules::V5_3 => self.runnable_load(c),
            Rules::V6_6 => self.attached(c).0,
        }
    }

    fn wakee_of(&mut self, who: Current) -> &mut Wakee {
        match who {
            Current::Idle(c) => self.cpus[c].rq.idle_wakee_mut(),
            Current::Task(t) => self.threads[t].wakee_mut(),
        }
    }

    fn current_on(&self, c: usize) -> Current {
        match self.cpus[c].rq.current() {
            Some(t) => Current::Task(t.ix()),
            None => Current::Idle(c),
        }
    }

    /// record_wakee: `current` on the waking CPU flips when it wakes another task than
    /// the last, its flips halved at most once a second.
    fn record_wakee(&mut self, this: usize, p: usize) {
        let j = jiffies(self.now, self.costs.hz);
        let hz = u64::from(self.costs.hz);
        let who = self.current_on(this);
        self.wakee_of(who).record(j, hz, ThreadId::new(p));
    }

    /// wake_wide: the waker and the wakee flip among more partners than an LLC has CPUs,
    /// one a factor of sd_llc_size more than the other: spread, do not pull.
    fn wake_wide(&mut self, this: usize, p: usize) -> bool {
        let who = self.current_on(this);
        let master = self.wakee_of(who).flips();
        let slave = self.threads[p].wakee().flips();
        let (master, slave) = (master.max(slave), master.min(slave));
        let factor = self.topo.llc_size(this) as u32;
        !(slave < factor || master < slave.saturating_mul(factor))
    }

    /// select_task_rq_fair for a wake-up of thread `p` run by CPU `this` (sd_flag
    /// SD_BALANCE_WAKE, which no domain has: the fast path).
    pub(crate) fn select_task_rq(&mut self, p: usize, this: usize) -> usize {
        let rules = self.place.as_ref().map_or(Rules::V6_6, |pl| pl.rules);
        let prev = self.threads[p].cpu().ix();
        self.record_wakee(this, p);
        let want_affine = !self.wake_wide(this, p);
        let mut new = prev;
        // wake_affine only runs for a waker other than prev: the domain search is skipped
        // when they are the same CPU (nothing else reads it).
        if want_affine && this != prev {
            // for_each_domain(this): the lowest domain spanning prev is SD_WAKE_AFFINE.
            let level = self
                .topo
                .levels()
                .iter()
                .find(|l| self.topo.block(l.span, this).contains(&prev))
                .copied();
            if let Some(level) = level {
                new = self.wake_affine(&level, p, this, prev, rules);
            }
        }
        let new = self.select_idle_sibling(p, prev, new, this, rules);
        if want_affine
            && rules == Rules::V5_3
            && let Current::Task(t) = self.current_on(this)
        {
            // v5.3: current->recent_used_cpu = cpu.
            self.threads[t].wakee_mut().set_recent_used_cpu(this);
        }
        new
    }

    /// wake_affine: WA_IDLE, then WA_WEIGHT; prev unless one of them picks `this`.
    fn wake_affine(&self, sd: &Level, p: usize, this: usize, prev: usize, rules: Rules) -> usize {
        let idle = self.wake_affine_idle(this, prev, rules);
        let target = idle.or_else(|| self.wake_affine_weight(sd, p, this, prev, rules));
        match (rules, target) {
            // v5.3: `if (target == nr_cpumask_bits) return prev_cpu; return target;`
            (Rules::V5_3, Some(t)) => t,
            // v6.6: `if (target != this_cpu) return prev_cpu;`
            (Rules::V6_6, Some(t)) if t == this => this,
            _ => prev,
        }
    }

    /// wake_affine_idle: an idle waker implies an interrupt; move only within the cache,
    /// and not when prev is idle too. v6.6 (since v5.10) also keeps an idle prev.
    fn wake_affine_idle(&self, this: usize, prev: usize, rules: Rules) -> Option<usize> {
        if self.idle_cpu(this) && self.topo.share_cache(this, prev) {
            return Some(if self.idle_cpu(prev) { prev } else { this });
        }
        // (sync wake-ups: none in the model; a completion's wake-up is not WF_SYNC.)
        if rules == Rules::V6_6 && self.idle_cpu(prev) {
            return Some(prev);
        }
        None
    }

    /// wake_affine_weight: `this` if its load with the task, biased by half the
    /// domain's imbalance_pct (WA_BIAS), is below prev's without it.
    fn wake_affine_weight(
        &self,
        sd: &Level,
        p: usize,
        this: usize,
        prev: usize,
        rules: Rules,
    ) -> Option<usize> {
        // task_h_load(p): the load it had when it went to sleep.
        let task_load = self.threads[p].load_avg() as i64;
        let cap = SCALE as i64;
        let this_eff = (self.cpu_load(this, rules) as i64 + task_load) * 100 * cap;
        let prev_eff = (self.cpu_load(prev, rules) as i64 - task_load)
            * (100 + (sd.imbalance_pct as i64 - 100) / 2)
            * cap;
        (this_eff < prev_eff).then_some(this)
    }

    /// select_idle_sibling: target or prev if idle, the recently used CPU, then an idle
    /// core, CPU or sibling of the target's LLC; else the target.
    fn select_idle_sibling(
        &mut self,
        p: usize,
        prev: usize,
        target: usize,
        this: usize,
        rules: Rules,
    ) -> usize {
        if self.idle_cpu(target) {
            return target;
        }
        if prev != target && self.topo.share_cache(prev, target) && self.idle_cpu(prev) {
            return prev;
        }
        if rules == Rules::V6_6 && self.per_cpu_kthread_stacks(prev, this) {
            return prev;
        }
        let recent = self.threads[p].wakee().recent_used_cpu();
        let recent_ok = recent != prev
            && recent != target
            && self.topo.share_cache(recent, target)
            && self.idle_cpu(recent);
        if rules == Rules::V6_6 || recent_ok {
            // v5.3 replaces it only when it is taken; v6.6 always.
            self.threads[p].wakee_mut().set_recent_used_cpu(prev);
        }
        if recent_ok {
            return recent;
        }
        let Some(span) = self.topo.llc_span(target) else {
            return target;
        };
        let found = match rules {
            Rules::V5_3 => self
                .select_idle_core_v53(span.clone(), target)
                .or_else(|| self.select_idle_cpu_v53(span, target, this))
                .or_else(|| self.select_idle_smt_v53(target)),
            Rules::V6_6 => {
                let llc = self.llc_index(target);
                let smt = self.topo.smt_active();
                let has_idle_core = smt && self.llc_shared(llc).has_idle_cores;
                let sibling = (smt && !has_idle_core && self.topo.share_cache(prev, target))
                    .then(|| self.select_idle_smt_v66(prev))
                    .flatten();
                sibling.or_else(|| self.select_idle_cpu_v66(span, has_idle_core, target))
            }
        };
        found.unwrap_or(target)
    }

    /// v6.6: "Allow a per-cpu kthread to stack with the wakee if the kworker thread and
    /// the tasks previous CPUs are the same ... An obvious example of this pattern is IO
    /// completions": a pinned kernel thread waking from task context (an irq thread's
    /// function; not ksoftirqd, whose softirq handlers run in_serving_softirq) on prev,
    /// alone on its run queue.
    fn per_cpu_kthread_stacks(&self, prev: usize, this: usize) -> bool {
        let cpu = &self.cpus[this];
        let kthread_in_task = cpu.mode() == Mode::Thread
            && cpu
                .rq
                .current()
                .is_some_and(|t| matches!(self.threads[t.ix()].kind(), ThreadKind::IrqThread(_)));
        // this_rq()->nr_running <= 1: the kthread alone.
        kthread_in_task && prev == this && cpu.rq.no_waiters()
    }

    fn llc_shared(&mut self, llc: usize) -> &mut LlcShared {
        &mut self.place.as_mut().expect("placement is on").llc[llc]
    }

    fn llc_index(&self, c: usize) -> usize {
        c / self.topo.llc_size(0).max(1)
    }

    /// v5.3 select_idle_core: the first whole idle core from the target on, while the LLC
    /// says it has one; none found clears the hint.
    fn select_idle_core_v53(
        &mut self,
        span: std::ops::Range<usize>,
        target: usize,
    ) -> Option<usize> {
        if !self.topo.smt_active() {
            return None;
        }
        let llc = self.llc_index(target);
        if !self.llc_shared(llc).has_idle_cores {
            return None;
        }
        let mut seen = vec![false; span.len()];
        for core in wrap(span.clone(), target) {
            if seen[core - span.start] {
                continue;
            }
            let mut idle = true;
            for cpu in self.topo.core(core) {
                seen[cpu - span.start] = true;
                idle &= self.idle_cpu(cpu);
            }
            if idle {
                return Some(core);
            }
        }
        self.llc_shared(llc).has_idle_cores = false;
        None
    }

    /// v5.3 select_idle_cpu with SIS_PROP: at most span × (avg_idle / 512) / avg_cost
    /// CPUs (at least 4) from the target on; avg_idle is the waker's.
    fn select_idle_cpu_v53(
        &self,
        span: std::ops::Range<usize>,
        target: usize,
        this: usize,
    ) -> Option<usize> {
        let avg_idle = self.cpus[this].rq.avg_idle() / 512;
        // avg_scan_cost + 1: the scan's time is not modelled.
        let avg_cost = 1;
        let span_avg = span.len() as u64 * avg_idle;
        let mut nr = if span_avg > 4 * avg_cost {
            span_avg / avg_cost
        } else {
            4
        };
        for cpu in wrap(span, target) {
            nr -= 1;
            if nr == 0 {
                return None;
            }
            if self.idle_cpu(cpu) {
                return Some(cpu);
            }
        }
        None
    }

    /// v5.3 select_idle_smt: an idle CPU of the target's core.
    fn select_idle_smt_v53(&self, target: usize) -> Option<usize> {
        if !self.topo.smt_active() {
            return None;
        }
        self.topo.core(target).find(|&c| self.idle_cpu(c))
    }

    /// v6.6 select_idle_smt: an idle sibling of prev.
    fn select_idle_smt_v66(&self, prev: usize) -> Option<usize> {
        self.topo
            .core(prev)
            .find(|&c| c != prev && self.idle_cpu(c))
    }

    /// v6.6 select_idle_cpu with SIS_UTIL: nr_idle_scan + 1 CPUs from target + 1 on (none
    /// when the LLC is overloaded), or, with an idle core hinted, a whole idle core.
    fn select_idle_cpu_v66(
        &mut self,
        span: std::ops::Range<usize>,
        has_idle_core: bool,
        target: usize,
    ) -> Option<usize> {
        let llc = self.llc_index(target);
        let mut nr = self.nr_idle_scan(llc, span.clone()) + 1;
        if nr == 1 {
            return None;
        }
        let mut removed = vec![false; span.len()];
        let mut idle_cpu = None;
        for cpu in wrap(span.clone(), target + 1) {
            if removed[cpu - span.start] {
                continue;
            }
            if has_idle_core {
                // select_idle_core: a whole idle core, else remember an idle CPU.
                let mut idle = true;
                for c in self.topo.core(cpu) {
                    if self.idle_cpu(c) {
                        idle_cpu = idle_cpu.or(Some(c));
                    } else {
                        idle = false;
                    }
                }
                if idle {
                    return Some(cpu);
                }
                for c in self.topo.core(cpu) {
                    if span.contains(&c) {
                        removed[c - span.start] = true;
                    }
                }
            } else {
                nr -= 1;
                if nr == 0 {
                    return None;
                }
                if self.idle_cpu(cpu) {
                    return Some(cpu);
                }
            }
        }
        if has_idle_core {
            self.llc_shared(llc).has_idle_cores = false;
        }
        idle_cpu
    }

    /// SIS_UTIL's nr_idle_scan (update_idle_cpu_scan), recomputed from the LLC's
    /// utilisation once per balance interval of the LLC domain (sd_weight ms, 16 times
    /// that while no CPU of it is idle: busy_factor).
    fn nr_idle_scan(&mut self, llc: usize, span: std::ops::Range<usize>) -> usize {
        let now = self.now;
        let weight = span.len() as u64;
        let any_idle = span.clone().any(|c| self.idle_cpu(c));
        let interval = weight * 1_000_000 * if any_idle { 1 } else { 16 };
        let shared = *self.llc_shared(llc);
        if shared.scan_at.is_some_and(|t| now < t + interval) {
            return shared.nr_idle_scan;
        }
        let sum_util: u64 = span.clone().map(|c| self.attached(c).1.min(SCALE)).sum();
        let pct = self
            .topo
            .levels()
            .iter()
            .find(|l| l.span == span.len())
            .map_or(117, |l| l.imbalance_pct);
        let x = sum_util / weight;
        let tmp = (x * x * pct * pct / (10_000 * SCALE)).min(SCALE);
        let y = (SCALE - tmp) * weight / SCALE;
        let s = self.llc_shared(llc);
        s.nr_idle_scan = y as usize;
        s.scan_at = Some(now);
        y as usize
    }

    /// A CPU went idle: rq->idle_stamp, and __update_idle_core's hint when its whole core
    /// is idle.
    pub(crate) fn cpu_goes_idle(&mut self, c: usize) {
        if self.place.is_none() || !self.cpus[c].rq.went_idle(self.now) {
            return;
        }
        if self.topo.smt_active() && self.topo.core(c).all(|s| self.idle_cpu(s)) {
            let llc = self.llc_index(c);
            self.llc_shared(llc).has_idle_cores = true;
        }
    }

    /// ttwu_do_wakeup on an idle run queue: its idle period goes into avg_idle (capped at
    /// twice max_idle_balance_cost).
    pub(crate) fn idle_period_ends(&mut self, c: usize) {
        if self.place.is_none() {
            return;
        }
        self.cpus[c].rq.idle_ends(self.now);
    }

    /// find_idlest_cpu for a fork (SD_BALANCE_FORK, the slow path, v5.3's form): from the
    /// parent's CPU, down the domains to the idlest group, then its idlest CPU.
    fn fork_cpu(&self) -> usize {
        let levels = self.topo.levels().to_vec();
        let mut cpu = PARENT_CPU;
        let mut new = cpu;
        let mut li = levels.len();
        while li > 0 {
            let level = levels[li - 1];
            li -= 1;
            let Some(group) = self.find_idlest_group(&level, cpu) else {
                continue;
            };
            new = self.find_idlest_group_cpu(group, cpu);
            // A new CPU: go on below this level's span, from it.
            cpu = new;
        }
        new
    }

    /// v5.3 find_idlest_group (fork: spare capacity is not used): a remote group whose
    /// runnable load is lower than the local one's by more than the imbalance, or close
    /// to it with a clearly lower load_avg.
    fn find_idlest_group(&self, sd: &Level, this: usize) -> Option<std::ops::Range<usize>> {
        let scale = 100 + (sd.imbalance_pct - 100) / 2;
        let imbalance = SCALE * (sd.imbalance_pct - 100) / 100;
        let (mut this_runnable, mut this_avg) = (u64::MAX, u64::MAX);
        let (mut min_runnable, mut min_avg) = (u64::MAX, u64::MAX);
        let mut idlest = None;
        for (i, g) in self.topo.groups(sd, this).into_iter().enumerate() {
            let n = g.len() as u64;
            let runnable = g.clone().map(|c| self.runnable_load(c)).sum::<u64>() / n;
            let avg = g.clone().map(|c| self.attached(c).0).sum::<u64>() / n;
            if i == 0 {
                (this_runnable, this_avg) = (runnable, avg);
            } else if min_runnable > runnable.saturating_add(imbalance) {
                (min_runnable, min_avg) = (runnable, avg);
                idlest = Some(g);
            } else if runnable < min_runnable.saturating_add(imbalance)
                && 100u64.saturating_mul(min_avg) > scale * avg
            {
                min_avg = avg;
                idlest = Some(g);
            }
        }
        let idlest = idlest?;
        if sd.numa && min_runnable + imbalance >= this_runnable {
            return None;
        }
        if min_runnable > this_runnable.saturating_add(imbalance) {
            return None;
        }
        if this_runnable < min_runnable + imbalance && 100 * this_avg < scale * min_avg {
            return None;
        }
        Some(idlest)
    }

    /// find_idlest_group_cpu: the most recently idled idle CPU, else the least loaded.
    fn find_idlest_group_cpu(&self, group: std::ops::Range<usize>, this: usize) -> usize {
        if group.len() == 1 {
            return group.start;
        }
        let mut latest: Option<u64> = None;
        let mut shallowest = None;
        let (mut min_load, mut least) = (u64::MAX, this);
        for c in group {
            if self.idle_cpu(c) {
                let stamp = self.cpus[c].rq.idle_stamp();
                if latest.is_none_or(|l| stamp > l) {
                    latest = Some(stamp);
                    shallowest = Some(c);
                }
            } else if shallowest.is_none() {
                let load = self.runnable_load(c);
                if load < min_load {
                    (min_load, least) = (load, c);
                }
            }
        }
        shallowest.unwrap_or(least)
    }

    /// try_to_wake_up's placement of thread `t` (a movable job) woken by CPU `from`
    /// (None: its fork): moves it when the rules pick another CPU.
    pub(crate) fn place_waking(&mut self, t: usize, from: Option<usize>) {
        let new = match from {
            Some(this) => self.select_task_rq(t, this),
            None => {
                self.threads[t].wakee_mut().set_recent_used_cpu(PARENT_CPU);
                self.fork_cpu()
            }
        };
        if new != self.threads[t].cpu().ix() {
            self.migrate(t, new);
        }
    }

    /// Moves sleeping thread `t` to CPU `new` (set_task_cpu): its vruntime is kept
    /// relative to min_vruntime (task_waking_fair, then enqueue), a job's next
    /// submissions go to the new CPU's queues (blk-mq maps by CPU) and its polling to
    /// them.
    pub(crate) fn migrate(&mut self, t: usize, new: usize) {
        let old = self.threads[t].cpu().ix();
        let (from_min, to_min) = (self.min_vruntime(old), self.min_vruntime(new));
        let th = &mut self.threads[t];
        th.migrate(super::ids::CpuId::new(new), from_min, to_min);
        let ThreadKind::Job(j) = th.kind() else {
            return;
        };
        let j = j.ix();
        // The job stays in the queue set it submits to (blk_mq_map_queues per hctx type):
        // an SQPOLL ring's owner keeps its poll queues though it no longer polls them.
        let job = &self.jobs[j];
        let queues: Vec<QueueId> = job
            .devices()
            .iter()
            .zip(job.queues())
            .map(|(d, cur)| {
                let set = usize::from(self.queues[cur.ix()].vector().is_none());
                self.queue_map[d.ix()][set][new]
            })
            .collect();
        if self.jobs[j].polled() {
            let me = ThreadId::new(t);
            for &q in self.jobs[j].queues() {
                self.queues[q.ix()].remove_spinner(me);
            }
            for &q in &queues {
                self.queues[q.ix()].add_spinner_once(me);
            }
        }
        self.jobs[j].migrated(queues, self.measuring);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_scheduler_picks_the_placement_rules() {
        assert_eq!(Rules::of(Scheduler::Cfs), Rules::V5_3);
        assert_eq!(Rules::of(Scheduler::Eevdf), Rules::V6_6);
    }
}
