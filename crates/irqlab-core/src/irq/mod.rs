//! The kernel's interrupt decisions around the mechanisms, written once for both engines:
//! the local APIC's [`Irr`] (which pending vector the CPU takes next), an interrupt's
//! [`IrqDesc`] (disable_irq_nosync, handle_edge_irq's mask-and-pend, the resend at
//! enable_irq), the software resend's one [`ResendTasklet`] and the system [`vectors`].

mod desc;
mod irr;
mod resend;
pub mod vectors;

pub use desc::{AfterHandler, ChipOp, Edge, Enable, IrqDesc, IrqDescCounters, UnbalancedEnable};
pub use irr::{Irr, SharedIrr, priority_class};
pub use resend::{ResendTasklet, TaskletAction};
