//! virtio-blk's host side: the VMM thread of one device (`[devices.host]`) that sleeps
//! until a kick or a backend completion wakes it, passes over its avail rings (serving
//! each request itself, or handing it to the media with `servers > 1`), publishes the used
//! entries once per pass or per completion, decides about the interrupt with the ring's
//! event index, and writes the irqfd. After a pass it polls for `poll_ns`, then asks for
//! the next kick (`avail_event = next_avail`), looks once more and sleeps (Firecracker's
//! process_queue and pop_or_enable_notification; QEMU's virtio_blk_handle_vq and its
//! IOThread polling). The guest's side is model/virtio.rs.

use super::ids::{DeviceId, IoId, QueueId};
use super::state::*;
use crate::engine::Event;
use crate::guest::{Publish, VirtioHost};
use crate::observer::Observer;
use crate::rng::{ServiceTime, Stream};
use std::collections::VecDeque;

/// What the device's host thread is doing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum HostState {
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
    pub(crate) fn new(h: &VirtioHost, cv: f64) -> Host {
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

    /// The device's virtqueues `queues` join the ones it serves.
    pub(crate) fn serve(&mut self, queues: impl IntoIterator<Item = QueueId>) {
        self.queues.extend(queues);
    }

    /// Time to serve one request, drawn from the device's stream `rng`.
    pub(crate) fn service_ns(&self, rng: &mut Stream) -> u64 {
        self.service.draw(rng)
    }

    /// The device's hardware queues (blk-mq's nr_hw_queues: poll queues included).
    pub(crate) fn hw_queues(&self) -> usize {
        self.queues.len()
    }
}

impl<O: Observer> Sim<'_, O> {
    /// A request entered one of device `d`'s avail rings: a polling host thread sees it
    /// at once (a sleeping one needs the kick, a busy one finds it in its pass).
    pub(crate) fn host_sees_avail(&mut self, d: usize) {
        if self.devices[d]
            .host()
            .is_some_and(|h| h.state == HostState::Polling)
        {
            self.host_run(d);
        }
    }

    /// A kick reached device `d`'s host thread.
    pub(crate) fn host_kicked(&mut self, d: usize) {
        let h = self.devices[d].host_mut().expect("a virtio device");
        if h.state == HostState::Asleep {
            h.state = HostState::Waking;
            let at = self.now + h.wake_ns.max(1);
            self.host_event(d, at);
        }
    }

    fn host_event(&mut self, d: usize, at: u64) {
        let h = self.devices[d].host_mut().expect("a virtio device");
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
        let h = self.devices[d].host_mut().expect("a virtio device");
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
        let h = self.devices[d].host_mut().expect("a virtio device");
        if h.servers > 1 && h.at_backend >= h.servers {
            h.state = HostState::Full;
            return;
        }
        if let Some(io) = self.pop_avail(d) {
            let t = self.devices[d].host_service_ns();
            let h = self.devices[d].host_mut().expect("a virtio device");
            h.state = HostState::Serving { io };
            self.host_event(d, self.now + t.max(1));
            return;
        }
        // The rings are empty: the pass is over.
        self.end_pass(d);
        let h = self.devices[d].host_mut().expect("a virtio device");
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
        let n = self.devices[d].host().map_or(0, |h| h.queues.len());
        for k in 0..n {
            let h = self.devices[d].host_mut().expect("a virtio device");
            let q = h.queues[(h.next_q + k) % n].ix();
            let vq = self.queues[q].virtio_mut().expect("a virtio queue");
            if !vq.ring_mut().pop() {
                continue;
            }
            vq.ring_mut().disable_notification();
            let h = self.devices[d].host_mut().expect("a virtio device");
            h.next_q = (h.next_q + k + 1) % n;
            let sqe = self.queues[q]
                .fetch()
                .expect("the avail ring and the SQ hold the same requests");
            let io = self.queues[q]
                .request(sqe.command_id)
                .expect("an avail entry names a request in flight");
            return Some(io);
        }
        None
    }

    /// Asks every ring for a kick and looks again; true when all are still empty and the
    /// thread sleeps (false: a request slipped in, the pass goes on).
    fn arm_and_sleep(&mut self, d: usize) -> bool {
        let mut empty = true;
        let n = self.devices[d].host().map_or(0, |h| h.queues.len());
        for k in 0..n {
            let q = self.devices[d].host().expect("a virtio device").queues[k].ix();
            let vq = self.queues[q].virtio_mut().expect("a virtio queue");
            empty &= vq.ring_mut().enable_notification();
        }
        if empty {
            let h = self.devices[d].host_mut().expect("a virtio device");
            h.state = HostState::Asleep;
            // A stale poll or wake event must not run the thread again.
            h.epoch = h.epoch.wrapping_add(1);
        }
        empty
    }

    /// The host finished request `io` (served, or back from the backend): its used entry.
    fn served(&mut self, d: usize, io: IoId) {
        let q = self.ios[io.ix()].queue().ix();
        let vq = self.queues[q].virtio_mut().expect("a virtio queue");
        vq.add_used(io);
        let per_completion = self.devices[d]
            .host()
            .is_some_and(|h| h.publish == Publish::PerCompletionBatch);
        if per_completion && self.publish(q) {
            self.irqfd(q);
        }
    }

    /// The end of a pass: per_pass publishes every queue's used entries and decides.
    fn end_pass(&mut self, d: usize) {
        let h = self.devices[d].host().expect("a virtio device");
        if h.publish != Publish::PerPass {
            return;
        }
        for k in 0..h.queues.len() {
            let q = self.devices[d].host().expect("a virtio device").queues[k].ix();
            if self.publish(q) {
                self.irqfd(q);
            }
        }
    }

    /// Makes queue `q`'s used entries visible (`used->idx`, the guest's CQ) and returns the
    /// device's decision about an interrupt.
    fn publish(&mut self, q: usize) -> bool {
        let (ios, queue) = (&self.ios, &mut self.queues[q]);
        let vq = queue.virtio_mut().expect("a virtio queue");
        let Some((list, notify)) = vq.publish() else {
            return false;
        };
        // The used entries become the guest's CQEs (the list is lent while the CQ fills).
        for &io in &list {
            let posted = queue.post_cqe(ios[io.ix()].tag(), 0);
            debug_assert!(posted.is_ok(), "used ring overflow: the depth check failed");
        }
        self.totals.cqes_posted(list.len() as u64);
        queue.virtio_mut().expect("a virtio queue").published(list);
        if self.queues[q].has_spinners() {
            self.poke_spinners(q);
        }
        notify
    }

    /// The irqfd write: KVM injects the queue's vector into its vCPU `notify_ns` later.
    /// A poll queue has no vector.
    fn irqfd(&mut self, q: usize) {
        let Some(v) = self.queues[q].vector() else {
            return;
        };
        let v = v.ix();
        let d = self.queues[q].device().ix();
        let lat = self.devices[d].host().map_or(1, |h| h.notify_ns);
        self.vectors[v].count_message();
        self.obs.message(self.now, v);
        let (cpu, vec) = (self.vectors[v].cpu(), self.vectors[v].idt());
        self.q
            .push(self.now + lat.max(1), Event::Notify { cpu, vec });
    }

    /// The backend completed `io` (ServiceDone of a virtio device): the host thread
    /// processes it when it is free, woken if it sleeps.
    pub(crate) fn backend_done(&mut self, d: usize, io: IoId) {
        let h = self.devices[d].host_mut().expect("a virtio device");
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
        let h = self.devices[d].host_mut().expect("a virtio device");
        if h.done.is_empty() {
            return;
        }
        let publish = h.publish;
        let mut touched: Vec<usize> = Vec::new();
        let mut notify: Vec<usize> = Vec::new();
        while let Some(io) = self.devices[d].host_mut().and_then(|h| h.done.pop_front()) {
            let q = self.ios[io.ix()].queue().ix();
            let vq = self.queues[q].virtio_mut().expect("a virtio queue");
            vq.add_used(io);
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
}
