//! A CPU's interrupt reception: the local APIC's IRR, its IDT (which device vector each
//! vector number stands for), the delivery path MSIs take to it (a remapped IRTE or the
//! posted-interrupt descriptor) and the shadow of PIR bits posted and not yet harvested.

use crate::model::ids::VectorId;
use crate::model::state::{FIRST_DEVICE_VECTOR, LOCAL_TIMER_VECTOR};
use irqlab_core::delivery::DeliveryPath;
use irqlab_core::irq::Irr;
use irqlab_core::posted::{NR_PIR_WORDS, vector_bit};

/// What the IOMMU's post of one MSI into a CPU's posted-interrupt descriptor did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Posted {
    /// The vector's PIR bit was already set: the message merged with a pending one.
    pub merged: bool,
    /// ON was clear: a notification to the CPU is due.
    pub notify: bool,
}

pub(crate) struct LocalApic {
    /// Pending interrupt vectors (core's IRR: highest vector first).
    irr: Irr,
    /// The device vector behind each IDT vector of this CPU.
    vec_of_idt: Vec<Option<VectorId>>,
    /// How MSIs reach this CPU (irqlab-core delivery::DeliveryPath).
    path: DeliveryPath,
    /// PIR bits posted and not yet harvested, for the merge count (what the IOMMU merged).
    pir_shadow: [u64; NR_PIR_WORDS],
    /// The IOMMU wrote the descriptor's line since the last harvest, so the next round's
    /// read misses in this CPU's cache.
    pid_dirty: bool,
    /// When the tick now pending in the IRR was due (its lateness is counted from there).
    tick_due: u64,
    /// A reschedule IPI is on its way here.
    ipi_inflight: bool,
}

impl LocalApic {
    pub fn new(path: DeliveryPath) -> Self {
        LocalApic {
            irr: Irr::default(),
            vec_of_idt: vec![None; 256],
            path,
            pir_shadow: [0; NR_PIR_WORDS],
            pid_dirty: false,
            tick_due: 0,
            ipi_inflight: false,
        }
    }

    /// How MSIs reach this CPU.
    #[inline]
    pub fn path(&self) -> &DeliveryPath {
        &self.path
    }

    // ------------------------------------------------------------------------ IRR

    /// A message with vector `idt` arrives: false when its IRR bit was already set (the
    /// two messages become one interrupt).
    #[inline]
    pub fn accept(&mut self, idt: u16) -> bool {
        self.irr.set(idt as u8)
    }

    #[inline]
    pub fn any_pending(&self) -> bool {
        self.irr.any()
    }

    #[inline]
    pub fn is_pending(&self, idt: u16) -> bool {
        self.irr.is_set(idt as u8)
    }

    /// The highest pending vector, taken out of the IRR (into service).
    #[inline]
    pub fn take_highest(&mut self) -> Option<u16> {
        self.irr.take_highest().map(u16::from)
    }

    /// The highest pending vector, left pending.
    #[inline]
    pub fn highest(&self) -> Option<u8> {
        self.irr.highest()
    }

    /// Clears `idt` from the IRR: whether it was pending.
    pub fn clear(&mut self, idt: u16) -> bool {
        self.irr.clear(idt as u8)
    }

    /// The CPU went offline: its tick and IPIs die with it.
    pub fn drop_pending(&mut self) {
        while self.irr.take_highest().is_some() {}
        self.ipi_inflight = false;
    }

    // ------------------------------------------------------------------------ IDT

    /// The device vector behind IDT vector `idt`.
    #[inline]
    pub fn vector_at(&self, idt: u16) -> Option<VectorId> {
        self.vec_of_idt[usize::from(idt)]
    }

    /// How many device vectors this CPU can hold.
    pub fn device_vectors(&self) -> usize {
        usize::from(self.path.first_system_vector()) - usize::from(FIRST_DEVICE_VECTOR)
    }

    /// The lowest device vector free here (in no table, pending nowhere), bound to `v`;
    /// None when the device range (below the delivery mode's system vectors) is full.
    /// The build's vectors therefore take the range in order.
    pub fn allocate(&mut self, v: VectorId) -> Option<u16> {
        let idt = (FIRST_DEVICE_VECTOR..u16::from(self.path.first_system_vector())).find(|&x| {
            self.vec_of_idt[usize::from(x)].is_none()
                && !self.irr.is_set(x as u8)
                && !self.path.vector_pending(x as u8)
        })?;
        self.vec_of_idt[usize::from(idt)] = Some(v);
        Some(idt)
    }

    /// __vector_cleanup freed `idt`.
    pub fn free(&mut self, idt: u16) {
        self.vec_of_idt[usize::from(idt)] = None;
    }

    // ------------------------------------------------------------------------ posted

    /// The IOMMU posts IDT vector `idt` into this CPU's descriptor: the PIR bit, then ON
    /// unless already set (the hardware's pi_test_and_set_pir and pi_test_and_set_on,
    /// arch/x86/include/asm/posted_intr.h). Its atomic update takes the descriptor's line
    /// away from this CPU's cache.
    pub fn post_interrupt(&mut self, idt: u16) -> Posted {
        let (w, b) = vector_bit(idt as u8);
        let merged = self.pir_shadow[w] & b != 0;
        self.pir_shadow[w] |= b;
        self.pid_dirty = true;
        let notify = self.path.pi_desc().is_some_and(|pi| pi.post(idt as u8));
        Posted { merged, notify }
    }

    /// handle_pending_pir took `words` out of the PIR (arch/x86/kernel/irq.c,
    /// pi_harvest_pir). Returns whether the IOMMU wrote the descriptor since the last
    /// harvest, so that this read missed in the CPU's cache.
    pub fn harvest_pir(&mut self, words: [u64; NR_PIR_WORDS]) -> bool {
        for (s, w) in self.pir_shadow.iter_mut().zip(words) {
            *s &= !w;
        }
        std::mem::take(&mut self.pid_dirty)
    }

    /// fixup_irqs takes `idt`'s PIR bit off an offline CPU: whether it was set.
    pub fn take_posted(&mut self, idt: u16) -> bool {
        let pir = self
            .path
            .pi_desc()
            .is_some_and(|d| d.take_vector(idt as u8));
        if pir {
            let (w, b) = vector_bit(idt as u8);
            self.pir_shadow[w] &= !b;
        }
        pir
    }

    /// PIR bits posted and not yet harvested.
    pub fn pir_pending(&self) -> u32 {
        self.pir_shadow.iter().map(|w| w.count_ones()).sum()
    }

    // ------------------------------------------------------------------------ tick, IPI

    /// The tick's hrtimer fired at `now`: its expiry stays at the first missed period
    /// until its handler runs (hrtimer_forward is called there).
    pub fn tick_fired(&mut self, now: u64) {
        if !self.irr.is_set(LOCAL_TIMER_VECTOR as u8) {
            self.tick_due = now;
        }
    }

    /// When the tick being taken was due.
    pub fn tick_due(&self) -> u64 {
        self.tick_due
    }

    /// A reschedule IPI is sent here: false when one is already on its way.
    pub fn send_ipi(&mut self) -> bool {
        !std::mem::replace(&mut self.ipi_inflight, true)
    }

    /// The reschedule IPI arrived (or was dropped).
    pub fn ipi_arrived(&mut self) {
        self.ipi_inflight = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use irqlab_core::Delivery;
    use irqlab_core::delivery::RemappedTarget;

    fn apic(delivery: Delivery) -> LocalApic {
        LocalApic::new(
            DeliveryPath::for_delivery(delivery, 0)
                .unwrap_or(DeliveryPath::Remapped(RemappedTarget::new(0))),
        )
    }

    #[test]
    fn posting_sets_pir_bits_and_notifies_only_while_on_is_clear() {
        let mut c = apic(Delivery::Posted { max_loop: 3 });
        let first = c.post_interrupt(0x21);
        assert_eq!((first.merged, first.notify), (false, true));
        let other = c.post_interrupt(0x22);
        assert_eq!((other.merged, other.notify), (false, false));
        let again = c.post_interrupt(0x21);
        assert_eq!((again.merged, again.notify), (true, false));
        assert_eq!(c.pir_pending(), 2);
        let (w, b) = vector_bit(0x21);
        let mut words = [0; NR_PIR_WORDS];
        words[w] = b;
        assert!(c.harvest_pir(words), "the IOMMU's posts dirtied the line");
        assert_eq!(c.pir_pending(), 1);
        assert!(!c.harvest_pir([0; NR_PIR_WORDS]), "nothing posted since");
    }

    #[test]
    fn a_remapped_cpu_has_no_descriptor_to_notify_through() {
        let mut c = apic(Delivery::Remapped);
        assert!(!c.post_interrupt(0x21).notify);
    }

    #[test]
    fn a_freed_vector_is_handed_out_again_only_when_pending_nowhere() {
        let mut c = apic(Delivery::Remapped);
        let a = c.allocate(VectorId::new(0)).expect("room");
        assert_eq!(a, FIRST_DEVICE_VECTOR);
        let b = c.allocate(VectorId::new(1)).expect("room");
        assert_eq!(b, a + 1);
        c.free(a);
        assert!(c.accept(a), "a message for the old vector arrives late");
        assert_eq!(
            c.allocate(VectorId::new(2)),
            Some(a + 2),
            "still in the IRR"
        );
        assert!(c.clear(a));
        assert_eq!(c.allocate(VectorId::new(3)), Some(a));
        assert_eq!(c.vector_at(a), Some(VectorId::new(3)));
    }

    #[test]
    fn one_reschedule_ipi_is_in_flight_at_a_time() {
        let mut c = apic(Delivery::Remapped);
        assert!(c.send_ipi());
        assert!(!c.send_ipi(), "a second one would merge with the first");
        c.ipi_arrived();
        assert!(c.send_ipi());
    }
}
