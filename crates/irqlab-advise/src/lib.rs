//! Which interrupt policy helps a workload on a platform (irqlab advise).
