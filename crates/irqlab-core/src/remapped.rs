//! The names the delivery path had before it became [`crate::delivery`]; the simulator
//! still imports them from here (docs/model.md, "How to add a delivery mode": phase 2).

pub use crate::delivery::remapped::RemappedStats;
pub use crate::delivery::{DeliveryPath, Notification, RemappedTarget};
