//! One I/O queue: the NVMe queue pair (core's SQ and CQ with their phase tags), the
//! blk-mq tag set naming each request by command id, the CQ poll lock (nvme's
//! cq_poll_lock, virtio's vq lock), the CQE writes still in the root port, the threads
//! that spin on it or wait for a tag, and what an RDMA or virtio queue adds. It owns all
//! of them; what it finds (a request fetched or reaped, a CQE visible, tag waiters to
//! wake) it returns, and the simulator carries out the effects on devices, vectors and
//! threads (model/device.rs, model/cpu.rs, model/submit.rs, model/target.rs).

use super::ids::{DeviceId, IoId, QueueId, ThreadId, VectorId};
use super::state::WC_SEND;
use super::virtio::Vq;
use irqlab_core::nvme::{CqFull, QueuePair, SqFull, Sqe, TagSet};

pub(crate) struct Queue {
    device: DeviceId,
    vector: Option<VectorId>,
    /// The host acknowledges consumed entries with a write the device sees (NVMe CQ head
    /// doorbell, RDMA CQ re-arm); false for DSA, whose handler rings nothing.
    doorbell: bool,
    /// Handler CPU time per completion, ns (NVMe: nvme_handle_cqe before the doorbell).
    cqe_ns: u64,
    /// NVMe: per request, the batch completion nvme_irq runs after ringing the CQ
    /// doorbell. None: the handler completes each entry as it polls it (idxd, ib_cq).
    complete_ns: Option<u64>,
    qp: QueuePair,
    /// Request by NVMe command_id (tag), while the tag is in use (core's blk-mq tag set).
    tags: TagSet<IoId>,
    /// CQE writes in the root port FIFO, not yet in the CQ (the device's view counts them).
    cqes_in_flight: u32,
    /// CPUs whose submissions map here (more than one: a shared queue).
    shared: bool,
    /// cq_lock held by a reaper (handler, poll, reap after submit).
    cq_locked: bool,
    /// Threads spinning on this queue.
    spinners: Vec<ThreadId>,
    /// Jobs asleep in blk_mq_get_tag until one of this queue's tags is freed.
    tag_waiters: Vec<ThreadId>,
    /// NVMe over RDMA, host side: the target CQ this queue's commands arrive on.
    target: Option<QueueId>,
    /// Target side: a completed entry is a command to answer (model/target.rs), and the
    /// CQ's interrupts reach its CPU after this latency, not through the host's ports.
    local_irq_ns: Option<u64>,
    completions: u64,
    /// RDMA: per command id, the work completions the request still waits for (nvme-rdma
    /// req->ref: its SEND and its RECV; nvmet-rdma: the command's RECV and the response's
    /// SEND). Empty: one CQE completes a request.
    wc_ref: Vec<u8>,
    /// RDMA: handler CPU time for one SEND work completion, ns.
    send_wc_ns: u64,
    /// SEND work completions among the entries the last poll of this queue took.
    last_sends: u32,
    /// NVMe over RDMA, host side: per host command id, the target queue's command id.
    peer_tag: Vec<u16>,
    /// virtio-blk: the virtqueue's ring state (model/virtio.rs).
    virtio: Option<Box<Vq>>,
}

impl Queue {
    /// An empty, unshared queue pair of `device`, every command id free, its entries
    /// handled at `cqe_ns` each and acknowledged by a CQ head doorbell; the rest comes
    /// with the `with_` methods.
    pub(crate) fn new(
        device: DeviceId,
        vector: Option<VectorId>,
        qp: QueuePair,
        cqe_ns: u64,
    ) -> Queue {
        let depth = qp.sq.q_depth();
        Queue {
            device,
            vector,
            doorbell: true,
            cqe_ns,
            complete_ns: None,
            qp,
            // Command ids 0..depth (65536 entries use every u16).
            tags: TagSet::new(depth),
            cqes_in_flight: 0,
            shared: false,
            cq_locked: false,
            spinners: Vec::new(),
            tag_waiters: Vec::new(),
            target: None,
            local_irq_ns: None,
            completions: 0,
            wc_ref: Vec::new(),
            send_wc_ns: 0,
            last_sends: 0,
            peer_tag: Vec::new(),
            virtio: None,
        }
    }

    /// Its handler: whether it rings a head doorbell, and the per-request batch
    /// completion after it (None: each entry completes as it is polled).
    pub(crate) fn with_handler(mut self, doorbell: bool, complete_ns: Option<u64>) -> Queue {
        self.doorbell = doorbell;
        self.complete_ns = complete_ns;
        self
    }

    /// Submissions of several CPUs map here.
    pub(crate) fn with_shared(mut self, shared: bool) -> Queue {
        self.shared = shared;
        self
    }

    /// RDMA: a request waits for its SEND and RECV work completions (per command id
    /// counts `wc_ref`, the peer's command ids `peer_tag`); a SEND's costs `send_wc_ns`.
    pub(crate) fn with_rdma(
        mut self,
        wc_ref: Vec<u8>,
        peer_tag: Vec<u16>,
        send_wc_ns: u64,
    ) -> Queue {
        self.wc_ref = wc_ref;
        self.peer_tag = peer_tag;
        self.send_wc_ns = send_wc_ns;
        self
    }

    /// An NVMe over RDMA target's CQ, its interrupts reaching its CPU `local_irq_ns` later.
    pub(crate) fn with_local_irq(mut self, local_irq_ns: u64) -> Queue {
        self.local_irq_ns = Some(local_irq_ns);
        self
    }

    /// A virtio-blk virtqueue.
    pub(crate) fn with_virtio(mut self, vq: Vq) -> Queue {
        self.virtio = Some(Box::new(vq));
        self
    }

    /// NVMe over RDMA, host side: its commands arrive on target queue `tq`.
    pub(crate) fn set_target(&mut self, tq: QueueId) {
        self.target = Some(tq);
    }

    // ---------------------------------------------------------------- what it is

    #[inline(always)]
    pub(crate) fn device(&self) -> DeviceId {
        self.device
    }

    /// Its interrupt vector; None: a poll queue.
    #[inline(always)]
    pub(crate) fn vector(&self) -> Option<VectorId> {
        self.vector
    }

    /// The host acknowledges its entries with a write the device sees.
    #[inline(always)]
    pub(crate) fn has_doorbell(&self) -> bool {
        self.doorbell
    }

    /// Handler CPU time per completion, ns.
    #[inline(always)]
    pub(crate) fn cqe_ns(&self) -> u64 {
        self.cqe_ns
    }

    /// NVMe: the per-request batch completion after the doorbell; None: inline.
    #[inline(always)]
    pub(crate) fn complete_ns(&self) -> Option<u64> {
        self.complete_ns
    }

    /// CPU time to reap and complete one entry, wherever the completion runs.
    #[inline]
    pub(crate) fn reap_ns(&self) -> u64 {
        self.cqe_ns + self.complete_ns.unwrap_or(0)
    }

    /// Its SQ's depth (command ids 0..depth).
    pub(crate) fn depth(&self) -> u32 {
        self.qp.sq.q_depth()
    }

    /// NVMe over RDMA, host side: the target queue its commands arrive on.
    #[inline(always)]
    pub(crate) fn target(&self) -> Option<QueueId> {
        self.target
    }

    /// A target's CQ: the latency of its interrupts to the target CPU.
    #[inline(always)]
    pub(crate) fn local_irq_ns(&self) -> Option<u64> {
        self.local_irq_ns
    }

    /// An NVMe over RDMA target's CQ: a completed entry is a command to answer.
    #[inline(always)]
    pub(crate) fn is_target(&self) -> bool {
        self.local_irq_ns.is_some()
    }

    /// RDMA: a request waits for more than one work completion.
    #[inline(always)]
    pub(crate) fn is_rdma(&self) -> bool {
        !self.wc_ref.is_empty()
    }

    /// Entries polled off its CQ since the window opened.
    pub(crate) fn completions(&self) -> u64 {
        self.completions
    }

    /// The measurement window opens: its counters start from zero.
    pub(crate) fn open_window(&mut self) {
        self.completions = 0;
    }

    /// virtio-blk: the virtqueue's ring state.
    #[inline(always)]
    pub(crate) fn virtio(&self) -> Option<&Vq> {
        self.virtio.as_deref()
    }

    #[inline(always)]
    pub(crate) fn virtio_mut(&mut self) -> Option<&mut Vq> {
        self.virtio.as_deref_mut()
    }

    #[inline(always)]
    pub(crate) fn is_virtio(&self) -> bool {
        self.virtio.is_some()
    }

    // ---------------------------------------------------------------- submission

    /// Tags free in its blk-mq tag set.
    #[inline(always)]
    pub(crate) fn tags_free(&self) -> usize {
        self.tags.free()
    }

    /// blk_mq_get_tag for request `io`: its command id, None when none is free.
    #[inline(always)]
    pub(crate) fn alloc_tag(&mut self, io: IoId) -> Option<u16> {
        self.tags.alloc(io)
    }

    /// The request in flight under command id `tag`.
    #[inline(always)]
    pub(crate) fn request(&self, tag: u16) -> Option<IoId> {
        self.tags.get(tag).copied()
    }

    /// The requests in flight.
    pub(crate) fn requests(&self) -> impl Iterator<Item = IoId> + '_ {
        self.tags.iter().map(|(_, &io)| io)
    }

    /// The driver writes `sqe` into the SQ; `last` rings the tail doorbell.
    #[inline(always)]
    pub(crate) fn submit(&mut self, sqe: Sqe, last: bool) -> Result<bool, SqFull> {
        self.qp.submit(sqe, last)
    }

    /// The controller fetches the next SQE.
    #[inline(always)]
    pub(crate) fn fetch(&mut self) -> Option<Sqe> {
        self.qp.fetch()
    }

    /// Thread `t` sleeps in blk_mq_get_tag until a tag of this queue is freed.
    pub(crate) fn wait_for_tag(&mut self, t: ThreadId) {
        self.tag_waiters.push(t);
    }

    /// Threads asleep for a tag.
    #[inline(always)]
    pub(crate) fn has_tag_waiters(&self) -> bool {
        !self.tag_waiters.is_empty()
    }

    /// blk_mq_put_tag → sbitmap_queue_clear: the waiters to wake, who no longer wait.
    pub(crate) fn take_tag_waiters(&mut self) -> Vec<ThreadId> {
        std::mem::take(&mut self.tag_waiters)
    }

    // ---------------------------------------------------------------- completion

    /// A CQE write of this queue entered the root port.
    #[inline(always)]
    pub(crate) fn cqe_sent(&mut self) {
        self.cqes_in_flight += 1;
    }

    /// A CQE write left the root port and lands in the CQ with the current phase tag.
    #[inline(always)]
    pub(crate) fn cqe_landed(&mut self, tag: u16, result: u32) -> Result<(), CqFull> {
        self.cqes_in_flight -= 1;
        self.qp.complete(tag, 0, result)
    }

    /// A CQE is posted in the CQ directly (a target's NIC, a virtio used ring).
    #[inline(always)]
    pub(crate) fn post_cqe(&mut self, tag: u16, result: u32) -> Result<(), CqFull> {
        self.qp.complete(tag, 0, result)
    }

    /// CQEs the host has not acknowledged with a head doorbell: in the CQ or on their
    /// way through the root port.
    #[inline(always)]
    pub(crate) fn unacked(&self) -> u32 {
        self.qp.cq.unacked() + self.cqes_in_flight
    }

    /// nvme_cqe_pending: the phase tag at the CQ head is the current one.
    #[inline(always)]
    pub(crate) fn cqe_pending(&self) -> bool {
        self.qp.cqe_pending()
    }

    /// nvme_poll_cq with a budget: pops visible CQEs (phase tags), frees their tags when a
    /// request's last work completion is in, and appends the requests to `out` (on a
    /// target, each command as its RECV arrives). Returns the entries taken.
    #[inline(always)]
    pub(crate) fn poll_cq(&mut self, budget: u32, out: &mut Vec<IoId>) -> u32 {
        let tags = &mut self.tags;
        let refs = &mut self.wc_ref;
        // nvmet-rdma: a command's RECV is answered at once; its tag waits for the
        // response's SEND completion too.
        let target = self.local_irq_ns.is_some();
        let mut sends = 0;
        let n = self.qp.poll_cq(budget, |cqe| {
            let t = cqe.command_id;
            let send = cqe.result == WC_SEND;
            sends += u32::from(send);
            if target && !send {
                out.push(
                    *tags
                        .get(t)
                        .expect("a RECV's command id names a command in flight"),
                );
            }
            // nvme-rdma: the request ends when its last work completion is in (req->ref).
            let last = refs.get_mut(usize::from(t)).is_none_or(|r| {
                *r -= 1;
                *r == 0
            });
            if last {
                let io = tags
                    .complete(t)
                    .expect("a CQE's command id names a request in flight");
                if !target {
                    out.push(io);
                }
            }
        });
        self.last_sends = sends;
        self.completions += u64::from(n);
        n
    }

    /// Of `n` entries the last poll took: the ones that are not SEND work completions,
    /// and the handler time of those that are.
    #[inline(always)]
    pub(crate) fn split_sends(&self, n: u32) -> (u32, u64) {
        let sends = self.last_sends.min(n);
        (n - sends, u64::from(sends) * self.send_wc_ns)
    }

    // ---------------------------------------------------------------- RDMA

    /// RDMA: command id `tag`'s request now waits for two work completions (SEND, RECV).
    #[inline]
    pub(crate) fn await_send_and_recv(&mut self, tag: u16) {
        self.wc_ref[tag as usize] = 2;
    }

    /// nvmet-rdma: command `io` arrives in this target queue: a command id, the receive
    /// queue's entry and the RECV's CQE; the command waits for its response's SEND too.
    /// None when the queue is full.
    pub(crate) fn receive(&mut self, io: IoId, opcode: u8) -> Option<u16> {
        let tag = self.tags.alloc(io)?;
        if let Some(r) = self.wc_ref.get_mut(tag as usize) {
            *r = 2;
        }
        // The NIC fills the receive queue and its CQ; the SQ side is the host's.
        let _ = self.qp.submit(
            Sqe {
                command_id: tag,
                opcode,
                hints: 0,
                data: io.ix() as u32,
            },
            true,
        );
        let _ = self.qp.fetch();
        let posted = self.qp.complete(tag, 0, 0);
        debug_assert!(posted.is_ok(), "target CQ overflow");
        Some(tag)
    }

    /// NVMe over RDMA, host side: host command id `tag` is the target's `peer`.
    pub(crate) fn set_peer_tag(&mut self, tag: u16, peer: u16) {
        if let Some(t) = self.peer_tag.get_mut(tag as usize) {
            *t = peer;
        }
    }

    /// The target's command id of host command id `tag`.
    pub(crate) fn peer_tag(&self, tag: u16) -> u16 {
        self.peer_tag[tag as usize]
    }

    // ---------------------------------------------------------------- reapers

    /// A reaper (handler, poll) takes the CQ poll lock.
    #[inline(always)]
    pub(crate) fn lock_cq(&mut self) {
        self.cq_locked = true;
    }

    #[inline(always)]
    pub(crate) fn unlock_cq(&mut self) {
        self.cq_locked = false;
    }

    /// The reap after submit may take it (nvme_poll's spin_trylock on a queue shared by
    /// several CPUs): shared, and its CQ poll lock free.
    #[inline(always)]
    pub(crate) fn shared_lock_free(&self) -> bool {
        self.shared && !self.cq_locked
    }

    /// Threads spinning on this queue.
    #[inline(always)]
    pub(crate) fn spinners(&self) -> &[ThreadId] {
        &self.spinners
    }

    #[inline(always)]
    pub(crate) fn has_spinners(&self) -> bool {
        !self.spinners.is_empty()
    }

    /// Thread `t` spins on this queue.
    pub(crate) fn add_spinner(&mut self, t: ThreadId) {
        self.spinners.push(t);
    }

    /// Thread `t` spins on this queue, if it did not already.
    pub(crate) fn add_spinner_once(&mut self, t: ThreadId) {
        if !self.spinners.contains(&t) {
            self.spinners.push(t);
        }
    }

    /// Thread `t` no longer spins here.
    pub(crate) fn remove_spinner(&mut self, t: ThreadId) {
        self.spinners.retain(|&s| s != t);
    }
}
