//! Whether a platform can post MSIs: the posted-MSI patches (arch/x86/kernel/irq.c,
//! drivers/iommu/intel/irq_remapping.c, Linux 6.10) are bare metal only, with VT-d
//! interrupt remapping that can post. This is the one place that decides it for advise.
//!
//! This build's platform has no guest part yet (issue 20 item 3 adds `[guest]` and
//! `Platform::allows`); until it does, every platform is taken as bare metal.

use irqlab_sim::Platform;

/// Ok when posted delivery is a real option on `p`; else why not.
pub fn allowed(p: &Platform) -> Result<(), String> {
    if p.uncore.pid_ns == 0 {
        return Err(format!(
            "platform '{}' gives its stacks no posted-descriptor update (uncore.pid_ns = 0): no interrupt remapping that posts",
            p.name
        ));
    }
    Ok(())
}
