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
//! Host side (`[devices.host]`). One host thread per device sleeps until a kick (or a
//! backend completion) wakes it (`wake_ns`), then passes over its avail rings: with
//! `servers = 1` it serves each request itself (`service_ns`, Firecracker's Sync engine),
//! with more it spends `service_ns` to hand each to the device's media servers, at most
//! `servers` at once. It publishes used entries once per pass (`per_pass`) or as each
//! completes (`per_completion_batch`), and decides about the interrupt there. When a pass
//! finds the rings empty it polls them for `poll_ns`, then asks for the next kick
//! (`avail_event = next_avail`), looks once more, and sleeps.

use super::build::{Inputs, Machine, VectorSpec, add_vector};
use super::ids::{DeviceId, IoId, JobId, QueueId};
use super::state::*;
use crate::SimError;
use crate::engine::Event;
use crate::guest::{Publish, VirtioHost};
use crate::observer::{Observer, SliceKind};
use crate::platform::{DeviceGroup, DeviceKind, Platform};
use crate::rng::ServiceTime;
use irqlab_core::nvme::{MsiRule, QueuePair};
use irqlab_core::softirq::SoftirqVec;
use irqlab_core::virtio::SplitRing;
use irqlab_core::{DeviceCoalescing, HandlerStyle, ModeratorKind, Policy};
use std::collections::VecDeque;

/// One virtqueue: its ring's indices and what the host has not made visible yet. The
/// requests themselves sit in the queue's `QueuePair`: its SQ is the avail ring in order,
/// its CQ the used entries published to the guest.
pub(crate) struct Vq {
    pub ring: SplitRing,
    /// Served and written to the used ring, `used->idx` not yet moved (per_pass).
    unpublished: Vec<IoId>,
    /// Submitters whose batch asked for a kick: (job, the batch's submit time).
    kicking: Vec<(JobId, u64)>,
}

/// What the device's host thread is doing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum HostState {
    /// Asleep in epoll, kicks asked for.
    Asleep,
    /// A kick or a completion woke it; it runs `wake_ns` later.
    Waking,
    /// Serving `io` (servers = 1) or handing it to the backend (servers > 1).
    Serving { io: IoId },
    /// Polling the rings with kicks off until the event of its epoch.
    Polling,
    /// Every backend slot is taken: it waits for a completion (no kick needed).
    Full,
}

/// The VMM side of one virtio-blk device.
pub(crate) struct Host {
    servers: u32,
    service: ServiceTime,
    publish: Publish,
    wake_ns: u64,
    poll_ns: u64,
    notify_ns: u64,
    state: HostState,
    epoch: u32,
    /// The device's virtqueues, interrupt-driven and polled, served round robin.
    queues: Vec<QueueId>,
    next_q: usize,
    /// Requests at the backend (servers > 1), and those it completed that the thread
    /// has not processed yet.
    at_backend: u32,
    done: VecDeque<IoId>,
}

impl Host {
    fn new(h: &VirtioHost, cv: f64) -> Host {
        Host {
            servers: h.servers,
            service: ServiceTime::new(h.service_ns, cv),
            publish: h.publish,
            wake_ns: h.wake_ns,
            poll_ns: h.poll_ns,
            notify_ns: h.notify_ns,
            state: HostState::Asleep,
            epoch: 0,
            queues: Vec::new(),
            next_q: 0,
            at_backend: 0,
            done: VecDeque::new(),
        }
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
        m.queues.push(Queue {
            doorbell: false,
            complete_ns: Some(p.kernel.complete_io_ns),
            shared: cpus_here > 1,
            virtio: Some(Box::new(Vq {
                ring,
                unpublished: Vec::new(),
                kicking: Vec::new(),
            })),
            ..Queue::new(
                DeviceId::new(d),
                vector,
                qp,
                g.completion_ns.unwrap_or(inp.costs.cqe),
            )
        });
    }
    let host = m.devices[d]
        .virtio
        .get_or_insert_with(|| Box::new(Host::new(h, g.service_cv)));
    host.queues
        .extend((first_q..first_q + nq).map(QueueId::new));
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
        let q = self.jobs[j].queues[0].ix();
        if self.queues[q].virtio.is_some() {
            0
        } else {
            self.costs.sq_doorbell
        }
    }

    /// virtio_queue_rq: request `io` of job `j` enters queue `q`'s avail ring; on
    /// `bd->last`, virtqueue_kick_prepare decides whether the submitter kicks.
    pub(crate) fn virtio_queue_rq(&mut self, j: usize, q: usize, last: bool) {
        let now = self.now;
        let vq = self.queues[q].virtio.as_mut().expect("a virtio queue");
        vq.ring.add();
        if last && vq.ring.kick_prepare() {
            vq.kicking.push((JobId::new(j), now));
        }
        // A polling host sees the new entry at once.
        let d = self.queues[q].device.ix();
        if self.devices[d]
            .virtio
            .as_ref()
            .is_some_and(|h| h.state == HostState::Polling)
        {
            self.host_run(d);
        }
    }

    /// After the submit call's adds: the kick's exit the submitter pays, if its batch
    /// asked for one.
    pub(crate) fn kick_step(&mut self, j: usize) -> Option<u64> {
        let job = JobId::new(j);
        let asked = self.jobs[j].queues.iter().any(|&q| {
            self.queues[q.ix()]
                .virtio
                .as_ref()
                .is_some_and(|vq| vq.kicking.iter().any(|&(k, _)| k == job))
        });
        asked.then_some(self.costs.kick.max(1))
    }

    /// The kick's exit is over: the hypervisor signalled the host thread's ioeventfd, and
    /// the submit call returns (fio's slat of the batch ends here).
    pub(crate) fn kick_done(&mut self, j: usize) {
        let now = self.now;
        let job = JobId::new(j);
        for i in 0..self.jobs[j].queues.len() {
            let q = self.jobs[j].queues[i].ix();
            let Some(vq) = self.queues[q].virtio.as_mut() else {
                continue;
            };
            let Some(pos) = vq.kicking.iter().position(|&(k, _)| k == job) else {
                continue;
            };
            let (_, at) = vq.kicking.swap_remove(pos);
            for t in 0..self.queues[q].tags.len() {
                if let Some(io) = self.queues[q].tags[t] {
                    let rec = &mut self.ios[io.ix()];
                    if rec.job == job && rec.submitted == at {
                        rec.submitted = now;
                    }
                }
            }
            let d = self.queues[q].device.ix();
            self.host_kicked(d);
        }
    }

    // ---------------------------------------------------------------- host thread

    /// A kick reached device `d`'s host thread.
    fn host_kicked(&mut self, d: usize) {
        let h = self.devices[d].virtio.as_mut().expect("a virtio device");
        if h.state == HostState::Asleep {
            h.state = HostState::Waking;
            let at = self.now + h.wake_ns.max(1);
            self.host_event(d, at);
        }
    }

    fn host_event(&mut self, d: usize, at: u64) {
        let h = self.devices[d].virtio.as_mut().expect("a virtio device");
        h.epoch = h.epoch.wrapping_add(1);
        let epoch = h.epoch;
        self.q.push(
            at,
            Event::VirtioHost {
                device: DeviceId::new(d),
                epoch,
            },
        );
    }

    /// The host thread's step of `epoch` ended (a stale one was replaced).
    pub(crate) fn host_step(&mut self, d: usize, epoch: u32) {
        let h = self.devices[d].virtio.as_mut().expect("a virtio device");
        if h.epoch != epoch {
            return;
        }
        match h.state {
            HostState::Serving { io } => {
                if h.servers > 1 {
                    // Handed to the backend: the media serve it, ServiceDone returns it.
                    h.at_backend += 1;
                    self.media_take(d, io);
                } else {
                    self.served(d, io);
                }
            }
            HostState::Polling => {
                // The poll window ran out: ask for a kick, look once more, sleep.
                if self.arm_and_sleep(d) {
                    return;
                }
            }
            HostState::Waking | HostState::Asleep | HostState::Full => {}
        }
        self.host_run(d);
    }

    /// The host thread is free: process backend completions, then serve the next avail
    /// request, or end the pass.
    fn host_run(&mut self, d: usize) {
        self.backend_batch(d);
        let h = self.devices[d].virtio.as_mut().expect("a virtio device");
        if h.servers > 1 && h.at_backend >= h.servers {
            h.state = HostState::Full;
            return;
        }
        if let Some(io) = self.pop_avail(d) {
            let dev = &mut self.devices[d];
            let h = dev.virtio.as_mut().expect("a virtio device");
            let t = h.service.draw(&mut dev.rng);
            h.state = HostState::Serving { io };
            self.host_event(d, self.now + t.max(1));
            return;
        }
        // The rings are empty: the pass is over.
        self.end_pass(d);
        let h = self.devices[d].virtio.as_mut().expect("a virtio device");
        match h.state {
            // Still inside its poll window: the window's end is due.
            HostState::Polling => {}
            _ if h.poll_ns > 0 => {
                h.state = HostState::Polling;
                let at = self.now + h.poll_ns;
                self.host_event(d, at);
            }
            _ => {
                if !self.arm_and_sleep(d) {
                    self.host_run(d);
                }
            }
        }
    }

    /// The next avail request of the device's queues, round robin (the request the SQ
    /// holds at the ring's slot). Kicks stop while the thread works.
    fn pop_avail(&mut self, d: usize) -> Option<IoId> {
        let n = self.devices[d]
            .virtio
            .as_ref()
            .map_or(0, |h| h.queues.len());
        for k in 0..n {
            let h = self.devices[d].virtio.as_mut().expect("a virtio device");
            let q = h.queues[(h.next_q + k) % n].ix();
            let vq = self.queues[q].virtio.as_mut().expect("a virtio queue");
            if !vq.ring.pop() {
                continue;
            }
            vq.ring.disable_notification();
            let h = self.devices[d].virtio.as_mut().expect("a virtio device");
            h.next_q = (h.next_q + k + 1) % n;
            let sqe = self.queues[q]
                .qp
                .fetch()
                .expect("the avail ring and the SQ hold the same requests");
            let io = self.queues[q].tags[sqe.command_id as usize]
                .expect("an avail entry names a request in flight");
            return Some(io);
        }
        None
    }

    /// Asks every ring for a kick and looks again; true when all are still empty and the
    /// thread sleeps (false: a request slipped in, the pass goes on).
    fn arm_and_sleep(&mut self, d: usize) -> bool {
        let mut empty = true;
        let n = self.devices[d]
            .virtio
            .as_ref()
            .map_or(0, |h| h.queues.len());
        for k in 0..n {
            let q = self.devices[d]
                .virtio
                .as_ref()
                .expect("a virtio device")
                .queues[k]
                .ix();
            let vq = self.queues[q].virtio.as_mut().expect("a virtio queue");
            empty &= vq.ring.enable_notification();
        }
        if empty {
            let h = self.devices[d].virtio.as_mut().expect("a virtio device");
            h.state = HostState::Asleep;
            // A stale poll or wake event must not run the thread again.
            h.epoch = h.epoch.wrapping_add(1);
        }
        empty
    }

    /// The host finished request `io` (served, or back from the backend): its used entry.
    fn served(&mut self, d: usize, io: IoId) {
        let q = self.ios[io.ix()].queue.ix();
        let vq = self.queues[q].virtio.as_mut().expect("a virtio queue");
        vq.ring.add_used();
        vq.unpublished.push(io);
        let per_completion = self.devices[d]
            .virtio
            .as_ref()
            .is_some_and(|h| h.publish == Publish::PerCompletionBatch);
        if per_completion && self.publish(q) {
            self.irqfd(q);
        }
    }

    /// The end of a pass: per_pass publishes every queue's used entries and decides.
    fn end_pass(&mut self, d: usize) {
        let h = self.devices[d].virtio.as_ref().expect("a virtio device");
        if h.publish != Publish::PerPass {
            return;
        }
        for k in 0..h.queues.len() {
            let q = self.devices[d]
                .virtio
                .as_ref()
                .expect("a virtio device")
                .queues[k]
                .ix();
            if self.publish(q) {
                self.irqfd(q);
            }
        }
    }

    /// Makes queue `q`'s used entries visible (`used->idx`, the guest's CQ) and returns the
    /// device's decision about an interrupt.
    fn publish(&mut self, q: usize) -> bool {
        let (ios, queue) = (&self.ios, &mut self.queues[q]);
        let vq = queue.virtio.as_mut().expect("a virtio queue");
        if vq.unpublished.is_empty() {
            return false;
        }
        vq.ring.publish();
        let notify = vq.ring.should_notify();
        for &io in &vq.unpublished {
            let posted = queue.qp.complete(ios[io.ix()].tag, 0, 0);
            debug_assert!(posted.is_ok(), "used ring overflow: the depth check failed");
        }
        self.totals.cqes_posted += vq.unpublished.len() as u64;
        vq.unpublished.clear();
        if !self.queues[q].spinners.is_empty() {
            self.poke_spinners(q);
        }
        notify
    }

    /// The irqfd write: KVM injects the queue's vector into its vCPU `notify_ns` later.
    /// A poll queue has no vector.
    fn irqfd(&mut self, q: usize) {
        let Some(v) = self.queues[q].vector else {
            return;
        };
        let v = v.ix();
        let d = self.queues[q].device.ix();
        let lat = self.devices[d].virtio.as_ref().map_or(1, |h| h.notify_ns);
        self.vectors[v].messages += 1;
        self.obs.message(self.now, v);
        let (cpu, vec) = (self.vectors[v].cpu, self.vectors[v].idt);
        self.q
            .push(self.now + lat.max(1), Event::Notify { cpu, vec });
    }

    /// The backend completed `io` (ServiceDone of a virtio device): the host thread
    /// processes it when it is free, woken if it sleeps.
    pub(crate) fn backend_done(&mut self, d: usize, io: IoId) {
        let h = self.devices[d].virtio.as_mut().expect("a virtio device");
        h.at_backend -= 1;
        h.done.push_back(io);
        match h.state {
            HostState::Asleep | HostState::Full => {
                h.state = HostState::Waking;
                let at = self.now + h.wake_ns.max(1);
                self.host_event(d, at);
            }
            // The polling thread sees the completion at once.
            HostState::Polling => self.host_run(d),
            HostState::Waking | HostState::Serving { .. } => {}
        }
    }

    /// Every backend completion waiting: its used entry, then (per_pass) one publish and
    /// one decision per queue for the batch; per_completion_batch published each and
    /// writes the irqfd once per queue.
    fn backend_batch(&mut self, d: usize) {
        let h = self.devices[d].virtio.as_mut().expect("a virtio device");
        if h.done.is_empty() {
            return;
        }
        let publish = h.publish;
        let mut touched: Vec<usize> = Vec::new();
        let mut notify: Vec<usize> = Vec::new();
        while let Some(io) = self.devices[d]
            .virtio
            .as_mut()
            .and_then(|h| h.done.pop_front())
        {
            let q = self.ios[io.ix()].queue.ix();
            let vq = self.queues[q].virtio.as_mut().expect("a virtio queue");
            vq.ring.add_used();
            vq.unpublished.push(io);
            if !touched.contains(&q) {
                touched.push(q);
            }
            if publish == Publish::PerCompletionBatch && self.publish(q) && !notify.contains(&q) {
                notify.push(q);
            }
        }
        if publish == Publish::PerPass {
            for &q in &touched {
                if self.publish(q) {
                    notify.push(q);
                }
            }
        }
        for q in notify {
            self.irqfd(q);
        }
    }

    // ---------------------------------------------------------------- guest: interrupt

    /// vring_interrupt then virtblk_done on CPU `c` for vector `v`: IRQ_NONE when nothing
    /// was used, otherwise disable callbacks and drain.
    pub(crate) fn virtblk_done(&mut self, c: usize, v: usize) {
        let q = self.vectors[v].queue.ix();
        let vq = self.queues[q].virtio.as_mut().expect("a virtio queue");
        if !vq.ring.interrupt() {
            self.virtio_handler_returned(c, v);
            return;
        }
        vq.ring.disable_cb();
        // virtblk_done holds the virtqueue's lock (spin_lock_irqsave) while it drains.
        self.queues[q].cq_locked = true;
        self.virtio_drain(c);
    }

    /// virtblk_done's loop: take every used entry (`virtqueue_get_buf`), in a step; when
    /// none is left, `virtqueue_enable_cb`, and drain again if entries arrived.
    pub(crate) fn virtio_drain(&mut self, c: usize) {
        let v = self.cpus[c].irq.running_vector();
        let q = self.vectors[v].queue.ix();
        loop {
            let vq = self.queues[q].virtio.as_mut().expect("a virtio queue");
            if vq.ring.more_used() {
                let mut list = std::mem::take(&mut self.cpus[c].reaping);
                let n = self.poll_queue(q, u32::MAX, &mut list);
                let vq = self.queues[q].virtio.as_mut().expect("a virtio queue");
                for _ in 0..n {
                    let took = vq.ring.get_buf();
                    debug_assert!(took, "the CQ and the used ring agree");
                }
                self.cpus[c].reaping = list;
                self.cpus[c].irq.reaped += n;
                if self.measuring {
                    self.vectors[v].completions += u64::from(n);
                }
                let inline = self.single_hw_queue(q).is_none_or(|one| !one);
                let per = self.queues[q].cqe_ns
                    + if inline {
                        self.queues[q].complete_ns.unwrap_or(0)
                    } else {
                        0
                    };
                self.cpus[c].irq.phase = IrqPhase::VirtioDrain;
                self.step(c, (u64::from(n) * per).max(1), SliceKind::HardIrq);
                return;
            }
            if self.queues[q]
                .virtio
                .as_mut()
                .expect("a virtio queue")
                .ring
                .enable_cb()
            {
                break;
            }
            // Entries arrived between the last get_buf and enable_cb: disable, again.
            self.queues[q]
                .virtio
                .as_mut()
                .expect("a virtio queue")
                .ring
                .disable_cb();
        }
        self.queues[q].cq_locked = false;
        self.virtio_handler_returned(c, v);
    }

    /// A drain step ended: blk_mq_complete_request for each request taken. With one
    /// hardware queue they wait for BLOCK_SOFTIRQ on this CPU; otherwise they complete
    /// here (the wake-ups' cost follows), then the drain goes on.
    pub(crate) fn virtio_drained(&mut self, c: usize) {
        let v = self.cpus[c].irq.running_vector();
        let q = self.vectors[v].queue.ix();
        if self.single_hw_queue(q) == Some(true) {
            let cpu = &mut self.cpus[c];
            cpu.blk_done.append(&mut cpu.reaping);
            cpu.softirq.raise(SoftirqVec::Block);
            self.virtio_drain(c);
            return;
        }
        let mut list = std::mem::take(&mut self.cpus[c].reaping);
        let mut woke = 0;
        for &io in &list {
            if self.complete_io(io, c) {
                woke += 1;
            }
        }
        list.clear();
        self.cpus[c].reaping = list;
        if woke > 0 {
            self.cpus[c].irq.after_wakeups = IrqPhase::VirtioDrain;
            self.cpus[c].irq.phase = IrqPhase::Wakeups;
            self.step(c, woke * self.costs.wakeup, SliceKind::HardIrq);
        } else {
            self.virtio_drain(c);
        }
    }

    /// Whether queue `q`'s device has one hardware queue (blk_mq_complete_request_remote
    /// raises BLOCK_SOFTIRQ then); None for a queue that is not virtio.
    fn single_hw_queue(&self, q: usize) -> Option<bool> {
        let d = self.queues[q].device.ix();
        let h = self.devices[d].virtio.as_ref()?;
        Some(h.queues.len() == 1)
    }

    /// virtblk_done returned: the tracer's handler event, then EOI and irq_exit.
    fn virtio_handler_returned(&mut self, c: usize, v: usize) {
        let reaped = self.cpus[c].irq.reaped;
        self.obs.handler(self.now, c, v, reaped);
        let ns = self.costs.eoi + self.costs.irq_exit;
        self.cpus[c].irq.phase = IrqPhase::Exit;
        self.step(c, ns, SliceKind::HardIrq);
    }

    // ---------------------------------------------------------------- BLOCK_SOFTIRQ

    /// blk_done_softirq takes the CPU's whole list (blk_complete_reqs): returns the step's
    /// CPU time, `kernel.complete_io_ns` per request.
    pub(crate) fn block_softirq(&mut self, c: usize) -> u64 {
        let cpu = &mut self.cpus[c];
        std::mem::swap(&mut cpu.soft_reaping, &mut cpu.blk_done);
        cpu.soft_phase = SoftPhase::Block;
        let list = &self.cpus[c].soft_reaping;
        let ns: u64 = list
            .iter()
            .map(|&io| {
                self.queues[self.ios[io.ix()].queue.ix()]
                    .complete_ns
                    .unwrap_or(0)
            })
            .sum();
        ns.max(1)
    }

    /// The BLOCK_SOFTIRQ step ended: each request completes (the event, the wake-up).
    /// Returns the wake-ups' cost, when there were any.
    pub(crate) fn block_softirq_done(&mut self, c: usize) -> Option<u64> {
        let mut list = std::mem::take(&mut self.cpus[c].soft_reaping);
        let mut woke = 0;
        for &io in &list {
            if self.complete_io(io, c) {
                woke += 1;
            }
        }
        list.clear();
        self.cpus[c].soft_reaping = list;
        (woke > 0).then(|| {
            self.cpus[c].soft_phase = SoftPhase::BlockWakeups;
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
        for &q in &job.queues {
            depth[q.ix()] += u64::from(job.iodepth);
        }
    }
    for (queue, &want) in m.queues.iter().zip(&depth) {
        if queue.virtio.is_none() {
            continue;
        }
        let room = u64::from(queue.qp.sq.q_depth()) - 1;
        if want > room {
            return Err(SimError::Config(format!(
                "{want} I/Os may be in flight on a virtqueue of {} that holds {room} (min of queue_depth and ring_size / descriptors per request): lower iodepth or numjobs, or raise devices.N.virtio.ring_size or set indirect = true",
                inp.names[queue.device.ix()]
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
