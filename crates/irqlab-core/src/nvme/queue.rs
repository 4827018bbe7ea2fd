//! An NVMe I/O queue pair as `struct nvme_queue` holds it: SQ, CQ, qid and the MSI-X
//! vector its CQ interrupts on (cq_vector). Host-side and device-side methods follow the
//! same single-producer/single-consumer rules as [`super::cq`] and [`super::sq`].

use super::{BadQueueDepth, CompletionQueue, CqFull, Cqe, SqFull, Sqe, SubmissionQueue};

#[derive(Debug)]
pub struct QueuePair {
    pub qid: u16,
    /// The MSI-X vector index (cq_vector) its completions raise.
    pub cq_vector: u16,
    pub sq: SubmissionQueue,
    pub cq: CompletionQueue,
}

impl QueuePair {
    /// Both rings of `q_depth` entries (the driver uses one depth for both).
    pub fn new(qid: u16, cq_vector: u16, q_depth: u32) -> Result<Self, BadQueueDepth> {
        Ok(QueuePair {
            qid,
            cq_vector,
            sq: SubmissionQueue::new(q_depth)?,
            cq: CompletionQueue::new(q_depth)?,
        })
    }

    /// An SQ of `sq_depth` entries and a CQ of `cq_depth`: an RDMA queue's CQ holds several
    /// work completions per command (drivers/nvme/host/rdma.c nvme_rdma_create_queue_ib:
    /// `cq_factor * queue_size + 1` with cq_factor 3, send, receive and invalidate).
    pub fn with_cq_depth(
        qid: u16,
        cq_vector: u16,
        sq_depth: u32,
        cq_depth: u32,
    ) -> Result<Self, BadQueueDepth> {
        Ok(QueuePair {
            qid,
            cq_vector,
            sq: SubmissionQueue::new(sq_depth)?,
            cq: CompletionQueue::new(cq_depth)?,
        })
    }

    // ---- host side ----

    /// Queues one command; the doorbell is written when `last` is set (bd->last) or the
    /// ring would otherwise fill. Returns whether the doorbell was written.
    #[inline]
    pub fn submit(&self, sqe: Sqe, last: bool) -> Result<bool, SqFull> {
        self.sq.submit(sqe, last)
    }

    /// nvme_cqe_pending().
    #[inline]
    pub fn cqe_pending(&self) -> bool {
        self.cq.cqe_pending()
    }

    /// nvme_poll_cq() with a budget: reaps, frees SQ slots up to each CQE's SQ head, rings
    /// the CQ head doorbell once. Returns the number of completions reaped.
    pub fn poll_cq(&self, budget: u32, mut handle: impl FnMut(Cqe)) -> u32 {
        let mut sq_head = None;
        let found = self.cq.poll_cq(budget, |cqe| {
            sq_head = Some(cqe.sq_head);
            handle(cqe);
        });
        if let Some(h) = sq_head {
            self.sq.update_sq_head(h);
        }
        found
    }

    // ---- device side ----

    /// The controller fetches the next visible command.
    #[inline]
    pub fn fetch(&self) -> Option<Sqe> {
        self.sq.fetch()
    }

    /// The controller posts a completion for `command_id` with status code `status`
    /// (0 = success), filling SQ head and SQ id.
    #[inline]
    pub fn complete(&self, command_id: u16, status: u16, result: u32) -> Result<(), CqFull> {
        self.cq.post(Cqe {
            result,
            sq_head: self.sq.device_head(),
            sq_id: self.qid,
            command_id,
            status: status << 1,
        })
    }
}
