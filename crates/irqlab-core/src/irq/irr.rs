//! The local APIC's Interrupt Request Register: one bit per vector, set when an interrupt
//! message (or an IPI) arrives, cleared when the CPU takes the vector. The one priority
//! rule: the APIC delivers the highest pending vector first, and while a vector is in
//! service only a vector of a higher priority class (vector >> 4) interrupts it (Intel SDM
//! vol. 3, 11.8.3.1 "Task and Processor Priorities", 11.8.4 "Interrupt Acceptance").
//! A second message of a vector already pending merges with it.

use crate::posted::{NR_PIR_WORDS, vector_bit};
use crate::sync::{AtomicU64, Ordering};

/// The APIC's priority class of a vector: bits 7:4.
pub const fn priority_class(vector: u8) -> u8 {
    vector >> 4
}

/// The highest vector set in `words` whose class is above `class` (None: above any).
fn highest_above(words: [u64; NR_PIR_WORDS], class: Option<u8>) -> Option<u8> {
    let v = (0..NR_PIR_WORDS)
        .rev()
        .find(|&w| words[w] != 0)
        .map(|w| (w * 64 + 63 - words[w].leading_zeros() as usize) as u8)?;
    match class {
        Some(c) if priority_class(v) <= c => None,
        _ => Some(v),
    }
}

/// The IRR of a CPU that one thread owns (the simulator's CPUs).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Irr {
    words: [u64; NR_PIR_WORDS],
}

impl Irr {
    /// An interrupt of `vector` arrives. False when it was pending already (merged).
    pub fn set(&mut self, vector: u8) -> bool {
        let (w, b) = vector_bit(vector);
        let fresh = self.words[w] & b == 0;
        self.words[w] |= b;
        fresh
    }

    pub fn is_set(&self, vector: u8) -> bool {
        let (w, b) = vector_bit(vector);
        self.words[w] & b != 0
    }

    pub fn any(&self) -> bool {
        self.words.iter().any(|&w| w != 0)
    }

    /// The vector the APIC would deliver next.
    pub fn highest(&self) -> Option<u8> {
        highest_above(self.words, None)
    }

    /// The CPU takes the highest pending vector.
    pub fn take_highest(&mut self) -> Option<u8> {
        self.take_above(None)
    }

    /// The CPU, with `in_service` in service, takes the highest pending vector of a
    /// higher priority class, if any.
    pub fn take_preempting(&mut self, in_service: u8) -> Option<u8> {
        self.take_above(Some(priority_class(in_service)))
    }

    fn take_above(&mut self, class: Option<u8>) -> Option<u8> {
        let v = highest_above(self.words, class)?;
        let (w, b) = vector_bit(v);
        self.words[w] &= !b;
        Some(v)
    }

    /// Clears `vector` (fixup_irqs hands a pending vector to another CPU); true if it was set.
    pub fn clear(&mut self, vector: u8) -> bool {
        let (w, b) = vector_bit(vector);
        let was = self.words[w] & b != 0;
        self.words[w] &= !b;
        was
    }
}

/// The IRR of a CPU that other threads send interrupts to (the runtime's CPU threads:
/// devices and other CPUs set bits; the CPU's own thread takes them, and another CPU
/// may clear one to hand the vector elsewhere, as fixup_irqs does).
#[derive(Debug, Default)]
pub struct SharedIrr {
    words: [AtomicU64; NR_PIR_WORDS],
}

impl SharedIrr {
    /// An interrupt of `vector` arrives. False when it was pending already (merged).
    pub fn set(&self, vector: u8) -> bool {
        let (w, b) = vector_bit(vector);
        self.words[w].fetch_or(b, Ordering::SeqCst) & b == 0
    }

    pub fn is_set(&self, vector: u8) -> bool {
        let (w, b) = vector_bit(vector);
        self.words[w].load(Ordering::SeqCst) & b != 0
    }

    pub fn any(&self) -> bool {
        self.words.iter().any(|w| w.load(Ordering::SeqCst) != 0)
    }

    fn snapshot(&self) -> [u64; NR_PIR_WORDS] {
        [0, 1, 2, 3].map(|i| self.words[i].load(Ordering::SeqCst))
    }

    /// The vector the APIC would deliver next.
    pub fn highest(&self) -> Option<u8> {
        highest_above(self.snapshot(), None)
    }

    /// The owning CPU takes the highest pending vector.
    pub fn take_highest(&self) -> Option<u8> {
        self.take_above(None)
    }

    /// The owning CPU, with `in_service` in service, takes the highest pending vector of a
    /// higher priority class, if any.
    pub fn take_preempting(&self, in_service: u8) -> Option<u8> {
        self.take_above(Some(priority_class(in_service)))
    }

    fn take_above(&self, class: Option<u8>) -> Option<u8> {
        loop {
            let v = highest_above(self.snapshot(), class)?;
            let (w, b) = vector_bit(v);
            // Another CPU may have cleared it meanwhile ([`SharedIrr::clear`]): look again.
            if self.words[w].fetch_and(!b, Ordering::SeqCst) & b != 0 {
                return Some(v);
            }
        }
    }

    /// Clears `vector`; true if it was set (then the owner will not take it).
    pub fn clear(&self, vector: u8) -> bool {
        let (w, b) = vector_bit(vector);
        self.words[w].fetch_and(!b, Ordering::SeqCst) & b != 0
    }
}

#[cfg(all(test, not(loom)))]
mod tests {
    use super::*;
    use crate::irq::vectors::LOCAL_TIMER_VECTOR;
    use crate::posted::POSTED_MSI_NOTIFICATION_VECTOR;

    #[test]
    fn the_highest_vector_is_taken_first_and_a_second_message_merges() {
        let mut irr = Irr::default();
        assert!(irr.set(0x21));
        assert!(irr.set(0x80));
        assert!(!irr.set(0x21), "merged with the pending one");
        assert!(irr.set(LOCAL_TIMER_VECTOR));
        assert_eq!(irr.highest(), Some(LOCAL_TIMER_VECTOR));
        let order: Vec<u8> = std::iter::from_fn(|| irr.take_highest()).collect();
        assert_eq!(order, [LOCAL_TIMER_VECTOR, 0x80, 0x21]);
        assert!(!irr.any());
    }

    #[test]
    fn only_a_higher_class_preempts_the_vector_in_service() {
        let mut irr = Irr::default();
        irr.set(LOCAL_TIMER_VECTOR);
        irr.set(0x41);
        // 0xeb and 0xec share class 0xe: the timer waits for the notification's EOI.
        assert_eq!(irr.take_preempting(POSTED_MSI_NOTIFICATION_VECTOR), None);
        // Under a class-0xd notification vector it comes in; the device vector does not.
        assert_eq!(irr.take_preempting(0xdf), Some(LOCAL_TIMER_VECTOR));
        assert_eq!(irr.take_preempting(0xdf), None);
        assert_eq!(irr.take_highest(), Some(0x41));
    }

    #[test]
    fn the_shared_irr_follows_the_same_rule() {
        let irr = SharedIrr::default();
        for v in [0x21, 0xec, 0x80, 0x21] {
            irr.set(v);
        }
        assert!(irr.is_set(0x80));
        assert_eq!(irr.take_preempting(0xeb), None);
        let order: Vec<u8> = std::iter::from_fn(|| irr.take_highest()).collect();
        assert_eq!(order, [0xec, 0x80, 0x21]);
        assert!(irr.set(0x30) && irr.clear(0x30) && !irr.clear(0x30));
    }
}
