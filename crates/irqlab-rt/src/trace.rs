//! `--trace` and `--timeline` for the runtime: every thread records what it did, with the
//! monotonic clock, into its own [`Recorder`] (no sharing on the hot path); after the run
//! [`replay`] merges the records in time order and feeds them to an engine-neutral
//! [`Observer`], the same tracers the simulator drives.
//!
//! An emulated CPU is several host threads on one core (the CPU thread with its jobs and
//! interrupt path, ksoftirqd, the irq thread, the kworker). The CPU's lane shows the
//! thread that became busy last among those busy (a woken thread preempts the one it
//! shares the core with), which is what the core ran when they were pinned together.

use irqlab_report::observe::{Observer, SliceKind};
use std::ops::Range;

/// The host thread of an emulated CPU that a slice belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// The CPU thread: the jobs, hardirq and softirq at irq_exit.
    Cpu = 0,
    Ksoftirqd = 1,
    IrqThread = 2,
    /// The moderator's work items (shown as sys time).
    Kworker = 3,
}

const ROLES: usize = 4;

/// One recorded happening.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Event {
    Slice {
        cpu: u32,
        role: Role,
        kind: SliceKind,
    },
    Message {
        vector: u32,
    },
    Notification {
        cpu: u32,
        pmn: bool,
    },
    Handler {
        cpu: u32,
        vector: u32,
        cqes: u32,
    },
    Counter {
        name: &'static str,
        index: u32,
        value: f64,
    },
}

/// What to record: nothing, or everything up to a window's end.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TraceSpec {
    pub on: bool,
    /// Monotonic ns of the run's start (trace time 0).
    pub t0: u64,
    /// Trace time (ns since t0) before which only slices are kept (the state a window
    /// opens with): the window's start, 0 for the whole run.
    pub from: u64,
    /// Trace time (ns since t0) after which nothing is kept; u64::MAX for the whole run.
    pub until: u64,
    /// Events one recorder keeps at most (memory bound); later ones are counted.
    pub limit: usize,
}

/// Events a recorder keeps at most unless told otherwise: about 100 MB per thread.
pub const DEFAULT_EVENT_LIMIT: usize = 2 << 20;

impl TraceSpec {
    /// Record the whole run, or what a reader of `window` (ns of trace time) needs.
    pub fn on(t0: u64, window: Option<Range<u64>>) -> TraceSpec {
        let w = window.unwrap_or(0..u64::MAX);
        TraceSpec {
            on: true,
            t0,
            from: w.start,
            until: w.end,
            limit: DEFAULT_EVENT_LIMIT,
        }
    }
}

/// One thread's record: (monotonic ns, event), in the thread's own time order.
#[derive(Clone, Debug, Default)]
pub struct Recorder {
    spec: TraceSpec,
    events: Vec<(u64, Event)>,
    /// Before the window: the last slice of each (CPU, role), the state it opens with.
    before: Vec<(u64, Event)>,
    dropped: u64,
}

impl Recorder {
    pub fn new(spec: TraceSpec) -> Recorder {
        Recorder {
            spec,
            events: Vec::new(),
            before: Vec::new(),
            dropped: 0,
        }
    }

    /// Whether anything is recorded (callers skip building events when not).
    #[inline]
    pub fn is_on(&self) -> bool {
        self.spec.on
    }

    #[inline]
    pub fn record(&mut self, now_ns: u64, event: Event) {
        if !self.spec.on {
            return;
        }
        let t = now_ns.saturating_sub(self.spec.t0);
        if t > self.spec.until {
            return;
        }
        if t < self.spec.from {
            if let Event::Slice { cpu, role, .. } = event {
                let same = |e: &(u64, Event)| matches!(e.1, Event::Slice { cpu: c, role: r, .. } if c == cpu && r == role);
                match self.before.iter_mut().find(|e| same(e)) {
                    Some(e) => *e = (now_ns, event),
                    None => self.before.push((now_ns, event)),
                }
            }
            return;
        }
        if self.events.len() >= self.spec.limit {
            self.dropped += 1;
            return;
        }
        self.events.push((now_ns, event));
    }

    #[inline]
    pub fn slice(&mut self, now_ns: u64, cpu: usize, role: Role, kind: SliceKind) {
        if self.spec.on {
            self.record(
                now_ns,
                Event::Slice {
                    cpu: cpu as u32,
                    role,
                    kind,
                },
            );
        }
    }

    /// Events that did not fit under the limit.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }
}

/// Merges the records of every thread in time order (ties keep each thread's order)
/// and feeds them to `obs`, with times relative to `t0`. `vector_names` and `ncpus` go
/// to [`Observer::start`]. Returns the events dropped by full recorders.
pub fn replay(
    recorders: Vec<Recorder>,
    t0: u64,
    vector_names: &[String],
    ncpus: usize,
    obs: &mut dyn Observer,
) -> u64 {
    let dropped = recorders.iter().map(Recorder::dropped).sum();
    let mut all: Vec<(u64, Event)> = recorders
        .into_iter()
        .flat_map(|r| r.before.into_iter().chain(r.events))
        .collect();
    all.sort_by_key(|(t, _)| *t);
    obs.start(vector_names, ncpus);
    let mut lanes: Vec<Lane> = vec![Lane::default(); ncpus];
    for (t, ev) in all {
        let now = t.saturating_sub(t0);
        match ev {
            Event::Slice { cpu, role, kind } => {
                let Some(lane) = lanes.get_mut(cpu as usize) else {
                    continue;
                };
                if let Some(shown) = lane.set(role, kind) {
                    obs.slice(now, cpu as usize, shown);
                }
            }
            Event::Message { vector } => obs.message(now, vector as usize),
            Event::Notification { cpu, pmn } => obs.notification(now, cpu as usize, pmn),
            Event::Handler { cpu, vector, cqes } => {
                obs.handler(now, cpu as usize, vector as usize, cqes);
            }
            Event::Counter { name, index, value } => {
                if obs.wants_counters() {
                    obs.counter(now, name, index as usize, value);
                }
            }
        }
    }
    dropped
}

/// The threads of one emulated CPU: what each does, and which became busy last. The
/// trace's lane and the CPU row's time ([`crate::cpu_time`]) both follow it.
#[derive(Clone, Debug)]
pub(crate) struct Lane {
    kinds: [SliceKind; ROLES],
    /// Busy roles, the most recently busy last.
    busy: Vec<Role>,
    shown: SliceKind,
}

impl Default for Lane {
    fn default() -> Self {
        Lane {
            kinds: [SliceKind::Idle; ROLES],
            busy: Vec::new(),
            shown: SliceKind::Idle,
        }
    }
}

impl Lane {
    /// What the CPU runs now: the kind of the last busy role, or idle.
    pub(crate) fn shown(&self) -> SliceKind {
        self.shown
    }

    /// `role` now does `kind`; returns what the lane shows when that changed.
    pub(crate) fn set(&mut self, role: Role, kind: SliceKind) -> Option<SliceKind> {
        let was = self.kinds[role as usize];
        self.kinds[role as usize] = kind;
        match (was == SliceKind::Idle, kind == SliceKind::Idle) {
            (true, false) => self.busy.push(role),
            (false, true) => self.busy.retain(|&r| r != role),
            _ => {}
        }
        let shown = self
            .busy
            .last()
            .map_or(SliceKind::Idle, |&r| self.kinds[r as usize]);
        (shown != self.shown).then(|| {
            self.shown = shown;
            shown
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Default)]
    struct Log(Vec<String>);

    impl Observer for Log {
        fn start(&mut self, names: &[String], ncpus: usize) {
            self.0.push(format!("start {} {ncpus}", names.join(",")));
        }
        fn wants_counters(&self) -> bool {
            true
        }
        fn slice(&mut self, now: u64, cpu: usize, kind: SliceKind) {
            self.0.push(format!("{now} cpu{cpu} {}", kind.name()));
        }
        fn message(&mut self, now: u64, vector: usize) {
            self.0.push(format!("{now} msi v{vector}"));
        }
        fn notification(&mut self, now: u64, cpu: usize, pmn: bool) {
            self.0.push(format!("{now} note cpu{cpu} {pmn}"));
        }
        fn handler(&mut self, now: u64, cpu: usize, vector: usize, cqes: u32) {
            self.0
                .push(format!("{now} handler cpu{cpu} v{vector} {cqes}"));
        }
        fn counter(&mut self, now: u64, name: &str, index: usize, value: f64) {
            self.0.push(format!("{now} {name}[{index}]={value}"));
        }
    }

    #[test]
    fn threads_merge_in_time_and_the_last_busy_thread_shows_on_its_cpu() {
        let spec = TraceSpec::on(1_000, None);
        let mut cpu = Recorder::new(spec);
        let mut irq = Recorder::new(spec);
        let mut dev = Recorder::new(spec);
        cpu.slice(1_100, 0, Role::Cpu, SliceKind::Usr);
        dev.record(1_150, Event::Message { vector: 0 });
        dev.record(1_160, Event::Notification { cpu: 0, pmn: false });
        cpu.slice(1_200, 0, Role::Cpu, SliceKind::HardIrq);
        cpu.slice(1_250, 0, Role::Cpu, SliceKind::Usr);
        // The irq thread preempts the job, then sleeps: the job shows again.
        irq.slice(1_300, 0, Role::IrqThread, SliceKind::IrqThread);
        irq.record(
            1_350,
            Event::Handler {
                cpu: 0,
                vector: 0,
                cqes: 2,
            },
        );
        irq.slice(1_400, 0, Role::IrqThread, SliceKind::Idle);
        cpu.slice(1_500, 0, Role::Cpu, SliceKind::Idle);
        cpu.record(
            1_600,
            Event::Counter {
                name: "moderation_level",
                index: 0,
                value: 2.0,
            },
        );
        let mut log = Log::default();
        let dropped = replay(vec![cpu, irq, dev], 1_000, &["nvme0q1".into()], 1, &mut log);
        assert_eq!(dropped, 0);
        assert_eq!(
            log.0,
            [
                "start nvme0q1 1",
                "100 cpu0 usr",
                "150 msi v0",
                "160 note cpu0 false",
                "200 cpu0 hardirq",
                "250 cpu0 usr",
                "300 cpu0 irq_thread",
                "350 handler cpu0 v0 2",
                "400 cpu0 usr",
                "500 cpu0 idle",
                "600 moderation_level[0]=2",
            ]
        );
    }

    #[test]
    fn recording_stops_at_the_window_end_and_at_the_limit() {
        let mut off = Recorder::new(TraceSpec::default());
        off.record(5, Event::Message { vector: 0 });
        assert!(!off.is_on() && off.events.is_empty());
        let mut r = Recorder::new(TraceSpec {
            limit: 3,
            ..TraceSpec::on(100, Some(20..50))
        });
        // Before the window only the CPU's last state (a slice per role) is kept.
        r.record(105, Event::Message { vector: 0 });
        r.slice(106, 0, Role::Cpu, SliceKind::Usr);
        r.slice(107, 0, Role::Cpu, SliceKind::HardIrq);
        r.slice(108, 0, Role::IrqThread, SliceKind::IrqThread);
        for t in [120, 130, 140, 150, 200] {
            r.record(t, Event::Message { vector: 0 });
        }
        assert_eq!(r.before.iter().map(|e| e.0).collect::<Vec<_>>(), [107, 108]);
        assert_eq!(r.events.len(), 3);
        assert_eq!(r.dropped(), 1, "150 over the limit; 200 past the window");
    }
}
