//! One MSI-X vector as the device drives it: the device's aggregation ([`DeviceIrq`]),
//! its message rule ([`VectorGate`]), the epoch of the aggregation timer, and the vector's
//! MSI-X table entry: the Vector Control mask bit and its bit in the Pending Bit Array.
//!
//! PCI MSI-X (PCI Local Bus spec 3.0 §6.8.2; drivers/pci/msi/msi.c pci_msix_mask writes
//! PCI_MSIX_ENTRY_CTRL_MASKBIT): a function may not send a message for a masked vector;
//! it sets the vector's pending bit instead, and sends the message when the vector is
//! unmasked with the bit still set.
//!
//! The stages, in the order a completion meets them:
//!
//! ```text
//! completion ──> mask bit ──> aggregation (DeviceIrq) ──> rule (VectorGate) ──> message
//!                   │ masked: the pending bit owes a raise; unmask raises it through the rule
//! ```
//!
//! A completion posted while the vector is masked does not reach the aggregation: the
//! pending bit remembers that a raise is owed, and [`MsixVector::unmask`] makes that raise
//! through the rule (which sends nothing for entries the host consumed meanwhile).
//!
//! Every method returns an [`MsixAction`] for the engine to carry out: send the message,
//! arm the aggregation timer, or nothing (and why, for the engine's counters). State
//! changes happen inside the call, so an engine may carry the action out later in the
//! same step, after work of its own that does not touch this vector.
//!
//! # Who calls what
//!
//! | call                                     | simulator (irqlab-sim model/)            | runtime (irqlab-rt)              |
//! |------------------------------------------|------------------------------------------|----------------------------------|
//! | [`MsixVector::post_completion`]          | device.rs `emit_completion`              | ctrl.rs `Controller::pass`       |
//! | [`MsixVector::post_completion_ignoring_mask`] | target.rs `target_receive` (NVMe over RDMA target CQ) | not used               |
//! | [`MsixVector::timer_expired`]            | device.rs `coalesce_timer`               | ctrl.rs `Controller::pass`       |
//! | [`MsixAction::ArmTimer`]'s epoch         | device.rs `carry_out` (a CoalesceTimer event) | ctrl.rs `CtrlQueue::carry_out` |
//! | [`MsixVector::cq_head_doorbell`]         | device.rs `cq_doorbell_arrives`          | ctrl.rs `Controller::pass`       |
//! | [`MsixVector::mask`]                     | cpu.rs `start_vector` (mask_ack_irq)     | not used (below)                 |
//! | [`MsixVector::unmask`]                   | device.rs `unmask_vector`                | not used (below)                 |
//! | [`MsixVector::program`]                  | device.rs `moderator_program`            | ctrl.rs `Controller::pass`       |
//!
//! The runtime never masks this machine: its host masks the vector from CPU and
//! ksoftirqd threads while the controller thread runs, so the mask and pending bits it
//! writes are shared atomics (irqlab-rt shared.rs, driven by [`crate::irq::IrqDesc`])
//! applied after the rule.

use super::calibrated::Hint;
use super::coalesce::{CoalesceParams, Fire, IrqDecision, IrqVectorConfig};
use super::device_irq::DeviceIrq;
use super::gate::{MsiRule, VectorGate};
use crate::policy::DeviceCoalescing;

/// What the engine does after a call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum MsixAction {
    /// Send the vector's MSI-X message now.
    SendMsi,
    /// The completion is aggregated: call [`MsixVector::timer_expired`] with `epoch` at
    /// `deadline_ns` (never earlier than the call's `now_ns`). Timers armed with an older
    /// epoch are stale.
    ArmTimer { deadline_ns: u64, epoch: u32 },
    /// No message now.
    Quiet(Quiet),
}

/// Why a call sent no message.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Quiet {
    /// The device aggregates the completion; the timer already armed stands.
    Coalesced,
    /// A message is outstanding: the raise waits for the CQ head doorbell.
    Outstanding,
    /// The raise found every entry consumed by the host: nothing is owed.
    Consumed,
    /// The vector is masked: its pending bit holds the raise until unmask.
    Masked,
    /// Nothing was owed: a stale or empty timer, a doorbell with no raise waiting, a
    /// program with nothing aggregated, an unmask with nothing pending.
    NothingDue,
}

/// What the vector did, whole-run totals.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MsixCounters {
    /// Completions posted on the vector's CQ.
    pub completions: u64,
    /// Messages sent ([`MsixAction::SendMsi`] returned).
    pub messages: u64,
    /// Completions a fired aggregation covered besides the one that fired it: those that
    /// got no message of their own.
    pub coalesced: u64,
    /// Raises that found a message outstanding.
    pub outstanding_raises: u64,
    /// Raises that found every entry consumed.
    pub consumed_raises: u64,
    /// Completions and raises the pending bit took while the vector was masked.
    pub pended: u64,
}

/// The device side of one MSI-X vector.
#[derive(Clone, Debug)]
pub struct MsixVector {
    irq: DeviceIrq,
    gate: VectorGate,
    /// Vector Control bit 0 (PCI_MSIX_ENTRY_CTRL_MASKBIT).
    masked: bool,
    /// The vector's bit in the Pending Bit Array.
    pending: bool,
    /// Bumped at each arming of the aggregation timer.
    timer_epoch: u32,
    counters: MsixCounters,
}

impl MsixVector {
    /// An unmasked vector with aggregation `irq` and message rule `rule`.
    pub fn new(irq: DeviceIrq, rule: MsiRule) -> Self {
        MsixVector {
            irq,
            gate: VectorGate::with_rule(rule),
            masked: false,
            pending: false,
            timer_epoch: 0,
            counters: MsixCounters::default(),
        }
    }

    /// An unmasked vector with the aggregation a policy chose.
    pub fn from_policy(coalescing: DeviceCoalescing, rule: MsiRule) -> Self {
        Self::new(DeviceIrq::from_policy(coalescing), rule)
    }

    /// [`MsixVector::from_policy`] for the vector `cfg` names, with its feature 09h
    /// Coalescing Disable.
    pub fn for_vector(coalescing: DeviceCoalescing, cfg: IrqVectorConfig, rule: MsiRule) -> Self {
        Self::new(DeviceIrq::for_vector(coalescing, cfg), rule)
    }

    /// The device posted a completion entry on the vector's CQ at `now_ns`; `unacked` is
    /// the number of entries past the CQ head doorbell, this one included (entries still
    /// on their way to host memory count). `hint` matters to calibrated interrupts only.
    #[inline]
    pub fn post_completion(&mut self, now_ns: u64, hint: Hint, unacked: u32) -> MsixAction {
        if self.masked {
            self.counters.completions += 1;
            return self.hold();
        }
        self.post_completion_ignoring_mask(now_ns, hint, unacked)
    }

    /// [`Self::post_completion`] for a vector whose mask bit the caller does not apply:
    /// the simulator's NVMe over RDMA target CQ (model/target.rs) raises through the
    /// aggregation and the rule even while its vector is masked.
    pub fn post_completion_ignoring_mask(
        &mut self,
        now_ns: u64,
        hint: Hint,
        unacked: u32,
    ) -> MsixAction {
        self.counters.completions += 1;
        match self.irq.on_completion(now_ns, hint) {
            IrqDecision::Fire(f) => {
                self.count_fire(f);
                self.raise(unacked)
            }
            IrqDecision::ArmTimer { deadline_ns } => self.arm(deadline_ns, now_ns),
            IrqDecision::Hold => MsixAction::Quiet(Quiet::Coalesced),
        }
    }

    /// The aggregation timer armed with `epoch` went off at `now_ns`.
    pub fn timer_expired(&mut self, now_ns: u64, epoch: u32, unacked: u32) -> MsixAction {
        if epoch != self.timer_epoch {
            return MsixAction::Quiet(Quiet::NothingDue);
        }
        match self.irq.on_timer(now_ns) {
            Some(f) => {
                self.count_fire(f);
                self.raise_unless_masked(unacked)
            }
            None => MsixAction::Quiet(Quiet::NothingDue),
        }
    }

    /// The CQ head doorbell reached the device; `unacked` is the number of entries past
    /// the new head. It acknowledges the outstanding message; a raise that waited for it
    /// goes out now if entries remain, or into the pending bit while masked. With every
    /// entry acknowledged, an aggregation that times from the first unacknowledged entry
    /// is cancelled ([`super::coalesce::NvmeCoalescer::acknowledging`]).
    #[inline]
    pub fn cq_head_doorbell(&mut self, unacked: u32) -> MsixAction {
        if unacked == 0 {
            // A device timing from the first unacknowledged entry has nothing left to time.
            self.irq.on_ack_all();
        }
        if self.masked {
            let owed = self.gate.has_withheld() && unacked > 0;
            self.gate.on_cq_doorbell(0);
            return if owed {
                self.hold()
            } else {
                MsixAction::Quiet(Quiet::NothingDue)
            };
        }
        if self.gate.on_cq_doorbell(unacked) {
            self.counters.messages += 1;
            MsixAction::SendMsi
        } else {
            MsixAction::Quiet(Quiet::NothingDue)
        }
    }

    /// The host sets the vector's mask bit (mask_ack_irq after disable_irq_nosync).
    pub fn mask(&mut self) {
        self.masked = true;
    }

    /// The host clears the mask bit (enable_irq). A raise the pending bit owes goes
    /// through the rule now; so does one for entries still at the host's CQ head
    /// (`cqe_pending`, nvme_cqe_pending), which a poller that re-enables the vector left.
    /// Also valid on an unmasked vector (a lazy disable_irq that never masked).
    pub fn unmask(&mut self, unacked: u32, cqe_pending: bool) -> MsixAction {
        self.masked = false;
        let pending = std::mem::take(&mut self.pending);
        if pending || cqe_pending {
            self.raise(unacked)
        } else {
            MsixAction::Quiet(Quiet::NothingDue)
        }
    }

    /// A moderator programs new aggregation parameters (Set Features 08h, or (usec,
    /// count) on a finer device) at `now_ns`; aggregated completions are judged against
    /// them at once.
    pub fn program(&mut self, params: CoalesceParams, now_ns: u64, unacked: u32) -> MsixAction {
        match self.irq.program(params, now_ns) {
            IrqDecision::Fire(f) => {
                self.count_fire(f);
                self.raise_unless_masked(unacked)
            }
            IrqDecision::ArmTimer { deadline_ns } => self.arm(deadline_ns, now_ns),
            IrqDecision::Hold => MsixAction::Quiet(Quiet::NothingDue),
        }
    }

    /// The mask bit.
    pub fn is_masked(&self) -> bool {
        self.masked
    }

    /// The pending bit.
    pub fn is_pending(&self) -> bool {
        self.pending
    }

    /// The epoch of the timer armed last.
    pub fn timer_epoch(&self) -> u32 {
        self.timer_epoch
    }

    pub fn counters(&self) -> MsixCounters {
        self.counters
    }

    /// The device's aggregation (its live deadline, its parameters).
    pub fn irq(&self) -> &DeviceIrq {
        &self.irq
    }

    /// The message rule and whether a message is outstanding.
    pub fn gate(&self) -> &VectorGate {
        &self.gate
    }

    fn count_fire(&mut self, f: Fire) {
        self.counters.coalesced += u64::from(f.coalesced.saturating_sub(1));
    }

    fn arm(&mut self, deadline_ns: u64, now_ns: u64) -> MsixAction {
        self.timer_epoch = self.timer_epoch.wrapping_add(1);
        MsixAction::ArmTimer {
            deadline_ns: deadline_ns.max(now_ns),
            epoch: self.timer_epoch,
        }
    }

    fn hold(&mut self) -> MsixAction {
        self.pending = true;
        self.counters.pended += 1;
        MsixAction::Quiet(Quiet::Masked)
    }

    fn raise_unless_masked(&mut self, unacked: u32) -> MsixAction {
        if self.masked {
            self.hold()
        } else {
            self.raise(unacked)
        }
    }

    /// The device wants to signal the vector: the rule decides.
    fn raise(&mut self, unacked: u32) -> MsixAction {
        if self.gate.raise(unacked) {
            self.counters.messages += 1;
            MsixAction::SendMsi
        } else if unacked == 0 {
            self.counters.consumed_raises += 1;
            MsixAction::Quiet(Quiet::Consumed)
        } else {
            self.counters.outstanding_raises += 1;
            MsixAction::Quiet(Quiet::Outstanding)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const AGGREGATE_4_IN_10US: CoalesceParams = CoalesceParams {
        count: 4,
        time_ns: 10_000,
    };

    fn aggregating() -> MsixVector {
        let mut v = MsixVector::new(DeviceIrq::Off, MsiRule::UntilDoorbell);
        assert_eq!(
            v.program(AGGREGATE_4_IN_10US, 0, 0),
            MsixAction::Quiet(Quiet::NothingDue)
        );
        v
    }

    #[test]
    fn one_message_outstanding_until_the_doorbell_then_a_resend_for_what_is_left() {
        let mut v = MsixVector::from_policy(DeviceCoalescing::Off, MsiRule::UntilDoorbell);
        assert_eq!(v.post_completion(0, Hint::None, 1), MsixAction::SendMsi);
        assert_eq!(
            v.post_completion(1, Hint::None, 2),
            MsixAction::Quiet(Quiet::Outstanding)
        );
        assert_eq!(v.cq_head_doorbell(1), MsixAction::SendMsi, "one entry left");
        assert_eq!(v.cq_head_doorbell(0), MsixAction::Quiet(Quiet::NothingDue));
        let c = v.counters();
        assert_eq!((c.completions, c.messages, c.outstanding_raises), (2, 2, 1));
    }

    #[test]
    fn per_completion_sends_for_every_entry_but_not_for_consumed_ones() {
        let mut v = MsixVector::from_policy(DeviceCoalescing::Off, MsiRule::PerCompletion);
        assert_eq!(v.post_completion(0, Hint::None, 1), MsixAction::SendMsi);
        assert_eq!(v.post_completion(0, Hint::None, 2), MsixAction::SendMsi);
        assert_eq!(
            v.post_completion(0, Hint::None, 0),
            MsixAction::Quiet(Quiet::Consumed)
        );
        assert_eq!(v.counters().consumed_raises, 1);
    }

    #[test]
    fn the_aggregation_timer_fires_once_and_older_epochs_are_stale() {
        let mut v = aggregating();
        let MsixAction::ArmTimer { deadline_ns, epoch } = v.post_completion(100, Hint::None, 1)
        else {
            panic!("the first aggregated completion arms the timer");
        };
        assert_eq!((deadline_ns, epoch), (10_100, 1));
        assert_eq!(
            v.post_completion(200, Hint::None, 2),
            MsixAction::Quiet(Quiet::Coalesced)
        );
        assert_eq!(
            v.timer_expired(10_100, epoch.wrapping_sub(1), 2),
            MsixAction::Quiet(Quiet::NothingDue),
            "stale epoch"
        );
        assert_eq!(v.timer_expired(10_100, epoch, 2), MsixAction::SendMsi);
        assert_eq!(
            v.timer_expired(10_100, epoch, 2),
            MsixAction::Quiet(Quiet::NothingDue),
            "fired already"
        );
        assert_eq!(v.counters().coalesced, 1, "two completions, one message");
    }

    #[test]
    fn a_masked_vector_pends_completions_and_raises_once_at_unmask() {
        let mut v = MsixVector::from_policy(DeviceCoalescing::Off, MsiRule::UntilDoorbell);
        v.mask();
        assert_eq!(
            v.post_completion(0, Hint::None, 1),
            MsixAction::Quiet(Quiet::Masked)
        );
        assert_eq!(
            v.post_completion(0, Hint::None, 2),
            MsixAction::Quiet(Quiet::Masked)
        );
        assert!(v.is_pending());
        assert_eq!(v.unmask(2, false), MsixAction::SendMsi);
        assert!(!v.is_masked() && !v.is_pending());
        assert_eq!(v.unmask(2, false), MsixAction::Quiet(Quiet::NothingDue));
        assert_eq!(v.counters().pended, 2);
    }

    #[test]
    fn unmask_owes_nothing_for_entries_the_host_already_consumed() {
        let mut v = MsixVector::from_policy(DeviceCoalescing::Off, MsiRule::UntilDoorbell);
        v.mask();
        let _ = v.post_completion(0, Hint::None, 1);
        assert_eq!(v.unmask(0, false), MsixAction::Quiet(Quiet::Consumed));
    }

    #[test]
    fn unmask_raises_for_entries_left_at_the_cq_head_without_a_pending_bit() {
        let mut v = MsixVector::from_policy(DeviceCoalescing::Off, MsiRule::UntilDoorbell);
        assert_eq!(v.unmask(3, true), MsixAction::SendMsi);
    }

    #[test]
    fn a_doorbell_while_masked_moves_the_waiting_raise_into_the_pending_bit() {
        let mut v = MsixVector::from_policy(DeviceCoalescing::Off, MsiRule::UntilDoorbell);
        assert_eq!(v.post_completion(0, Hint::None, 1), MsixAction::SendMsi);
        assert_eq!(
            v.post_completion(0, Hint::None, 2),
            MsixAction::Quiet(Quiet::Outstanding)
        );
        v.mask();
        assert_eq!(v.cq_head_doorbell(1), MsixAction::Quiet(Quiet::Masked));
        assert!(!v.gate().is_outstanding(), "the doorbell acknowledged it");
        assert_eq!(v.unmask(1, false), MsixAction::SendMsi);
    }

    #[test]
    fn a_doorbell_while_masked_with_nothing_left_owes_nothing() {
        let mut v = MsixVector::from_policy(DeviceCoalescing::Off, MsiRule::UntilDoorbell);
        let _ = v.post_completion(0, Hint::None, 1);
        let _ = v.post_completion(0, Hint::None, 2);
        v.mask();
        assert_eq!(v.cq_head_doorbell(0), MsixAction::Quiet(Quiet::NothingDue));
        assert!(!v.is_pending());
    }

    #[test]
    fn a_timer_or_a_program_that_fires_while_masked_pends() {
        let mut v = aggregating();
        let MsixAction::ArmTimer { epoch, .. } = v.post_completion(0, Hint::None, 1) else {
            panic!("armed");
        };
        v.mask();
        assert_eq!(
            v.timer_expired(10_000, epoch, 1),
            MsixAction::Quiet(Quiet::Masked)
        );
        let mut w = aggregating();
        let _ = w.post_completion(0, Hint::None, 1);
        w.mask();
        assert_eq!(
            w.program(CoalesceParams::OFF, 5, 1),
            MsixAction::Quiet(Quiet::Masked)
        );
        assert!(v.is_pending() && w.is_pending());
    }

    #[test]
    fn a_program_rearms_with_a_new_epoch_from_the_first_aggregated_completion() {
        let mut v = aggregating();
        let _ = v.post_completion(1_000, Hint::None, 1);
        let longer = CoalesceParams {
            count: 4,
            time_ns: 50_000,
        };
        assert_eq!(
            v.program(longer, 2_000, 1),
            MsixAction::ArmTimer {
                deadline_ns: 51_000,
                epoch: 2
            }
        );
        assert_eq!(
            v.timer_expired(11_000, 1, 1),
            MsixAction::Quiet(Quiet::NothingDue)
        );
        assert_eq!(v.timer_expired(51_000, 2, 1), MsixAction::SendMsi);
    }

    #[test]
    fn the_completion_that_reaches_the_threshold_sends_for_all() {
        let mut v = aggregating();
        for n in 1..4 {
            assert_ne!(
                v.post_completion(n, Hint::None, n as u32),
                MsixAction::SendMsi
            );
        }
        assert_eq!(v.post_completion(4, Hint::None, 4), MsixAction::SendMsi);
        assert_eq!(v.counters().coalesced, 3);
    }

    #[test]
    fn ignoring_the_mask_raises_while_masked() {
        let mut v = MsixVector::from_policy(DeviceCoalescing::Off, MsiRule::UntilDoorbell);
        v.mask();
        assert_eq!(
            v.post_completion_ignoring_mask(0, Hint::None, 1),
            MsixAction::SendMsi
        );
        assert!(!v.is_pending());
    }
}
