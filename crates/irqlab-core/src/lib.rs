//! The interrupt-delivery mechanisms of irqlab, each a small state machine with no clock,
//! no sleeping and no threads of its own: callers pass `now` (ns) and read counters back.
//! The simulator calls them with virtual time, the real-thread runtime with the monotonic
//! clock, so each mechanism is written once.

pub mod delivery;
pub mod dim;
pub mod flood;
pub mod gsim;
pub mod hybrid;
pub mod irq;
pub mod irq_poll;
pub mod moderator;
pub mod napi_defer;
pub mod nvme;
pub mod policy;
pub mod posted;
pub mod softirq;
mod stop;
mod sync;
pub mod virtio;

pub use policy::{Delivery, DeviceCoalescing, HandlerStyle, ModeratorKind, Policy};
pub use stop::StopFlag;
