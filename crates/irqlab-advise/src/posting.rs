//! Whether a platform can post MSIs: the posted-MSI patches (arch/x86/kernel/irq.c,
//! drivers/iommu/intel/irq_remapping.c, Linux 6.10) are bare metal only, with VT-d
//! interrupt remapping that posts. This is the one place that decides it for advise.

use irqlab_core::{Delivery, Policy};
use irqlab_sim::{Platform, PolicyRefused};
use std::fmt;

/// Why posted delivery is not an option on a platform.
#[derive(Clone, Debug, PartialEq)]
pub enum NoPosting {
    /// The platform refuses it (a guest: the IOMMU's remapping table is the host's).
    Refused(PolicyRefused),
    /// Its IIO stacks have no posted-descriptor update (`uncore.pid_ns` = 0).
    NoPostingUncore { platform: String },
}

impl fmt::Display for NoPosting {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NoPosting::Refused(e) => write!(f, "{e}"),
            NoPosting::NoPostingUncore { platform } => write!(
                f,
                "platform '{platform}' gives its stacks no posted-descriptor update (uncore.pid_ns = 0): no interrupt remapping that posts"
            ),
        }
    }
}

impl std::error::Error for NoPosting {}

/// Ok when posted delivery is a real option on `p`; else why not.
pub fn allowed(p: &Platform) -> Result<(), NoPosting> {
    let posted = Policy {
        delivery: Delivery::Posted { max_loop: 3 },
        ..Policy::default()
    };
    // A guest: the platform itself refuses it (the IOMMU's remapping table is the host's).
    p.allows(&posted).map_err(NoPosting::Refused)?;
    if p.uncore.pid_ns == 0 {
        return Err(NoPosting::NoPostingUncore {
            platform: p.name.clone(),
        });
    }
    Ok(())
}
