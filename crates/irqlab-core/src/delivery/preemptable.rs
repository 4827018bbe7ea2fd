//! The posted-MSI talk's Attempt #2 (Jacob Pan, LPC 2023; not merged): the notification
//! handler "preemptable but not reentrant". Its notification vector has a lower priority
//! than the timer's and the demux runs with local_irq_enable(), so the local timer and the
//! other system vectors are not blocked behind a long demux loop; the notification vector
//! itself stays in service until the EOI, so a second notification waits in the IRR.
//!
//! The talk's slides are not in the stored material (docs/research/dynamics.md, 4.6); the
//! vector is this model's choice: the local APIC takes an interrupt only of a higher
//! priority class (vector >> 4) than the one in service, and LOCAL_TIMER_VECTOR (0xec)
//! shares class 0xe with POSTED_MSI_NOTIFICATION_VECTOR (0xeb), so the highest vector of
//! class 0xd, below which device vectors must then stay.

use super::PostedMode;

/// `--notification preemptable`.
pub const PREEMPTABLE: PostedMode = PostedMode {
    name: "preemptable",
    nv: 0xdf,
    preemptable: true,
    self_ipi: false,
};
