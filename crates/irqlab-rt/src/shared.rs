//! What CPU threads and controller threads share: each CPU thread's delivery path (core's
//! `DeliveryPath`: a remapped IRTE or a posted descriptor) with its local APIC's IRR, and
//! each queue pair with its MSI-X mask bit and the coalescing a moderator programs.

use crate::cpu_time::TimeLedger;
use crate::topology::QueuePlan;
use crate::trace::Role;
use crate::wake::Notifier;
use irqlab_core::nvme::{CoalesceParams, QueuePair};
use irqlab_core::posted::{FIRST_EXTERNAL_VECTOR, NR_PIR_WORDS, vector_bit};
use irqlab_core::remapped::{Deliver, DeliveryPath};
use irqlab_report::observe::SliceKind;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering::*};
use std::sync::{Mutex, PoisonError};

/// The local APIC's IRR for device vectors under remapped delivery: a second message of
/// a vector already pending merges, as on the real APIC.
#[derive(Debug, Default)]
pub struct Irr {
    words: [AtomicU64; NR_PIR_WORDS],
}

impl Irr {
    pub fn set(&self, vector: u8) {
        let (word, bit) = vector_bit(vector);
        self.words[word].fetch_or(bit, SeqCst);
    }

    /// Whether any vector is pending.
    pub fn any(&self) -> bool {
        self.words.iter().any(|w| w.load(SeqCst) != 0)
    }

    /// Takes every pending vector, ascending (the APIC would deliver by priority; the
    /// order does not matter for one handler per queue).
    pub fn take(&self) -> Vec<u8> {
        let mut out = Vec::new();
        for (i, w) in self.words.iter().enumerate() {
            if w.load(Relaxed) == 0 {
                continue;
            }
            let mut bits = w.swap(0, SeqCst);
            while bits != 0 {
                out.push((i * 64) as u8 + bits.trailing_zeros() as u8);
                bits &= bits - 1;
            }
        }
        out
    }
}

/// Adds `n` to a counter only its owning thread writes: a plain load and store, no
/// locked instruction on the hot path; readers on other threads see it eventually.
#[inline]
pub fn bump(c: &AtomicU64, n: u64) {
    c.store(c.load(Relaxed) + n, Relaxed);
}

/// What a CPU thread has handled so far, readable while it runs (`--irqtop`, progress).
/// Only the CPU thread writes them (with [`bump`]); the report takes its final values.
#[derive(Debug, Default)]
pub struct CpuLive {
    /// Handler runs per queue (its vector's /proc/interrupts count on this CPU).
    pub handled: Box<[AtomicU64]>,
    /// Posted MSI notifications taken (the PMN row).
    pub pmn: AtomicU64,
    /// Completions reaped, every path included.
    pub completions: AtomicU64,
}

impl CpuLive {
    fn new(queues: usize) -> CpuLive {
        CpuLive {
            handled: (0..queues).map(|_| AtomicU64::new(0)).collect(),
            ..CpuLive::default()
        }
    }

    pub fn handled(&self) -> Vec<u64> {
        self.handled.iter().map(|h| h.load(Relaxed)).collect()
    }
}

/// Command ids reaped from one queue outside the CPU thread (by its irq thread or its
/// ksoftirqd), waiting for the CPU thread to complete them to their jobs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reaped {
    pub queue: usize,
    pub command_ids: Vec<u16>,
    /// When the handler run or poll call that reaped them ended.
    pub at_ns: u64,
}

/// Reaped completions on their way to the CPU thread: blk_mq_end_request in the thread
/// that reaped, then the fio task's wake-up (a kick of the CPU thread).
#[derive(Debug, Default)]
pub struct Inbox {
    batches: Mutex<Vec<Reaped>>,
    pending: AtomicBool,
}

impl Inbox {
    /// Hands a batch over (the caller kicks the CPU thread after).
    pub fn post(&self, batch: Reaped) {
        self.batches
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(batch);
        self.pending.store(true, Release);
    }

    /// Whether batches wait for the CPU thread.
    pub fn has_work(&self) -> bool {
        self.pending.load(Acquire)
    }

    /// Takes every waiting batch, oldest first.
    pub fn take(&self) -> Vec<Reaped> {
        if !self.pending.swap(false, AcqRel) {
            return Vec::new();
        }
        std::mem::take(&mut *self.batches.lock().unwrap_or_else(PoisonError::into_inner))
    }
}

/// One CPU thread as the devices see it.
#[derive(Debug)]
pub struct CpuShared {
    pub index: usize,
    /// Index of this CPU thread's first queue in the report's vectors.
    pub vector_base: usize,
    pub notifier: Notifier,
    /// How device messages reach this CPU; None when its jobs poll (no messages).
    pub path: Option<DeliveryPath>,
    /// The local APIC's IRR: remapped notifications wait here for the interrupt path.
    pub irr: Irr,
    pub queues: Vec<QueueShared>,
    pub live: CpuLive,
    /// Completions its irq thread and ksoftirqd reaped for its jobs.
    pub inbox: Inbox,
    /// Where the CPU's time goes, when kernel threads share it with the CPU thread (a CPU
    /// thread alone keeps its ledger to itself).
    pub(crate) time: Mutex<TimeLedger>,
    /// Deliveries under way: work being published for this CPU and not yet followed by
    /// its notification or kick (what the lost-wake-up audit must not mistake for one).
    delivering: AtomicUsize,
}

/// A delivery to a CPU under way, from before its work is published until after its
/// notification or kick ([`CpuShared::begin_delivery`]).
#[must_use = "the delivery lasts as long as the guard"]
pub struct Delivering<'a>(&'a AtomicUsize);

impl Drop for Delivering<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, SeqCst);
    }
}

impl CpuShared {
    pub fn new(index: usize, path: Option<DeliveryPath>, queues: Vec<QueueShared>) -> CpuShared {
        CpuShared {
            index,
            vector_base: 0,
            notifier: Notifier::new(),
            live: CpuLive::new(queues.len()),
            path,
            irr: Irr::default(),
            queues,
            inbox: Inbox::default(),
            // Replaced by the CPU thread when its jobs start.
            time: Mutex::new(TimeLedger::new(0, u64::MAX)),
            delivering: AtomicUsize::new(0),
        }
    }

    /// Marks a delivery under way: hold the guard from before the work is published
    /// (a PIR or IRR bit, an inbox batch) until its notification or kick is issued.
    pub fn begin_delivery(&self) -> Delivering<'_> {
        self.delivering.fetch_add(1, SeqCst);
        Delivering(&self.delivering)
    }

    /// Deliveries under way now.
    pub fn deliveries_under_way(&self) -> usize {
        self.delivering.load(SeqCst)
    }

    /// Work that a notification or kick of this CPU thread stands for: a vector in its
    /// IRR or PIR, or completions in its inbox. A halted CPU thread with such work and no
    /// delivery under way missed a wake-up.
    pub fn has_pending_work(&self) -> bool {
        let pir = self
            .path
            .as_ref()
            .and_then(DeliveryPath::pi_desc)
            .is_some_and(|d| d.has_pending());
        pir || self.irr.any() || self.inbox.has_work()
    }

    /// One of the CPU's threads starts doing `kind` at `now` (see [`crate::cpu_time`]).
    pub(crate) fn account(&self, now: u64, role: Role, kind: SliceKind) {
        self.time
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .set(now, role, kind);
    }

    /// Whether this CPU's deliveries are posted MSI notifications (the PMN row).
    pub fn is_posted(&self) -> bool {
        self.path.as_ref().is_some_and(DeliveryPath::is_posted)
    }

    /// A device message for `vector` reaches this CPU (the IOMMU's part): returns true
    /// when it became a CPU notification. The notification is a futex wake, issued
    /// whether or not the thread sleeps: it is the message's cost on the interrupt path.
    #[must_use = "a notification is traced by whoever sent the message"]
    pub fn deliver(&self, vector: u8) -> bool {
        let Some(path) = &self.path else {
            return false;
        };
        let _under_way = self.begin_delivery();
        let Some(note) = path.deliver(vector) else {
            return false;
        };
        // A posted notification is handled from the descriptor, not the IRR.
        if !path.is_posted() {
            self.irr.set(note.vector);
        }
        self.notifier.notify();
        true
    }

    /// The queue of a device vector on this CPU.
    pub fn queue_of(&self, vector: u8) -> Option<usize> {
        let i = usize::from(vector.checked_sub(FIRST_EXTERNAL_VECTOR)?);
        (i < self.queues.len()).then_some(i)
    }
}

/// A queue pair and the per-vector state both sides touch.
#[derive(Debug)]
pub struct QueueShared {
    pub plan: QueuePlan,
    pub qp: QueuePair,
    /// MSI-X Vector Control mask bit (disable_irq_nosync / enable_irq).
    masked: AtomicBool,
    /// MSI-X Pending Bit (a message the device held while the vector was masked), or
    /// IRQS_PENDING (an interrupt that found the IRQ disabled): resent at unmask.
    pending: AtomicBool,
    /// nvmeq->cq_poll_lock, taken with trylock by reapers other than the CPU's own
    /// hardirq handler (the irq thread, reap-after-submit) so they never share the CQ.
    cq_lock: AtomicBool,
    /// Coalescing a moderator asked for, (count << 32 | usec) + 1; 0 = nothing new.
    program: AtomicU64,
    /// Messages that arrived while masked and were sent at unmask.
    pub resent_at_unmask: AtomicU64,
    /// Offset and length of each command, by command_id: the SLBA/NLB and data pointer
    /// fields of a real SQE, which the core's `Sqe` leaves out. The host writes an entry
    /// before the SQ doorbell that publishes the command; the device reads it after fetch.
    cmd_offset: Box<[AtomicU64]>,
    cmd_len: Box<[AtomicU32]>,
}

impl QueueShared {
    pub fn new(plan: QueuePlan) -> Result<QueueShared, String> {
        let qp = QueuePair::new(plan.qid, u16::from(plan.vector), plan.q_depth)
            .map_err(|e| e.to_string())?;
        let n = plan.q_depth as usize;
        Ok(QueueShared {
            cmd_offset: (0..n).map(|_| AtomicU64::new(0)).collect(),
            cmd_len: (0..n).map(|_| AtomicU32::new(0)).collect(),
            plan,
            qp,
            masked: AtomicBool::new(false),
            pending: AtomicBool::new(false),
            cq_lock: AtomicBool::new(false),
            program: AtomicU64::new(0),
            resent_at_unmask: AtomicU64::new(0),
        })
    }

    /// The device sends a message through the MSI-X table: held in the Pending Bit while
    /// the vector is masked. Returns None when held, else whether the delivered message
    /// became a CPU notification.
    pub fn send_msix(&self, cpu: &CpuShared) -> Option<bool> {
        if !self.masked.load(SeqCst) {
            return Some(cpu.deliver(self.plan.vector));
        }
        self.hold(cpu)
    }

    /// Sets the pending bit; the host may have unmasked between the caller's check and
    /// the store, and its swap may have missed the bit: whoever swaps it out delivers,
    /// exactly once. Returns what [`QueueShared::send_msix`] returns.
    fn hold(&self, cpu: &CpuShared) -> Option<bool> {
        self.pending.store(true, SeqCst);
        if !self.masked.load(SeqCst) && self.pending.swap(false, SeqCst) {
            return Some(cpu.deliver(self.plan.vector));
        }
        None
    }

    /// The CPU took an interrupt for this vector: if the IRQ is disabled (irq_poll or
    /// GSIM owns it), the handler must not run; the interrupt is marked pending and
    /// resent at enable (kernel/irq/chip.c handle_edge_irq, resend.c). Returns true
    /// when held.
    pub fn hold_if_disabled(&self, cpu: &CpuShared) -> bool {
        if !self.masked.load(SeqCst) {
            return false;
        }
        // Unmasked meanwhile: the re-delivery raises a fresh notification, so this
        // interrupt is dropped either way and the handler runs from the resend.
        let _ = self.hold(cpu);
        true
    }

    /// Whether the vector is masked (disabled).
    pub fn is_masked(&self) -> bool {
        self.masked.load(SeqCst)
    }

    /// spin_trylock(&nvmeq->cq_poll_lock).
    pub fn try_lock_cq(&self) -> bool {
        self.cq_lock
            .compare_exchange(false, true, Acquire, Relaxed)
            .is_ok()
    }

    pub fn unlock_cq(&self) {
        self.cq_lock.store(false, Release);
    }

    /// The host fills the command table entry of `command_id` (before submitting it).
    pub fn set_command(&self, command_id: u16, offset: u64, len: u32) {
        let i = usize::from(command_id);
        if let (Some(o), Some(l)) = (self.cmd_offset.get(i), self.cmd_len.get(i)) {
            o.store(offset, Relaxed);
            l.store(len, Relaxed);
        }
    }

    /// The device reads (offset, length) of a fetched command; the SQ doorbell's
    /// release and the fetch's acquire order it after the host's write.
    pub fn command(&self, command_id: u16) -> (u64, u32) {
        let i = usize::from(command_id);
        match (self.cmd_offset.get(i), self.cmd_len.get(i)) {
            (Some(o), Some(l)) => (o.load(Relaxed), l.load(Relaxed)),
            _ => (0, 0),
        }
    }

    /// disable_irq_nosync().
    pub fn mask(&self) {
        self.masked.store(true, SeqCst);
    }

    /// enable_irq(): unmasking sends a message the Pending Bit held (PCIe MSI-X rules).
    /// Returns None when nothing was held, else whether the resent message became a
    /// CPU notification.
    pub fn unmask(&self, cpu: &CpuShared) -> Option<bool> {
        self.masked.store(false, SeqCst);
        if self.pending.swap(false, SeqCst) {
            self.resent_at_unmask.fetch_add(1, Relaxed);
            return Some(cpu.deliver(self.plan.vector));
        }
        None
    }

    /// A moderator's level: the device picks it up on its next pass.
    pub fn request_coalescing(&self, usec: u16, count: u16) {
        let v = ((u64::from(count) << 32) | u64::from(usec)) + 1;
        self.program.store(v, Release);
    }

    /// The device takes the latest moderator request, if any.
    pub fn take_coalescing(&self) -> Option<CoalesceParams> {
        if self.program.load(Relaxed) == 0 {
            return None;
        }
        let v = self.program.swap(0, Acquire).checked_sub(1)?;
        Some(CoalesceParams::from_usec_count(
            (v & 0xffff_ffff) as u32,
            (v >> 32) as u32,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn queue() -> QueueShared {
        QueueShared::new(QueuePlan {
            controller: 0,
            qid: 1,
            vector: 0x20,
            polled: false,
            q_depth: 8,
        })
        .unwrap()
    }

    #[test]
    fn remapped_notifies_every_message_and_posted_only_while_on_is_clear() {
        let rem = CpuShared::new(
            0,
            DeliveryPath::for_delivery(irqlab_core::Delivery::Remapped, 0),
            vec![],
        );
        assert!(rem.deliver(0x20));
        assert!(rem.deliver(0x21));
        assert!(!rem.is_posted());
        assert_eq!(rem.notifier.notifications(), 2);
        assert_eq!(rem.irr.take(), vec![0x20, 0x21]);
        assert!(rem.irr.take().is_empty());

        let posted = irqlab_core::Delivery::Posted { max_loop: 3 };
        let p = CpuShared::new(1, DeliveryPath::for_delivery(posted, 1), vec![]);
        assert!(p.is_posted());
        assert!(p.deliver(0x20));
        assert!(!p.deliver(0x21), "ON is set: coalesced");
        assert_eq!(p.notifier.notifications(), 1);
        assert!(
            !p.irr.any(),
            "posted notifications are taken from the descriptor"
        );

        let polled = CpuShared::new(
            2,
            DeliveryPath::for_delivery(irqlab_core::Delivery::Polled, 2),
            vec![],
        );
        assert!(!polled.deliver(0x20), "a polling CPU takes no messages");
        assert_eq!(polled.notifier.notifications(), 0);
    }

    #[test]
    fn a_masked_vector_holds_its_message_until_unmask() {
        let cpu = CpuShared::new(
            0,
            DeliveryPath::for_delivery(irqlab_core::Delivery::Remapped, 0),
            vec![],
        );
        let q = queue();
        q.mask();
        assert_eq!(q.send_msix(&cpu), None);
        assert_eq!(
            q.send_msix(&cpu),
            None,
            "a second message merges in the pending bit"
        );
        assert_eq!(cpu.notifier.notifications(), 0);
        assert_eq!(q.unmask(&cpu), Some(true));
        assert_eq!(cpu.notifier.notifications(), 1);
        assert_eq!(q.unmask(&cpu), None, "sent once");
        assert_eq!(q.send_msix(&cpu), Some(true));
    }

    #[test]
    fn an_interrupt_for_a_disabled_vector_is_held_and_resent_at_enable() {
        let cpu = CpuShared::new(
            0,
            DeliveryPath::for_delivery(irqlab_core::Delivery::Remapped, 0),
            vec![],
        );
        let q = queue();
        assert!(!q.hold_if_disabled(&cpu), "enabled: the handler runs");
        q.mask();
        assert!(q.hold_if_disabled(&cpu));
        assert_eq!(cpu.notifier.notifications(), 0);
        assert_eq!(q.unmask(&cpu), Some(true), "IRQS_PENDING: resent");
        assert_eq!(q.resent_at_unmask.load(Relaxed), 1);
    }

    #[test]
    fn the_cq_lock_is_a_trylock() {
        let q = queue();
        assert!(q.try_lock_cq());
        assert!(!q.try_lock_cq());
        q.unlock_cq();
        assert!(q.try_lock_cq());
    }

    #[test]
    fn the_inbox_hands_batches_over_in_order_once() {
        let inbox = Inbox::default();
        assert!(!inbox.has_work());
        for (queue, at_ns) in [(0, 5), (1, 9)] {
            inbox.post(Reaped {
                queue,
                command_ids: vec![3, 4],
                at_ns,
            });
        }
        assert!(inbox.has_work());
        let got = inbox.take();
        assert_eq!(got.iter().map(|b| b.at_ns).collect::<Vec<_>>(), [5, 9]);
        assert!(!inbox.has_work());
        assert!(inbox.take().is_empty());
    }

    #[test]
    fn the_latest_moderator_request_wins_and_is_taken_once() {
        let q = queue();
        assert_eq!(q.take_coalescing(), None);
        q.request_coalescing(8, 16);
        q.request_coalescing(64, 32);
        assert_eq!(
            q.take_coalescing(),
            Some(CoalesceParams::from_usec_count(64, 32))
        );
        assert_eq!(q.take_coalescing(), None);
    }
}
