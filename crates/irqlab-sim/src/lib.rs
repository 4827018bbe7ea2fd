//! The discrete-event model of the completion path.
