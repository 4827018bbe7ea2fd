//! Ming Lei's IRQ flood detector ("[PATCH 1/4] softirq: implement IRQ flood detection
//! mechanism", 27 Aug 2019, with "genirq: add IRQF_RESCUE_THREAD"; not merged).
//!
//! The rule implemented, as in the patch: per CPU, `irq_enter` takes
//! `delta = now - last_irq_end` and updates `avg = (avg*127 + delta*1) / 128`;
//! `irq_exit` stores `last_irq_end = now` *after* the softirqs it ran. So `delta` is the
//! time the CPU spent outside hardirq and irq_exit softirq work between two interrupts,
//! and a flood is `avg <= IRQ_FLOOD_THRESHOLD_NS` (8 µs): on average less than 8 µs left
//! for anything else, i.e. interrupts arriving about as fast as they are handled. A vector
//! requested with IRQF_RESCUE_THREAD then returns IRQ_WAKE_THREAD from its primary handler
//! and its work runs in a thread bound to the IRQ's affinity (only requested for vectors
//! whose affinity spans more than one CPU). In the kernel `avg` starts at 0 but the first
//! gap is the time since boot, so a CPU starts far from a flood; here the clock may start
//! at 0, so the average is seeded with the first measured gap (no flood before it).
//!
//! Why it was not merged (Thomas Gleixner): no 64-bit multiply and divide on every
//! interrupt (it breaks 32-bit builds), sched_clock may be jiffies-based, use the existing
//! kernel/irq/timings.c instead of "yet another ad hoc thingy just to make block happy",
//! and block should have a NAPI-like mode (which irq_poll is).

/// IRQ_FLOOD_THRESHOLD_NS: an average gap of 8 µs or less is a flood.
pub const IRQ_FLOOD_THRESHOLD_NS: u64 = 8_000;
/// IRQ_INTERVAL_EWMA_WEIGHT and IRQ_INTERVAL_EWMA_PREV_FACTOR.
pub const IRQ_INTERVAL_EWMA_WEIGHT: u64 = 128;
pub const IRQ_INTERVAL_EWMA_PREV_FACTOR: u64 = 127;

/// Where the flooded vector's handler runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HandlerPlacement {
    Hardirq,
    /// IRQ_WAKE_THREAD: the rescue thread runs the handler (irq_forced_thread_fn).
    RescueThread,
}

/// One CPU's `struct irq_interval`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FloodDetector {
    /// None until the first irq_exit: no gap has been measured yet.
    last_irq_end: Option<u64>,
    /// None until the first gap.
    avg: Option<u64>,
    threshold_ns: u64,
    floods: u64,
}

impl Default for FloodDetector {
    fn default() -> Self {
        FloodDetector::new(IRQ_FLOOD_THRESHOLD_NS)
    }
}

impl FloodDetector {
    pub fn new(threshold_ns: u64) -> FloodDetector {
        FloodDetector {
            last_irq_end: None,
            avg: None,
            threshold_ns,
            floods: 0,
        }
    }

    /// irq_enter → irq_update_interval.
    pub fn irq_enter(&mut self, now_ns: u64) {
        let Some(end) = self.last_irq_end else {
            return;
        };
        let delta = u128::from(now_ns.saturating_sub(end));
        let Some(prev) = self.avg else {
            self.avg = Some(u64::try_from(delta).unwrap_or(u64::MAX));
            return;
        };
        let avg = (u128::from(prev) * u128::from(IRQ_INTERVAL_EWMA_PREV_FACTOR)
            + delta * u128::from(IRQ_INTERVAL_EWMA_WEIGHT - IRQ_INTERVAL_EWMA_PREV_FACTOR))
            / u128::from(IRQ_INTERVAL_EWMA_WEIGHT);
        self.avg = Some(u64::try_from(avg).unwrap_or(u64::MAX));
    }

    /// irq_flood_detected, asked by __handle_irq_event_percpu.
    pub fn flood_detected(&self) -> bool {
        self.avg.is_some_and(|avg| avg <= self.threshold_ns)
    }

    /// Where a vector runs its handler: the rescue thread only for IRQF_RESCUE_THREAD
    /// vectors while this CPU is flooded.
    pub fn placement(&mut self, rescue_thread: bool) -> HandlerPlacement {
        if rescue_thread && self.flood_detected() {
            self.floods += 1;
            HandlerPlacement::RescueThread
        } else {
            HandlerPlacement::Hardirq
        }
    }

    /// irq_exit, after invoke_softirq.
    pub fn irq_exit(&mut self, now_ns: u64) {
        self.last_irq_end = Some(now_ns);
    }

    /// The per-CPU sysfs `irq_interval` value (0 before the first measured gap).
    pub fn avg_interval_ns(&self) -> u64 {
        self.avg.unwrap_or(0)
    }

    /// How many handlers were sent to the rescue thread.
    pub fn floods(&self) -> u64 {
        self.floods
    }
}
