//! The completion queue: a ring of CQEs with phase tags (drivers/nvme/host/pci.c).
//!
//! Single producer (the device: [`CompletionQueue::post`]) and single consumer (the host:
//! [`CompletionQueue::cqe_pending`], [`CompletionQueue::poll_cq`]); both take `&self` so a
//! device thread and a host thread can share one queue. Each side owns its own indices
//! (relaxed atomics only that side writes). The device writes DW0/DW2 first and the
//! status dword last with Release; the host reads the status with Acquire, which is the
//! dma_rmb() of nvme_poll_cq: the phase load precedes the loads of the other fields.
//! The host's CQ head doorbell is a Release store the device reads with Acquire before
//! reusing a slot, so the device never overwrites an entry the host has not consumed.

use super::{BadQueueDepth, check_depth};
use crate::sync::{AtomicU32, AtomicU64, Ordering};

/// One completion queue entry (16 bytes in the spec; DW1 is reserved).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Cqe {
    /// DW0: command-specific result.
    pub result: u32,
    /// DW2: SQ head pointer at the time of completion.
    pub sq_head: u16,
    /// DW2: SQ identifier.
    pub sq_id: u16,
    /// DW3: command identifier.
    pub command_id: u16,
    /// DW3: bit 0 is the phase tag, bits 15:1 the status field.
    pub status: u16,
}

impl Cqe {
    pub fn phase(&self) -> u16 {
        self.status & 1
    }

    /// The status field without the phase tag (0 = success).
    pub fn status_code(&self) -> u16 {
        self.status >> 1
    }
}

/// The device found the CQ full: head doorbell == tail + 1.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CqFull;

impl std::fmt::Display for CqFull {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("completion queue full")
    }
}

impl std::error::Error for CqFull {}

#[derive(Debug)]
struct CqSlot {
    dw0: AtomicU32,
    dw2: AtomicU32,
    dw3: AtomicU32,
}

/// A completion queue ring and its head doorbell.
#[derive(Debug)]
pub struct CompletionQueue {
    slots: Box<[CqSlot]>,
    q_depth: u32,
    // Host side (struct nvme_queue): cq_head, cq_phase.
    cq_head: AtomicU32,
    cq_phase: AtomicU32,
    doorbell_writes: AtomicU64,
    // The CQ head doorbell register: host writes, device reads.
    head_db: AtomicU32,
    // Device side: where the next entry goes and the phase it carries.
    tail: AtomicU32,
    dev_phase: AtomicU32,
}

impl CompletionQueue {
    /// A zeroed ring: every phase tag 0, host expects phase 1 (nvme_init_queue).
    pub fn new(q_depth: u32) -> Result<Self, BadQueueDepth> {
        let q_depth = check_depth(q_depth)?;
        let slots = (0..q_depth)
            .map(|_| CqSlot {
                dw0: AtomicU32::new(0),
                dw2: AtomicU32::new(0),
                dw3: AtomicU32::new(0),
            })
            .collect();
        Ok(CompletionQueue {
            slots,
            q_depth,
            cq_head: AtomicU32::new(0),
            cq_phase: AtomicU32::new(1),
            doorbell_writes: AtomicU64::new(0),
            head_db: AtomicU32::new(0),
            tail: AtomicU32::new(0),
            dev_phase: AtomicU32::new(1),
        })
    }

    pub fn q_depth(&self) -> u32 {
        self.q_depth
    }

    // ---- host side (one consumer) ----

    /// nvme_cqe_pending(): the entry at cq_head carries the phase the host expects.
    #[inline]
    pub fn cqe_pending(&self) -> bool {
        let head = self.cq_head.load(Ordering::Relaxed);
        let phase = self.cq_phase.load(Ordering::Relaxed);
        self.slot_phase(head) == phase
    }

    #[inline]
    fn slot_phase(&self, idx: u32) -> u32 {
        (self.slots[idx as usize].dw3.load(Ordering::Acquire) >> 16) & 1
    }

    /// nvme_poll_cq(): reaps entries while the phase matches, at most `budget` of them
    /// (u32::MAX for mainline's unbudgeted drain), calls `handle` for each, and rings the
    /// CQ head doorbell once if anything was found. Returns the number reaped.
    pub fn poll_cq(&self, budget: u32, mut handle: impl FnMut(Cqe)) -> u32 {
        let mut head = self.cq_head.load(Ordering::Relaxed);
        let mut phase = self.cq_phase.load(Ordering::Relaxed);
        let mut found = 0;
        while found < budget {
            let slot = &self.slots[head as usize];
            // The Acquire on the status dword is nvme_poll_cq's dma_rmb().
            let dw3 = slot.dw3.load(Ordering::Acquire);
            if (dw3 >> 16) & 1 != phase {
                break;
            }
            let dw2 = slot.dw2.load(Ordering::Relaxed);
            let cqe = Cqe {
                result: slot.dw0.load(Ordering::Relaxed),
                sq_head: dw2 as u16,
                sq_id: (dw2 >> 16) as u16,
                command_id: dw3 as u16,
                status: (dw3 >> 16) as u16,
            };
            // nvme_update_cq_head(): wrap to 0 and flip the expected phase.
            head += 1;
            if head == self.q_depth {
                head = 0;
                phase ^= 1;
            }
            found += 1;
            handle(cqe);
        }
        if found > 0 {
            self.cq_head.store(head, Ordering::Relaxed);
            self.cq_phase.store(phase, Ordering::Relaxed);
            self.ring_cq_doorbell(head);
        }
        found
    }

    /// nvme_ring_cq_doorbell(): writel(cq_head, q_db + db_stride), no shadow doorbell.
    #[inline]
    fn ring_cq_doorbell(&self, head: u32) {
        self.head_db.store(head, Ordering::Release);
        // One host writer; Release so a device that sees the new count sees the head.
        let n = self.doorbell_writes.load(Ordering::Relaxed);
        self.doorbell_writes.store(n + 1, Ordering::Release);
    }

    /// The host's cq_head.
    pub fn cq_head(&self) -> u32 {
        self.cq_head.load(Ordering::Relaxed)
    }

    /// The phase the host expects next (starts at 1).
    pub fn cq_phase(&self) -> u32 {
        self.cq_phase.load(Ordering::Relaxed)
    }

    /// CQ head doorbell writes made by the host: a device thread compares it with the
    /// count it last saw to notice every write, even one that restores an old head value.
    pub fn doorbell_writes(&self) -> u64 {
        self.doorbell_writes.load(Ordering::Acquire)
    }

    // ---- device side (one producer) ----

    /// Writes one completion at the device's tail with the current device phase, or
    /// refuses when the ring is full: the spec's "Head equals one more than Tail", with
    /// Head known only from the doorbell.
    #[inline]
    pub fn post(&self, cqe: Cqe) -> Result<(), CqFull> {
        let tail = self.tail.load(Ordering::Relaxed);
        let next = if tail + 1 == self.q_depth {
            0
        } else {
            tail + 1
        };
        if next == self.head_db.load(Ordering::Acquire) {
            return Err(CqFull);
        }
        let phase = self.dev_phase.load(Ordering::Relaxed);
        let slot = &self.slots[tail as usize];
        slot.dw0.store(cqe.result, Ordering::Relaxed);
        slot.dw2.store(
            u32::from(cqe.sq_head) | (u32::from(cqe.sq_id) << 16),
            Ordering::Relaxed,
        );
        let status = u32::from(cqe.status & !1) | phase;
        // The status dword (with the phase tag) goes last, published with Release.
        slot.dw3.store(
            u32::from(cqe.command_id) | (status << 16),
            Ordering::Release,
        );
        self.tail.store(next, Ordering::Relaxed);
        if next == 0 {
            self.dev_phase.store(phase ^ 1, Ordering::Relaxed);
        }
        Ok(())
    }

    /// Whether the next post would be refused.
    pub fn is_full(&self) -> bool {
        let tail = self.tail.load(Ordering::Relaxed);
        let next = if tail + 1 == self.q_depth {
            0
        } else {
            tail + 1
        };
        next == self.head_db.load(Ordering::Acquire)
    }

    /// Entries written but not yet released by the head doorbell (the device's view).
    #[inline]
    pub fn unacked(&self) -> u32 {
        let tail = self.tail.load(Ordering::Relaxed);
        let head = self.head_db.load(Ordering::Acquire);
        (tail + self.q_depth - head) % self.q_depth
    }

    /// The device's tail (next slot it writes).
    pub fn tail(&self) -> u32 {
        self.tail.load(Ordering::Relaxed)
    }

    /// The last value the host wrote to the CQ head doorbell.
    pub fn head_doorbell(&self) -> u32 {
        self.head_db.load(Ordering::Acquire)
    }
}
