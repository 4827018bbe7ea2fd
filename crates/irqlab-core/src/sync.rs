//! Atomics shared between threads, swapped for loom's under `--cfg loom` so the
//! concurrent protocols (posted descriptor, NVMe completion ring) can be model-checked.

#[cfg(loom)]
#[allow(unused_imports)]
pub(crate) use loom::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering, fence};

#[cfg(not(loom))]
#[allow(unused_imports)]
pub(crate) use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering, fence};
