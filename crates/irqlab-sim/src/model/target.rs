//! The NVMe over RDMA target as CPUs (drivers/nvme/target/rdma.c over null_blk).
//!
//! A host queue's command capsule crosses the network (the device's `sqe_fetch_ns`) and
//! lands as a receive completion in the CQ of its target queue. That CQ follows an RDMA
//! CQ's rule (one event per arm), is moderated like the host's (the merged rdma_dim feeds
//! the workqueue-polled CQs of nvmet-rdma as well as the host's softirq ones, cq.c
//! ib_cq_poll_work), and interrupts one of the target's cores. The handler reaps the
//! commands at `target.command_ns` each and answers them: the response (RDMA WRITE of the
//! data, SEND of the completion capsule) reaches the host NIC `target.network_ns` later,
//! where it is the device's completion. Both machines therefore pay per-interrupt costs,
//! and moderation saves CPU on both.

use super::build::{Inputs, Machine, VectorSpec, add_vector, new_cpu};
use super::ids::{DeviceId, IoId, QueueId};
use super::queue::Queue;
use super::state::*;
use crate::SimError;
use crate::engine::Event;
use crate::observer::Observer;
use crate::platform::RdmaTarget;
use crate::rng::ServiceTime;
use irqlab_core::gsim::GsimGlobal;
use irqlab_core::irq_poll::IrqPollUntil;
use irqlab_core::nvme::{Hint, MsiRule, NVME_CMD_READ, QueuePair};

/// A response capsule on the wire: the 16 B NVMe completion in a SEND with its RoCE v2
/// headers (Ethernet 14 + IP 20 + UDP 8 + BTH 12 + ICRC 4 + FCS 4).
const RESPONSE_BYTES: u64 = 16 + 62;

/// The target NIC's transmit: one response at a time onto the network at the link's
/// payload rate, FIFO (the backlog waits in the target's send queues, not in the host's
/// PCIe port, whose rate is above the link's).
#[derive(Clone, Debug)]
pub(crate) struct Wire {
    bytes_per_ns: f64,
    free_at: u64,
}

impl Wire {
    pub(crate) fn new(bytes_per_ns: f64) -> Self {
        Wire {
            bytes_per_ns,
            free_at: 0,
        }
    }

    /// A response of `bytes` posted at `at` has left the NIC when this returns.
    pub(crate) fn send(&mut self, at: u64, bytes: u64) -> u64 {
        let ns = (bytes as f64 / self.bytes_per_ns).ceil() as u64;
        self.free_at = self.free_at.max(at) + ns.max(1);
        self.free_at
    }
}

impl<O: Observer> Sim<'_, O> {
    /// Host command `io` reached target queue `tq`: the receive completion is posted in
    /// the target's CQ, and the CQ's interrupt rule decides about a message.
    pub(crate) fn target_receive(&mut self, tq: usize, io: IoId) {
        // nvmet-rdma keeps the command until its response's SEND completes too.
        let Some(tag) = self.queues[tq].receive(io, NVME_CMD_READ) else {
            debug_assert!(false, "target queue full: the depth check failed");
            return;
        };
        let (hq, htag) = (self.ios[io.ix()].queue().ix(), self.ios[io.ix()].tag());
        self.queues[hq].set_peer_tag(htag, tag);
        let Some(v) = self.queues[tq].vector() else {
            return;
        };
        let v = v.ix();
        // A target CQ's completion is not held by an MSI-X mask: the model masks host
        // vectors only.
        let (now, unacked) = (self.now, self.unacked(tq));
        let measuring = self.measuring;
        let a =
            self.vectors[v].post_completion_ignoring_mask(now, Hint::default(), unacked, measuring);
        self.carry_out(v, a);
    }

    /// Handler time for the `n` entries queue `q`'s last poll took: `cqe_ns` each, or on a
    /// target queue each command's own time (the device's `service_cv` spread around
    /// `target.command_ns`); an RDMA SEND work completion `send_wc_ns`.
    pub(crate) fn handler_work_ns(&mut self, q: usize, n: u32) -> u64 {
        let queue = &self.queues[q];
        // RDMA: the last poll's SEND work completions cost `send_wc_ns` each.
        let (n, send_ns) = queue.split_sends(n);
        if !queue.is_target() {
            return u64::from(n) * queue.cqe_ns() + send_ns;
        }
        let per = queue.cqe_ns();
        self.devices[queue.device().ix()].command_ns(n, per) + send_ns
    }

    /// The target answered command `io`: the data and completion capsule leave its NIC
    /// (behind the responses already on the wire) and reach the host a trip later, and
    /// the host NIC's acknowledgement of the SEND comes back a trip after that, when the
    /// target's CQ gets the SEND's work completion (nvmet-rdma signals it).
    pub(crate) fn target_respond(&mut self, io: IoId) {
        let q = self.ios[io.ix()].queue().ix();
        let d = self.queues[q].device().ix();
        // A read's data (RDMA WRITE) and the response capsule (SEND) cross the wire.
        let rec = &self.ios[io.ix()];
        let data = if rec.read() {
            u64::from(rec.bytes())
        } else {
            0
        };
        let (at, trip) = self.devices[d].respond(self.now, data + RESPONSE_BYTES);
        self.q.push(at + trip, Event::TargetResponse { io });
        if let Some(tq) = self.queues[q].target()
            && self.queues[tq.ix()].is_rdma()
        {
            let tag = self.queues[q].peer_tag(self.ios[io.ix()].tag());
            self.q.push(at + 2 * trip, Event::SendWc { queue: tq, tag });
        }
    }
}

/// Adds, for every host queue of an NVMe over RDMA device with a target, the target's
/// cores (after the host's CPUs) and one target queue per host queue, its vector on a
/// target core round robin.
pub(crate) fn add_targets(
    inp: &Inputs<'_>,
    gsim: Option<&GsimGlobal>,
    m: &mut Machine,
) -> Result<(), SimError> {
    let mut dev_ix = 0usize;
    for g in &inp.p.devices {
        for _ in 0..g.count {
            if let Some(t) = &g.target {
                add_target(t, g, dev_ix, inp, gsim, m)?;
            }
            dev_ix += 1;
        }
    }
    let ncpu = m.cpus.len();
    for v in m.vectors.iter_mut() {
        v.fit_cpus(ncpu);
    }
    Ok(())
}

fn add_target(
    t: &RdmaTarget,
    g: &crate::platform::DeviceGroup,
    dev_ix: usize,
    inp: &Inputs<'_>,
    gsim: Option<&GsimGlobal>,
    m: &mut Machine,
) -> Result<(), SimError> {
    let (p, policy) = (inp.p, inp.policy);
    m.devices[dev_ix].attach_target(
        t.network_ns,
        ServiceTime::new(t.command_ns, g.service_cv),
        t.bytes_per_ns.filter(|&r| r > 0.0).map(Wire::new),
    );
    let first_core = m.cpus.len();
    for k in 0..t.cores {
        m.cpus.push(new_cpu(
            first_core + k,
            p,
            &inp.costs,
            policy.delivery,
            // The target runs a stock kernel: --irq-poll-until changes the host's.
            IrqPollUntil::Budget,
            gsim,
        ));
    }
    let host_queues: Vec<usize> = (0..m.queues.len())
        .filter(|&q| m.queues[q].device().ix() == dev_ix && m.queues[q].vector().is_some())
        .collect();
    let name = format!("{}-target", inp.names[dev_ix]);
    for (i, &hq) in host_queues.iter().enumerate() {
        let tq = QueueId::new(m.queues.len());
        let depth = m.queues[hq].depth();
        let qid = (i + 1) as u16;
        let qp = QueuePair::with_cq_depth(qid, qid, depth, super::build::rdma_cq_depth(depth))
            .map_err(|e| SimError::Platform(format!("{name}: {e}")))?;
        let spec = VectorSpec {
            name: format!("{name}q{qid}"),
            queue: tq,
            cpu: first_core + i % t.cores,
            rule: MsiRule::UntilDoorbell,
            group: g,
            rescue_thread: false,
            iv: None,
            // nvmet-rdma polls its CQs from a workqueue; the model runs the poll in the
            // hardirq (the command's time is the target's handler work).
            ib_softirq: false,
        };
        let v = add_vector(spec, m, policy, p)?;
        m.queues.push(
            Queue::new(DeviceId::new(dev_ix), Some(v), qp, t.command_ns)
                .with_local_irq(t.interrupt_ns)
                .with_rdma(
                    vec![0; depth as usize],
                    Vec::new(),
                    t.send_done_ns.unwrap_or(0),
                ),
        );
        m.queues[hq].set_target(tq);
    }
    Ok(())
}
