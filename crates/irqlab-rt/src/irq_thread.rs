//! `--handler threaded`: nvme-pci with use_threaded_interrupts. The primary handler
//! (nvme_irq_check) only checks for a pending CQE and wakes the vector's irq thread; the
//! thread (nvme_irq) reaps the CQ and rings the CQ head doorbell. MSI-X vectors are
//! IRQCHIP_ONESHOT_SAFE, so the vector stays unmasked while the thread runs (pci.c
//! nvme_irq_check, kernel/irq/manage.c). One irq thread per CPU thread, a real thread
//! that inherits its CPU thread's pinning, hands reaped command ids back to it: the
//! fio task's wake-up after blk_mq_end_request.

use crate::clock::now_ns;
use crate::shared::{CpuShared, Irr, bump};
use crate::usage::Usage;
use crate::wake::Notifier;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::*};
use std::sync::{Arc, Mutex, PoisonError};

/// Command ids reaped from one queue in one thread run.
pub type Reaped = (usize, Vec<u16>);

/// What a CPU thread and its irq thread share.
#[derive(Debug, Default)]
pub struct IrqThread {
    /// Wakes the irq thread (wake_up_process of irq/N-nvme0qM).
    pub notifier: Notifier,
    /// Vectors whose thread must run (IRQTF_RUNTHREAD), set by the primary handler.
    runthread: Irr,
    /// Reaped completions not yet handed to the jobs.
    inbox: Mutex<Vec<Reaped>>,
    inbox_pending: AtomicBool,
    stop: AtomicBool,
    /// Clock time the thread spent running handlers.
    pub busy_ns: AtomicU64,
    /// Thread handler runs (one per vector per wake).
    pub runs: AtomicU64,
}

impl IrqThread {
    /// irq_wake_thread(): marks the vector and wakes the thread.
    pub fn wake(&self, vector: u8) {
        self.runthread.set(vector);
        self.notifier.notify();
    }

    /// Whether reaped completions wait for the CPU thread.
    pub fn has_completions(&self) -> bool {
        self.inbox_pending.load(Acquire)
    }

    /// Takes every reaped batch.
    pub fn take_completions(&self) -> Vec<Reaped> {
        if !self.inbox_pending.swap(false, AcqRel) {
            return Vec::new();
        }
        std::mem::take(&mut *self.inbox.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// Asks the thread to end once it has nothing left to run.
    pub fn stop(&self) {
        self.stop.store(true, SeqCst);
        self.notifier.notify();
    }

    /// The thread's loop (irq_thread()): sleep until woken, run the handler of every
    /// marked vector, hand the completions over and kick the CPU thread. Returns its
    /// getrusage(RUSAGE_THREAD).
    pub fn run(&self, cpu: &CpuShared) -> Usage {
        let u0 = Usage::thread();
        loop {
            self.notifier
                .wait(|| self.stop.load(SeqCst) || self.runthread_pending());
            let t = now_ns();
            let mut handed = false;
            for v in self.runthread.take() {
                let Some(q) = cpu.queue_of(v) else {
                    continue;
                };
                bump(&self.runs, 1);
                // nvme_irq: reap every pending CQE, ring the CQ head doorbell once.
                let mut cids = Vec::new();
                cpu.queues[q]
                    .qp
                    .poll_cq(u32::MAX, |cqe| cids.push(cqe.command_id));
                if !cids.is_empty() {
                    self.inbox
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .push((q, cids));
                    handed = true;
                }
            }
            if handed {
                self.inbox_pending.store(true, Release);
                cpu.notifier.kick();
            }
            bump(&self.busy_ns, now_ns() - t);
            if self.stop.load(SeqCst) && !self.runthread_pending() {
                break;
            }
        }
        Usage::thread().since(&u0)
    }

    fn runthread_pending(&self) -> bool {
        self.runthread.any()
    }
}

/// A CPU thread's irq thread, started for `--handler threaded`.
pub fn spawn<'s>(
    scope: &'s std::thread::Scope<'s, '_>,
    irq: Arc<IrqThread>,
    cpu: Arc<CpuShared>,
) -> std::thread::ScopedJoinHandle<'s, Usage> {
    scope.spawn(move || irq.run(&cpu))
}
