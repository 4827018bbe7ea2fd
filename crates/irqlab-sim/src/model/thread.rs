//! A scheduler task (struct task_struct's scheduling part): its class, state and CPU,
//! its vruntime, PELT load, record_wakee state and the step it was in. The scheduler
//! (model/sched.rs, model/placement.rs, model/balance.rs) asks it and tells it what
//! happened through methods named for what the kernel does; the effects on CPUs, run
//! queues and jobs stay with `Sim`.

use super::ids::{CpuId, IoId, JobId, ThreadId, VectorId};
use super::pelt::Pelt;
use super::state::VRUNTIME_AT_START;
use crate::observer::SliceKind;

/// What a thread is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ThreadKind {
    Job(JobId),
    Ksoftirqd(CpuId),
    /// The irq thread of a vector (use_threaded_interrupts), SCHED_FIFO.
    IrqThread(VectorId),
    /// A CPU's kworker running moderation work items (schedule_work, system_wq).
    Kworker(CpuId),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TState {
    Running,
    Runnable,
    Blocked,
    Exited,
}

pub(crate) struct Thread {
    kind: ThreadKind,
    /// Where it runs or last ran (task_cpu).
    cpu: CpuId,
    /// nr_cpus_allowed == 1: kernel threads, and jobs with cpus_allowed (each clone on
    /// one CPU). A job without cpus_allowed may run on any CPU, placed by
    /// select_task_rq_fair (model/placement.rs).
    pinned: bool,
    state: TState,
    /// Virtual run time (nice 0: run time itself), ns.
    vruntime: u64,
    /// ns left of the step that was interrupted (0: the step is complete).
    left: u64,
    step_kind: SliceKind,
    /// Busy-polling a completion queue: the CPU burns sys time until a CQE appears.
    spinning: bool,
    fifo: bool,
    timer_gen: u32,
    start_runnable: bool,
    /// CQEs popped by this thread's reap step in progress.
    reaping: Vec<IoId>,
    /// irq thread: CQEs polled since its last doorbell.
    wakeups: u32,
    /// irq thread: the step running is the batch completion after the doorbell.
    completing: bool,
    /// Its load and utilisation (kept only while some thread can move).
    pelt: Pelt,
    /// The wake-up partners it has had (record_wakee), and p->recent_used_cpu.
    wakee: Wakee,
    /// When it last ran (se.exec_start as task_hot reads it), while placement is on.
    ran_at: u64,
}

/// What record_wakee keeps in a task (kernel/sched/fair.c): how often the task, as
/// `current`, woke a different task than the last one, halved once a second.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Wakee {
    flips: u32,
    decay_ts: u64,
    last: Option<ThreadId>,
    /// p->recent_used_cpu.
    recent_used_cpu: usize,
}

impl Thread {
    /// A blocked thread of `kind` on CPU `cpu`: irq threads are SCHED_FIFO, job threads
    /// and ksoftirqd SCHED_OTHER.
    pub(crate) fn new(kind: ThreadKind, cpu: CpuId) -> Thread {
        let (step_kind, fifo) = match kind {
            ThreadKind::Job(_) => (SliceKind::Usr, false),
            ThreadKind::Ksoftirqd(_) => (SliceKind::Ksoftirqd, false),
            ThreadKind::IrqThread(_) => (SliceKind::IrqThread, true),
            ThreadKind::Kworker(_) => (SliceKind::Sys, false),
        };
        Thread {
            kind,
            cpu,
            pinned: true,
            state: TState::Blocked,
            // A kworker runs a moderation item now and then, so it wakes with
            // place_entity's whole sleeper credit, its first time too; the other threads
            // start level with min_vruntime.
            vruntime: if matches!(kind, ThreadKind::Kworker(_)) {
                0
            } else {
                VRUNTIME_AT_START
            },
            left: 0,
            step_kind,
            spinning: false,
            fifo,
            timer_gen: 0,
            start_runnable: false,
            reaping: Vec::new(),
            wakeups: 0,
            completing: false,
            pelt: Pelt::steady(false),
            wakee: Wakee::default(),
            ran_at: 0,
        }
    }

    /// A fio job's thread on CPU `cpu`: `pinned` with cpus_allowed, runnable from the
    /// start (`starts_now`) when its job starts with the machine.
    pub(crate) fn job(job: JobId, cpu: CpuId, pinned: bool, starts_now: bool) -> Thread {
        Thread {
            start_runnable: starts_now,
            pinned,
            ..Thread::new(ThreadKind::Job(job), cpu)
        }
    }

    // ---------------------------------------------------------------- what it is

    #[inline(always)]
    pub(crate) fn kind(&self) -> ThreadKind {
        self.kind
    }

    /// Where it runs or last ran (task_cpu).
    #[inline(always)]
    pub(crate) fn cpu(&self) -> CpuId {
        self.cpu
    }

    #[inline(always)]
    pub(crate) fn state(&self) -> TState {
        self.state
    }

    /// task_on_rq_queued: running or waiting on its run queue.
    #[inline]
    pub(crate) fn on_rq(&self) -> bool {
        matches!(self.state, TState::Running | TState::Runnable)
    }

    /// SCHED_FIFO (an irq thread), else SCHED_OTHER.
    #[inline(always)]
    pub(crate) fn fifo(&self) -> bool {
        self.fifo
    }

    /// nr_cpus_allowed == 1.
    #[inline(always)]
    pub(crate) fn pinned(&self) -> bool {
        self.pinned
    }

    /// Runnable when the run starts (its job starts with the machine).
    #[inline]
    pub(crate) fn start_runnable(&self) -> bool {
        self.start_runnable
    }

    /// Its job waits for others to exit: it is not runnable when the machine starts.
    pub(crate) fn hold_at_start(&mut self) {
        self.start_runnable = false;
    }

    /// Busy-polling a completion queue.
    #[inline(always)]
    pub(crate) fn spinning(&self) -> bool {
        self.spinning
    }

    // ---------------------------------------------------------------- state

    /// Moves to `state` (the run queue's enqueue, dequeue, pick, sleep, exit). With
    /// `tracking` (placement on), PELT is brought up to `now` under the old state first,
    /// and going on or off the CPU stamps `now` as when it last ran (se.exec_start).
    #[inline]
    pub(crate) fn set_state(&mut self, state: TState, now: u64, tracking: bool) {
        if tracking {
            let (runnable, running) = self.pelt_flags();
            self.pelt.update(now, runnable, running);
            if self.state == TState::Running || state == TState::Running {
                self.ran_at = now;
            }
        }
        self.state = state;
    }

    /// The run ends it without its loop (a job that never started, and its helpers).
    pub(crate) fn exit_unstarted(&mut self) {
        self.state = TState::Exited;
    }

    // ---------------------------------------------------------------- vruntime

    /// Virtual run time (nice 0: run time itself), ns.
    #[inline(always)]
    pub(crate) fn vruntime(&self) -> u64 {
        self.vruntime
    }

    /// update_curr: `dt` ns of CPU time charged to it.
    #[inline(always)]
    pub(crate) fn charge(&mut self, dt: u64) {
        self.vruntime += dt;
    }

    /// place_entity: a sleeper comes back no further behind than `floor`.
    #[inline]
    pub(crate) fn place_entity(&mut self, floor: u64) {
        self.vruntime = self.vruntime.max(floor);
    }

    /// set_task_cpu to `new`: its vruntime kept relative to min_vruntime, from the old
    /// CPU's `from_min` to the new one's `to_min` (task_waking_fair, then enqueue).
    pub(crate) fn migrate(&mut self, new: CpuId, from_min: u64, to_min: u64) {
        self.vruntime = self.vruntime.saturating_sub(from_min) + to_min;
        self.cpu = new;
    }

    // ---------------------------------------------------------------- its step

    /// The step it was in when an interrupt came, with `left` ns to go (a spinning
    /// poller has no step to resume: it spins on).
    #[inline(always)]
    pub(crate) fn interrupted(&mut self, left: u64) {
        if !self.spinning {
            self.left = left;
        }
    }

    /// Its step ran to the end (a spinning poller found a completion).
    #[inline(always)]
    pub(crate) fn step_ended(&mut self) {
        self.left = 0;
        self.spinning = false;
    }

    /// The rest of the step an interrupt cut short, ns, and its kind; None when it had
    /// none left.
    #[inline(always)]
    pub(crate) fn resume_step(&mut self) -> Option<(u64, SliceKind)> {
        if self.left == 0 {
            return None;
        }
        Some((std::mem::take(&mut self.left), self.step_kind))
    }

    /// Starts a step of `kind`.
    #[inline(always)]
    pub(crate) fn start_step(&mut self, kind: SliceKind) {
        self.step_kind = kind;
    }

    /// Starts busy-polling its completion queues.
    #[inline(always)]
    pub(crate) fn start_spinning(&mut self) {
        self.spinning = true;
    }

    /// At a point CONFIG_PREEMPT_VOLUNTARY preempts: between steps, in user mode, or
    /// spinning in a poll loop that checks need_resched.
    #[inline]
    pub(crate) fn at_preemption_point(&self) -> bool {
        self.left == 0 || self.spinning || self.step_kind == SliceKind::Usr
    }

    /// Arms its hrtimer: the epoch the timer's event carries.
    #[inline]
    pub(crate) fn arm_timer(&mut self) -> u32 {
        self.timer_gen = self.timer_gen.wrapping_add(1);
        self.timer_gen
    }

    /// Whether a timer of `epoch` wakes it: the last one armed, and it still sleeps.
    #[inline]
    pub(crate) fn timer_wakes(&self, epoch: u32) -> bool {
        self.timer_gen == epoch && self.state == TState::Blocked
    }

    // ---------------------------------------------------------------- its reaping

    /// The CQEs its reap step popped, to complete (given back with `put_reaping`).
    #[inline(always)]
    pub(crate) fn take_reaping(&mut self) -> Vec<IoId> {
        std::mem::take(&mut self.reaping)
    }

    #[inline(always)]
    pub(crate) fn put_reaping(&mut self, list: Vec<IoId>) {
        self.reaping = list;
    }

    /// CQEs its reap step popped and has not completed.
    #[inline]
    pub(crate) fn reaping_len(&self) -> usize {
        self.reaping.len()
    }

    /// irq thread: the step running is the batch completion after the doorbell.
    #[inline]
    pub(crate) fn completing(&self) -> bool {
        self.completing
    }

    #[inline]
    pub(crate) fn set_completing(&mut self, completing: bool) {
        self.completing = completing;
    }

    /// irq thread: `n` more CQEs polled since its last doorbell.
    #[inline]
    pub(crate) fn polled(&mut self, n: u32) {
        self.wakeups += n;
    }

    /// irq thread: the CQEs polled since its last doorbell, the count starting over.
    #[inline]
    pub(crate) fn take_polled(&mut self) -> u32 {
        std::mem::take(&mut self.wakeups)
    }

    // ---------------------------------------------------------------- placement

    /// A forked task at `now` (wake_up_new_task): a nice-0 task's full load.
    pub(crate) fn fork_load(&mut self, now: u64) {
        self.pelt = Pelt::forked(now);
    }

    /// task_h_load: the load it had when it last changed state.
    #[inline]
    pub(crate) fn load_avg(&self) -> u64 {
        self.pelt.load_avg()
    }

    /// Its (load_avg, util_avg) as of `now`, without storing it.
    pub(crate) fn pelt_at(&self, now: u64) -> (u64, u64) {
        let mut p = self.pelt;
        let (runnable, running) = self.pelt_flags();
        p.update(now, runnable, running);
        (p.load_avg(), p.util_avg())
    }

    /// PELT's flags: runnable (on the run queue or running), running.
    #[inline]
    fn pelt_flags(&self) -> (bool, bool) {
        (self.on_rq(), self.state == TState::Running)
    }

    /// can_migrate_task: a fair task allowed elsewhere, cache-cold (off the CPU at least
    /// `migration_cost` ns at `now`, task_hot).
    pub(crate) fn can_migrate(&self, now: u64, migration_cost: u64) -> bool {
        !self.pinned && !self.fifo && now.saturating_sub(self.ran_at) >= migration_cost
    }

    /// Its record_wakee state and p->recent_used_cpu.
    #[inline]
    pub(crate) fn wakee(&self) -> &Wakee {
        &self.wakee
    }

    #[inline]
    pub(crate) fn wakee_mut(&mut self) -> &mut Wakee {
        &mut self.wakee
    }
}

impl Wakee {
    /// record_wakee at jiffy `j` (`hz` a second): `current` woke `p`, a flip when it is
    /// another than the last; the flips halve at most once a second.
    pub(crate) fn record(&mut self, j: u64, hz: u64, p: ThreadId) {
        if j > self.decay_ts + hz {
            self.flips >>= 1;
            self.decay_ts = j;
        }
        if self.last != Some(p) {
            self.last = Some(p);
            self.flips += 1;
        }
    }

    /// wakee_flips.
    #[inline]
    pub(crate) fn flips(&self) -> u32 {
        self.flips
    }

    /// p->recent_used_cpu.
    #[inline]
    pub(crate) fn recent_used_cpu(&self) -> usize {
        self.recent_used_cpu
    }

    #[inline]
    pub(crate) fn set_recent_used_cpu(&mut self, c: usize) {
        self.recent_used_cpu = c;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn job() -> Thread {
        Thread::job(JobId::new(0), CpuId::new(1), false, false)
    }

    #[test]
    fn record_wakee_flips_on_a_new_partner_and_halves_after_a_second() {
        let mut w = Wakee::default();
        let hz = 1000;
        w.record(1, hz, ThreadId::new(3));
        w.record(2, hz, ThreadId::new(3));
        assert_eq!(w.flips(), 1, "the same wakee again is no flip");
        for (j, p) in [(3, 4), (4, 3), (5, 4)] {
            w.record(j, hz, ThreadId::new(p));
        }
        assert_eq!(w.flips(), 4);
        // More than a second later: halved, then this wake-up's flip.
        w.record(1_200, hz, ThreadId::new(3));
        assert_eq!(w.flips(), 3);
    }

    #[test]
    fn an_interrupted_step_resumes_with_what_was_left_but_a_spinner_spins_on() {
        let mut th = job();
        th.start_step(SliceKind::Sys);
        th.interrupted(700);
        assert!(!th.at_preemption_point(), "inside a system call");
        assert_eq!(th.resume_step(), Some((700, SliceKind::Sys)));
        assert_eq!(th.resume_step(), None, "taken once");
        th.start_spinning();
        th.interrupted(500);
        assert_eq!(th.resume_step(), None);
        assert!(th.at_preemption_point());
        th.step_ended();
        assert!(!th.spinning());
    }

    #[test]
    fn a_migration_keeps_the_lag_behind_min_vruntime() {
        let mut th = job();
        th.charge(5_000);
        let v = th.vruntime();
        th.migrate(CpuId::new(2), v - 2_000, 10 * v);
        assert_eq!((th.cpu(), th.vruntime()), (CpuId::new(2), 10 * v + 2_000));
        th.place_entity(20 * v);
        assert_eq!(
            th.vruntime(),
            20 * v,
            "a sleeper comes back no further behind"
        );
    }

    #[test]
    fn a_task_that_just_ran_is_cache_hot_and_only_an_armed_timer_wakes_it() {
        let mut th = job();
        th.set_state(TState::Running, 1_000, true);
        th.set_state(TState::Runnable, 2_000, true);
        assert!(th.on_rq());
        assert!(!th.can_migrate(2_400, 500));
        assert!(th.can_migrate(2_500, 500));
        th.set_state(TState::Blocked, 3_000, true);
        let first = th.arm_timer();
        let second = th.arm_timer();
        assert!(!th.timer_wakes(first) && th.timer_wakes(second));
        th.set_state(TState::Runnable, 4_000, false);
        assert!(!th.timer_wakes(second), "it is awake already");
    }
}
