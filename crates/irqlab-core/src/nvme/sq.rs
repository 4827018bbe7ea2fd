//! The submission queue ring and its tail doorbell (drivers/nvme/host/pci.c).
//!
//! Single producer (the host: [`SubmissionQueue::submit`]) and single consumer (the
//! device: [`SubmissionQueue::fetch`]). The host writes an entry, then publishes the tail
//! with a Release store to the doorbell; the device reads the doorbell with Acquire
//! before reading entries. The host learns how far the device has fetched only from the
//! SQ head field of completions ([`SubmissionQueue::update_sq_head`]).

use super::{BadQueueDepth, check_depth};
use crate::sync::{AtomicU32, AtomicU64, Ordering};

/// include/linux/nvme.h enum nvme_opcode: nvme_cmd_write, the NVM command set's Write.
pub const NVME_CMD_WRITE: u8 = 0x01;
/// include/linux/nvme.h enum nvme_opcode: nvme_cmd_read, the NVM command set's Read.
pub const NVME_CMD_READ: u8 = 0x02;

/// Calibrated-interrupt hint: complete this request with an interrupt at once. (The
/// cinterrupts prototype carries it in command_id bit 15; here it has its own bit.)
pub const SQE_HINT_URGENT: u8 = 1 << 0;
/// Calibrated-interrupt hint: last request of a batch (cinterrupts: command_id bit 14).
pub const SQE_HINT_BARRIER: u8 = 1 << 1;

/// The fields of a 64-byte submission entry that the models use.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Sqe {
    pub command_id: u16,
    pub opcode: u8,
    /// SQE_HINT_* bits.
    pub hints: u8,
    /// Opaque payload for the caller (e.g. a request index or a block count).
    pub data: u32,
}

impl Sqe {
    fn pack(&self) -> u64 {
        u64::from(self.command_id)
            | (u64::from(self.opcode) << 16)
            | (u64::from(self.hints) << 24)
            | (u64::from(self.data) << 32)
    }

    fn unpack(v: u64) -> Self {
        Sqe {
            command_id: v as u16,
            opcode: (v >> 16) as u8,
            hints: (v >> 24) as u8,
            data: (v >> 32) as u32,
        }
    }
}

/// The host found no free SQ slot (tail + 1 == head as last reported by a CQE).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SqFull;

impl std::fmt::Display for SqFull {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("submission queue full")
    }
}

impl std::error::Error for SqFull {}

/// A submission queue ring and its tail doorbell.
#[derive(Debug)]
pub struct SubmissionQueue {
    slots: Box<[AtomicU64]>,
    q_depth: u32,
    // Host side (struct nvme_queue): sq_tail, last_sq_tail, and sq_head from CQEs.
    sq_tail: AtomicU32,
    last_sq_tail: AtomicU32,
    sq_head: AtomicU32,
    doorbell_writes: AtomicU64,
    // The SQ tail doorbell register: host writes, device reads.
    tail_db: AtomicU32,
    // Device side: next entry to fetch.
    dev_head: AtomicU32,
}

impl SubmissionQueue {
    pub fn new(q_depth: u32) -> Result<Self, BadQueueDepth> {
        let q_depth = check_depth(q_depth)?;
        Ok(SubmissionQueue {
            slots: (0..q_depth).map(|_| AtomicU64::new(0)).collect(),
            q_depth,
            sq_tail: AtomicU32::new(0),
            last_sq_tail: AtomicU32::new(0),
            sq_head: AtomicU32::new(0),
            doorbell_writes: AtomicU64::new(0),
            tail_db: AtomicU32::new(0),
            dev_head: AtomicU32::new(0),
        })
    }

    pub fn q_depth(&self) -> u32 {
        self.q_depth
    }

    #[inline]
    fn wrap(&self, i: u32) -> u32 {
        if i + 1 == self.q_depth { 0 } else { i + 1 }
    }

    // ---- host side (one producer) ----

    /// nvme_sq_copy_cmd() then nvme_write_sq_db(nvmeq, last): copies the entry at
    /// sq_tail and writes the doorbell only when `last` (bd->last) is set or the next tail
    /// would reach last_sq_tail. Returns whether the doorbell was written.
    #[inline]
    pub fn submit(&self, sqe: Sqe, last: bool) -> Result<bool, SqFull> {
        let tail = self.sq_tail.load(Ordering::Relaxed);
        let next = self.wrap(tail);
        if next == self.sq_head.load(Ordering::Relaxed) {
            return Err(SqFull);
        }
        self.slots[tail as usize].store(sqe.pack(), Ordering::Relaxed);
        self.sq_tail.store(next, Ordering::Relaxed);
        if !last && self.wrap(next) != self.last_sq_tail.load(Ordering::Relaxed) {
            return Ok(false);
        }
        Ok(self.ring_doorbell())
    }

    /// Writes sq_tail to the doorbell if entries were queued since the last write
    /// (commit_rqs). Returns whether it wrote.
    #[inline]
    pub fn ring_doorbell(&self) -> bool {
        let tail = self.sq_tail.load(Ordering::Relaxed);
        if tail == self.last_sq_tail.load(Ordering::Relaxed) {
            return false;
        }
        self.tail_db.store(tail, Ordering::Release);
        self.last_sq_tail.store(tail, Ordering::Relaxed);
        let n = self.doorbell_writes.load(Ordering::Relaxed);
        self.doorbell_writes.store(n + 1, Ordering::Relaxed);
        true
    }

    /// Records the SQ head reported in a completion, freeing slots before it.
    #[inline]
    pub fn update_sq_head(&self, sq_head: u16) {
        self.sq_head.store(u32::from(sq_head), Ordering::Relaxed);
    }

    pub fn sq_tail(&self) -> u32 {
        self.sq_tail.load(Ordering::Relaxed)
    }

    /// SQ tail doorbell writes made by the host.
    pub fn doorbell_writes(&self) -> u64 {
        self.doorbell_writes.load(Ordering::Relaxed)
    }

    // ---- device side (one consumer) ----

    /// Fetches the next entry the doorbell has made visible.
    #[inline]
    pub fn fetch(&self) -> Option<Sqe> {
        let head = self.dev_head.load(Ordering::Relaxed);
        if head == self.tail_db.load(Ordering::Acquire) {
            return None;
        }
        let sqe = Sqe::unpack(self.slots[head as usize].load(Ordering::Relaxed));
        self.dev_head.store(self.wrap(head), Ordering::Relaxed);
        Some(sqe)
    }

    /// The device's SQ head, reported in each CQE.
    #[inline]
    pub fn device_head(&self) -> u16 {
        self.dev_head.load(Ordering::Relaxed) as u16
    }

    /// Entries the doorbell has published that the device has not fetched yet.
    pub fn doorbell_backlog(&self) -> u32 {
        let head = self.dev_head.load(Ordering::Relaxed);
        let db = self.tail_db.load(Ordering::Acquire);
        (db + self.q_depth - head) % self.q_depth
    }
}
