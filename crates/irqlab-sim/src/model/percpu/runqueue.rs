//! A CPU's run queue (struct rq's part the model keeps): the task that owns the CPU, the
//! tasks waiting for it, the fair class's min_vruntime, TIF_NEED_RESCHED, the slice's
//! start, the idle task's record_wakee state and the idle-period average
//! (kernel/sched/core.c, kernel/sched/fair.c). Which task to pick and when to preempt
//! stay with the scheduler (model/sched.rs), which reads the threads.

use crate::model::ids::ThreadId;
use crate::model::placement::AVG_IDLE_MAX;
use crate::model::state::VRUNTIME_AT_START;
use crate::model::thread::Wakee;
use std::collections::VecDeque;

pub(crate) struct RunQueue {
    /// The thread that owns the CPU (running, spinning, or interrupted).
    current: Option<ThreadId>,
    /// The threads waiting for it, SCHED_FIFO ones at the front.
    waiting: VecDeque<ThreadId>,
    /// The fair class's min_vruntime (update_min_vruntime), ns.
    min_vruntime: u64,
    need_resched: bool,
    /// When `current` last got the CPU (for the slice at ticks).
    slice_start: u64,
    /// The idle task's record_wakee state (it is `current` of an idle CPU's interrupts).
    idle_wakee: Wakee,
    /// rq->idle_stamp (when the CPU last went idle; 0: busy since) and rq->avg_idle.
    idle_stamp: u64,
    avg_idle: u64,
}

impl Default for RunQueue {
    fn default() -> Self {
        RunQueue {
            current: None,
            waiting: VecDeque::new(),
            min_vruntime: VRUNTIME_AT_START,
            need_resched: false,
            slice_start: 0,
            idle_wakee: Wakee::default(),
            // Idle since boot.
            idle_stamp: 1,
            avg_idle: AVG_IDLE_MAX,
        }
    }
}

impl RunQueue {
    #[inline]
    pub fn current(&self) -> Option<ThreadId> {
        self.current
    }

    /// context_switch to `t` at `now`: it owns the CPU and starts a slice.
    #[inline]
    pub fn switch_in(&mut self, t: ThreadId, now: u64) {
        self.current = Some(t);
        self.slice_start = now;
    }

    /// The owner left the CPU (blocked, exited, preempted or yielded).
    #[inline]
    pub fn put_prev(&mut self) {
        self.current = None;
    }

    /// How long the owner has had the CPU.
    #[inline]
    pub fn ran(&self, now: u64) -> u64 {
        now - self.slice_start
    }

    // ------------------------------------------------------------------------ waiting

    /// Tasks waiting (not counting the owner).
    #[inline]
    pub fn waiting(&self) -> usize {
        self.waiting.len()
    }

    #[inline]
    pub fn no_waiters(&self) -> bool {
        self.waiting.is_empty()
    }

    /// The waiting tasks, in queue order.
    #[inline]
    pub fn waiters(&self) -> impl Iterator<Item = ThreadId> + '_ {
        self.waiting.iter().copied()
    }

    /// rq->nr_running.
    pub fn nr_running(&self) -> usize {
        usize::from(self.current.is_some()) + self.waiting.len()
    }

    /// available_idle_cpu: nothing runs and nothing waits.
    #[inline]
    pub fn is_idle(&self) -> bool {
        self.current.is_none() && self.waiting.is_empty()
    }

    /// enqueue_task: a SCHED_FIFO task goes ahead of the fair ones.
    #[inline]
    pub fn enqueue(&mut self, t: ThreadId, fifo: bool) {
        if fifo {
            self.waiting.push_front(t);
        } else {
            self.waiting.push_back(t);
        }
    }

    /// The waiting task at index `i` leaves the queue (picked or pulled).
    #[inline]
    pub fn dequeue(&mut self, i: usize) -> Option<ThreadId> {
        if i == 0 {
            self.waiting.pop_front()
        } else {
            self.waiting.remove(i)
        }
    }

    // ------------------------------------------------------------------------ fair class

    #[inline]
    pub fn min_vruntime(&self) -> u64 {
        self.min_vruntime
    }

    /// update_min_vruntime: it never moves back.
    #[inline]
    pub fn advance_min_vruntime(&mut self, candidate: u64) -> u64 {
        self.min_vruntime = self.min_vruntime.max(candidate);
        self.min_vruntime
    }

    // ------------------------------------------------------------------------ resched

    #[inline]
    pub fn need_resched(&self) -> bool {
        self.need_resched
    }

    /// resched_curr.
    #[inline]
    pub fn set_need_resched(&mut self) {
        self.need_resched = true;
    }

    #[inline]
    pub fn clear_need_resched(&mut self) {
        self.need_resched = false;
    }

    /// What the softirq loop's need_resched() sees: the flag, or a waiter on an idle CPU
    /// (the idle task would switch at once).
    #[inline]
    pub fn softirq_should_yield(&self) -> bool {
        self.need_resched || !self.waiting.is_empty() && self.current.is_none()
    }

    // ------------------------------------------------------------------------ idle

    pub fn idle_wakee_mut(&mut self) -> &mut Wakee {
        &mut self.idle_wakee
    }

    #[inline]
    pub fn idle_stamp(&self) -> u64 {
        self.idle_stamp
    }

    #[inline]
    pub fn avg_idle(&self) -> u64 {
        self.avg_idle
    }

    /// The CPU went idle at `now` (rq->idle_stamp): false when it already was.
    pub fn went_idle(&mut self, now: u64) -> bool {
        if self.idle_stamp != 0 {
            return false;
        }
        self.idle_stamp = now.max(1);
        true
    }

    /// ttwu_do_wakeup on an idle run queue: the idle period goes into avg_idle (capped).
    pub fn idle_ends(&mut self, now: u64) {
        if self.idle_stamp == 0 {
            return;
        }
        let delta = now.saturating_sub(self.idle_stamp) as i64;
        let avg = self.avg_idle as i64;
        self.avg_idle = ((avg + (delta - avg) / 8).max(0) as u64).min(AVG_IDLE_MAX);
        self.idle_stamp = 0;
    }

    /// A pulled task ends the idle period without a wake-up (idle_stamp = 0).
    pub fn busy_without_wakeup(&mut self) {
        self.idle_stamp = 0;
    }
}
