//! The posted-MSI talk's Attempt #3 (Jacob Pan's RFC cover letter, 11 Nov 2023: "Use
//! self-IPI to invoke MSI vector handler but that took away the majority of the
//! performance benefits"): the notification handler harvests the PIR as the kernel's does
//! but, instead of calling the handlers, sends each vector to its own CPU as an IPI; each
//! then arrives in the IRR and is taken as an interrupt of its own (entry, handler, EOI),
//! after the notification's EOI. The IOMMU's notifications stay coalesced; the CPU's
//! interrupt entries do not.

use super::PostedMode;
use crate::posted::POSTED_MSI_NOTIFICATION_VECTOR;

/// `--notification self-ipi`.
pub const SELF_IPI: PostedMode = PostedMode {
    name: "self-ipi",
    nv: POSTED_MSI_NOTIFICATION_VECTOR,
    preemptable: false,
    self_ipi: true,
};
