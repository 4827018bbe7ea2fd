//! Where an emulated CPU's wall time goes over the run's measured window, so that its
//! row adds up to the window exactly. The window is partitioned by the monotonic clock:
//! at each instant the CPU is charged to the thread that became busy last among its busy
//! threads (the CPU thread, ksoftirqd, the irq thread, the kworker), doing what it does —
//! the rule its trace lane follows ([`crate::trace`]) — and to idle when none is busy (the
//! CPU thread halted, or done with its jobs). After the run the threads' CPU clocks
//! settle the busy time against the CPU time they really got ([`settle`]): what the host
//! took away is stolen time.

use crate::trace::{Lane, Role};
use irqlab_report::observe::SliceKind;

/// The slice kinds a CPU's time is charged to.
pub const KINDS: usize = 7;

/// The index of `kind` in a [`CpuTime`] (exhaustive: a new kind must get a column).
pub fn index(kind: SliceKind) -> usize {
    match kind {
        SliceKind::Idle => 0,
        SliceKind::Usr => 1,
        SliceKind::Sys => 2,
        SliceKind::HardIrq => 3,
        SliceKind::SoftIrq => 4,
        SliceKind::Ksoftirqd => 5,
        SliceKind::IrqThread => 6,
    }
}

/// Clock time per slice kind of one emulated CPU, within the window, up to `closed_at`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CpuTime {
    pub ns: [u64; KINDS],
    /// When the CPU thread ended (monotonic ns); the window after it is idle.
    pub closed_at: u64,
    pub window_start: u64,
}

impl CpuTime {
    pub fn get(&self, kind: SliceKind) -> u64 {
        self.ns[index(kind)]
    }

    /// The time of every kind over [window_start, `window_end`]: what the CPU did until
    /// its thread ended, then idle. Sums to `window_end - window_start` exactly when
    /// `window_end` is not before `closed_at`.
    pub fn over(&self, window_end: u64) -> CpuTime {
        let mut t = *self;
        let tail = window_end.saturating_sub(self.closed_at.max(self.window_start));
        t.ns[index(SliceKind::Idle)] += tail;
        t
    }

    /// Every kind but idle.
    pub fn busy(&self) -> u64 {
        self.ns.iter().sum::<u64>() - self.get(SliceKind::Idle)
    }
}

/// The running partition of one CPU's time. Every thread of the CPU reports what it
/// starts doing; the time since the previous report goes to what the CPU ran until then.
#[derive(Clone, Debug)]
pub struct TimeLedger {
    lane: Lane,
    time: CpuTime,
    /// The last time charged up to.
    last: u64,
    closed: bool,
}

impl TimeLedger {
    /// A CPU whose thread has its jobs from `start` (busy in usr: until the host runs it,
    /// that time is the host's), counted from `window_start` on.
    pub fn new(start: u64, window_start: u64) -> TimeLedger {
        let mut lane = Lane::default();
        lane.set(Role::Cpu, SliceKind::Usr);
        TimeLedger {
            lane,
            time: CpuTime {
                window_start,
                ..CpuTime::default()
            },
            last: start,
            closed: false,
        }
    }

    /// `role` starts doing `kind` at `now`. Reports from several threads may arrive a few
    /// ns out of order: a time before the last one counts as the last one.
    pub fn set(&mut self, now: u64, role: Role, kind: SliceKind) {
        if self.closed {
            return;
        }
        self.charge(now);
        self.lane.set(role, kind);
    }

    fn charge(&mut self, now: u64) {
        let now = now.max(self.last);
        let from = self.last.max(self.time.window_start);
        if now > from {
            self.time.ns[index(self.lane.shown())] += now - from;
        }
        self.last = now;
    }

    /// The CPU thread ended at `now`: later reports (kernel threads winding down) are
    /// not counted. Returns the CPU's time.
    pub fn close(&mut self, now: u64) -> CpuTime {
        if !self.closed {
            self.charge(now);
            self.closed = true;
            self.time.closed_at = self.last;
        }
        self.time
    }
}

/// Settles a CPU's clock time `t` (over the window) against `cpu_ns`, the CPU time its
/// threads got in the window: returns the row, whose busy kinds add up to `cpu_ns` where
/// the window allows, and the time stolen by the host. Busy clock time beyond the CPU
/// time is stolen: the threads had work and the host ran something else; it comes out
/// of the busy kinds in proportion ([`split_stolen`]). CPU time beyond the busy clock
/// time was spent while the clock saw the CPU halted — the halt's own system calls
/// (futex wait, the wake-up) or, unpinned, kernel threads running beside the CPU thread —
/// and moves from idle to sys. Row and stolen time add up to the window either way.
pub fn settle(t: &CpuTime, cpu_ns: u64) -> (CpuTime, u64) {
    let busy = t.busy();
    if cpu_ns < busy {
        let stolen = busy - cpu_ns;
        return (split_stolen(t, stolen), stolen);
    }
    let mut row = *t;
    let (idle, sys) = (index(SliceKind::Idle), index(SliceKind::Sys));
    let halt_cpu = (cpu_ns - busy).min(row.ns[idle]);
    row.ns[idle] -= halt_cpu;
    row.ns[sys] += halt_cpu;
    (row, 0)
}

/// Takes `stolen` ns out of the busy kinds of `t`, each in proportion to its time (the
/// runtime knows how much the host took, not during which kind), and returns what each
/// kind keeps; the shares add up to `stolen` exactly (largest remainders first).
pub fn split_stolen(t: &CpuTime, stolen: u64) -> CpuTime {
    let busy = t.busy();
    let stolen = stolen.min(busy);
    let mut out = *t;
    if stolen == 0 {
        return out;
    }
    let idle = index(SliceKind::Idle);
    let mut taken = 0u64;
    let mut rems: Vec<(u128, usize)> = Vec::new();
    for (k, &ns) in t.ns.iter().enumerate() {
        if k == idle || ns == 0 {
            continue;
        }
        let share = u128::from(stolen) * u128::from(ns);
        let whole = (share / u128::from(busy)) as u64;
        out.ns[k] -= whole;
        taken += whole;
        rems.push((share % u128::from(busy), k));
    }
    // Ties go to the lower index, so the split is the same for the same numbers.
    rems.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    for &(_, k) in rems.iter().cycle().take((stolen - taken) as usize) {
        out.ns[k] -= 1;
    }
    out
}

/// CPU time a thread spent within the window: its CPU clock read when it first sees the
/// window open, and at its end.
#[derive(Clone, Copy, Debug)]
pub struct WindowCpu {
    window_start: u64,
    at_open: Option<u64>,
}

impl WindowCpu {
    pub fn new(window_start: u64) -> WindowCpu {
        WindowCpu {
            window_start,
            at_open: None,
        }
    }

    /// Called at `now` by the thread itself whenever convenient (each pass of its loop):
    /// reads its CPU clock once, the first time the window is open.
    #[inline]
    pub fn observe(&mut self, now: u64) {
        if self.at_open.is_none() && now >= self.window_start {
            self.at_open = Some(crate::clock::thread_cpu_ns());
        }
    }

    /// The thread's CPU time since the window opened (0 when it never saw it open).
    pub fn finish(self) -> u64 {
        let end = crate::clock::thread_cpu_ns();
        self.at_open.map_or(0, |t| end.saturating_sub(t))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_busy_thread_owns_the_cpu_and_the_window_clips() {
        // Jobs from 100; the window opens at 150.
        let mut l = TimeLedger::new(100, 150);
        l.set(200, Role::Cpu, SliceKind::HardIrq); // usr 150..200
        l.set(210, Role::Cpu, SliceKind::Usr); // hardirq 200..210
        l.set(230, Role::IrqThread, SliceKind::IrqThread); // usr 210..230
        l.set(240, Role::Cpu, SliceKind::Idle); // the irq thread still shows
        l.set(280, Role::IrqThread, SliceKind::Idle); // irq thread 230..280
        l.set(275, Role::Cpu, SliceKind::Usr); // late report: counts at 280; idle 0
        l.set(300, Role::Kworker, SliceKind::Sys); // usr 280..300
        l.set(320, Role::Kworker, SliceKind::Idle); // sys 300..320
        let t = l.close(350); // usr 320..350
        l.set(400, Role::Ksoftirqd, SliceKind::Ksoftirqd);
        assert_eq!(l.close(500), t, "nothing after the close");
        assert_eq!(t.get(SliceKind::Usr), 50 + 20 + 20 + 30);
        assert_eq!(t.get(SliceKind::HardIrq), 10);
        assert_eq!(t.get(SliceKind::IrqThread), 50);
        assert_eq!(t.get(SliceKind::Sys), 20);
        assert_eq!(t.get(SliceKind::Idle), 0);
        assert_eq!(t.closed_at, 350);
        let w = t.over(420);
        assert_eq!(w.get(SliceKind::Idle), 70, "the thread ended at 350");
        assert_eq!(w.ns.iter().sum::<u64>(), 420 - 150);
    }

    #[test]
    fn a_cpu_that_ended_before_the_window_was_idle_all_along() {
        let mut l = TimeLedger::new(0, 1_000);
        l.set(10, Role::Cpu, SliceKind::Idle);
        let t = l.close(20).over(5_000);
        assert_eq!(t.get(SliceKind::Idle), 4_000);
        assert_eq!(t.busy(), 0);
    }

    #[test]
    fn stolen_time_comes_out_of_the_busy_kinds_in_proportion_and_exactly() {
        let mut t = CpuTime::default();
        t.ns[index(SliceKind::Usr)] = 600;
        t.ns[index(SliceKind::Sys)] = 300;
        t.ns[index(SliceKind::HardIrq)] = 101;
        t.ns[index(SliceKind::Idle)] = 1_000;
        let s = split_stolen(&t, 333);
        assert_eq!(s.ns.iter().sum::<u64>() + 333, t.ns.iter().sum::<u64>());
        assert_eq!(s.get(SliceKind::Idle), 1_000, "idle keeps its time");
        assert_eq!(s.get(SliceKind::Usr), 600 - 200);
        assert_eq!(s.get(SliceKind::Sys), 300 - 100);
        assert_eq!(s.get(SliceKind::HardIrq), 101 - 33);
        // More than the busy time: everything busy was stolen, idle stays.
        let all = split_stolen(&t, 5_000);
        assert_eq!(all.busy(), 0);
        assert_eq!(all.get(SliceKind::Idle), 1_000);
        assert_eq!(split_stolen(&t, 0), t);
    }

    #[test]
    fn busy_time_is_settled_against_the_cpu_time_the_threads_got() {
        let mut t = CpuTime::default();
        t.ns[index(SliceKind::Usr)] = 300;
        t.ns[index(SliceKind::HardIrq)] = 100;
        t.ns[index(SliceKind::Idle)] = 600;
        // The host gave the threads 250 of the 400 busy ns.
        let (row, stolen) = settle(&t, 250);
        assert_eq!(stolen, 150);
        assert_eq!(row.busy(), 250);
        assert_eq!(row.get(SliceKind::Idle), 600);
        // They got 450: 50 ns of CPU time fell in what the clock saw as halted.
        let (row, stolen) = settle(&t, 450);
        assert_eq!(stolen, 0);
        assert_eq!(row.busy(), 450);
        assert_eq!(row.get(SliceKind::Sys), 50);
        assert_eq!(row.get(SliceKind::Idle), 550);
        // Unpinned threads in parallel can get more than the window: idle runs out.
        let (row, stolen) = settle(&t, 5_000);
        assert_eq!(
            (row.get(SliceKind::Idle), row.busy(), stolen),
            (0, 1_000, 0)
        );
        for cpu in [0, 250, 400, 450, 5_000] {
            let (row, stolen) = settle(&t, cpu);
            assert_eq!(row.ns.iter().sum::<u64>() + stolen, 1_000, "{cpu}");
        }
    }

    #[test]
    fn a_thread_counts_its_cpu_time_from_the_window_on() {
        let now = crate::clock::now_ns();
        let mut never = WindowCpu::new(u64::MAX);
        never.observe(now);
        assert_eq!(never.finish(), 0);
        let mut w = WindowCpu::new(now);
        w.observe(now);
        let end = now + 20_000_000;
        while crate::clock::now_ns() < end {
            std::hint::spin_loop();
        }
        // 20 ms of spinning: the host may take some of it, never all.
        assert!(w.finish() > 1_000_000);
    }
}
