//! The adaptive moderators of one CPU thread's queues (core's `Moderator`: net_dim,
//! rdma_dim, irq-am) and the kworker that programs the levels they choose. As in the
//! kernel (lib/dim/dim.c schedule_work(&dim->work), drivers' dim work functions), the
//! handler only decides; a work item on this CPU's kworker, a real thread sharing the
//! CPU thread's core, programs the device and acknowledges. The delay from decision to
//! program is measured, not assumed.

use crate::clock::now_ns;
use crate::cpu_time::WindowCpu;
use crate::shared::CpuShared;
use crate::trace::{Event, Recorder, Role};
use crate::usage::Usage;
use crate::wake::Notifier;
use irqlab_core::ModeratorKind;
use irqlab_core::dim::Profile;
use irqlab_core::moderator::Moderator;
use irqlab_report::observe::SliceKind;
use irqlab_report::{Latency, ModerationReport};
use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering::*};
use std::sync::{Mutex, MutexGuard, PoisonError};

/// A level to program into a queue's device coalescing.
#[derive(Clone, Copy, Debug)]
struct Work {
    queue: usize,
    profile: Profile,
    level: usize,
    queued_ns: u64,
}

/// What a kworker measured.
#[derive(Clone, Debug, Default)]
pub struct KworkerResult {
    pub usage: Usage,
    /// Clock time running work items.
    pub busy_ns: u64,
    /// Decision to program, per work item.
    pub delay: Latency,
    /// Its CPU time within the measured window.
    pub window_cpu_ns: u64,
}

/// The moderators of one CPU thread and its kworker's queue.
#[derive(Debug)]
pub struct Moderation {
    moderators: Vec<Option<Mutex<Moderator>>>,
    work: Mutex<VecDeque<Work>>,
    /// Wakes the kworker (a sleeping one only).
    pub notifier: Notifier,
    stop: AtomicBool,
    /// When the moderators were made: they see time since then, so a level's course over
    /// time starts with the run, as the simulator's does.
    start_ns: u64,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Moderation {
    /// A `kind` moderator for every interrupt queue of `cpu` (none for poll queues),
    /// each queue's device starting at the moderator's start profile, as the driver
    /// programs it when it sets the CQ up.
    pub fn new(kind: ModeratorKind, cpu: &CpuShared) -> Result<Moderation, crate::RtError> {
        let mut moderators = Vec::new();
        for q in &cpu.queues {
            let m = if q.plan.polled {
                None
            } else {
                Moderator::new(kind, None)
                    .map_err(|e| crate::RtError::Refused(format!("--moderator {kind}: {e}")))?
            };
            if let Some(m) = &m {
                q.request_coalescing(m.profile().usec, m.profile().count);
            }
            moderators.push(m.map(Mutex::new));
        }
        Ok(Moderation {
            moderators,
            work: Mutex::new(VecDeque::new()),
            notifier: Notifier::lazy(),
            stop: AtomicBool::new(false),
            start_ns: crate::clock::now_ns(),
        })
    }

    /// Whether any queue is moderated (a kworker is needed).
    pub fn any(&self) -> bool {
        self.moderators.iter().any(Option::is_some)
    }

    /// One interrupt or poll round of `queue` at `now_ns` that reaped `completions`
    /// CQEs of `bytes`. Returns true when it queued a work item: the caller wakes the
    /// kworker once it leaves interrupt context.
    pub fn on_event(&self, queue: usize, now_ns: u64, completions: u32, bytes: u64) -> bool {
        let Some(Some(m)) = self.moderators.get(queue) else {
            return false;
        };
        let since_start = now_ns.saturating_sub(self.start_ns);
        let Some(req) = lock(m).on_event(since_start, completions, bytes) else {
            return false;
        };
        lock(&self.work).push_back(Work {
            queue,
            profile: req.profile,
            level: req.level,
            queued_ns: now_ns,
        });
        true
    }

    pub fn has_work(&self) -> bool {
        !lock(&self.work).is_empty()
    }

    /// The report's view of `queue`'s moderator.
    pub fn report(&self, queue: usize) -> Option<ModerationReport> {
        let m = lock(self.moderators.get(queue)?.as_ref()?);
        Some(ModerationReport::from(&*m))
    }

    /// Asks the kworker to end once its queue is empty.
    pub fn stop(&self) {
        self.stop.store(true, SeqCst);
        self.notifier.wake_to_stop();
    }

    /// The kworker's loop (worker_thread): sleep until work is queued, then program each
    /// level into its queue (the device takes it on its next pass) and acknowledge. The
    /// measured window opens at `window_start`.
    pub fn run_kworker(
        &self,
        cpu: &CpuShared,
        rec: &mut Recorder,
        window_start: u64,
    ) -> KworkerResult {
        let u0 = Usage::thread();
        let mut window = WindowCpu::new(window_start);
        let mut out = KworkerResult::default();
        loop {
            self.notifier
                .wait(|| self.stop.load(SeqCst) || self.has_work());
            let t = now_ns();
            window.observe(t);
            cpu.account(t, Role::Kworker, SliceKind::Sys);
            rec.slice(t, cpu.index, Role::Kworker, SliceKind::Sys);
            while let Some(w) = lock(&self.work).pop_front() {
                cpu.queues[w.queue].request_coalescing(w.profile.usec, w.profile.count);
                if let Some(Some(m)) = self.moderators.get(w.queue) {
                    lock(m).ack();
                }
                let now = now_ns();
                out.delay.record(now.saturating_sub(w.queued_ns));
                rec.record(
                    now,
                    Event::Counter {
                        name: "moderation_level",
                        index: (cpu.vector_base + w.queue) as u32,
                        value: w.level as f64,
                    },
                );
            }
            let end = now_ns();
            out.busy_ns += end - t;
            cpu.account(end, Role::Kworker, SliceKind::Idle);
            rec.slice(end, cpu.index, Role::Kworker, SliceKind::Idle);
            if self.stop.load(SeqCst) && !self.has_work() {
                break;
            }
        }
        out.usage = Usage::thread().since(&u0);
        out.window_cpu_ns = window.finish();
        out
    }
}
