//! What CPU threads and controller threads share: each CPU thread's delivery path (core's
//! `DeliveryPath`: a remapped IRTE target or a posted descriptor), its local APIC's IRR
//! (core's `SharedIrr`) and its vector table; and each queue pair with its interrupt's
//! descriptor (core's `IrqDesc`), its IRTE (core's `Irte`: which CPU and vector its
//! messages go to) and the MSI-X mask and pending bits the device reads.

use crate::cpu_time::TimeLedger;
use crate::error::RtError;
use crate::topology::QueuePlan;
use crate::trace::Role;
use crate::wake::Notifier;
use irqlab_core::delivery::DeliveryPath;
use irqlab_core::delivery::migrate::{Irte, Route};
use irqlab_core::irq::{AfterHandler, ChipOp, Edge, IrqDesc, IrqDescCounters, SharedIrr};
use irqlab_core::nvme::{CoalesceParams, QueuePair};
use irqlab_core::posted::FIRST_EXTERNAL_VECTOR;
use irqlab_report::observe::SliceKind;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicUsize, Ordering::*};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

/// Every CPU thread of a run, by index.
pub type Cpus = [Arc<CpuShared>];

/// Adds `n` to a counter only its owning thread writes: a plain load and store, no
/// locked instruction on the hot path; readers on other threads see it eventually.
#[inline]
pub fn bump(c: &AtomicU64, n: u64) {
    c.store(c.load(Relaxed) + n, Relaxed);
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// What a CPU thread has handled so far, readable while it runs (`--irqtop`, progress).
/// Only the CPU thread writes them (with [`bump`]); the report takes its final values.
#[derive(Debug, Default)]
pub struct CpuLive {
    /// Posted MSI notifications taken (the PMN row).
    pub pmn: AtomicU64,
    /// Completions reaped, every path included.
    pub completions: AtomicU64,
}

/// Command ids reaped from one queue outside the CPU thread (by its irq thread, its
/// ksoftirqd, or another CPU the queue's vector moved to), waiting for the CPU thread to
/// complete them to their jobs.
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
        lock(&self.batches).push(batch);
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
        std::mem::take(&mut *lock(&self.batches))
    }
}

/// A CPU's vector_irq table (arch/x86/kernel/irq.c): which queue's interrupt each IDT
/// vector stands for, as (owning CPU thread, queue index there).
#[derive(Debug)]
pub struct VectorTable {
    /// 0: free; else ((owner + 1) << 16) | queue.
    slots: Box<[AtomicU32]>,
}

impl Default for VectorTable {
    fn default() -> Self {
        VectorTable {
            slots: (0..256).map(|_| AtomicU32::new(0)).collect(),
        }
    }
}

impl VectorTable {
    /// The queue behind `vector`.
    pub fn get(&self, vector: u8) -> Option<(usize, usize)> {
        let w = self.slots[usize::from(vector)].load(Acquire);
        (w != 0).then(|| ((w >> 16) as usize - 1, (w & 0xffff) as usize))
    }

    fn install(&self, vector: u8, owner: usize, queue: usize) {
        let w = ((owner as u32 + 1) << 16) | queue as u32;
        self.slots[usize::from(vector)].store(w, Release);
    }

    fn free(&self, vector: u8) {
        self.slots[usize::from(vector)].store(0, Release);
    }

    /// The first free device vector below `limit` (assign_irq_vector on this CPU).
    fn alloc(&self, owner: usize, queue: usize, limit: u8) -> Option<u8> {
        let v = (FIRST_EXTERNAL_VECTOR..limit).find(|&v| self.get(v).is_none())?;
        self.install(v, owner, queue);
        Some(v)
    }
}

/// One CPU thread as the devices and the other CPUs see it.
#[derive(Debug)]
pub struct CpuShared {
    pub index: usize,
    /// Index of this CPU thread's first queue in the report's vectors.
    pub vector_base: usize,
    pub notifier: Notifier,
    /// How device messages reach this CPU; None when its jobs poll (no messages).
    pub path: Option<DeliveryPath>,
    /// The local APIC's IRR: device vectors (remapped, retriggered, self-IPIs), the
    /// posted notification vector and the timer wait here for the interrupt path.
    pub irr: SharedIrr,
    /// Which queue each vector stands for.
    pub vectors: VectorTable,
    pub queues: Vec<QueueShared>,
    pub live: CpuLive,
    /// Completions its irq thread, its ksoftirqd or another CPU reaped for its jobs.
    pub inbox: Inbox,
    /// Online (cleared by `--event offline`: no tick, no interrupt comes here after).
    online: AtomicBool,
    /// Its jobs have not all ended yet (a CPU whose queue's vector moved elsewhere needs
    /// that CPU to keep taking its interrupts until then).
    jobs_running: AtomicBool,
    /// Old vectors of interrupts that moved away, for __vector_cleanup on this CPU.
    cleanups: Mutex<Vec<u8>>,
    has_cleanups: AtomicBool,
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
    /// CPU thread `index` with its `queues`, each installed on its plan's vector.
    pub fn new(index: usize, path: Option<DeliveryPath>, queues: Vec<QueueShared>) -> CpuShared {
        let vectors = VectorTable::default();
        for (q, qs) in queues.iter().enumerate() {
            vectors.install(qs.plan.vector, index, q);
        }
        CpuShared {
            index,
            vector_base: 0,
            notifier: Notifier::new(),
            live: CpuLive::default(),
            path,
            irr: SharedIrr::default(),
            vectors,
            queues,
            inbox: Inbox::default(),
            online: AtomicBool::new(true),
            jobs_running: AtomicBool::new(true),
            cleanups: Mutex::new(Vec::new()),
            has_cleanups: AtomicBool::new(false),
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
        lock(&self.time).set(now, role, kind);
    }

    /// Whether this CPU's deliveries are posted MSI notifications (the PMN row).
    pub fn is_posted(&self) -> bool {
        self.path.as_ref().is_some_and(DeliveryPath::is_posted)
    }

    /// A device message for `vector` reaches this CPU (the IOMMU's part): returns true
    /// when it became a CPU interrupt, which waits in the IRR (the notification vector,
    /// or the device vector itself when remapped). The interrupt is a futex wake, issued
    /// whether or not the thread sleeps: it is the message's cost on the interrupt path.
    #[must_use = "a notification is traced by whoever sent the message"]
    pub fn deliver(&self, vector: u8) -> bool {
        let Some(path) = &self.path else {
            return false;
        };
        let _under_way = self.begin_delivery();
        let Some(note) = path.post(vector).notify else {
            return false;
        };
        self.irr.set(note.vector);
        self.notifier.notify();
        true
    }

    /// An IPI of device vector `vector` to this CPU (apic_retrigger_irq, a self-IPI, or
    /// fixup_irqs' retrigger): straight into the IRR, past the IOMMU.
    pub fn ipi(&self, vector: u8) {
        let _under_way = self.begin_delivery();
        self.irr.set(vector);
        self.notifier.notify();
    }

    /// The queue behind a device vector of this CPU: (owning CPU thread, queue index).
    pub fn queue_of(&self, vector: u8) -> Option<(usize, usize)> {
        self.vectors.get(vector)
    }

    pub fn is_online(&self) -> bool {
        self.online.load(Acquire)
    }

    pub(crate) fn set_offline(&self) {
        self.online.store(false, Release);
    }

    /// Whether some of its jobs are still running.
    pub fn jobs_running(&self) -> bool {
        self.jobs_running.load(Acquire)
    }

    pub(crate) fn set_jobs_done(&self) {
        self.jobs_running.store(false, Release);
    }

    /// Whether a queue of another CPU thread whose jobs still run has its vector here
    /// (moved by `--event`): this CPU must go on taking that vector's interrupts.
    pub fn serves_running_cpu(&self, all: &Cpus) -> bool {
        all.iter().enumerate().any(|(o, c)| {
            o != self.index
                && c.jobs_running()
                && c.queues
                    .iter()
                    .any(|q| !q.plan.polled && q.irte.route().cpu as usize == self.index)
        })
    }

    /// Device vectors allocated on this CPU end below this.
    pub fn first_system_vector(&self) -> u8 {
        self.path.as_ref().map_or(
            irqlab_core::posted::FIRST_SYSTEM_VECTOR,
            DeliveryPath::first_system_vector,
        )
    }

    /// Asks this CPU to free `vector` once it is pending nowhere (__vector_cleanup).
    pub(crate) fn request_cleanup(&self, vector: u8) {
        lock(&self.cleanups).push(vector);
        self.has_cleanups.store(true, Release);
    }

    /// __vector_cleanup on this CPU (its own thread only): frees each old vector pending
    /// in neither its IRR nor its PIR; returns how many it re-armed (kept for later).
    pub(crate) fn run_cleanups(&self) -> u64 {
        if !self.has_cleanups.load(Acquire) {
            return 0;
        }
        let mut list = lock(&self.cleanups);
        let path = self.path.as_ref();
        list.retain(|&v| {
            let pir = path.is_some_and(|p| p.vector_pending(v));
            let keep = irqlab_core::delivery::migrate::vector_cleanup(self.irr.is_set(v), pir)
                == irqlab_core::delivery::migrate::Cleanup::Rearm;
            if !keep {
                self.vectors.free(v);
            }
            keep
        });
        let rearmed = list.len() as u64;
        self.has_cleanups.store(!list.is_empty(), Release);
        rearmed
    }
}

/// Chip writes and resends one genirq call made.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Resent {
    /// A message the MSI-X pending bit held went out at unmask; whether it became an
    /// interrupt.
    pub pending_bit: Option<bool>,
    /// IRQS_PENDING: the interrupt was resent to its CPU (an IPI of its vector).
    pub resent: bool,
}

/// A queue pair and the per-vector state both sides touch.
#[derive(Debug)]
pub struct QueueShared {
    pub plan: QueuePlan,
    pub qp: QueuePair,
    /// The interrupt's descriptor (IRQD_IRQ_DISABLED, IRQD_IRQ_MASKED, IRQS_PENDING,
    /// IRQD_IRQ_INPROGRESS), under desc->lock.
    desc: Mutex<IrqDesc>,
    /// Where the device's messages go.
    pub irte: Irte,
    /// MSI-X Vector Control mask bit, as the host last wrote it.
    msix_masked: AtomicBool,
    /// MSI-X Pending Bit: a message the device held while the vector was masked.
    msix_pending: AtomicBool,
    /// nvmeq->cq_poll_lock: every reaper but irq_poll (whose IRQ is disabled meanwhile)
    /// takes it, so a handler on the vector's new CPU and the owner never share the CQ.
    cq_lock: AtomicBool,
    /// Coalescing a moderator asked for, (count << 32 | usec) + 1; 0 = nothing new.
    program: AtomicU64,
    /// Handler runs on each CPU thread (its vector's /proc/interrupts row).
    pub handled_on: Box<[AtomicU64]>,
    /// Offset and length of each command, by command_id: the SLBA/NLB and data pointer
    /// fields of a real SQE, which the core's `Sqe` leaves out. The host writes an entry
    /// before the SQ doorbell that publishes the command; the device reads it after fetch.
    cmd_offset: Box<[AtomicU64]>,
    cmd_len: Box<[AtomicU32]>,
}

impl QueueShared {
    /// The queue of `plan` on CPU thread `owner`, in a run of `cpus` CPU threads.
    pub fn new(plan: QueuePlan, owner: usize, cpus: usize) -> Result<QueueShared, RtError> {
        let qp = QueuePair::new(plan.qid, u16::from(plan.vector), plan.q_depth)
            .map_err(|e| RtError::Topology(e.to_string()))?;
        let n = plan.q_depth as usize;
        Ok(QueueShared {
            cmd_offset: (0..n).map(|_| AtomicU64::new(0)).collect(),
            cmd_len: (0..n).map(|_| AtomicU32::new(0)).collect(),
            irte: Irte::new(Route {
                cpu: owner as u32,
                vector: plan.vector,
            }),
            plan,
            qp,
            desc: Mutex::new(IrqDesc::new()),
            msix_masked: AtomicBool::new(false),
            msix_pending: AtomicBool::new(false),
            cq_lock: AtomicBool::new(false),
            program: AtomicU64::new(0),
            handled_on: (0..cpus).map(|_| AtomicU64::new(0)).collect(),
        })
    }

    /// The device sends a message through the MSI-X table: held in the Pending Bit while
    /// the vector is masked, else remapped through the IRTE to its CPU. Returns None when
    /// held, else the CPU it went to and whether it became an interrupt there.
    pub fn send_msix(&self, cpus: &Cpus) -> Option<(usize, bool)> {
        if !self.msix_masked.load(SeqCst) {
            return Some(self.through_irte(cpus));
        }
        self.hold(cpus)
    }

    fn through_irte(&self, cpus: &Cpus) -> (usize, bool) {
        let msg = self.irte.message();
        let r = msg.route();
        let cpu = r.cpu as usize;
        (cpu, cpus[cpu].deliver(r.vector))
    }

    /// Sets the pending bit; the host may have unmasked between the caller's check and
    /// the store, and its swap may have missed the bit: whoever swaps it out delivers,
    /// exactly once. Returns what [`QueueShared::send_msix`] returns.
    fn hold(&self, cpus: &Cpus) -> Option<(usize, bool)> {
        self.msix_pending.store(true, SeqCst);
        if !self.msix_masked.load(SeqCst) && self.msix_pending.swap(false, SeqCst) {
            return Some(self.through_irte(cpus));
        }
        None
    }

    /// handle_edge_irq's entry on the CPU that took the interrupt: Handle (the caller runs
    /// the handler, then [`QueueShared::handler_done`]) or Pend (the IRQ is disabled or
    /// its handler runs on another CPU; the chip is masked when it was not).
    pub fn edge(&self) -> Edge {
        let e = lock(&self.desc).edge();
        if e == (Edge::Pend { mask: true }) {
            self.msix_masked.store(true, SeqCst);
        }
        e
    }

    /// The handler returned: true when it must run again (an interrupt came meanwhile),
    /// the chip unmasked first.
    pub fn handler_done(&self, cpus: &Cpus) -> bool {
        let after = lock(&self.desc).handler_done();
        match after {
            AfterHandler::Again { unmask } => {
                if unmask {
                    let _ = self.unmask_chip(cpus);
                }
                true
            }
            AfterHandler::Done => false,
        }
    }

    /// disable_irq_nosync(): lazy, the chip stays unmasked until an interrupt comes.
    pub fn disable_nosync(&self) {
        if lock(&self.desc).disable_nosync() == ChipOp::Mask {
            self.msix_masked.store(true, SeqCst);
        }
    }

    /// enable_irq(): unmasks a masked chip (sending what its pending bit held) and
    /// resends an interrupt that found the IRQ disabled, as an IPI of the vector to the
    /// CPU its IRTE names (check_irq_resend, apic_retrigger_irq).
    pub fn enable(&self, cpus: &Cpus) -> Resent {
        let Ok(e) = lock(&self.desc).enable() else {
            // Unbalanced: nothing was disabled (the kernel WARNs and does nothing).
            return Resent::default();
        };
        let mut out = Resent::default();
        if e.unmask {
            out.pending_bit = self.unmask_chip(cpus);
        }
        if e.resend {
            let r = self.irte.route();
            cpus[r.cpu as usize].ipi(r.vector);
            out.resent = true;
        }
        out
    }

    /// Clears the mask bit: a message the Pending Bit held goes out now (PCIe MSI-X).
    fn unmask_chip(&self, cpus: &Cpus) -> Option<bool> {
        self.msix_masked.store(false, SeqCst);
        if self.msix_pending.swap(false, SeqCst) {
            return Some(self.through_irte(cpus).1);
        }
        None
    }

    /// Whether the IRQ is disabled (irq_poll, NAPI or GSIM owns it).
    pub fn is_disabled(&self) -> bool {
        lock(&self.desc).is_disabled()
    }

    /// The descriptor's whole-run counters.
    pub fn desc_counters(&self) -> IrqDescCounters {
        lock(&self.desc).counters()
    }

    /// spin_trylock(&nvmeq->cq_poll_lock).
    pub fn try_lock_cq(&self) -> bool {
        self.cq_lock
            .compare_exchange(false, true, Acquire, Relaxed)
            .is_ok()
    }

    /// spin_lock(&nvmeq->cq_poll_lock): the holder is a reaper on another thread.
    pub fn lock_cq(&self) {
        while !self.try_lock_cq() {
            std::hint::spin_loop();
        }
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

    /// Handler runs of this queue's interrupt on each CPU thread so far.
    pub fn handled(&self) -> Vec<u64> {
        self.handled_on.iter().map(|h| h.load(Relaxed)).collect()
    }
}

/// Moves queue `q` of CPU thread `owner` to CPU thread `to` (irq_set_affinity): a vector
/// allocated there, the IRTE rewritten and flushed, the old vector's cleanup asked of
/// the CPU it leaves. Returns the old and new routes, or None when `to` has no free vector.
pub(crate) fn migrate_queue(
    cpus: &Cpus,
    owner: usize,
    q: usize,
    to: usize,
) -> Option<(Route, Route)> {
    let qs = &cpus[owner].queues[q];
    let old = qs.irte.route();
    if old.cpu as usize == to {
        return Some((old, old));
    }
    let target = &cpus[to];
    let vector = target
        .vectors
        .alloc(owner, q, target.first_system_vector())?;
    let new = Route {
        cpu: to as u32,
        vector,
    };
    qs.irte.retarget(new, std::thread::yield_now);
    cpus[old.cpu as usize].request_cleanup(old.vector);
    Some((old, new))
}

#[cfg(test)]
mod tests {
    use super::*;
    use irqlab_core::Delivery;

    fn queue(vector: u8) -> QueueShared {
        QueueShared::new(
            QueuePlan {
                controller: 0,
                qid: 1,
                vector,
                polled: false,
                q_depth: 8,
            },
            0,
            2,
        )
        .unwrap()
    }

    fn cpus(delivery: Delivery) -> Vec<Arc<CpuShared>> {
        (0..2)
            .map(|c| {
                let qs = vec![queue(0x20)];
                Arc::new(CpuShared::new(
                    c,
                    DeliveryPath::for_delivery(delivery, c as u32),
                    qs,
                ))
            })
            .collect()
    }

    #[test]
    fn remapped_raises_the_device_vector_and_posted_the_notification_vector() {
        let rem = cpus(Delivery::Remapped);
        assert!(rem[0].deliver(0x20));
        assert!(rem[0].deliver(0x21));
        assert!(!rem[0].is_posted());
        assert_eq!(rem[0].notifier.notifications(), 2);
        assert_eq!(rem[0].irr.take_highest(), Some(0x21), "highest first");
        assert_eq!(rem[0].irr.take_highest(), Some(0x20));

        let p = cpus(Delivery::Posted { max_loop: 3 });
        assert!(p[0].is_posted());
        assert!(p[0].deliver(0x20));
        assert!(!p[0].deliver(0x21), "ON is set: coalesced");
        assert_eq!(p[0].notifier.notifications(), 1);
        assert_eq!(p[0].irr.take_highest(), Some(0xeb));
        assert!(p[0].path.as_ref().unwrap().vector_pending(0x21));

        let polled = CpuShared::new(2, DeliveryPath::for_delivery(Delivery::Polled, 2), vec![]);
        assert!(!polled.deliver(0x20), "a polling CPU takes no messages");
        assert_eq!(polled.notifier.notifications(), 0);
    }

    #[test]
    fn a_lazily_disabled_vector_masks_at_its_next_interrupt_and_resends_at_enable() {
        let c = cpus(Delivery::Remapped);
        let q = &c[0].queues[0];
        q.disable_nosync();
        // Lazy: the device still sends.
        assert_eq!(q.send_msix(&c), Some((0, true)));
        assert_eq!(c[0].irr.take_highest(), Some(0x20));
        assert_eq!(q.edge(), Edge::Pend { mask: true });
        assert_eq!(
            q.send_msix(&c),
            None,
            "masked now: the pending bit holds it"
        );
        assert_eq!(
            q.send_msix(&c),
            None,
            "a second message merges in the pending bit"
        );
        let r = q.enable(&c);
        assert_eq!(r.pending_bit, Some(true), "the held message goes out");
        assert!(r.resent, "IRQS_PENDING: resent as an IPI");
        assert_eq!(c[0].irr.take_highest(), Some(0x20));
        assert_eq!(q.enable(&c), Resent::default(), "unbalanced: nothing");
        assert_eq!(q.send_msix(&c), Some((0, true)));
        let k = q.desc_counters();
        assert_eq!((k.pended, k.resends, k.masks), (1, 1, 1));
    }

    #[test]
    fn a_migrated_queue_sends_to_its_new_cpu_and_the_old_vector_is_cleaned_up_once_idle() {
        let c = cpus(Delivery::Posted { max_loop: 3 });
        // A message in flight to the old CPU: its PIR bit is set.
        assert_eq!(c[0].queues[0].send_msix(&c), Some((0, true)));
        let (old, new) = migrate_queue(&c, 0, 0, 1).unwrap();
        assert_eq!((old.cpu, new.cpu), (0, 1));
        assert_ne!(new.vector, 0x20, "CPU 1's own queue holds 0x20");
        assert_eq!(c[1].queue_of(new.vector), Some((0, 0)));
        assert_eq!(c[0].queues[0].send_msix(&c), Some((1, true)));
        // The old CPU still has the vector pending in its PIR: the cleanup re-arms.
        assert_eq!(c[0].run_cleanups(), 1);
        assert_eq!(c[0].queue_of(0x20), Some((0, 0)));
        let desc = c[0].path.as_ref().and_then(DeliveryPath::pi_desc).unwrap();
        assert!(desc.take_vector(0x20));
        assert_eq!(c[0].run_cleanups(), 0);
        assert_eq!(c[0].queue_of(0x20), None, "freed");
    }

    #[test]
    fn the_cq_lock_is_a_trylock() {
        let q = queue(0x20);
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
        let q = queue(0x20);
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
