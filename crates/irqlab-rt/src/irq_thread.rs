//! `--handler threaded`: nvme-pci with use_threaded_interrupts. The primary handler
//! (nvme_irq_check, in the CPU thread's hardirq path) only checks for a pending CQE,
//! sets IRQTF_RUNTHREAD and asks for the thread's wake-up, which the CPU thread issues
//! when it leaves interrupt context (wake_up_process from hardirq takes effect at
//! irq_exit). The irq thread, a real SCHED_FIFO thread on the CPU thread's core, runs
//! nvme_irq (reap every CQE, ring the CQ head doorbell once) for each marked vector,
//! completes the requests and wakes the fio task (a kick of the CPU thread).
//!
//! The vector is not masked while the thread runs: nvme's MSI-X vectors have a primary
//! handler and an IRQCHIP_ONESHOT_SAFE chip, so __setup_irq drops IRQF_ONESHOT
//! (kernel/irq/manage.c). What keeps the thread from being flooded is IRQTF_RUNTHREAD
//! (a message during a run marks the vector again: one more run, not one per message)
//! and the device's one message per CQ head doorbell.

use crate::clock::now_ns;
use crate::cpu_time::WindowCpu;
use crate::sched;
use crate::shared::{CpuShared, Reaped};
use crate::trace::{Event, Recorder, Role};
use crate::usage::Usage;
use crate::wake::Notifier;
use irqlab_core::irq::SharedIrr;
use irqlab_report::observe::SliceKind;
use std::sync::atomic::{AtomicBool, Ordering::*};

/// What a CPU thread and its irq thread share.
#[derive(Debug)]
pub struct IrqThread {
    /// Wakes the irq thread (wake_up_process of irq/N-nvme0qM; a sleeping one only).
    pub notifier: Notifier,
    /// Vectors whose thread function must run (IRQTF_RUNTHREAD).
    runthread: SharedIrr,
    stop: AtomicBool,
}

impl Default for IrqThread {
    fn default() -> Self {
        IrqThread {
            notifier: Notifier::lazy(),
            runthread: SharedIrr::default(),
            stop: AtomicBool::new(false),
        }
    }
}

/// What an irq thread measured.
#[derive(Clone, Debug, Default)]
pub struct IrqThreadResult {
    pub usage: Usage,
    /// Clock time running thread functions.
    pub busy_ns: u64,
    /// Thread function runs (one per marked vector per wake).
    pub runs: u64,
    /// Runs that found the CQ locked by a reap-after-submit and left it to it.
    pub cq_busy: u64,
    /// Whether it ran SCHED_FIFO (false where the host refused).
    pub fifo: bool,
    /// Its CPU time within the measured window.
    pub window_cpu_ns: u64,
}

impl IrqThread {
    /// __irq_wake_thread's first half: set IRQTF_RUNTHREAD for `vector`. The caller
    /// wakes the thread with [`IrqThread::wake`] when it leaves hardirq context.
    pub fn mark(&self, vector: u8) {
        self.runthread.set(vector);
    }

    /// wake_up_process(): true when the thread was asleep and this woke it.
    pub fn wake(&self) -> bool {
        self.notifier.notify()
    }

    /// Asks the thread to end once it has nothing left to run.
    pub fn stop(&self) {
        self.stop.store(true, SeqCst);
        self.notifier.wake_to_stop();
    }

    /// The thread's loop (irq_thread()): sleep until woken, run the thread function of
    /// every marked vector, hand the completions over and wake the fio task. The
    /// measured window opens at `window_start`.
    pub fn run(&self, cpu: &CpuShared, rec: &mut Recorder, window_start: u64) -> IrqThreadResult {
        let u0 = Usage::thread();
        let mut window = WindowCpu::new(window_start);
        let mut out = IrqThreadResult {
            fifo: sched::set_fifo(sched::IRQ_THREAD_FIFO_PRIORITY).is_ok(),
            ..IrqThreadResult::default()
        };
        loop {
            self.notifier
                .wait(|| self.stop.load(SeqCst) || self.runthread.any());
            let t = now_ns();
            window.observe(t);
            cpu.account(t, Role::IrqThread, SliceKind::IrqThread);
            rec.slice(t, cpu.index, Role::IrqThread, SliceKind::IrqThread);
            let mut handed = false;
            let under_way = cpu.begin_delivery();
            while let Some(v) = self.runthread.take_highest() {
                let Some((_, q)) = cpu.queue_of(v).filter(|&(owner, _)| owner == cpu.index) else {
                    continue;
                };
                out.runs += 1;
                let queue = &cpu.queues[q];
                // A reap-after-submit holds the CQ: it is reaping what we would.
                if !queue.try_lock_cq() {
                    out.cq_busy += 1;
                    continue;
                }
                let mut cids = Vec::new();
                queue.qp.poll_cq(u32::MAX, |cqe| cids.push(cqe.command_id));
                queue.unlock_cq();
                let now = now_ns();
                rec.record(
                    now,
                    Event::Handler {
                        cpu: cpu.index as u32,
                        vector: (cpu.vector_base + q) as u32,
                        cqes: cids.len() as u32,
                    },
                );
                if !cids.is_empty() {
                    cpu.inbox.post(Reaped {
                        queue: q,
                        command_ids: cids,
                        at_ns: now,
                    });
                    handed = true;
                }
            }
            if handed {
                cpu.notifier.kick();
            }
            drop(under_way);
            let end = now_ns();
            out.busy_ns += end - t;
            cpu.account(end, Role::IrqThread, SliceKind::Idle);
            rec.slice(end, cpu.index, Role::IrqThread, SliceKind::Idle);
            if self.stop.load(SeqCst) && !self.runthread.any() {
                break;
            }
        }
        out.usage = Usage::thread().since(&u0);
        out.window_cpu_ns = window.finish();
        out
    }
}
