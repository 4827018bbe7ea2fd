//! The per-CPU scheduler (kernel/sched/fair.c, kernel/sched/rt.c): SCHED_FIFO irq threads
//! run first; job threads and ksoftirqd are SCHED_OTHER, picked by lowest vruntime.
//!
//! `cpu.scheduler` chooses the fair class's wake-up rule:
//! - `cfs` (v2.6.23 to v6.5): a woken thread is placed at most half a latency period
//!   behind `min_vruntime` (place_entity with GENTLE_FAIR_SLEEPERS) and preempts the
//!   running one when their vruntimes differ by more than the wake-up granularity
//!   (check_preempt_wakeup / wakeup_preempt_entity). A thread that keeps running while a
//!   short sleeper such as ksoftirqd keeps waking is therefore preempted at every wake-up
//!   once it is a granularity ahead: the 2019 irq_poll context-switch storm.
//! - `eevdf` (v6.6+, RUN_TO_PARITY): the running thread keeps the CPU until it has used
//!   its slice, so a wake-up preempts only a thread past its slice.
//!
//! Tunables follow the kernel's defaults scaled by `1 + ilog2(min(ncpus, 8))`
//! (SCHED_TUNABLESCALING_LOG): `cpu.sched_slice_ns` is the scaled min_granularity / base
//! slice (0.75 ms × 4 = 3 ms); latency is 8 of them (6 ms × 4) and the wake-up granularity
//! 4/3 (1 ms × 4). Preemption follows CONFIG_PREEMPT_VOLUNTARY: at the return from an
//! interrupt to user mode or to a spinning poll loop, otherwise when the kernel step ends.

use super::ids::{CpuId, ThreadId};
use super::state::*;
use crate::engine::Event;
use crate::observer::{Observer, SliceKind};
use crate::platform::Scheduler;

impl<O: Observer> Sim<'_, O> {
    /// sysctl_sched_latency: 8 slices (6 ms and 0.75 ms before scaling).
    fn sched_latency(&self) -> u64 {
        self.costs.slice * 8
    }

    /// sysctl_sched_wakeup_granularity: 4/3 of a slice (1 ms and 0.75 ms before scaling).
    fn wakeup_granularity(&self) -> u64 {
        self.costs.slice * 4 / 3
    }

    /// The fair class's min_vruntime on CPU `c`: the smallest vruntime of its running and
    /// runnable SCHED_OTHER threads, never moving back.
    pub(crate) fn min_vruntime(&mut self, c: usize) -> u64 {
        self.settle(c);
        let cpu = &self.cpus[c];
        let running = cpu
            .rq
            .current()
            .map(|t| &self.threads[t.ix()])
            .filter(|th| !th.fifo() && th.state() == TState::Running)
            .map(|th| th.vruntime());
        let queued = cpu
            .rq
            .waiters()
            .map(|t| &self.threads[t.ix()])
            .filter(|th| !th.fifo())
            .map(|th| th.vruntime())
            .min();
        let candidate = match (running, queued) {
            (Some(a), Some(b)) => a.min(b),
            (a, b) => a.or(b).unwrap_or(cpu.rq.min_vruntime()),
        };
        self.cpus[c].rq.advance_min_vruntime(candidate)
    }

    /// Makes thread `t` runnable; `from` is the CPU whose context wakes it (None at start).
    pub(crate) fn wake_thread(&mut self, t: usize, from: Option<usize>) {
        let th = &self.threads[t];
        if th.on_rq() {
            return;
        }
        if self.place.is_some() {
            if from.is_none() {
                // wake_up_new_task: a forked job starts with a full load.
                self.threads[t].fork_load(self.now);
            }
            let th = &self.threads[t];
            // select_task_rq (model/placement.rs), then ttwu_do_wakeup's avg_idle.
            if !th.pinned() && !th.fifo() {
                self.place_waking(t, from);
            }
            self.idle_period_ends(self.threads[t].cpu().ix());
        }
        let th = &self.threads[t];
        let c = th.cpu().ix();
        let fifo = th.fifo();
        if !fifo {
            // place_entity(): a sleeper comes back at most half a latency period behind.
            let floor = self
                .min_vruntime(c)
                .saturating_sub(self.sched_latency() / 2);
            self.threads[t].place_entity(floor);
        }
        self.set_state(t, TState::Runnable);
        self.cpus[c].rq.enqueue(ThreadId::new(t), fifo);
        match (self.cpus[c].mode(), from) {
            (Mode::Idle, None) => self.resume(c),
            (Mode::Idle, Some(f)) if f != c => self.send_resched_ipi(c),
            (Mode::Idle, _) => {}
            (mode, _) => {
                if self.wake_preempts(c, t) {
                    self.cpus[c].rq.set_need_resched();
                    if mode == Mode::Thread && from != Some(c) {
                        self.send_resched_ipi(c);
                    }
                }
            }
        }
    }

    /// check_preempt_curr: whether the woken thread `t` should take CPU `c` from the
    /// thread that owns it.
    fn wake_preempts(&mut self, c: usize, t: usize) -> bool {
        let Some(cur) = self.cpus[c].rq.current() else {
            return false;
        };
        self.settle(c);
        let (cur, woken) = (&self.threads[cur.ix()], &self.threads[t]);
        if cur.fifo() {
            return false;
        }
        if woken.fifo() {
            return true;
        }
        match self.scheduler {
            Scheduler::Cfs => cur.vruntime() > woken.vruntime() + self.wakeup_granularity(),
            Scheduler::Eevdf => self.cpus[c].rq.ran(self.now) >= self.costs.slice,
        }
    }

    /// An idle CPU was given a task from outside (a load-balancing pull): the kick IPI.
    pub(crate) fn kick_idle(&mut self, c: usize) {
        if self.cpus[c].mode() == Mode::Idle {
            self.send_resched_ipi(c);
        }
    }

    fn send_resched_ipi(&mut self, c: usize) {
        if !self.cpus[c].apic.send_ipi() {
            return;
        }
        let at = self.now + self.costs.ipi;
        self.q.push(
            at,
            Event::Notify {
                cpu: CpuId::new(c),
                vec: RESCHEDULE_VECTOR,
            },
        );
    }

    /// scheduler_tick → task_tick_fair: a thread that ran its ideal slice, or got that far
    /// ahead of the leftmost waiter, yields (check_preempt_tick; EEVDF: update_deadline).
    /// A busy-polling thread yields to any waiter (the polling loops stop on need_resched).
    pub(crate) fn tick_work(&mut self, c: usize) {
        // trigger_load_balance → nohz_balancer_kick (model/balance.rs).
        self.nohz_kick(c);
        let cpu = &self.cpus[c];
        let Some(t) = cpu.rq.current() else {
            return;
        };
        if cpu.rq.no_waiters() {
            return;
        }
        self.settle(c);
        let cpu = &self.cpus[c];
        let th = &self.threads[t.ix()];
        let ran = cpu.rq.ran(self.now);
        let resched = th.spinning()
            || match self.scheduler {
                Scheduler::Eevdf => ran >= self.costs.slice,
                Scheduler::Cfs => {
                    let nr = cpu.rq.waiting() as u64 + 1;
                    let ideal = (self.sched_latency() / nr).max(self.costs.slice);
                    let leftmost = cpu
                        .rq
                        .waiters()
                        .map(|n| &self.threads[n.ix()])
                        .filter(|n| !n.fifo())
                        .map(|n| n.vruntime())
                        .min();
                    ran > ideal
                        || (ran >= self.costs.slice
                            && leftmost.is_some_and(|l| th.vruntime() > l + ideal))
                }
            };
        if resched {
            self.cpus[c].rq.set_need_resched();
        }
    }

    /// Whether the owner of CPU `c` can be switched out now (CONFIG_PREEMPT_VOLUNTARY):
    /// between steps, in user mode, or spinning in a poll loop that checks need_resched;
    /// not inside a system call or a softirq invocation.
    fn preemptible(&self, c: usize, t: usize) -> bool {
        let th = &self.threads[t];
        if th.fifo() {
            return false;
        }
        if matches!(th.kind(), ThreadKind::Ksoftirqd(_)) && self.cpus[c].soft.pending().in_softirq()
        {
            return false;
        }
        th.at_preemption_point()
    }

    /// Back from interrupt context: pending interrupts first, then the scheduler.
    pub(crate) fn resume(&mut self, c: usize) {
        if self.irr_pending(c) {
            self.take_interrupt(c);
            return;
        }
        if let Some(t) = self.cpus[c].rq.current() {
            let t = t.ix();
            if self.threads[t].state() == TState::Running {
                let cpu = &self.cpus[c];
                if !(cpu.rq.need_resched() && !cpu.rq.no_waiters() && self.preemptible(c, t)) {
                    // A preemption the thread cannot take now waits for its step's end.
                    if self.cpus[c].rq.no_waiters() {
                        self.cpus[c].rq.clear_need_resched();
                    }
                    self.cpus[c].enter_mode(Mode::Thread);
                    self.run_thread(c, t);
                    return;
                }
                self.preempt(c, t);
            }
            self.cpus[c].rq.put_prev();
        }
        self.cpus[c].rq.clear_need_resched();
        self.switch_to_next(c);
    }

    /// An involuntary switch: the owner goes back to the run queue (perf sched's prev_state
    /// R), counted as a context switch of its job.
    fn preempt(&mut self, c: usize, t: usize) {
        self.set_state(t, TState::Runnable);
        self.cpus[c].rq.enqueue(ThreadId::new(t), false);
        if let ThreadKind::Job(j) = self.threads[t].kind()
            && self.measuring
        {
            self.jobs[j.ix()].context_switched();
        }
    }

    /// The owner of CPU `c` finished a step with a preemption pending: it yields now.
    /// Returns false when it keeps the CPU.
    pub(crate) fn preempt_at_step_end(&mut self, c: usize, t: usize) -> bool {
        let cpu = &self.cpus[c];
        if !cpu.rq.need_resched() || cpu.rq.no_waiters() {
            return false;
        }
        let th = &self.threads[t];
        if th.fifo()
            || (matches!(th.kind(), ThreadKind::Ksoftirqd(_))
                && self.cpus[c].soft.pending().in_softirq())
        {
            return false;
        }
        self.preempt(c, t);
        self.cpus[c].rq.put_prev();
        self.cpus[c].rq.clear_need_resched();
        self.switch_to_next(c);
        true
    }

    /// pick_next_task: a SCHED_FIFO thread first, else the lowest vruntime (FIFO among
    /// equals); idle when nothing is runnable.
    #[inline(always)]
    fn switch_to_next(&mut self, c: usize) {
        let waiting = self.cpus[c].rq.waiting();
        let mut pick = match waiting {
            0 => None,
            // The only one waiting is picked whatever its class or vruntime.
            1 => Some(0),
            _ => {
                // The vruntimes it compares, as charged so far.
                self.settle(c);
                let cpu = &self.cpus[c];
                cpu.rq
                    .waiters()
                    .position(|n| self.threads[n.ix()].fifo())
                    .or_else(|| {
                        cpu.rq
                            .waiters()
                            .enumerate()
                            .min_by_key(|&(i, n)| (self.threads[n.ix()].vruntime(), i))
                            .map(|(i, _)| i)
                    })
            }
        };
        if pick.is_none() && self.place.is_some() && self.newidle_pull(c) {
            // idle_balance pulled a waiting task (model/balance.rs).
            pick = Some(0);
        }
        let Some(n) = pick.and_then(|i| self.cpus[c].rq.dequeue(i)) else {
            let cpu = &mut self.cpus[c];
            cpu.rq.put_prev();
            cpu.enter_mode(Mode::Idle);
            self.set_kind(c, SliceKind::Idle);
            self.cpu_goes_idle(c);
            return;
        };
        let cpu = &mut self.cpus[c];
        cpu.rq.switch_in(n, self.now);
        cpu.enter_mode(Mode::Switch);
        if self.measuring {
            cpu.acct.count_ctx_switch();
        }
        self.set_state(n.ix(), TState::Running);
        let ns = self.costs.ctx_switch.max(1);
        let kind = match self.threads[n.ix()].kind() {
            ThreadKind::Job(_) => SliceKind::Sys,
            ThreadKind::Ksoftirqd(_) => SliceKind::Ksoftirqd,
            ThreadKind::IrqThread(_) => SliceKind::IrqThread,
            ThreadKind::Kworker(_) => SliceKind::Sys,
        };
        self.step(c, ns, kind);
    }

    /// Gives CPU `c` to its current thread `t`: resume an interrupted step, keep
    /// spinning, or ask the thread what to do next.
    #[inline(always)]
    pub(crate) fn run_thread(&mut self, c: usize, t: usize) {
        self.cpus[c].enter_mode(Mode::Thread);
        let th = &mut self.threads[t];
        if let Some((ns, kind)) = th.resume_step() {
            self.step(c, ns, kind);
        } else if th.spinning() {
            self.spin_check(c, t);
        } else {
            self.advance_thread(c, t);
        }
    }

    pub(crate) fn advance_thread(&mut self, c: usize, t: usize) {
        if self.preempt_at_step_end(c, t) {
            return;
        }
        let next = match self.threads[t].kind() {
            ThreadKind::Job(j) => self.job_advance(c, j.ix()),
            ThreadKind::Ksoftirqd(_) => self.ksoftirqd_advance(c),
            ThreadKind::IrqThread(v) => self.irq_thread_advance(c, t, v.ix()),
            ThreadKind::Kworker(_) => self.kworker_advance(c),
        };
        match next {
            ThreadStep::Run { ns, kind } => {
                self.threads[t].start_step(kind);
                self.step(c, ns.max(1), kind);
            }
            ThreadStep::Spin => {
                self.threads[t].start_spinning();
                self.spin_check(c, t);
            }
            ThreadStep::Block | ThreadStep::Sleep { .. } => {
                if let ThreadStep::Sleep { ns } = next {
                    let epoch = self.threads[t].arm_timer();
                    self.q.push(
                        self.now + ns,
                        Event::ThreadTimer {
                            thread: ThreadId::new(t),
                            epoch,
                        },
                    );
                }
                self.set_state(t, TState::Blocked);
                if let ThreadKind::Job(j) = self.threads[t].kind()
                    && self.measuring
                {
                    self.jobs[j.ix()].context_switched();
                }
                self.cpus[c].rq.put_prev();
                self.resume(c);
            }
            ThreadStep::Yield => {
                self.set_state(t, TState::Runnable);
                self.cpus[c].rq.enqueue(ThreadId::new(t), false);
                self.cpus[c].rq.put_prev();
                self.resume(c);
            }
            ThreadStep::Exit => {
                self.set_state(t, TState::Exited);
                self.cpus[c].rq.put_prev();
                self.resume(c);
            }
        }
    }
}
