//! A CPU's software interrupt moderation: GSIM's per-CPU state with its hrtimer's epoch
//! (irqlab-core gsim.rs), and Ming Lei's 2019 interrupt flood detector (core flood.rs).

use irqlab_core::flood::FloodDetector;
use irqlab_core::gsim::GsimCpu;

#[derive(Default)]
pub(crate) struct SoftModeration {
    /// GSIM's per-CPU state (with --moderator gsim).
    gsim: Option<GsimCpu>,
    /// Its timer's epoch: an expiry of an older arming is stale.
    gsim_epoch: u32,
    /// The flood detector (used with --flood-detection).
    flood: FloodDetector,
}

impl SoftModeration {
    pub fn new(gsim: Option<GsimCpu>) -> Self {
        SoftModeration {
            gsim,
            ..SoftModeration::default()
        }
    }

    #[inline]
    pub fn gsim_mut(&mut self) -> Option<&mut GsimCpu> {
        self.gsim.as_mut()
    }

    /// GSIM's hrtimer is armed again: the epoch its expiry must carry.
    pub fn arm_gsim_timer(&mut self) -> u32 {
        self.gsim_epoch = self.gsim_epoch.wrapping_add(1);
        self.gsim_epoch
    }

    /// Whether an expiry of `epoch` is the timer's latest arming.
    pub fn gsim_timer_current(&self, epoch: u32) -> bool {
        self.gsim_epoch == epoch
    }

    #[inline]
    pub fn flood_mut(&mut self) -> &mut FloodDetector {
        &mut self.flood
    }
}
