//! Observers of a run: they watch a simulation through `irqlab_sim::Observer` (or the
//! runtime's live counters and, after a real-thread run, what its threads recorded) and
//! turn what they see into a Perfetto trace, irqtop lines, a timeline picture or a
//! progress bar. The `irqlab` command and the Python package both use them; none of them
//! changes what the run does.

mod error;
pub mod irqtop;
pub mod observers;
pub mod progress;
pub mod rt_observers;
pub mod rt_watch;
pub mod timeline;
pub mod trace;

pub use error::ObserveError;
pub use irqtop::{IrqSnapshot, IrqTop, render_interval};
pub use observers::{ObserveArgs, Observers, parse_seconds, simulate_with_observers};
pub use progress::{Progress, SimProgress};
pub use rt_observers::{RtObserveArgs, dropped_events_warning, run_with_observers};
pub use rt_watch::{Tracing, run_watched};
pub use timeline::TimelineObserver;
pub use trace::TraceObserver;
