//! The notification path: from a root port's IOMMU to a CPU's local APIC.
//!
//! Every root port has an IOMMU interrupt engine (on Xeon, the DMAR unit of its PCIe
//! stack) that handles the port's MSIs one at a time, in order. The FIFO pays only the
//! MSI write itself (`root_ports.N.msi_ns`); the next MSI at the FIFO head waits for the
//! engine, while data writes keep flowing.
//!
//! - Remapped: the engine looks up the IRTE (`iommu.remap_ns`) and waits for the port's
//!   earlier writes to drain (`iommu.notify_ns`: "step #3 is also expensive and requires
//!   strong ordering w.r.t DMA. As a result, slower IRQ rates can become a limiting factor
//!   for DMA I/O performance", Jacob Pan's posted MSI cover letter), then hands the
//!   notification to the socket's delivery unit. It holds one of the port's
//!   `notify_slots` until the message is delivered; an MSI that finds no slot holds the
//!   FIFO, and the DMA behind it waits (Luigi Rizzo, GSIM: "some internal block (in the
//!   PCIe root port, or in the IOMMU block) applies excessive serialization around MSI-X
//!   writes").
//! - Posted: the engine looks up the IRTE and updates the posted-interrupt descriptor with
//!   an atomic read-modify-write of its line (`iommu.post_ns`); when ON was clear, the
//!   notification, ordered by that update, goes to the delivery unit without a slot.
//!
//! The delivery unit (`iommu.deliver_ns` per message) serves every port of the socket, one
//! notification at a time. A posted notification waiting there keeps ON set, so the
//! IOMMU's later posts to that CPU only set PIR bits: a busy path coalesces.

use super::ids::{PortId, VectorId};
use super::state::*;
use crate::engine::Event;
use crate::observer::Observer;

impl<O: Observer> Sim<'_, O> {
    /// The MSI of vector `v` at port `p`'s FIFO head goes to the port's engine. False: the
    /// engine or every notification slot is busy, and the FIFO waits.
    pub(crate) fn engine_take(&mut self, p: usize, v: usize) -> bool {
        if self.ports[p].engine_msi.is_some() {
            self.ports[p].engine_stalled = true;
            return false;
        }
        let posted = self.posted_vector(v);
        if !posted && !self.take_notify_slot(p) {
            self.ports[p].notify_stalled = true;
            return false;
        }
        let (notify, work) = if posted {
            (self.post_msi(v), self.costs.remap + self.costs.post)
        } else {
            (true, self.costs.remap + self.costs.notify)
        };
        let port = &mut self.ports[p];
        port.engine_msi = Some((VectorId::new(v), notify));
        let at = self.now + port.msi_ns + work;
        self.q.push(
            at.max(self.now + 1),
            Event::EngineDone {
                port: PortId::new(p),
            },
        );
        true
    }

    /// The engine finished the port's MSI: its notification, if any, leaves for the
    /// delivery unit, and an MSI waiting at the FIFO head may start.
    pub(crate) fn engine_done(&mut self, p: usize) {
        let port = &mut self.ports[p];
        let (v, notify) = port.engine_msi.take().expect("the engine holds an MSI");
        let resume = std::mem::take(&mut port.engine_stalled);
        if notify {
            let v = v.ix();
            let posted = self.posted_vector(v);
            let idt = if posted {
                POSTED_MSI_NOTIFICATION_VECTOR
            } else {
                self.vectors[v].idt
            };
            self.send_notification(Notification {
                port: PortId::new(p),
                cpu: self.vectors[v].cpu,
                idt,
                holds_slot: !posted,
            });
        }
        if resume && !self.ports[p].busy {
            self.port_start(p);
        }
    }

    /// The IOMMU posts an MSI of vector `v` into its CPU's descriptor: PIR bit, then ON
    /// unless already set (`PiDesc::post`). Returns whether a notification is due.
    fn post_msi(&mut self, v: usize) -> bool {
        let c = self.vectors[v].cpu.ix();
        let posted = self.cpus[c].post_interrupt(self.vectors[v].idt);
        if posted.merged {
            self.vectors[v].merged += 1;
        }
        self.report_pir_pending(c);
        posted.notify
    }

    /// Whether vector `v`'s IRTE is in posted format (its CPU's delivery path).
    pub(crate) fn posted_vector(&self, v: usize) -> bool {
        self.cpus[self.vectors[v].cpu.ix()].path.is_posted()
    }

    /// Takes one of port `p`'s notification slots; false when all are in use.
    fn take_notify_slot(&mut self, p: usize) -> bool {
        let port = &mut self.ports[p];
        if port.notify_slots > 0 && port.notify_inflight >= port.notify_slots {
            return false;
        }
        port.notify_inflight += 1;
        true
    }

    /// A notification leaves its port's engine for the delivery unit.
    fn send_notification(&mut self, n: Notification) {
        if self.delivery.service_ns == 0 {
            self.deliver(n);
            return;
        }
        self.delivery.queue.push_back(n);
        if !self.delivery.busy {
            self.start_delivery();
        }
    }

    fn start_delivery(&mut self) {
        if self.delivery.queue.is_empty() {
            return;
        }
        let unit = &mut self.delivery;
        unit.busy = true;
        unit.busy_since = self.now;
        let at = self.now + unit.service_ns;
        self.q.push(at, Event::Delivered);
    }

    /// The delivery unit sent the notification at its head to the CPU.
    pub(crate) fn delivered(&mut self) {
        let unit = &mut self.delivery;
        unit.busy = false;
        if self.measuring {
            unit.delivered += 1;
            unit.busy_ns += self.now - unit.busy_since.max(self.window_start);
        }
        let Some(n) = unit.queue.pop_front() else {
            return;
        };
        self.deliver(n);
        self.start_delivery();
    }

    /// The interrupt message reaches the CPU, and a remapped one frees its port's slot.
    fn deliver(&mut self, n: Notification) {
        let c = n.cpu.ix();
        self.obs
            .notification(self.now, c, n.idt == POSTED_MSI_NOTIFICATION_VECTOR);
        let p = n.port.ix();
        let resume = n.holds_slot && {
            let port = &mut self.ports[p];
            port.notify_inflight -= 1;
            std::mem::take(&mut port.notify_stalled)
        };
        self.notify(c, n.idt);
        if resume && !self.ports[p].busy {
            self.port_start(p);
        }
    }
}
