//! Everything a capture says about the machine, apart from its runs.

use crate::devices::BlockDevice;
use crate::interrupts::Snapshot;
use crate::iommu::Iommu;
use crate::kernel::Kernel;
use crate::probe::Probe;
use crate::topology::Topology;
use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Host {
    pub hostname: Option<String>,
    pub topology: Topology,
    pub kernel: Kernel,
    pub iommu: Iommu,
    pub devices: Vec<BlockDevice>,
}

impl Host {
    pub fn device(&self, name: &str) -> Option<&BlockDevice> {
        self.devices.iter().find(|d| d.name == name)
    }
}

/// Reads the host behind `p`; device vectors are found among the rows of `at_rest`.
pub fn read(p: &Probe, at_rest: Option<&Snapshot>) -> Host {
    Host {
        hostname: p.value("/proc/sys/kernel/hostname"),
        topology: crate::topology::read(p),
        kernel: crate::kernel::read(p),
        iommu: crate::iommu::read(p, at_rest),
        devices: crate::devices::read(p, at_rest),
    }
}
