//! IDT vectors of the system interrupts (arch/x86/include/asm/irq_vectors.h).

/// The local APIC timer (the LOC row of /proc/interrupts).
pub const LOCAL_TIMER_VECTOR: u8 = 0xec;
/// The reschedule IPI.
pub const RESCHEDULE_VECTOR: u8 = 0xfd;
/// Device MSI-X vectors start here (FIRST_EXTERNAL_VECTOR); see also
/// [`crate::posted::FIRST_SYSTEM_VECTOR`], where they end.
pub const FIRST_EXTERNAL_VECTOR: u8 = crate::posted::FIRST_EXTERNAL_VECTOR;
