//! The runtime's own settings (thread counts, placement, media), beside the policy.

use crate::error::RtError;
use crate::file_media::DEFAULT_CREATE_BYTES;
use crate::live::LiveCounters;
use crate::media::{Media, MediaModel};
use irqlab_core::StopFlag;
use irqlab_core::delivery::AffinityEvent;
use irqlab_core::{HandlerStyle, ModeratorKind, Policy};
use std::sync::Arc;

/// Emulated namespace size when the media is a model: offsets range over 1 GiB.
pub const DEFAULT_NAMESPACE_BYTES: u64 = 1 << 30;

/// How a run is laid out on this host.
#[derive(Clone, Debug, PartialEq)]
pub struct RtConfig {
    /// Threads running emulated controllers (controller c runs on thread c % n).
    pub controller_threads: usize,
    /// Threads emulating CPUs (one queue pair per CPU thread and controller).
    pub cpu_threads: usize,
    /// Pin each thread to its own host CPU (CPU threads first, then controllers).
    pub pin: bool,
    pub media: Media,
    pub seed: u64,
    /// Skip the futex call of a notification when the target thread is running.
    pub lazy_wake: bool,
    /// Bytes an emulated namespace spans (model media).
    pub namespace_bytes: u64,
    /// Abort when no completion was reaped for this long.
    pub stall_timeout_ns: u64,
    /// Size of the file `--media file:PATH` creates when PATH does not exist.
    pub media_size: u64,
    /// Counters a monitor thread may sample while the run goes on.
    pub live: Option<Arc<LiveCounters>>,
    /// Set from another thread to stop the run early (its report says so).
    pub stop: StopFlag,
    /// Affinity changes and CPUs going offline at given times (`--event`).
    pub events: Vec<AffinityEvent>,
}

impl Default for RtConfig {
    fn default() -> Self {
        RtConfig {
            controller_threads: 1,
            cpu_threads: 1,
            pin: true,
            media: Media::Model(MediaModel {
                latency_ns: 10_000,
                iops: 500_000,
            }),
            seed: 1,
            lazy_wake: false,
            namespace_bytes: DEFAULT_NAMESPACE_BYTES,
            stall_timeout_ns: 10_000_000_000,
            media_size: DEFAULT_CREATE_BYTES,
            live: None,
            stop: StopFlag::default(),
            events: Vec::new(),
        }
    }
}

/// Refuses policy choices that cannot run together, with the reason. The runtime runs
/// every policy the simulator runs and refuses what the simulator refuses: GSIM with a
/// handler that disables the vector itself (irq_poll, NAPI; neither would know when to
/// enable it).
pub fn check_policy(p: &Policy) -> Result<(), RtError> {
    if p.moderator != ModeratorKind::Gsim {
        return Ok(());
    }
    let handler = match p.handler {
        HandlerStyle::IrqPoll { .. } => "irq-poll",
        HandlerStyle::NapiDefer { .. } => "napi-defer",
        HandlerStyle::Hardirq | HandlerStyle::Threaded => return Ok(()),
    };
    Err(RtError::Refused(format!(
        "--moderator gsim with --handler {handler}: both mask the vector; choose one"
    )))
}

impl RtConfig {
    pub fn check(&self) -> Result<(), RtError> {
        if self.cpu_threads == 0 || self.controller_threads == 0 {
            return Err(RtError::Refused(
                "--cpu-threads and --controllers must be at least 1".into(),
            ));
        }
        if self.cpu_threads > 256 || self.controller_threads > 256 {
            return Err(RtError::Refused(
                "at most 256 CPU threads and 256 controller threads".into(),
            ));
        }
        Ok(())
    }
}
