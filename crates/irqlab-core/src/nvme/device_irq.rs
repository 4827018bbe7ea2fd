//! The device-side interrupt policy of one vector, chosen by [`DeviceCoalescing`]: the
//! engines call this one type whichever policy a run uses.

use super::calibrated::{Calibrated, CalibratedParams, Hint};
use super::coalesce::{
    CoalesceParams, Fire, FireCause, IrqCoalescing, IrqDecision, IrqVectorConfig, NvmeCoalescer,
};
use crate::policy::DeviceCoalescing;

#[derive(Clone, Debug)]
pub enum DeviceIrq {
    /// Every completion raises the vector.
    Off,
    /// Feature 08h aggregation (with 09h CD), or (usec, count) on a finer device.
    Nvme(NvmeCoalescer),
    /// Calibrated interrupts, Algorithm 2.
    Calibrated(Calibrated),
}

impl DeviceIrq {
    pub fn from_policy(c: DeviceCoalescing) -> Self {
        match c {
            DeviceCoalescing::Off => DeviceIrq::Off,
            DeviceCoalescing::Nvme { thr, time_100us } => {
                DeviceIrq::Nvme(NvmeCoalescer::from_feature(IrqCoalescing {
                    thr,
                    time_100us,
                }))
            }
            DeviceCoalescing::Calibrated => {
                DeviceIrq::Calibrated(Calibrated::new(CalibratedParams::default()))
            }
        }
    }

    /// The policy's aggregation on the vector `cfg` names, with its feature 09h Coalescing
    /// Disable applied (CD only matters to 08h aggregation).
    pub fn for_vector(c: DeviceCoalescing, cfg: IrqVectorConfig) -> Self {
        let mut irq = DeviceIrq::from_policy(c);
        if let DeviceIrq::Nvme(n) = &mut irq {
            n.set_vector_config(cfg);
        }
        irq
    }

    /// A completion was posted at `now_ns`; `hint` matters only to calibrated interrupts.
    pub fn on_completion(&mut self, now_ns: u64, hint: Hint) -> IrqDecision {
        match self {
            DeviceIrq::Off => IrqDecision::Fire(Fire {
                coalesced: 1,
                cause: FireCause::Immediate,
            }),
            DeviceIrq::Nvme(c) => c.on_completion(now_ns),
            DeviceIrq::Calibrated(c) => c.on_completion(now_ns, hint),
        }
    }

    /// The timer armed by an ArmTimer decision went off.
    pub fn on_timer(&mut self, now_ns: u64) -> Option<Fire> {
        match self {
            DeviceIrq::Off => None,
            DeviceIrq::Nvme(c) => c.on_timer(now_ns),
            DeviceIrq::Calibrated(c) => c.on_timer(now_ns),
        }
    }

    /// The host acknowledged every posted entry (a CQ head doorbell): an aggregation that
    /// runs from the first unacknowledged entry is cancelled. Returns whether one was.
    pub fn on_ack_all(&mut self) -> bool {
        match self {
            DeviceIrq::Nvme(c) => c.on_ack_all(),
            _ => false,
        }
    }

    /// The live deadline, if completions are withheld.
    pub fn deadline(&self) -> Option<u64> {
        match self {
            DeviceIrq::Off => None,
            DeviceIrq::Nvme(c) => c.deadline(),
            DeviceIrq::Calibrated(c) => c.deadline(),
        }
    }

    /// A moderator programs (usec, count): 08h-style aggregation replaces whatever ran.
    pub fn program(&mut self, params: CoalesceParams, now_ns: u64) -> IrqDecision {
        match self {
            DeviceIrq::Nvme(c) => c.set_params(params, now_ns),
            _ => {
                // Completions a calibrated device was withholding go out with the switch.
                let carried = match self {
                    DeviceIrq::Calibrated(c) => c.coalesced(),
                    _ => 0,
                };
                *self = DeviceIrq::Nvme(NvmeCoalescer::new(params));
                if carried > 0 {
                    IrqDecision::Fire(Fire {
                        coalesced: carried,
                        cause: FireCause::Immediate,
                    })
                } else {
                    IrqDecision::Hold
                }
            }
        }
    }
}
