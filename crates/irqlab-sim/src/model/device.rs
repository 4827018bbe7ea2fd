//! The device side as the simulator applies it: what the controller (model/controller:
//! SQ fetch, media units, held writes) answers becomes events, port writes and I/O
//! state here; each vector's interrupt policy (core `DeviceIrq` coalescing and the
//! `VectorGate` rule of one outstanding message until the CQ head doorbell); the root
//! port's ordered FIFO of posted writes (model/fabric). model/delivery.rs takes each MSI
//! through the port's IIO stack.

use super::controller::{Held, Service};
use super::fabric::PortItem;
use super::ids::{DeviceId, IoId, PortId, QueueId, VectorId};
use super::state::*;
use crate::engine::Event;
use crate::observer::Observer;
use irqlab_core::nvme::{Hint, MsixAction};

impl<O: Observer> Sim<'_, O> {
    /// The controller fetched `count` SQEs of queue `q`.
    #[inline(always)]
    pub(crate) fn sq_fetched(&mut self, q: usize, count: u32) {
        let d = self.queues[q].device().ix();
        for _ in 0..count {
            let Some(sqe) = self.queues[q].fetch() else {
                break;
            };
            let io = self.queues[q]
                .request(sqe.command_id)
                .expect("a fetched SQE's command id names its request");
            self.media_take(d, io);
        }
    }

    /// A fetched command goes to the media (model/controller/media.rs); an NVMe over
    /// RDMA capsule goes to its target instead.
    pub(crate) fn media_take(&mut self, d: usize, io: IoId) {
        let q = self.ios[io.ix()].queue().ix();
        if self.queues[q].is_rdma() {
            // RDMA: the capsule's SEND reached the responder, whose NIC acknowledges it;
            // the acknowledgement crosses back (as long as the capsule took) and the host
            // NIC writes the SEND's work completion. The request waits for it and its RECV.
            let tag = self.ios[io.ix()].tag();
            self.queues[q].await_send_and_recv(tag);
            let at = self.now + self.devices[d].fetch_ns().max(1);
            self.q.push(
                at,
                Event::SendWc {
                    queue: QueueId::new(q),
                    tag,
                },
            );
        }
        if let Some(tq) = self.queues[q].target() {
            // NVMe over RDMA: the command capsule reached the target's CPUs.
            self.target_receive(tq.ix(), io);
            return;
        }
        let cmd = self.ios[io.ix()].cmd();
        let s = self.devices[d].take(io, cmd);
        self.start_service(s);
    }

    /// What the media did with a command: record its unit, and when a unit serves it
    /// now, its service's end.
    #[inline(always)]
    fn start_service(&mut self, s: Service) {
        if let Some(unit) = s.slot {
            self.ios[s.io.ix()].assign_unit(unit);
        }
        if let Some(ns) = s.ns {
            self.q.push(self.now + ns, Event::ServiceDone { io: s.io });
        }
    }

    /// Media service of `io` ended: the unit takes its next command, and the completion
    /// (data, CQE, then the message decision) goes out if the port has credits; otherwise
    /// the device holds it, in order, until credits return.
    #[inline(always)]
    pub(crate) fn service_done(&mut self, io: IoId) {
        let rec = &self.ios[io.ix()];
        let (queue, unit) = (rec.queue(), rec.unit());
        let d = self.queues[queue.ix()].device().ix();
        if let Some(next) = self.devices[d].finish(unit) {
            self.start_service(next);
        }
        if self.costs.has_virtio && self.devices[d].is_virtio() {
            // A virtio-blk backend's read: its host thread takes the completion.
            self.backend_done(d, io);
            return;
        }
        self.deliver_completion(io);
    }

    /// The device has `io`'s completion: data, CQE, then the message decision go out if
    /// the port has credits; otherwise the device holds it, in order, until they return.
    #[inline(always)]
    pub(crate) fn deliver_completion(&mut self, io: IoId) {
        let q = self.ios[io.ix()].queue().ix();
        let d = self.queues[q].device().ix();
        let dev = &self.devices[d];
        let port = dev.port().ix();
        let credits = self.completion_credits(io);
        if dev.holds_nothing() && self.fabric.port(port).has_room(credits) {
            self.emit_completion(io, credits);
        } else if self.devices[d].hold_completion(io) {
            self.fabric.port_mut(port).block(DeviceId::new(d));
        }
    }

    /// The device writes `io`'s data and CQE (holding `credits`) into the root port, then
    /// decides about the vector's message.
    #[inline(always)]
    fn emit_completion(&mut self, io: IoId, credits: u32) {
        let rec = &self.ios[io.ix()];
        let (queue, hints) = (rec.queue(), rec.hints());
        let q = queue.ix();
        let d = self.queues[q].device().ix();
        self.queues[q].cqe_sent();
        let port = self.devices[d].port().ix();
        self.port_push(port, PortItem::Completion { io, credits });
        let Some(v) = self.queues[q].vector() else {
            return;
        };
        let v = v.ix();
        let (now, unacked) = (self.now, self.unacked(q));
        let measuring = self.measuring;
        let a =
            self.vectors[v].post_completion(now, Hint::from_sqe_hints(hints), unacked, measuring);
        self.carry_out(v, a);
    }

    /// A SEND's work completion is due on queue `q` for command id `tag`: on a target
    /// queue the target NIC writes it into the target's CQ; on a host queue the host NIC
    /// writes its CQE through the root port. Either way the CQ's interrupt rule decides.
    pub(crate) fn send_wc(&mut self, q: usize, tag: u16) {
        let now = self.now;
        if self.queues[q].is_target() {
            let posted = self.queues[q].post_cqe(tag, WC_SEND);
            debug_assert!(posted.is_ok(), "target CQ overflow");
            let Some(v) = self.queues[q].vector() else {
                return;
            };
            let (v, unacked) = (v.ix(), self.unacked(q));
            let measuring = self.measuring;
            let a = self.vectors[v].post_completion_ignoring_mask(
                now,
                Hint::default(),
                unacked,
                measuring,
            );
            self.carry_out(v, a);
            return;
        }
        self.queues[q].cqe_sent();
        let d = self.queues[q].device().ix();
        let port = self.devices[d].port().ix();
        self.port_push(
            port,
            PortItem::SendWc {
                queue: QueueId::new(q),
                tag,
            },
        );
        let Some(v) = self.queues[q].vector() else {
            return;
        };
        let (v, unacked) = (v.ix(), self.unacked(q));
        let measuring = self.measuring;
        let a = self.vectors[v].post_completion(now, Hint::default(), unacked, measuring);
        self.carry_out(v, a);
    }

    /// What the vector's MSI-X state decided (and counted, model/vector.rs): a message,
    /// its coalescing timer, or nothing.
    #[inline(always)]
    pub(crate) fn carry_out(&mut self, v: usize, a: MsixAction) {
        match a {
            MsixAction::SendMsi => self.send_msi(v),
            MsixAction::ArmTimer { deadline_ns, epoch } => self.q.push(
                deadline_ns,
                Event::CoalesceTimer {
                    vector: VectorId::new(v),
                    epoch,
                },
            ),
            MsixAction::Quiet(_) => {}
        }
    }

    /// CQEs the host has not acknowledged with a head doorbell: in the CQ or on their
    /// way through the root port.
    #[inline]
    pub(crate) fn unacked(&self, q: usize) -> u32 {
        self.queues[q].unacked()
    }

    /// The aggregation time of a vector ran out (a stale expiry does nothing).
    pub(crate) fn coalesce_timer(&mut self, v: usize, epoch: u32) {
        let unacked = self.unacked(self.vectors[v].queue().ix());
        let a = self.vectors[v].timer_expired(self.now, epoch, unacked);
        self.carry_out(v, a);
    }

    fn send_msi(&mut self, v: usize) {
        let q = self.vectors[v].queue().ix();
        if let Some(lat) = self.queues[q].local_irq_ns() {
            // A CQ on the target machine: its NIC's MSI-X reaches the target CPU directly.
            self.vectors[v].count_message();
            self.obs.message(self.now, v);
            let (cpu, vec) = (self.vectors[v].cpu(), self.vectors[v].idt());
            self.q
                .push(self.now + lat.max(1), Event::Notify { cpu, vec });
            return;
        }
        let (d, vector) = (self.queues[q].device().ix(), VectorId::new(v));
        if self.devices[d].holds_msi(vector) {
            // MSI-X keeps one pending message per vector: a message the device could not
            // write yet already covers this completion.
            self.vectors[v].count_merged();
            return;
        }
        self.vectors[v].count_message();
        self.obs.message(self.now, v);
        let port = self.devices[d].port().ix();
        // The MSI follows the CQEs already written and goes ahead of completions the
        // device still holds; without a credit it waits in the device too.
        if self.devices[d].holds_no_msi() && self.fabric.port(port).has_room(1) {
            self.port_push(port, PortItem::Msi { vector });
        } else if self.devices[d].hold_msi(vector) {
            self.fabric.port_mut(port).block(DeviceId::new(d));
        }
    }

    /// The CQ head doorbell reached the controller: the vector's message is serviced;
    /// entries still unacknowledged (in the CQ or on their way) raise a new one.
    pub(crate) fn cq_doorbell_arrives(&mut self, q: usize) {
        let Some(v) = self.queues[q].vector() else {
            return;
        };
        let v = v.ix();
        // Masked, the doorbell still acknowledges the message; a raise it owes waits in
        // the MSI-X pending bit until enable_irq.
        let unacked = self.unacked(q);
        let a = self.vectors[v].cq_head_doorbell(unacked);
        self.carry_out(v, a);
    }

    /// One interrupt or poll round of vector `v` reaped `n` CQEs: feed its moderator
    /// (net_dim from the NAPI-like poll, rdma_dim from ib_poll_handler).
    pub(crate) fn moderate(&mut self, v: usize, n: u32) {
        if self.vectors[v].feed_moderator(self.now, n) {
            // schedule_work(&dim->work): the work item goes to this CPU's kworker pool
            // (the handler runs on the vector's CPU), and its kworker is woken.
            let c = self.vectors[v].cpu().ix();
            if let Some(t) = self.cpus[c].wq.schedule(VectorId::new(v))
                && self.threads[t.ix()].state() == TState::Blocked
            {
                self.wake_thread(t.ix(), Some(c));
            }
        }
    }

    /// The moderator's work item programs the level it chose, then acknowledges.
    pub(crate) fn moderator_program(&mut self, v: usize) {
        let now = self.now;
        let unacked = self.unacked(self.vectors[v].queue().ix());
        let Some((level, a)) = self.vectors[v].program_moderation(now, unacked) else {
            return;
        };
        self.obs.counter(now, "moderation_level", v, level as f64);
        self.carry_out(v, a);
    }

    // ---------------------------------------------------------------- root port

    /// Posted header credits `io`'s completion holds in its port (model/fabric/port.rs):
    /// one when it carries no data.
    #[inline(always)]
    fn completion_credits(&self, io: IoId) -> u32 {
        let rec = &self.ios[io.ix()];
        let dev = &self.devices[self.queues[rec.queue().ix()].device().ix()];
        if !dev.carries_data(rec.read()) {
            return 1;
        }
        self.fabric.port(dev.port().ix()).data_credits(rec.bytes())
    }

    /// Credits came back: blocked devices write what they hold, one write each in turn,
    /// until a write does not fit.
    fn serve_blocked(&mut self, p: usize) {
        while let Some(d) = self.fabric.port(p).first_blocked() {
            let d = d.ix();
            let sent = match self.devices[d].held() {
                Some(Held::Msi(vector)) => {
                    self.fabric.port(p).has_room(1) && {
                        self.devices[d].release_held();
                        self.port_push(p, PortItem::Msi { vector });
                        true
                    }
                }
                Some(Held::Completion(io)) => {
                    let credits = self.completion_credits(io);
                    self.fabric.port(p).has_room(credits) && {
                        self.devices[d].release_held();
                        self.emit_completion(io, credits);
                        true
                    }
                }
                None => true,
            };
            if !sent {
                break;
            }
            // emit_completion may have queued an MSI for this device: keep its turn order.
            self.fabric.port_mut(p).unblock_first();
            if self.devices[d].turn_over() {
                self.fabric.port_mut(p).block(DeviceId::new(d));
            }
        }
    }

    fn port_push(&mut self, p: usize, item: PortItem) {
        if self.fabric.port_mut(p).accept(item) {
            self.port_start(p);
        }
    }

    /// The write at the head of the FIFO starts. An MSI costs the FIFO only its own write;
    /// the port's IIO stack then handles it (model/delivery.rs), one MSI of its ports at a
    /// time, so an MSI that finds the stack busy waits at the head, and the FIFO with it.
    pub(crate) fn port_start(&mut self, p: usize) {
        let Some(item) = self.fabric.port(p).head() else {
            return;
        };
        let dur = match item {
            PortItem::Completion { io, .. } => self.completion_write_ns(p, io),
            PortItem::SendWc { queue, .. } => {
                let d = self.queues[queue.ix()].device().ix();
                self.fabric
                    .port(p)
                    .cqe_write_ns(self.devices[d].cqe_bytes())
            }
            PortItem::Msi { vector } => {
                if !self.stack_take(p, vector.ix()) {
                    self.fabric.port_mut(p).stall(self.now);
                    return;
                }
                self.fabric.port(p).msi_ns()
            }
        };
        let window = self.measuring.then_some(self.window_start);
        let at = self.fabric.port_mut(p).start_write(self.now, dur, window);
        self.q.push(
            at,
            Event::PortDone {
                port: PortId::new(p),
            },
        );
    }

    /// Port time of one completion: its data (reads, or DSA fills) and its CQE.
    fn completion_write_ns(&mut self, p: usize, io: IoId) -> u64 {
        let rec = &self.ios[io.ix()];
        let d = self.queues[rec.queue().ix()].device().ix();
        let dev = &self.devices[d];
        let data = dev.carries_data(rec.read());
        let (bytes, cqe) = (rec.bytes(), dev.cqe_bytes());
        self.fabric
            .port_mut(p)
            .completion_write_ns(d, data, bytes, cqe)
    }

    /// The write at port `p`'s FIFO head departed: a CQE landed in its CQ (an MSI went on
    /// in its stack); credits returned to the devices waiting, and the next write starts.
    #[inline(always)]
    pub(crate) fn port_done(&mut self, p: usize) {
        match self.fabric.port_mut(p).write_done() {
            Some(PortItem::Completion { io, .. }) => {
                let rec = &self.ios[io.ix()];
                let (queue, tag) = (rec.queue(), rec.tag());
                let q = queue.ix();
                // The CQE lands in host memory with the current phase tag.
                let posted = self.queues[q].cqe_landed(tag, 0);
                debug_assert!(posted.is_ok(), "CQ overflow: the depth check failed");
                self.totals.cqes_posted(1);
                if self.queues[q].has_spinners() {
                    self.poke_spinners(q);
                }
            }
            Some(PortItem::SendWc { queue, tag }) => {
                let q = queue.ix();
                let posted = self.queues[q].cqe_landed(tag, WC_SEND);
                debug_assert!(posted.is_ok(), "RDMA CQ overflow");
                self.totals.cqes_posted(1);
            }
            Some(PortItem::Msi { .. }) => {}
            None => {}
        }
        if self.fabric.port(p).has_blocked() {
            self.serve_blocked(p);
        }
        if self.fabric.port(p).ready() {
            self.port_start(p);
        }
    }
}
