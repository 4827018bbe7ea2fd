//! A guest's vCPUs: an interrupt or IPI that finds a vCPU idle wakes a halted vCPU
//! (`guest.vcpu_wake_ns` on top of the C-state exit), unless the vCPU has been idle for
//! less than cpuidle-haltpoll's window (`guest.guest_halt_poll_ns`), in which case it is
//! still polling in the guest and has not halted (drivers/cpuidle/cpuidle-haltpoll.c).

use super::state::*;
use crate::observer::Observer;

impl<O: Observer> Sim<'_, O> {
    /// The latency of CPU `c` leaving idle for an interrupt, ns.
    #[inline]
    pub(crate) fn idle_exit_ns(&self, c: usize) -> u64 {
        if self.costs.vcpu_wake == 0 {
            return self.costs.idle_exit;
        }
        // The CPU's slice kind changed to idle when it was last charged (or the window
        // opened there, which only shortens the first idle period after the ramp).
        let idle_for = self.now - self.cpus[c].acct.charged_until();
        if idle_for < self.costs.guest_halt_poll {
            self.costs.idle_exit
        } else {
            self.costs.idle_exit + self.costs.vcpu_wake
        }
    }
}
