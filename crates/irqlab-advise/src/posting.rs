//! Whether a platform can post MSIs: the posted-MSI patches (arch/x86/kernel/irq.c,
//! drivers/iommu/intel/irq_remapping.c, Linux 6.10) are bare metal only, with VT-d
//! interrupt remapping that posts. This is the one place that decides it for advise.

use irqlab_core::{Delivery, Policy};
use irqlab_sim::Platform;

/// Ok when posted delivery is a real option on `p`; else why not.
pub fn allowed(p: &Platform) -> Result<(), String> {
    let posted = Policy {
        delivery: Delivery::Posted { max_loop: 3 },
        ..Policy::default()
    };
    // A guest: the platform itself refuses it (the IOMMU's remapping table is the host's).
    p.allows(&posted).map_err(|e| e.to_string())?;
    if p.uncore.pid_ns == 0 {
        return Err(format!(
            "platform '{}' gives its stacks no posted-descriptor update (uncore.pid_ns = 0): no interrupt remapping that posts",
            p.name
        ));
    }
    Ok(())
}
