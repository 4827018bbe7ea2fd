//! The real-thread runtime.
