//! kernel/softirq.c: the softirq vectors, `handle_softirqs` with its restart rule, and the
//! hand-over to ksoftirqd.
//!
//! `handle_softirqs` snapshots and clears the pending mask, runs each pending action in bit
//! order, then re-reads the mask. Work raised meanwhile is run again only while
//! `time_before(jiffies, start + MAX_SOFTIRQ_TIME) && !need_resched() && --max_restart`;
//! otherwise it wakes ksoftirqd/N, a SCHED_OTHER thread that runs the same loop.
//!
//! Documented choice: softirqs run inline at irq_exit whenever some are pending and we are
//! not already in one. "softirq: Let ksoftirqd do its job" (Eric Dumazet, 2016) deferred to
//! a running ksoftirqd instead; it was reverted by d15121be7485 (Paolo Abeni, v6.5) for
//! network latency and throughput. [`SoftirqConfig::defer_to_running_ksoftirqd`] restores
//! the 2016 behaviour for comparison.

/// `MAX_SOFTIRQ_RESTART`: at most 10 passes through the actions per invocation.
pub const MAX_SOFTIRQ_RESTART: u32 = 10;
/// `MAX_SOFTIRQ_TIME` is msecs_to_jiffies(2).
pub const MAX_SOFTIRQ_TIME_MS: u32 = 2;

/// The softirq vectors in priority (bit) order (include/linux/interrupt.h).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum SoftirqVec {
    Hi = 0,
    Timer,
    NetTx,
    NetRx,
    Block,
    IrqPoll,
    Tasklet,
    Sched,
    Hrtimer,
    Rcu,
}

impl SoftirqVec {
    pub const ALL: [SoftirqVec; 10] = [
        SoftirqVec::Hi,
        SoftirqVec::Timer,
        SoftirqVec::NetTx,
        SoftirqVec::NetRx,
        SoftirqVec::Block,
        SoftirqVec::IrqPoll,
        SoftirqVec::Tasklet,
        SoftirqVec::Sched,
        SoftirqVec::Hrtimer,
        SoftirqVec::Rcu,
    ];

    fn bit(self) -> u32 {
        1 << self as u32
    }

    /// The name /proc/softirqs uses.
    pub fn name(self) -> &'static str {
        match self {
            SoftirqVec::Hi => "HI",
            SoftirqVec::Timer => "TIMER",
            SoftirqVec::NetTx => "NET_TX",
            SoftirqVec::NetRx => "NET_RX",
            SoftirqVec::Block => "BLOCK",
            SoftirqVec::IrqPoll => "IRQ_POLL",
            SoftirqVec::Tasklet => "TASKLET",
            SoftirqVec::Sched => "SCHED",
            SoftirqVec::Hrtimer => "HRTIMER",
            SoftirqVec::Rcu => "RCU",
        }
    }
}

/// msecs_to_jiffies(ms) for CONFIG_HZ = `hz`: rounds up, so 2 ms is 1 jiffy at HZ=100/250.
pub fn msecs_to_jiffies(ms: u32, hz: u32) -> u64 {
    (u64::from(ms) * u64::from(hz)).div_ceil(1000)
}

/// The limits of one CPU's softirq processing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SoftirqConfig {
    /// CONFIG_HZ.
    pub hz: u32,
    pub max_restart: u32,
    pub max_time_jiffies: u64,
    /// Pre-v6.5 "let ksoftirqd do its job": irq_exit leaves pending softirqs to a
    /// ksoftirqd that is already awake.
    pub defer_to_running_ksoftirqd: bool,
}

impl SoftirqConfig {
    /// The mainline limits for `hz`.
    pub fn new(hz: u32) -> SoftirqConfig {
        SoftirqConfig {
            hz,
            max_restart: MAX_SOFTIRQ_RESTART,
            max_time_jiffies: msecs_to_jiffies(MAX_SOFTIRQ_TIME_MS, hz),
            defer_to_running_ksoftirqd: false,
        }
    }
}

impl Default for SoftirqConfig {
    fn default() -> Self {
        SoftirqConfig::new(1000)
    }
}

/// Who runs the softirq loop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SoftirqContext {
    /// irq_exit → invoke_softirq, on the interrupted context's time.
    IrqExit,
    /// run_ksoftirqd, a SCHED_OTHER thread.
    Ksoftirqd,
}

/// One step of a handle_softirqs invocation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SoftirqStep {
    /// Run this action now (its time is the caller's to charge).
    Run(SoftirqVec),
    /// Nothing is pending: the invocation is over.
    Done,
    /// Work is still pending but a limit was hit: wakeup_softirqd. The invocation is over.
    WakeKsoftirqd,
}

#[derive(Clone, Copy, Debug)]
struct Invocation {
    end_jiffies: u64,
    max_restart: u32,
    snapshot: u32,
    context: SoftirqContext,
}

/// Counters over the CPU's life (/proc/softirqs and friends).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SoftirqCounters {
    pub invocations: u64,
    pub restarts: u64,
    pub ksoftirqd_wakeups: u64,
    pub ksoftirqd_runs: u64,
    /// Per vector, indexed by `SoftirqVec as usize`.
    pub actions: [u64; 10],
}

/// One CPU's softirq state: the pending mask, ksoftirqd, and a running invocation.
#[derive(Clone, Debug)]
pub struct SoftirqCpu {
    config: SoftirqConfig,
    pending: u32,
    ksoftirqd_awake: bool,
    current: Option<Invocation>,
    counters: SoftirqCounters,
}

impl SoftirqCpu {
    pub fn new(config: SoftirqConfig) -> SoftirqCpu {
        SoftirqCpu {
            config,
            pending: 0,
            ksoftirqd_awake: false,
            current: None,
            counters: SoftirqCounters::default(),
        }
    }

    /// raise_softirq: mark the vector pending (the handler's next step decides who runs it).
    pub fn raise(&mut self, vec: SoftirqVec) {
        self.pending |= vec.bit();
    }

    pub fn is_pending(&self, vec: SoftirqVec) -> bool {
        self.pending & vec.bit() != 0
    }

    pub fn any_pending(&self) -> bool {
        self.pending != 0
    }

    /// Inside handle_softirqs (in_serving_softirq)?
    pub fn in_softirq(&self) -> bool {
        self.current.is_some()
    }

    /// Has ksoftirqd been woken and not yet run the work dry?
    pub fn ksoftirqd_awake(&self) -> bool {
        self.ksoftirqd_awake
    }

    pub fn counters(&self) -> SoftirqCounters {
        self.counters
    }

    pub fn config(&self) -> SoftirqConfig {
        self.config
    }

    /// irq_exit: should the softirqs run inline now? (`!in_interrupt() &&
    /// local_softirq_pending()`; with the 2016 rule, not while ksoftirqd is awake.)
    pub fn irq_exit_should_run(&self) -> bool {
        if self.pending == 0 || self.current.is_some() {
            return false;
        }
        // ksoftirqd_running(): HI and TASKLET (SOFTIRQ_NOW_MASK) are never left to it.
        let now = SoftirqVec::Hi.bit() | SoftirqVec::Tasklet.bit();
        self.pending & now != 0 || !(self.config.defer_to_running_ksoftirqd && self.ksoftirqd_awake)
    }

    /// ksoftirqd_should_run: the thread has work when anything is pending; when it finds
    /// none (inline runs drained it) it goes back to sleep.
    pub fn ksoftirqd_should_run(&mut self) -> bool {
        if self.pending == 0 {
            self.ksoftirqd_awake = false;
        }
        self.pending != 0 && self.current.is_none()
    }

    /// handle_softirqs entry: `end = jiffies + MAX_SOFTIRQ_TIME`, snapshot and clear the
    /// mask. Then call [`SoftirqCpu::next`] until it ends the invocation. Returns false (and
    /// starts nothing) if already inside one.
    pub fn begin(&mut self, now_jiffies: u64, context: SoftirqContext) -> bool {
        if self.current.is_some() {
            return false;
        }
        self.counters.invocations += 1;
        if context == SoftirqContext::Ksoftirqd {
            self.counters.ksoftirqd_runs += 1;
        }
        self.current = Some(Invocation {
            end_jiffies: now_jiffies + self.config.max_time_jiffies,
            max_restart: self.config.max_restart,
            snapshot: self.pending,
            context,
        });
        self.pending = 0;
        true
    }

    /// The next action in bit order; at the end of a pass, the restart rule. `need_resched`
    /// is the scheduler's TIF_NEED_RESCHED at that moment. Returns `Done` if no invocation
    /// is running.
    pub fn next(&mut self, now_jiffies: u64, need_resched: bool) -> SoftirqStep {
        let Some(inv) = self.current.as_mut() else {
            return SoftirqStep::Done;
        };
        if inv.snapshot == 0 {
            // End of a pass: re-read pending with IRQs off.
            if self.pending == 0 {
                self.end(false);
                return SoftirqStep::Done;
            }
            inv.max_restart = inv.max_restart.saturating_sub(1);
            if now_jiffies < inv.end_jiffies && !need_resched && inv.max_restart > 0 {
                self.counters.restarts += 1;
                inv.snapshot = self.pending;
                self.pending = 0;
            } else {
                self.end(true);
                return SoftirqStep::WakeKsoftirqd;
            }
        }
        let bit = inv.snapshot.trailing_zeros();
        inv.snapshot &= inv.snapshot - 1;
        let vec = SoftirqVec::ALL[bit as usize];
        self.counters.actions[bit as usize] += 1;
        SoftirqStep::Run(vec)
    }

    fn end(&mut self, wake: bool) {
        let ctx = self.current.take().map(|i| i.context);
        if wake {
            self.counters.ksoftirqd_wakeups += 1;
            self.ksoftirqd_awake = true;
        } else if ctx == Some(SoftirqContext::Ksoftirqd) {
            // run_ksoftirqd found nothing left: the thread goes back to sleep.
            self.ksoftirqd_awake = false;
        }
    }
}
