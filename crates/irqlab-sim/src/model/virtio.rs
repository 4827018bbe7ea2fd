//! virtio-blk in a guest: the driver (drivers/block/virtio_blk.c) and the VMM thread that
//! serves its rings, with the notification logic of irqlab-core's `virtio::SplitRing`.
//!
//! Guest side. `virtio_queue_rq` adds each request to the avail ring; on `bd->last` it
//! asks `virtqueue_kick_prepare`, and a kick (`vp_notify`, an exit) costs the submitter
//! `guest.kick_ns` before its submit call returns. The interrupt runs `vring_interrupt`
//! and `virtblk_done`: drain every used entry (`virtqueue_get_buf`, `cqe_ns` each, or
//! the device's `completion_ns`), re-enable callbacks and drain again if entries arrived.
//! Each request completes through `blk_mq_complete_request`: with one hardware queue in
//! BLOCK_SOFTIRQ on the interrupted CPU (`blk_mq_raise_softirq`), otherwise inline,
//! `kernel.complete_io_ns` each. The interrupt reaches the vCPU by injection
//! (`host.notify_ns` after the irqfd write), not through a root port or an IOMMU.
//!
//! Host side (`[devices.host]`): the VMM thread of model/virtio_host.rs, which passes over
//! the avail rings, publishes the used entries and writes the irqfd.

use super::build::{Inputs, Machine, VectorSpec, add_vector};
use super::ids::{DeviceId, IoId, JobId, QueueId};
use super::queue::Queue;
use super::state::*;
use super::virtio_host::Host;
use crate::SimError;
use crate::observer::{Observer, SliceKind};
use crate::platform::{DeviceGroup, DeviceKind, Platform};
use irqlab_core::nvme::{MsiRule, QueuePair};
use irqlab_core::virtio::SplitRing;
use irqlab_core::{DeviceCoalescing, HandlerStyle, ModeratorKind, Policy};

/// One virtqueue: its ring's indices and what the host has not made visible yet. The
/// requests themselves sit in the queue's `QueuePair`: its SQ is the avail ring in order,
/// its CQ the used entries published to the guest.
pub(crate) struct Vq {
    ring: SplitRing,
    /// Served and written to the used ring, `used->idx` not yet moved (per_pass).
    unpublished: Vec<IoId>,
    /// Submitters whose batch asked for a kick: (job, the batch's submit time).
    kicking: Vec<(JobId, u64)>,
}

impl Vq {
    /// The split ring's indices and flags (core's).
    #[inline]
    pub fn ring_mut(&mut self) -> &mut SplitRing {
        &mut self.ring
    }

    /// The host finished `io`: its used entry, not visible to the guest yet.
    pub fn add_used(&mut self, io: IoId) {
        self.ring.add_used();
        self.unpublished.push(io);
    }

    /// `used->idx` moves past the entries added: the requests they complete (lent out
    /// while the guest's CQ fills) and whether the device interrupts; None when nothing
    /// was added since the last publish.
    pub fn publish(&mut self) -> Option<(Vec<IoId>, bool)> {
        if self.unpublished.is_empty() {
            return None;
        }
        self.ring.publish();
        let notify = self.ring.should_notify();
        Some((std::mem::take(&mut self.unpublished), notify))
    }

    /// The lent list comes back, its entries now the guest's.
    pub fn published(&mut self, mut list: Vec<IoId>) {
        list.clear();
        self.unpublished = list;
    }
}

/// `vda`, `vdb`, ..., `vdz`, `vdaa`: virtblk_name_format's letters for disk `n`.
pub(crate) fn disk_letters(mut n: usize) -> String {
    let mut s = Vec::new();
    loop {
        s.push(b'a' + (n % 26) as u8);
        if n < 26 {
            break;
        }
        n = n / 26 - 1;
    }
    s.reverse();
    String::from_utf8(s).expect("ASCII letters")
}

/// Whether any device of the platform is virtio-blk.
pub(crate) fn any(p: &Platform) -> bool {
    p.devices.iter().any(|g| g.kind == DeviceKind::VirtioBlk)
}

/// The policies a virtio-blk device cannot run: the handler is virtblk_done, and the
/// device has neither NVMe's coalescing nor its completion-queue patches.
pub(crate) fn check_policy(p: &Platform, policy: &Policy) -> Result<(), SimError> {
    if !any(p) {
        return Ok(());
    }
    let refuse = |what: &str| {
        Err(SimError::Unsupported(format!(
            "{what} with a virtio-blk device: its interrupt handler is virtblk_done (hardirq), and the device has no interrupt coalescing; use the default policy"
        )))
    };
    if policy.handler != HandlerStyle::Hardirq {
        return refuse("--handler threaded or irq-poll");
    }
    if policy.moderator != ModeratorKind::None {
        return refuse("--moderator");
    }
    if policy.coalescing != DeviceCoalescing::Off {
        return refuse("--coalesce");
    }
    if policy.reap_after_submit || policy.flood_detection {
        return refuse("--reap-after-submit or --flood-detection (NVMe patches)");
    }
    Ok(())
}

/// One set of a virtio-blk device's virtqueues (set 0: those with a vector; set 1: the
/// poll queues, `virtio.poll_queues` of them), mapped to CPUs as blk_mq_map_queues does.
/// Returns each CPU's queue.
pub(crate) fn add_queue_set(
    inp: &Inputs<'_>,
    g: &DeviceGroup,
    d: usize,
    set: usize,
    m: &mut Machine,
) -> Result<Vec<QueueId>, SimError> {
    let (p, ncpu) = (inp.p, inp.p.cpu.count);
    let (v, h) = (
        g.virtio.as_ref().expect("validated"),
        g.host.as_ref().expect("validated"),
    );
    let name = &inp.names[d];
    let nq = if set == 0 {
        g.queues - v.poll_queues
    } else {
        v.poll_queues
    };
    if nq == 0 {
        return Err(SimError::Config(format!(
            "{name}: a job polls it (hipri or --delivery polled/hybrid), but it has no poll queues (devices.N.virtio.poll_queues = 0, virtio_blk.poll_queues)"
        )));
    }
    let nq = nq.min(ncpu);
    // The jobs may keep as many requests in flight as there are tags and ring room.
    let room = g.queue_depth.min(crate::guest::ring_requests(v));
    let first_q = m.queues.len();
    // virtio devices are numbered in probe order (virtio0, virtio1, ...).
    let virtio_index = p
        .devices
        .iter()
        .flat_map(|x| std::iter::repeat_n(x.kind, x.count))
        .take(d)
        .filter(|&k| k == DeviceKind::VirtioBlk)
        .count();
    for q in 0..nq {
        let qid = (set * (g.queues - v.poll_queues) + q + 1) as u16;
        let qp = QueuePair::new(qid, qid, room + 1)
            .map_err(|e| SimError::Platform(format!("device {name}: {e}")))?;
        let vector = if set == 0 {
            let spec = VectorSpec {
                name: format!("virtio{virtio_index}-req.{q}"),
                queue: QueueId::new(first_q + q),
                cpu: irq_cpu(g, q, nq, ncpu),
                rule: MsiRule::PerCompletion,
                group: g,
                rescue_thread: false,
                iv: None,
                ib_softirq: false,
            };
            Some(add_vector(spec, m, inp.policy, p)?)
        } else {
            None
        };
        let cpus_here = (0..ncpu).filter(|&c| c * nq / ncpu == q).count();
        let mut ring = SplitRing::new(v.event_idx);
        // The driver's callbacks start enabled (virtio_ring's init); the device asks for
        // the first kick.
        ring.enable_cb();
        ring.enable_notification();
        m.queues.push(
            Queue::new(
                DeviceId::new(d),
                vector,
                qp,
                g.completion_ns.unwrap_or(inp.costs.cqe),
            )
            .with_handler(false, Some(p.kernel.complete_io_ns))
            .with_shared(cpus_here > 1)
            .with_virtio(Vq {
                ring,
                unpublished: Vec::new(),
                kicking: Vec::new(),
            }),
        );
    }
    m.devices[d]
        .host_or_insert_with(|| Host::new(h, g.service_cv))
        .serve((first_q..first_q + nq).map(QueueId::new));
    Ok((0..ncpu)
        .map(|c| QueueId::new(first_q + c * nq / ncpu))
        .collect())
}

/// A virtqueue's vector: the group's irq_cpu, or managed affinity (the first CPU of the
/// queue's range), as blk_mq_virtio_map_queues follows it.
fn irq_cpu(g: &DeviceGroup, q: usize, nq: usize, ncpu: usize) -> usize {
    g.irq_cpu
        .unwrap_or_else(|| (0..ncpu).find(|&c| c * nq / ncpu == q).unwrap_or(0))
}

impl<O: Observer> Sim<'_, O> {
    // ---------------------------------------------------------------- guest: submit

    /// The submit call's doorbell: an NVMe SQ tail write, or nothing for virtio-blk,
    /// whose notification is the kick decided when the requests are in the ring.
    #[inline]
    pub(crate) fn sq_doorbell_ns(&self, j: usize) -> u64 {
        if !self.costs.has_virtio {
            return self.costs.sq_doorbell;
        }
        let q = self.jobs[j].queues()[0].ix();
        if self.queues[q].is_virtio() {
            0
        } else {
            self.costs.sq_doorbell
        }
    }

    /// virtio_queue_rq: request `io` of job `j` enters queue `q`'s avail ring; on
    /// `bd->last`, virtqueue_kick_prepare decides whether the submitter kicks.
    pub(crate) fn virtio_queue_rq(&mut self, j: usize, q: usize, last: bool) {
        let now = self.now;
        let vq = self.queues[q].virtio_mut().expect("a virtio queue");
        vq.ring_mut().add();
        if last && vq.ring_mut().kick_prepare() {
            vq.kicking.push((JobId::new(j), now));
        }
        let d = self.queues[q].device().ix();
        self.host_sees_avail(d);
    }

    /// After the submit call's adds: the kick's exit the submitter pays, if its batch
    /// asked for one.
    #[inline]
    pub(crate) fn kick_step(&mut self, j: usize) -> Option<u64> {
        if !self.costs.has_virtio {
            return None;
        }
        let job = JobId::new(j);
        let asked = self.jobs[j].queues().iter().any(|&q| {
            self.queues[q.ix()]
                .virtio()
                .is_some_and(|vq| vq.kicking.iter().any(|&(k, _)| k == job))
        });
        asked.then_some(self.costs.kick.max(1))
    }

    /// The kick's exit is over: the hypervisor signalled the host thread's ioeventfd, and
    /// the submit call returns (fio's slat of the batch ends here).
    pub(crate) fn kick_done(&mut self, j: usize) {
        let now = self.now;
        let job = JobId::new(j);
        for i in 0..self.jobs[j].queues().len() {
            let q = self.jobs[j].queues()[i].ix();
            let Some(vq) = self.queues[q].virtio_mut() else {
                continue;
            };
            let Some(pos) = vq.kicking.iter().position(|&(k, _)| k == job) else {
                continue;
            };
            let (_, at) = vq.kicking.swap_remove(pos);
            for io in self.queues[q].requests() {
                let rec = &mut self.ios[io.ix()];
                if rec.job() == job && rec.submitted() == at {
                    rec.submitted_at(now);
                }
            }
            let d = self.queues[q].device().ix();
            self.host_kicked(d);
        }
    }

    // ---------------------------------------------------------------- guest: interrupt

    /// vring_interrupt then virtblk_done on CPU `c` for vector `v`: IRQ_NONE when nothing
    /// was used, otherwise disable callbacks and drain.
    pub(crate) fn virtblk_done(&mut self, c: usize, v: usize) {
        let q = self.vectors[v].queue().ix();
        let vq = self.queues[q].virtio_mut().expect("a virtio queue");
        if !vq.ring_mut().interrupt() {
            self.virtio_handler_returned(c, v);
            return;
        }
        vq.ring_mut().disable_cb();
        // virtblk_done holds the virtqueue's lock (spin_lock_irqsave) while it drains.
        self.queues[q].lock_cq();
        self.virtio_drain(c);
    }

    /// virtblk_done's loop: take every used entry (`virtqueue_get_buf`), in a step; when
    /// none is left, `virtqueue_enable_cb`, and drain again if entries arrived.
    pub(crate) fn virtio_drain(&mut self, c: usize) {
        let v = self.cpus[c].irq.running_vector();
        let q = self.vectors[v].queue().ix();
        loop {
            let vq = self.queues[q].virtio_mut().expect("a virtio queue");
            if vq.ring_mut().more_used() {
                let mut list = self.cpus[c].take_reaping();
                let n = self.poll_queue(c, q, u32::MAX, &mut list);
                let vq = self.queues[q].virtio_mut().expect("a virtio queue");
                for _ in 0..n {
                    let took = vq.ring_mut().get_buf();
                    debug_assert!(took, "the CQ and the used ring agree");
                }
                self.cpus[c].restore_reaping(list);
                self.cpus[c].irq.add_reaped(n);
                if self.measuring {
                    self.vectors[v].count_completions(u64::from(n));
                }
                let inline = self.single_hw_queue(q).is_none_or(|one| !one);
                let per = self.queues[q].cqe_ns()
                    + if inline {
                        self.queues[q].complete_ns().unwrap_or(0)
                    } else {
                        0
                    };
                self.cpus[c].irq.enter(IrqPhase::VirtioDrain);
                self.step(c, (u64::from(n) * per).max(1), SliceKind::HardIrq);
                return;
            }
            if self.queues[q]
                .virtio_mut()
                .expect("a virtio queue")
                .ring_mut()
                .enable_cb()
            {
                break;
            }
            // Entries arrived between the last get_buf and enable_cb: disable, again.
            self.queues[q]
                .virtio_mut()
                .expect("a virtio queue")
                .ring_mut()
                .disable_cb();
        }
        self.queues[q].unlock_cq();
        self.virtio_handler_returned(c, v);
    }

    /// A drain step ended: blk_mq_complete_request for each request taken. With one
    /// hardware queue they wait for BLOCK_SOFTIRQ on this CPU; otherwise they complete
    /// here (the wake-ups' cost follows), then the drain goes on.
    pub(crate) fn virtio_drained(&mut self, c: usize) {
        let v = self.cpus[c].irq.running_vector();
        let q = self.vectors[v].queue().ix();
        if self.single_hw_queue(q) == Some(true) {
            self.cpus[c].reaped_to_block_softirq();
            self.virtio_drain(c);
            return;
        }
        let mut list = self.cpus[c].take_reaping();
        let mut woke = 0;
        for &io in &list {
            if self.complete_io(io, c) {
                woke += 1;
            }
        }
        list.clear();
        self.cpus[c].restore_reaping(list);
        if woke > 0 {
            self.cpus[c].irq.wake_then(IrqPhase::VirtioDrain);
            self.cpus[c].irq.enter(IrqPhase::Wakeups);
            self.step(c, woke * self.costs.wakeup, SliceKind::HardIrq);
        } else {
            self.virtio_drain(c);
        }
    }

    /// Whether queue `q`'s device has one hardware queue (blk_mq_complete_request_remote
    /// raises BLOCK_SOFTIRQ then); None for a queue that is not virtio.
    fn single_hw_queue(&self, q: usize) -> Option<bool> {
        let d = self.queues[q].device().ix();
        let h = self.devices[d].host()?;
        Some(h.hw_queues() == 1)
    }

    /// virtblk_done returned: the tracer's handler event, then EOI and irq_exit.
    fn virtio_handler_returned(&mut self, c: usize, v: usize) {
        let reaped = self.cpus[c].irq.reaped();
        self.obs.handler(self.now, c, v, reaped);
        if self.end_vector_handler(c) {
            return;
        }
        let ns = self.costs.eoi + self.costs.irq_exit;
        self.cpus[c].irq.enter(IrqPhase::Exit);
        self.step(c, ns, SliceKind::HardIrq);
    }

    // ---------------------------------------------------------------- BLOCK_SOFTIRQ

    /// blk_done_softirq takes the CPU's whole list (blk_complete_reqs): returns the step's
    /// CPU time, `kernel.complete_io_ns` per request.
    pub(crate) fn block_softirq(&mut self, c: usize) -> u64 {
        let list = self.cpus[c].soft.start_block();
        let ns: u64 = list
            .iter()
            .map(|&io| {
                self.queues[self.ios[io.ix()].queue().ix()]
                    .complete_ns()
                    .unwrap_or(0)
            })
            .sum();
        ns.max(1)
    }

    /// The BLOCK_SOFTIRQ step ended: each request completes (the event, the wake-up).
    /// Returns the wake-ups' cost, when there were any.
    pub(crate) fn block_softirq_done(&mut self, c: usize) -> Option<u64> {
        let mut list = self.cpus[c].soft.take_reaping();
        let mut woke = 0;
        for &io in &list {
            if self.complete_io(io, c) {
                woke += 1;
            }
        }
        list.clear();
        self.cpus[c].soft.restore_reaping(list);
        (woke > 0).then(|| {
            self.cpus[c].soft.enter(SoftPhase::BlockWakeups);
            woke * self.costs.wakeup
        })
    }
}

/// Every job's depth fits its virtio queue's tags and ring (three descriptors a request
/// without indirect descriptors: a fuller ring makes virtio_queue_rq stop the queue, which
/// the model does not do).
pub(crate) fn check_depths(jobs: &[Job], inp: &Inputs<'_>, m: &Machine) -> Result<(), SimError> {
    let mut depth = vec![0u64; m.queues.len()];
    for job in jobs {
        for &q in job.queues() {
            depth[q.ix()] += u64::from(job.iodepth());
        }
    }
    for (queue, &want) in m.queues.iter().zip(&depth) {
        if queue.virtio().is_none() {
            continue;
        }
        let room = u64::from(queue.depth()) - 1;
        if want > room {
            return Err(SimError::Config(format!(
                "{want} I/Os may be in flight on a virtqueue of {} that holds {room} (min of queue_depth and ring_size / descriptors per request): lower iodepth or numjobs, or raise devices.N.virtio.ring_size or set indirect = true",
                inp.names[queue.device().ix()]
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn disks_are_named_as_virtio_blk_names_them() {
        let names: Vec<String> = [0, 1, 25, 26, 27, 701, 702].map(disk_letters).to_vec();
        assert_eq!(names, ["a", "b", "z", "aa", "ab", "zz", "aaa"]);
    }
}
