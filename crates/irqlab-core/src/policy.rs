//! The policy choices a run is made under. Both engines take a [`Policy`]; the command
//! line builds one, and reports print it back with [`Policy::describe`].

pub use crate::delivery::Delivery;
use crate::irq_poll::IrqPollUntil;
use crate::nvme::CoalescingDisable;
use std::fmt;

/// What the device itself does before raising a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeviceCoalescing {
    Off,
    /// NVMe feature 08h: `thr` is 0-based (0 means 1 entry), `time_100us` in 100 µs units.
    Nvme {
        thr: u8,
        time_100us: u8,
    },
    /// Calibrated interrupts (Tai et al., OSDI '21): adaptive delay and threshold, with
    /// URGENT and BARRIER hints from the submitter.
    Calibrated,
}

/// Which adaptive moderator reprograms the device's coalescing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ModeratorKind {
    None,
    /// lib/dim net_dim with the RX CQE-based profile table.
    NetDim,
    /// lib/dim rdma_dim (nine levels, the jump back to level 0).
    RdmaDim,
    /// Sagi Grimberg's 2018 irq-am proposal (20% threshold, two directions).
    IrqAm,
    /// GSIM: global software interrupt moderation with an adaptive per-CPU delay.
    Gsim,
}

/// How the interrupt handler runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HandlerStyle {
    /// nvme_irq in hardirq context: reap every pending CQE, ring the doorbell once.
    Hardirq,
    /// use_threaded_interrupts: the primary handler checks and wakes a thread.
    Threaded,
    /// Reap up to `budget` CQEs in hardirq, then mask and hand over to irq_poll with
    /// `weight` (Sagi's 2019 proposal, NVME_POLL_BUDGET_IRQ 256).
    IrqPoll { budget: u32, weight: u32 },
    /// NAPI's shape with its interrupt deferral: the hardirq handler masks and schedules
    /// the poll (weight `weight`), and napi_complete_done keeps the IRQ masked for up to
    /// `defer_hard_irqs` empty polls, re-polling after `gro_flush_timeout_ns`
    /// (net/core/dev.c; [`crate::napi_defer`]).
    NapiDefer {
        weight: u32,
        defer_hard_irqs: u32,
        gro_flush_timeout_ns: u64,
    },
}

impl HandlerStyle {
    /// Whether the handler hands work to a poll function on the IRQ_POLL softirq, and
    /// with which weight.
    pub fn poll_weight(self) -> Option<u32> {
        match self {
            HandlerStyle::IrqPoll { weight, .. } | HandlerStyle::NapiDefer { weight, .. } => {
                Some(weight)
            }
            HandlerStyle::Hardirq | HandlerStyle::Threaded => None,
        }
    }
}

/// Every policy choice of one run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Policy {
    pub delivery: Delivery,
    pub coalescing: DeviceCoalescing,
    pub moderator: ModeratorKind,
    pub handler: HandlerStyle,
    /// Feature 09h: the interrupt vectors whose Coalescing Disable bit is set (empty: none).
    pub coalescing_disable: CoalescingDisable,
    /// When the IRQ_POLL softirq stops polling (the kernel's budget and jiffy, or Sagi
    /// Grimberg's variant that polls until need_resched).
    pub irq_poll_until: IrqPollUntil,
    /// Ming Lei's 2019 patch: after a batch submission, trylock the CQ and reap it.
    pub reap_after_submit: bool,
    /// The 2019 softirq flood detector: move a flooded vector's work to a thread.
    pub flood_detection: bool,
}

impl Default for Policy {
    /// The stock kernel: remapped MSI, no coalescing, no moderation, hardirq handler.
    fn default() -> Self {
        Policy {
            delivery: Delivery::Remapped,
            coalescing: DeviceCoalescing::Off,
            moderator: ModeratorKind::None,
            handler: HandlerStyle::Hardirq,
            coalescing_disable: CoalescingDisable::default(),
            irq_poll_until: IrqPollUntil::Budget,
            reap_after_submit: false,
            flood_detection: false,
        }
    }
}

impl Policy {
    /// The choices as key=value pairs in a stable order, for reports. A choice added
    /// after the first reports is listed only when it is not the default, so a run that
    /// does not use it reports what it always did.
    pub fn describe(&self) -> Vec<(String, String)> {
        let mut out = vec![("delivery".to_string(), self.delivery.to_string())];
        if let Some((mode, max_loop)) = self.delivery.posted_mode() {
            out.push(("max_loop".into(), max_loop.to_string()));
            if mode != crate::delivery::posted::KERNEL {
                out.push(("notification".into(), mode.name.to_string()));
            }
        }
        out.push(("coalescing".into(), self.coalescing.to_string()));
        if !self.coalescing_disable.is_empty() {
            out.push((
                "coalescing_disable".into(),
                self.coalescing_disable.to_string(),
            ));
        }
        out.push(("moderator".into(), self.moderator.to_string()));
        out.push(("handler".into(), self.handler.to_string()));
        if self.irq_poll_until != IrqPollUntil::Budget {
            out.push(("irq_poll_until".into(), self.irq_poll_until.to_string()));
        }
        out.push((
            "reap_after_submit".into(),
            self.reap_after_submit.to_string(),
        ));
        out.push(("flood_detection".into(), self.flood_detection.to_string()));
        out
    }
}

impl fmt::Display for DeviceCoalescing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DeviceCoalescing::Off => f.write_str("off"),
            DeviceCoalescing::Nvme { thr, time_100us } => {
                write!(f, "nvme:thr={thr},time={time_100us}")
            }
            DeviceCoalescing::Calibrated => f.write_str("calibrated"),
        }
    }
}

impl fmt::Display for ModeratorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ModeratorKind::None => "none",
            ModeratorKind::NetDim => "net_dim",
            ModeratorKind::RdmaDim => "rdma_dim",
            ModeratorKind::IrqAm => "irq_am",
            ModeratorKind::Gsim => "gsim",
        })
    }
}

impl fmt::Display for HandlerStyle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            HandlerStyle::Hardirq => f.write_str("hardirq"),
            HandlerStyle::Threaded => f.write_str("threaded"),
            HandlerStyle::IrqPoll { budget, weight } => {
                write!(f, "irq_poll:budget={budget},weight={weight}")
            }
            HandlerStyle::NapiDefer {
                weight,
                defer_hard_irqs,
                gro_flush_timeout_ns,
            } => write!(
                f,
                "napi_defer:weight={weight},defer_hard_irqs={defer_hard_irqs},gro_flush_timeout_ns={gro_flush_timeout_ns}"
            ),
        }
    }
}
