//! An interrupt's affinity changes, or its CPU goes offline, while messages are in flight.
//!
//! The IRTE of a device's MSI names the CPU (and, posted, that CPU's descriptor) and the
//! vector allocated there. irq_set_affinity allocates a vector on the new CPU and rewrites
//! the IRTE (intel_ir_set_affinity → modify_irte, drivers/iommu/intel/irq_remapping.c),
//! whose interrupt-entry-cache flush (qi_flush_iec) completes only once the requests the
//! IOMMU was processing with the old entry are done. A message that read the old entry
//! can still land in the old CPU's IRR or PIR, so the old vector is freed only when the old
//! CPU finds it pending nowhere: __vector_cleanup (arch/x86/kernel/apic/vector.c) re-arms
//! while `is_vector_pending()`, which checks the PIR too since the posted-MSI series
//! ("x86/irq: Handle potential lost IRQ during migration and CPU offline", Jacob Pan, RFC
//! 10/13, Nov 2023: "If IRQ affinity change happens between 3 and 5 in IOMMU, old CPU's
//! PIR could have pending bit set for the vector being moved. We must check PID.PIR to
//! prevent the lost of interrupts."). A CPU going offline moves its interrupts away
//! (irq_migrate_all_off_this_cpu) and then fixup_irqs() retriggers, at the new target,
//! every vector still pending in its IRR or PIR.
//!
//! [`Irte`] is the entry with that drain, usable by a device thread and a host thread at
//! once (tests/loom_migrate.rs checks it); [`vector_cleanup`] and [`offline_fixup`] are the
//! two decisions.

use crate::sync::{AtomicU32, AtomicU64, Ordering, fence};

/// Where an IRTE sends a message: the CPU (thread index, the APIC ID here) and the vector
/// allocated on it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Route {
    pub cpu: u32,
    pub vector: u8,
}

const VECTOR_BITS: u32 = 8;
const CPU_BITS: u32 = 32;

fn pack(r: Route, generation: u64) -> u64 {
    (generation << (CPU_BITS + VECTOR_BITS))
        | (u64::from(r.cpu) << VECTOR_BITS)
        | u64::from(r.vector)
}

fn unpack(w: u64) -> (Route, u64) {
    (
        Route {
            cpu: ((w >> VECTOR_BITS) & 0xffff_ffff) as u32,
            vector: (w & 0xff) as u8,
        },
        w >> (CPU_BITS + VECTOR_BITS),
    )
}

/// The IRTE of one MSI: its route, and the messages being remapped with each generation
/// of it (what the interrupt-entry-cache flush waits for).
#[derive(Debug)]
pub struct Irte {
    word: AtomicU64,
    /// Messages in flight that read a route of even / odd generation.
    in_flight: [AtomicU32; 2],
}

/// A message the IOMMU is remapping with the route it read; dropping it ends the message
/// (after its post or notification is done).
#[must_use = "the message is in flight until the guard drops"]
#[derive(Debug)]
pub struct InFlight<'a> {
    irte: &'a Irte,
    route: Route,
    slot: usize,
}

impl InFlight<'_> {
    /// The route this message follows.
    pub fn route(&self) -> Route {
        self.route
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.irte.in_flight[self.slot].fetch_sub(1, Ordering::SeqCst);
    }
}

impl Irte {
    pub fn new(route: Route) -> Irte {
        Irte {
            word: AtomicU64::new(pack(route, 0)),
            in_flight: [AtomicU32::new(0), AtomicU32::new(0)],
        }
    }

    /// The current route.
    pub fn route(&self) -> Route {
        unpack(self.word.load(Ordering::SeqCst)).0
    }

    /// The IOMMU starts remapping one message: it reads the entry and holds it until the
    /// guard drops. Counting first and re-reading after is the store-buffering pair of
    /// [`Irte::retarget`]'s write-then-wait: either this read sees the new entry, or the
    /// flush sees this message in flight.
    pub fn message(&self) -> InFlight<'_> {
        loop {
            let w = self.word.load(Ordering::SeqCst);
            let (route, generation) = unpack(w);
            let slot = (generation & 1) as usize;
            self.in_flight[slot].fetch_add(1, Ordering::SeqCst);
            // Store-buffering with retarget's store and load: a full barrier on each side
            // (as crate::posted does for ON and the PIR).
            fence(Ordering::SeqCst);
            if self.word.load(Ordering::SeqCst) == w {
                return InFlight {
                    irte: self,
                    route,
                    slot,
                };
            }
            // Rewritten meanwhile: follow the new entry.
            self.in_flight[slot].fetch_sub(1, Ordering::SeqCst);
        }
    }

    /// modify_irte plus the flush: the entry now sends to `to`, and when this returns
    /// every message remapped with the old entry has been posted or notified. `wait` is
    /// called while messages are still in flight (a yield). One writer at a time (the
    /// kernel holds the irq's descriptor lock).
    pub fn retarget(&self, to: Route, mut wait: impl FnMut()) {
        let (_, generation) = unpack(self.word.load(Ordering::SeqCst));
        self.word.store(pack(to, generation + 1), Ordering::SeqCst);
        fence(Ordering::SeqCst);
        let old = (generation & 1) as usize;
        while self.in_flight[old].load(Ordering::SeqCst) != 0 {
            wait();
        }
    }

    /// [`Irte::retarget`] without the flush's drain: the entry is rewritten and the caller
    /// goes on while old messages may still land (for the loom model's broken case).
    pub fn retarget_without_drain(&self, to: Route) {
        let (_, generation) = unpack(self.word.load(Ordering::SeqCst));
        self.word.store(pack(to, generation + 1), Ordering::SeqCst);
    }
}

/// What __vector_cleanup does with a moved interrupt's old vector on the old CPU.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Cleanup {
    /// Pending nowhere: the old vector is freed (its vector_irq slot cleared).
    Free,
    /// Still pending in the old CPU's IRR or PIR ("Moved interrupt pending in old target
    /// APIC"): it stays installed, is handled there, and the cleanup runs again later.
    Rearm,
}

/// __vector_cleanup's check, after the IRTE points elsewhere and its flush is done.
pub fn vector_cleanup(pending_in_irr: bool, pending_in_pir: bool) -> Cleanup {
    if pending_in_irr || pending_in_pir {
        Cleanup::Rearm
    } else {
        Cleanup::Free
    }
}

/// What fixup_irqs does with one of a dying CPU's vectors once its interrupt has moved.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fixup {
    /// Pending in the IRR or PIR: chip->irq_retrigger at the new target.
    Retrigger,
    Nothing,
}

/// fixup_irqs' check of one vector (is_vector_pending: IRR or PIR).
pub fn offline_fixup(pending_in_irr: bool, pending_in_pir: bool) -> Fixup {
    if pending_in_irr || pending_in_pir {
        Fixup::Retrigger
    } else {
        Fixup::Nothing
    }
}

/// Where a CPU going offline sends an interrupt whose affinity has no other online CPU:
/// the first online CPU after it, wrapping. (irq_migrate_all_off_this_cpu breaks the
/// affinity to all online CPUs and the vector matrix picks the least loaded one; the
/// model's CPUs carry one vector per queue, so the next online CPU stands for that.)
pub fn offline_target(cpu: usize, online: &[bool]) -> Option<usize> {
    let n = online.len();
    (1..n).map(|k| (cpu + k) % n).find(|&c| online[c])
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;

    #[test]
    fn a_route_packs_cpu_vector_and_generation() {
        let r = Route {
            cpu: 200_000,
            vector: 0xdf,
        };
        assert_eq!(unpack(pack(r, 7)), (r, 7));
    }

    #[test]
    fn a_message_follows_the_entry_and_a_retarget_waits_for_it() {
        let irte = Irte::new(Route {
            cpu: 0,
            vector: 0x21,
        });
        let to = Route {
            cpu: 3,
            vector: 0x25,
        };
        let m = irte.message();
        assert_eq!(m.route().cpu, 0);
        // The flush cannot finish while the message that read the old entry is in flight.
        let mut waits = 0;
        let mut m = Some(m);
        irte.retarget(to, || {
            waits += 1;
            m.take();
        });
        assert_eq!(waits, 1);
        assert_eq!(irte.message().route(), to);
        // A second move uses the other generation's counter.
        let back = Route {
            cpu: 0,
            vector: 0x21,
        };
        let held = irte.message();
        let mut held = Some(held);
        irte.retarget(back, || {
            held.take();
        });
        assert_eq!(irte.route(), back);
    }

    #[test]
    fn cleanup_and_fixup_keep_what_is_pending() {
        assert_eq!(vector_cleanup(false, false), Cleanup::Free);
        assert_eq!(vector_cleanup(true, false), Cleanup::Rearm);
        assert_eq!(vector_cleanup(false, true), Cleanup::Rearm);
        assert_eq!(offline_fixup(false, true), Fixup::Retrigger);
        assert_eq!(offline_fixup(false, false), Fixup::Nothing);
    }

    #[test]
    fn an_offline_cpus_interrupts_go_to_the_next_online_cpu() {
        assert_eq!(offline_target(1, &[true, true, true]), Some(2));
        assert_eq!(offline_target(2, &[true, false, true]), Some(0));
        assert_eq!(offline_target(0, &[true, false]), None);
    }
}
