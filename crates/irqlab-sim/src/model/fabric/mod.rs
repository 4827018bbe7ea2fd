//! The fabric between the devices and the CPUs: the root ports' FIFOs (`port`), the IIO
//! stacks' DMAR units (`stack`) and the socket's interrupt router (`router`). Each owns
//! its state; the fabric answers what happened (a write departed, a stack is free, a
//! notification is sent on) and the simulator applies the effects on queues, vectors and
//! CPUs (model/device.rs, model/delivery.rs).

mod port;
mod router;
mod stack;

pub(crate) use port::{Port, PortItem};
pub(crate) use router::{Notification, Router};
pub(crate) use stack::{HeldMsi, Stack};

use super::ids::{CpuId, PortId, StackId, VectorId};
use crate::platform::{Platform, RootPort};

pub(crate) struct Fabric {
    ports: Vec<Port>,
    stacks: Vec<Stack>,
    router: Router,
}

/// Where a notification leaving its stack goes.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Routed {
    /// No shared router: it reaches the CPU now.
    Now(Notification),
    /// The router was idle and sends it on at this time.
    At(u64),
    /// It waits in the router's queue.
    Queued,
}

impl Fabric {
    /// The platform's root ports, each on its IIO stack, and the socket's router.
    pub(crate) fn new(p: &Platform) -> Fabric {
        Fabric {
            ports: p
                .root_ports
                .iter()
                .map(|rp| Port::new(rp, stack_of(p, rp), p.iommu.dma_translate_ns))
                .collect(),
            stacks: (0..stack_count(p))
                .map(|_| Stack::idle(p.uncore.stack_rtt_ns, p.uncore.pid_ns))
                .collect(),
            router: Router::idle(p.uncore.ubox_ns),
        }
    }

    #[inline(always)]
    pub(crate) fn port(&self, p: usize) -> &Port {
        &self.ports[p]
    }

    #[inline(always)]
    pub(crate) fn port_mut(&mut self, p: usize) -> &mut Port {
        &mut self.ports[p]
    }

    pub(crate) fn ports(&self) -> &[Port] {
        &self.ports
    }

    pub(crate) fn stack_count(&self) -> usize {
        self.stacks.len()
    }

    /// A remapped message of vector `v` routed to CPU `c`'s vector `idt` is past the IRTE
    /// and not yet at the CPU: held by an IIO stack or waiting in the router (what an IRTE
    /// rewrite's interrupt-entry-cache flush waits for).
    pub(crate) fn remapped_in_flight(&self, v: VectorId, c: CpuId, idt: u16) -> bool {
        self.stacks
            .iter()
            .filter_map(Stack::holding)
            .any(|h| h.remapped && h.vector == v && h.cpu == c && h.idt == idt)
            || self.router.queued().any(|n| n.cpu == c && n.idt == idt)
    }

    pub(crate) fn router(&self) -> &Router {
        &self.router
    }

    /// The MSI at port `p`'s FIFO head asks for the port's stack. False: its DMAR unit
    /// handles another MSI, and the port waits in the stack's queue (once), its FIFO with
    /// it.
    #[inline]
    pub(crate) fn stack_free(&mut self, p: usize) -> bool {
        let s = self.ports[p].stack().ix();
        if !self.stacks[s].is_busy() {
            return true;
        }
        if self.ports[p].wait_for_stack() {
            self.stacks[s].enqueue(PortId::new(p));
        }
        false
    }

    /// Port `p`'s stack takes `msi` after the port's MSI write. Returns when the stack's
    /// work ends.
    #[inline]
    pub(crate) fn stack_take(&mut self, p: usize, msi: HeldMsi, now: u64) -> u64 {
        let port = &self.ports[p];
        let work = self.stacks[port.stack().ix()].take(msi);
        (now + port.msi_ns() + work).max(now + 1)
    }

    /// The stack of port `p` and the MSI it holds.
    #[inline]
    pub(crate) fn held_at(&self, p: usize) -> (StackId, HeldMsi) {
        let s = self.ports[p].stack();
        (s, self.stacks[s.ix()].held())
    }

    /// Stack `s` is idle again. Returns the port that waited longest when its FIFO starts
    /// its MSI now (no write in progress).
    #[inline]
    pub(crate) fn free_stack(&mut self, s: StackId) -> Option<usize> {
        let p = self.stacks[s.ix()].release()?.ix();
        self.ports[p].stack_turn().then_some(p)
    }

    /// A notification leaves its stack for the router at `now`.
    #[inline]
    pub(crate) fn route(&mut self, n: Notification, now: u64) -> Routed {
        if !self.router.is_shared() {
            return Routed::Now(n);
        }
        match self.router.accept(n, now) {
            Some(at) => Routed::At(at),
            None => Routed::Queued,
        }
    }

    /// The router sent its head message on at `now` (`window`: the measured window's
    /// start while measuring). Returns it.
    pub(crate) fn router_sent(&mut self, now: u64, window: Option<u64>) -> Option<Notification> {
        self.router.sent(now, window)
    }

    /// The router starts on its next message, if any. Returns when it is sent on.
    pub(crate) fn router_next(&mut self, now: u64) -> Option<u64> {
        self.router.start(now)
    }

    /// The measured window opens: the router's and the ports' counters start over.
    pub(crate) fn open_window(&mut self) {
        self.router.open_window();
        for port in &mut self.ports {
            port.open_window();
        }
    }

    /// Moves the ports, stacks and the router of one part of a parallel run (those
    /// `port`, `stack` and `router` say are its) from `from` into this fabric (both built
    /// from the same platform).
    pub(crate) fn take_part(
        &mut self,
        from: &mut Fabric,
        port: impl Fn(usize) -> bool,
        stack: impl Fn(usize) -> bool,
        router: bool,
    ) {
        for (i, (a, b)) in self.ports.iter_mut().zip(&mut from.ports).enumerate() {
            if port(i) {
                std::mem::swap(a, b);
            }
        }
        for (i, (a, b)) in self.stacks.iter_mut().zip(&mut from.stacks).enumerate() {
            if stack(i) {
                std::mem::swap(a, b);
            }
        }
        if router {
            std::mem::swap(&mut self.router, &mut from.router);
        }
    }
}

/// The IIO stack of root port `rp`: stacks are numbered in the order their first port
/// appears.
fn stack_of(p: &Platform, rp: &RootPort) -> StackId {
    let mut names: Vec<&str> = Vec::new();
    for r in &p.root_ports {
        if !names.contains(&r.stack_name()) {
            names.push(r.stack_name());
        }
    }
    let ix = names
        .iter()
        .position(|n| *n == rp.stack_name())
        .expect("the port's stack is among the ports' stacks");
    StackId::new(ix)
}

/// How many IIO stacks the root ports name.
fn stack_count(p: &Platform) -> usize {
    let mut names: Vec<&str> = p.root_ports.iter().map(|r| r.stack_name()).collect();
    names.sort_unstable();
    names.dedup();
    names.len()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ids::{CpuId, IoId, VectorId};

    fn root_port(credits: u32) -> RootPort {
        RootPort {
            name: "rp".into(),
            write_ns: 10,
            bytes_per_ns: 4.0,
            msi_ns: 5,
            credits,
            mps_bytes: 256,
            stack: None,
        }
    }

    /// Two ports on one stack, and a router taking `ubox_ns` per message.
    fn two_ports_one_stack(ubox_ns: u64) -> Fabric {
        let s = StackId::new(0);
        Fabric {
            ports: vec![
                Port::new(&root_port(0), s, 1),
                Port::new(&root_port(0), s, 1),
            ],
            stacks: vec![Stack::idle(20, 90)],
            router: Router::idle(ubox_ns),
        }
    }

    fn msi(v: usize) -> HeldMsi {
        HeldMsi {
            vector: VectorId::new(v),
            remapped: true,
            notify: true,
            cpu: CpuId::new(0),
            idt: 0x21,
        }
    }

    fn note(cpu: usize) -> Notification {
        Notification {
            cpu: CpuId::new(cpu),
            idt: 0x21,
            holds: None,
        }
    }

    #[test]
    fn a_port_holds_credits_until_the_write_departs() {
        let mut port = Port::new(&root_port(8), StackId::new(0), 1);
        // 4 KiB: 16 TLPs and the CQE, capped at half the port's credits.
        let credits = port.data_credits(4096);
        assert_eq!(credits, 4);
        let io = IoId::new(0);
        assert!(port.accept(PortItem::Completion { io, credits }), "idle");
        assert_eq!(port.start_write(100, 50, None), 150);
        assert!(!port.accept(PortItem::Completion { io, credits }), "busy");
        assert!(!port.has_room(1), "8 credits held");
        assert!(port.write_done().is_some());
        assert!(port.has_room(4) && !port.has_room(5));
        assert!(port.ready(), "the second write waits to start");
    }

    #[test]
    fn a_stall_counts_only_inside_the_window() {
        let mut port = Port::new(&root_port(0), StackId::new(0), 1);
        port.accept(PortItem::Msi {
            vector: VectorId::new(0),
        });
        port.stall(100);
        port.stall(200);
        port.start_write(300, 5, Some(150));
        assert_eq!((port.stalled_ns(), port.busy_ns()), (150, 5));
    }

    #[test]
    fn a_busy_stack_queues_each_waiting_port_once() {
        let mut f = two_ports_one_stack(0);
        assert!(f.stack_free(0));
        // The port's MSI write, then the remapped MSI's time at the stack.
        assert_eq!(f.stack_take(0, msi(0), 1000), 1025);
        assert!(!f.stack_free(1));
        assert!(!f.stack_free(1), "asked again while it waits");
        let (s, held) = f.held_at(0);
        assert_eq!(held.vector.ix(), 0);
        assert_eq!(f.free_stack(s), Some(1), "the waiting port goes next");
        assert_eq!(f.free_stack(s), None, "it waited once");
    }

    #[test]
    fn a_stack_freed_while_its_port_writes_does_not_restart_it() {
        let mut f = two_ports_one_stack(0);
        f.stack_take(0, msi(0), 0);
        assert!(!f.stack_free(1));
        f.port_mut(1).accept(PortItem::Msi {
            vector: VectorId::new(1),
        });
        f.port_mut(1).start_write(0, 5, None);
        assert_eq!(f.free_stack(StackId::new(0)), None);
    }

    #[test]
    fn the_router_sends_one_message_at_a_time_in_order() {
        let mut f = two_ports_one_stack(30);
        assert!(matches!(f.route(note(0), 100), Routed::At(130)));
        assert!(matches!(f.route(note(1), 110), Routed::Queued));
        let first = f.router_sent(130, Some(0)).expect("a message");
        assert_eq!(first.cpu.ix(), 0);
        assert_eq!(f.router_next(130), Some(160));
        assert_eq!(f.router_sent(160, Some(0)).map(|n| n.cpu.ix()), Some(1));
        assert_eq!(f.router_next(160), None);
        assert_eq!((f.router().delivered(), f.router().busy_ns()), (2, 60));
    }

    #[test]
    fn without_router_time_a_notification_goes_straight_on() {
        let mut f = two_ports_one_stack(0);
        assert!(matches!(f.route(note(3), 5), Routed::Now(n) if n.cpu.ix() == 3));
    }
}
