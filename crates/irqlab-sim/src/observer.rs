//! A hook for tracers (the Perfetto timeline, irqtop rates). The simulator is generic over
//! an [`Observer`]; with [`NoObserver`] every call is an empty inline function and costs
//! nothing. The interface lives in irqlab-report so the real-thread runtime feeds the same
//! tracers.

pub use irqlab_report::observe::{NoObserver, Observer, SliceKind};
