//! A machine's own evidence for the model. `irqlab capture` records a host (topology,
//! kernel options, block devices with their queues, MSI-X vectors and affinity, the
//! IOMMU) and a battery of fio runs with /proc/interrupts around each into a
//! self-describing directory; [`Capture::open`] reads such a directory, or one laid out
//! by hand, and checks every file; [`hostbench`] measures this host's syscall, wake-up,
//! context switch and timer costs.

mod battery;
pub mod cpulist;
mod cpuset_serde;
pub mod devices;
mod error;
mod fio_exec;
pub mod fio_json;
pub mod fio_summary;
pub mod host;
pub mod hostbench;
pub mod interrupts;
pub mod iommu;
pub mod irq_delta;
pub mod kernel;
pub mod lscpu;
pub mod manifest;
pub mod probe;
mod reader;
mod record;
pub mod run;
mod show;
mod target;
pub mod topology;
pub mod vectors;

pub use error::{CaptureError, Malformed};
pub use fio_exec::{Fio, find as find_fio};
pub use reader::{Capture, Skipped};
pub use record::{CaptureOptions, default_out, record};
pub use show::show;
pub use vectors::DeviceKind;
