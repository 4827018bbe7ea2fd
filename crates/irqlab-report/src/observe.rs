//! What an engine tells a tracer as a run goes on (the Perfetto timeline, the timeline
//! picture, irqtop rates). Engine-neutral: the simulator calls an [`Observer`] as its
//! events happen in virtual time; the real-thread runtime records what its threads did
//! with the monotonic clock and replays it, in time order, after the run.

/// What a CPU is doing during a slice of time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SliceKind {
    Idle,
    Usr,
    Sys,
    HardIrq,
    SoftIrq,
    Ksoftirqd,
    IrqThread,
}

impl SliceKind {
    pub fn name(self) -> &'static str {
        match self {
            SliceKind::Idle => "idle",
            SliceKind::Usr => "usr",
            SliceKind::Sys => "sys",
            SliceKind::HardIrq => "hardirq",
            SliceKind::SoftIrq => "softirq",
            SliceKind::Ksoftirqd => "ksoftirqd",
            SliceKind::IrqThread => "irq_thread",
        }
    }
}

/// Called by an engine as things happen, with `now` non-decreasing; every method has an
/// empty default.
pub trait Observer {
    /// Called once before the first event: the report's vector names (indexed as in
    /// `message` and `handler`) and the number of CPUs.
    fn start(&mut self, _vector_names: &[String], _ncpus: usize) {}
    /// Whether `counter` calls are wanted; false skips computing their values.
    fn wants_counters(&self) -> bool {
        false
    }
    /// CPU `cpu` starts doing `kind` at `now` (the previous slice ends there).
    fn slice(&mut self, _now: u64, _cpu: usize, _kind: SliceKind) {}
    /// A device raised an MSI for vector `vector` (index into the report's vectors).
    fn message(&mut self, _now: u64, _vector: usize) {}
    /// A CPU notification was sent to `cpu` (`pmn` for a posted MSI notification).
    fn notification(&mut self, _now: u64, _cpu: usize, _pmn: bool) {}
    /// A vector's handler ran on `cpu` and reaped `cqes` completions.
    fn handler(&mut self, _now: u64, _cpu: usize, _vector: usize, _cqes: u32) {}
    /// A named counter changed: "moderation_level" (per vector), "pir_pending" (posted
    /// PIR bits set, per CPU), "iodepth" (I/Os a job has in flight, per job).
    fn counter(&mut self, _now: u64, _name: &str, _index: usize, _value: f64) {}
    /// The measured window (what the report counts) opens (`open`) or closes at `now`.
    fn window(&mut self, _now: u64, _open: bool) {}
    /// A /proc/interrupts count went up on `cpu`: a device vector's handler started
    /// (`Some(vector)`) or a posted MSI notification was taken (`None`, the PMN row).
    /// Called where the report counts them, so inside the window the sums agree.
    fn irq_counted(&mut self, _now: u64, _cpu: usize, _vector: Option<usize>) {}
}

/// The observer that observes nothing.
#[derive(Clone, Copy, Debug, Default)]
pub struct NoObserver;

impl Observer for NoObserver {}
