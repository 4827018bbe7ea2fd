//! NAPI interrupt deferral in napi_complete_done (net/core/dev.c): napi_defer_hard_irqs
//! with gro_flush_timeout (Eric Dumazet, 6f8b12d661d0, 2020) and irq_suspend_timeout
//! (Martin Karsten and Joe Damato, v6.13).
//!
//! After a poll that found nothing, the driver normally re-enables its IRQ. With deferral,
//! up to `napi_defer_hard_irqs` consecutive empty polls keep the IRQ masked and arm the NAPI
//! hrtimer for `gro_flush_timeout`, whose expiry schedules another poll: software interrupt
//! coalescing driven by a timer. Not modelled: GRO (block completions hold no GRO packets,
//! so `gro_bitmask` is empty and no flush timer is armed on a re-enabling completion) and
//! the NPSVC / IN_BUSY_POLL early return.

/// Per-NAPI settings (sysfs per netdev, netdev-genl `napi-set` per NAPI).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NapiDeferConfig {
    pub napi_defer_hard_irqs: u32,
    pub gro_flush_timeout_ns: u64,
    /// 0 = off. Applies only while the application prefers busy polling.
    pub irq_suspend_timeout_ns: u64,
    /// NAPI_STATE_PREFER_BUSY_POLL (set by a busy-polling epoll or io_uring context).
    pub prefer_busy_poll: bool,
}

/// What the driver does after napi_complete_done.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NapiComplete {
    /// Returned true: re-enable the device interrupt.
    ReenableIrq,
    /// Returned false: keep the IRQ masked; the NAPI timer fires after `timer_ns` and
    /// schedules the next poll (napi_watchdog).
    KeepMasked { timer_ns: u64 },
}

/// One NAPI instance's deferral state.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct NapiDefer {
    config: NapiDeferConfig,
    defer_hard_irqs_count: u32,
    deferrals: u64,
    suspensions: u64,
}

impl NapiDefer {
    pub fn new(config: NapiDeferConfig) -> NapiDefer {
        NapiDefer {
            config,
            ..NapiDefer::default()
        }
    }

    pub fn config(&self) -> NapiDeferConfig {
        self.config
    }

    /// Empty polls still allowed to keep the IRQ masked.
    pub fn defer_hard_irqs_count(&self) -> u32 {
        self.defer_hard_irqs_count
    }

    /// Completions that kept the IRQ masked for gro_flush_timeout / irq_suspend_timeout.
    pub fn deferrals(&self) -> (u64, u64) {
        (self.deferrals, self.suspensions)
    }

    /// The application toggles busy-poll preference (epoll/io_uring busy polling).
    pub fn set_prefer_busy_poll(&mut self, on: bool) {
        self.config.prefer_busy_poll = on;
    }

    /// napi_complete_done(n, work_done), called by a driver whose poll did less than its
    /// weight.
    pub fn napi_complete_done(&mut self, work_done: u32) -> NapiComplete {
        if work_done > 0 {
            // Progress: the full number of empty polls may be deferred again.
            self.defer_hard_irqs_count = self.config.napi_defer_hard_irqs;
        }
        if self.config.prefer_busy_poll && self.config.irq_suspend_timeout_ns != 0 {
            self.suspensions += 1;
            return NapiComplete::KeepMasked {
                timer_ns: self.config.irq_suspend_timeout_ns,
            };
        }
        if self.defer_hard_irqs_count > 0 {
            self.defer_hard_irqs_count -= 1;
            if self.config.gro_flush_timeout_ns != 0 {
                self.deferrals += 1;
                return NapiComplete::KeepMasked {
                    timer_ns: self.config.gro_flush_timeout_ns,
                };
            }
        }
        NapiComplete::ReenableIrq
    }

    /// busy_poll_stop with NAPI_F_PREFER_BUSY_POLL: the timer to arm (instead of scheduling
    /// the softirq) when a busy-poll loop lets go of the NAPI, if any.
    pub fn busy_poll_stop(&mut self) -> Option<u64> {
        if self.config.irq_suspend_timeout_ns != 0 {
            return Some(self.config.irq_suspend_timeout_ns);
        }
        self.defer_hard_irqs_count = self.config.napi_defer_hard_irqs;
        (self.defer_hard_irqs_count != 0 && self.config.gro_flush_timeout_ns != 0)
            .then_some(self.config.gro_flush_timeout_ns)
    }
}
