//! What a run is made of: the fio job (a file or its text), the platform (a name or a
//! file, with `--set` overrides), the policy options and the topology knobs. The command,
//! scenario files, sweeps, calibration and the Python package all parse them here, so a
//! value means the same thing wherever it is written.

pub mod budget;
mod error;
pub mod events;
pub mod locate;
pub mod policy;
pub mod shape;
pub mod source;
pub mod topology;

pub use budget::BudgetArgs;
pub use error::{InputError, ValueError};
pub use events::EventArgs;
pub use locate::{find_dir, resolve_platform};
pub use policy::{
    DeliveryArg, HandlerArg, IrqPollUntilArg, ModeratorArg, NotificationArg, PolicyArgs, PolicyKey,
    PolicyParseError, parse_policy,
};
pub use shape::{MapRule, RunShape, ShapeArgs, Shaped, shape_jobs};
pub use source::{Inputs, JobSource};
pub use topology::{Topology, TopologyArgs, disks_used};
