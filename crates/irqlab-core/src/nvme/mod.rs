//! The NVMe PCI queue pair and the device's interrupt decisions (drivers/nvme/host/pci.c,
//! NVMe base spec features 08h/09h, and calibrated interrupts).
//!
//! - [`cq`] and [`sq`]: the rings, usable by one device thread and one host thread at
//!   once (single producer, single consumer), and cheap on one thread for the simulator.
//! - [`queue`]: a queue pair gluing the two, as `struct nvme_queue`.
//! - [`coalesce`]: feature 08h aggregation (THR/TIME), feature 09h Coalescing Disable.
//! - [`calibrated`]: calibrated interrupts (Tai et al., OSDI '21), Algorithm 2.
//! - [`gate`]: a device's message rule: a message per completion, or one outstanding
//!   per vector until the CQ head doorbell.
//! - [`device_irq`]: the device-side policy chosen by [`crate::DeviceCoalescing`].
//! - [`msix`]: one MSI-X vector as the device drives it: the policy, the gate, the
//!   aggregation timer's epoch and the vector's mask and pending bits, for both engines.
//! - [`tags`]: the host's tag set of a queue (command id to request).
//! - [`irq_handler`]: the queue's interrupt handler and poll function as step machines,
//!   built from the handler style.

pub mod calibrated;
pub mod coalesce;
pub mod cq;
pub mod device_irq;
pub mod gate;
pub mod irq_handler;
pub mod msix;
pub mod queue;
pub mod sq;
pub mod tags;

pub use calibrated::{Calibrated, CalibratedParams, Hint};
pub use coalesce::{
    CoalesceParams, CoalescingDisable, Fire, FireCause, IrqCoalescing, IrqDecision,
    IrqVectorConfig, IvOutOfRange, NvmeCoalescer,
};
pub use cq::{CompletionQueue, CqFull, Cqe};
pub use device_irq::DeviceIrq;
pub use gate::{MsiRule, UnknownMsiRule, VectorGate};
pub use irq_handler::{HandlerStep, IrqReturn, NvmeIrqHandler, NvmePoll, PollEnd};
pub use msix::{MsixAction, MsixCounters, MsixVector, Quiet};
pub use queue::QueuePair;
pub use sq::{
    NVME_CMD_READ, NVME_CMD_WRITE, SQE_HINT_BARRIER, SQE_HINT_URGENT, SqFull, Sqe, SubmissionQueue,
};
pub use tags::TagSet;

/// Queue sizes outside 2..=65536 (CAP.MQES bounds; a queue needs an empty slot).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BadQueueDepth(pub u32);

impl std::fmt::Display for BadQueueDepth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "NVMe queue depth {} is outside 2..=65536", self.0)
    }
}

impl std::error::Error for BadQueueDepth {}

pub(crate) fn check_depth(q_depth: u32) -> Result<u32, BadQueueDepth> {
    if (2..=65536).contains(&q_depth) {
        Ok(q_depth)
    } else {
        Err(BadQueueDepth(q_depth))
    }
}
