//! ksoftirqd/N (kernel/softirq.c run_ksoftirqd): a real SCHED_OTHER thread on the CPU
//! thread's core, woken when handle_softirqs hit a limit with work pending. It runs the
//! same invocation, reaps for the IRQ_POLL action, hands the completions to the CPU
//! thread (the fio task's wake-up) and competes with it for the core.

use crate::clock::now_ns;
use crate::cpu_time::WindowCpu;
use crate::shared::{CpuShared, Cpus, Reaped};
use crate::softirq::{SoftirqContextOps, SoftirqShared};
use crate::trace::{Event, Recorder, Role};
use crate::usage::Usage;
use irqlab_core::softirq::SoftirqContext;
use irqlab_report::observe::SliceKind;

/// What a ksoftirqd measured.
#[derive(Clone, Debug, Default)]
pub struct KsoftirqdResult {
    pub usage: Usage,
    /// Clock time inside handle_softirqs.
    pub busy_ns: u64,
    /// Invocations it ran.
    pub runs: u64,
    /// Completions it reaped.
    pub completions: u64,
    /// Its CPU time within the measured window.
    pub window_cpu_ns: u64,
}

/// The poll side of a softirq run in ksoftirqd.
struct InThread<'a> {
    cpu: &'a CpuShared,
    all: &'a Cpus,
    rec: &'a mut Recorder,
    completions: u64,
}

impl SoftirqContextOps for InThread<'_> {
    /// Another thread wants this core: the CPU thread is not halted (it has jobs to run,
    /// an interrupt to take or completions this run handed it).
    fn need_resched(&mut self) -> bool {
        !self.cpu.notifier.is_halted()
    }

    fn poll(&mut self, queue: usize, weight: u32) -> u32 {
        let mut cids = Vec::new();
        let n = self.cpu.queues[queue]
            .qp
            .poll_cq(weight, |cqe| cids.push(cqe.command_id));
        if n > 0 {
            self.completions += u64::from(n);
            let _under_way = self.cpu.begin_delivery();
            self.cpu.inbox.post(Reaped {
                queue,
                command_ids: cids,
                at_ns: now_ns(),
            });
            self.cpu.notifier.kick();
        }
        n
    }

    fn reenable(&mut self, queue: usize) {
        let qs = &self.cpu.queues[queue];
        let r = qs.enable(self.all);
        if r.pending_bit == Some(true) || r.resent {
            let cpu = qs.irte.route().cpu;
            self.rec.record(
                now_ns(),
                Event::Notification {
                    cpu,
                    pmn: self.all[cpu as usize].is_posted() && !r.resent,
                },
            );
        }
    }

    /// The CPU thread looks at its NAPI timers when it wakes.
    fn deferred(&mut self, _queue: usize) {
        self.cpu.notifier.kick();
    }
}

/// run_ksoftirqd until `soft` is stopped: sleep until woken with work, run one
/// invocation, cond_resched() (sched_yield) while work remains. The measured window
/// opens at `window_start`.
pub fn run(
    soft: &SoftirqShared,
    all: &Cpus,
    index: usize,
    rec: &mut Recorder,
    window_start: u64,
) -> KsoftirqdResult {
    let cpu = &*all[index];
    let u0 = Usage::thread();
    let mut window = WindowCpu::new(window_start);
    let mut out = KsoftirqdResult::default();
    loop {
        soft.ksoftirqd
            .wait(|| soft.stopping() || soft.ksoftirqd_should_run());
        if !soft.ksoftirqd_should_run() {
            if soft.stopping() {
                break;
            }
            continue;
        }
        let t = now_ns();
        window.observe(t);
        cpu.account(t, Role::Ksoftirqd, SliceKind::Ksoftirqd);
        rec.slice(t, cpu.index, Role::Ksoftirqd, SliceKind::Ksoftirqd);
        let mut ops = InThread {
            cpu,
            all,
            rec,
            completions: 0,
        };
        let r = soft.handle(SoftirqContext::Ksoftirqd, &mut ops);
        out.completions += ops.completions;
        let end = now_ns();
        cpu.account(end, Role::Ksoftirqd, SliceKind::Idle);
        rec.slice(end, cpu.index, Role::Ksoftirqd, SliceKind::Idle);
        if r.ran {
            out.runs += 1;
            out.busy_ns += end - t;
        }
        // cond_resched(): let the CPU thread run before the next invocation.
        std::thread::yield_now();
    }
    out.usage = Usage::thread().since(&u0);
    out.window_cpu_ns = window.finish();
    out
}
