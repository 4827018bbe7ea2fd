//! The kernel's posted MSI notification handler (CONFIG_X86_POSTED_MSI, v6.10):
//! sysvec_posted_msi_notification (arch/x86/kernel/irq.c) runs with interrupts off on
//! POSTED_MSI_NOTIFICATION_VECTOR, calls each harvested vector's handler in the demux and
//! EOIs once. The descriptor protocol itself is [`crate::posted`].

use super::PostedMode;
use crate::posted::POSTED_MSI_NOTIFICATION_VECTOR;

/// `--notification kernel`: the merged handler.
pub const KERNEL: PostedMode = PostedMode {
    name: "kernel",
    nv: POSTED_MSI_NOTIFICATION_VECTOR,
    preemptable: false,
    self_ipi: false,
};
