//! One device MSI-X vector: its route (CPU and IDT vector), the device side of its
//! interrupt (core's `MsixVector`: coalescing, the one-message rule, mask and pending
//! bit), genirq's descriptor of it (core's `IrqDesc`: disabled, pended, in progress), the
//! handler's irq_poll instance and irq thread, its adaptive moderator and its counters.
//! It owns all of them; what it decides is answered as core's `MsixAction` (a message to
//! send, a coalescing timer to arm), `Edge` and `AfterHandler`, which the simulator
//! carries out (model/device.rs, model/genirq.rs, model/cpu.rs).

use super::ids::{CpuId, QueueId, ThreadId};
use irqlab_core::irq::{AfterHandler, ChipOp, Edge, IrqDesc};
use irqlab_core::irq_poll::IrqPollId;
use irqlab_core::moderator::Moderator;
use irqlab_core::nvme::{CoalesceParams, Hint, MsixAction, MsixVector, Quiet};

pub(crate) struct Vector {
    name: String,
    queue: QueueId,
    cpu: CpuId,
    idt: u16,
    /// The device side of the vector: coalescing, the one-message rule, the MSI-X mask
    /// and pending bit, the coalescing timer's epoch (irqlab-core nvme::msix).
    msix: MsixVector,
    /// genirq's descriptor (core's, as the runtime's): disabled by irq_poll or GSIM,
    /// pended, in progress; model/genirq.rs carries out its decisions.
    desc: IrqDesc,
    iop: Option<IrqPollId>,
    thread: Option<ThreadId>,
    /// IRQTF_RUNTHREAD: the primary handler woke the irq thread (kernel/irq/manage.c).
    thread_pending: bool,
    /// Requested with no primary handler (idxd's kernel work queues,
    /// drivers/dma/idxd/device.c: request_threaded_irq(vector, NULL, idxd_wq_thread, ...)):
    /// irq_default_primary_handler wakes the thread on every interrupt.
    default_primary: bool,
    /// An RDMA CQ polled in softirq (IB_POLL_SOFTIRQ, drivers/infiniband/core/cq.c): the
    /// hardirq is the EQ's handler, this long, and ib_poll_handler runs from irq_poll.
    ib_eq_ns: Option<u64>,
    /// The adaptive moderator reprogramming this vector's coalescing (lib/dim, irq-am).
    moderator: Option<Moderator>,
    /// Bytes of the completions reaped since the moderator was last fed.
    bytes_since: u64,
    // statistics
    messages: u64,
    per_cpu: Vec<u64>,
    device_coalesced: u64,
    completions: u64,
    /// Messages merged into a pending IRR or PIR bit, or into the device's held one.
    merged: u64,
    /// Messages that reached a CPU while the vector was disabled (IRQS_PENDING).
    pended: u64,
    /// Interrupts enable_irq retriggered with a self-IPI (no device message).
    resent: u64,
    withheld: u64,
}

/// What enable_irq did to a vector (model/genirq.rs carries out the resend and the action).
pub(crate) struct Enabled {
    /// The chip had been masked: an MSI-X table write to undo.
    pub was_masked: bool,
    /// An interrupt that found the IRQ disabled is to be resent (check_irq_resend).
    pub resend: bool,
    /// What unmasking made the device do.
    pub action: MsixAction,
}

impl Vector {
    /// Queue `queue`'s vector `name`, on IDT vector `idt` of CPU `cpu`, its device side
    /// `msix`, enabled and quiet, with a counter for each of `ncpu` CPUs; the handler's
    /// parts come with the `with_` methods.
    pub(crate) fn new(
        name: String,
        queue: QueueId,
        cpu: CpuId,
        idt: u16,
        msix: MsixVector,
        ncpu: usize,
    ) -> Vector {
        Vector {
            name,
            queue,
            cpu,
            idt,
            msix,
            desc: IrqDesc::new(),
            iop: None,
            thread: None,
            thread_pending: false,
            default_primary: false,
            ib_eq_ns: None,
            moderator: None,
            bytes_since: 0,
            messages: 0,
            per_cpu: vec![0; ncpu],
            device_coalesced: 0,
            completions: 0,
            merged: 0,
            pended: 0,
            resent: 0,
            withheld: 0,
        }
    }

    /// Its handler's irq_poll instance on its CPU.
    pub(crate) fn with_irq_poll(mut self, iop: Option<IrqPollId>) -> Vector {
        self.iop = iop;
        self
    }

    /// Its irq thread; `default_primary`: requested with no primary handler.
    pub(crate) fn with_thread(mut self, thread: Option<ThreadId>, default_primary: bool) -> Vector {
        self.thread = thread;
        self.default_primary = default_primary;
        self
    }

    /// An RDMA CQ polled in softirq, whose hardirq is the EQ's handler of `eq_ns`.
    pub(crate) fn with_ib_eq(mut self, eq_ns: Option<u64>) -> Vector {
        self.ib_eq_ns = eq_ns;
        self
    }

    /// The adaptive moderator reprogramming its coalescing.
    pub(crate) fn with_moderator(mut self, moderator: Option<Moderator>) -> Vector {
        self.moderator = moderator;
        self
    }

    /// A counter for each of `ncpu` CPUs (CPUs added after the vector: a target's).
    pub(crate) fn fit_cpus(&mut self, ncpu: usize) {
        self.per_cpu.resize(ncpu, 0);
    }

    // ---------------------------------------------------------------- what it is

    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    #[inline(always)]
    pub(crate) fn queue(&self) -> QueueId {
        self.queue
    }

    /// The CPU its messages go to (its IRTE's destination).
    #[inline(always)]
    pub(crate) fn cpu(&self) -> CpuId {
        self.cpu
    }

    /// Its IDT vector on its CPU.
    #[inline(always)]
    pub(crate) fn idt(&self) -> u16 {
        self.idt
    }

    #[inline]
    pub(crate) fn iop(&self) -> Option<IrqPollId> {
        self.iop
    }

    #[inline]
    pub(crate) fn thread(&self) -> Option<ThreadId> {
        self.thread
    }

    #[inline]
    pub(crate) fn default_primary(&self) -> bool {
        self.default_primary
    }

    #[inline]
    pub(crate) fn ib_eq_ns(&self) -> Option<u64> {
        self.ib_eq_ns
    }

    pub(crate) fn moderator(&self) -> Option<&Moderator> {
        self.moderator.as_ref()
    }

    /// Whether a moderator wants the bytes of its completions.
    #[inline(always)]
    pub(crate) fn has_moderator(&self) -> bool {
        self.moderator.is_some()
    }

    /// IRQS_PENDING: an interrupt found the IRQ disabled or running.
    #[inline]
    pub(crate) fn is_pending(&self) -> bool {
        self.desc.is_pending()
    }

    /// irq_set_affinity's new route: IDT vector `idt` of CPU `cpu`.
    pub(crate) fn retarget(&mut self, cpu: CpuId, idt: u16) {
        self.cpu = cpu;
        self.idt = idt;
    }

    // ---------------------------------------------------------------- device side

    /// A completion entry was posted to its CQ: the MSI-X rule decides (`hint`: the
    /// SQE's); `unacked`: entries the host has not acknowledged.
    #[inline(always)]
    pub(crate) fn post_completion(
        &mut self,
        now: u64,
        hint: Hint,
        unacked: u32,
        measuring: bool,
    ) -> MsixAction {
        let a = self.msix.post_completion(now, hint, unacked);
        self.posted(a, measuring)
    }

    /// A target CQ's completion, which no MSI-X mask holds.
    #[inline]
    pub(crate) fn post_completion_ignoring_mask(
        &mut self,
        now: u64,
        hint: Hint,
        unacked: u32,
        measuring: bool,
    ) -> MsixAction {
        let a = self.msix.post_completion_ignoring_mask(now, hint, unacked);
        self.posted(a, measuring)
    }

    /// The coalescing timer of `epoch` ran out (a stale one does nothing).
    pub(crate) fn timer_expired(&mut self, now: u64, epoch: u32, unacked: u32) -> MsixAction {
        let a = self.msix.timer_expired(now, epoch, unacked);
        self.decided(a)
    }

    /// The CQ head doorbell reached the device: its message is serviced.
    #[inline]
    pub(crate) fn cq_head_doorbell(&mut self, unacked: u32) -> MsixAction {
        let a = self.msix.cq_head_doorbell(unacked);
        self.decided(a)
    }

    /// Clears the MSI-X mask bit: the device raises what its pending bit holds, or what
    /// entries still at the host's CQ head owe.
    pub(crate) fn unmask(&mut self, unacked: u32, cqe_pending: bool) -> MsixAction {
        let a = self.msix.unmask(unacked, cqe_pending);
        self.decided(a)
    }

    /// The counters a posted completion's action moves: coalesced by the device, or
    /// withheld by the mask (disable_irq_nosync: the pending bit remembers it).
    #[inline(always)]
    fn posted(&mut self, a: MsixAction, measuring: bool) -> MsixAction {
        match a {
            MsixAction::ArmTimer { .. } | MsixAction::Quiet(Quiet::Coalesced) if measuring => {
                self.device_coalesced += 1
            }
            MsixAction::Quiet(Quiet::Masked) => self.withheld += 1,
            _ => {}
        }
        self.decided(a)
    }

    /// Any action of the MSI-X rule: a raise the one-message rule refused counts as
    /// withheld.
    #[inline(always)]
    fn decided(&mut self, a: MsixAction) -> MsixAction {
        if let MsixAction::Quiet(Quiet::Outstanding | Quiet::Consumed) = a {
            self.withheld += 1;
        }
        a
    }

    // ---------------------------------------------------------------- genirq

    /// disable_irq_nosync() by irq_poll's handler or GSIM: lazy, the chip stays unmasked
    /// until the next interrupt finds the IRQ disabled.
    pub(crate) fn disable_nosync(&mut self) {
        if self.desc.disable_nosync() == ChipOp::Mask {
            self.msix.mask();
        }
    }

    /// handle_edge_irq's entry for an interrupt: Handle, or Pend (disabled, or its
    /// handler runs elsewhere: IRQS_PENDING, and the chip masked when it was not).
    #[inline]
    pub(crate) fn edge(&mut self) -> Edge {
        let e = self.desc.edge();
        if let Edge::Pend { mask } = e {
            if mask {
                self.msix.mask();
            }
            self.pended += 1;
        }
        e
    }

    /// The handler returned: Again when an interrupt was pended meanwhile and the IRQ is
    /// enabled (the caller unmasks the chip first when `unmask`).
    #[inline]
    pub(crate) fn handler_done(&mut self) -> AfterHandler {
        self.desc.handler_done()
    }

    /// enable_irq(): None when unbalanced (the kernel WARNs and changes nothing);
    /// otherwise whether the chip had been masked, whether the interrupt is to be resent
    /// (counted while `measuring`) and what unmasking made the device do (`unacked` and
    /// `cqe_pending`: its CQ).
    pub(crate) fn enable(
        &mut self,
        unacked: u32,
        cqe_pending: bool,
        measuring: bool,
    ) -> Option<Enabled> {
        let e = self.desc.enable().ok()?;
        let was_masked = self.msix.is_masked();
        let action = self.unmask(unacked, cqe_pending);
        if e.resend && measuring {
            self.resent += 1;
        }
        Some(Enabled {
            was_masked,
            resend: e.resend,
            action,
        })
    }

    /// __irq_wake_thread: IRQTF_RUNTHREAD set.
    #[inline]
    pub(crate) fn set_runthread(&mut self) {
        self.thread_pending = true;
    }

    /// irq_thread's test_and_clear of IRQTF_RUNTHREAD.
    #[inline]
    pub(crate) fn take_runthread(&mut self) -> bool {
        std::mem::take(&mut self.thread_pending)
    }

    // ---------------------------------------------------------------- moderation

    /// Bytes of completions its handler or poller reaped, for the moderator's next sample.
    #[inline]
    pub(crate) fn count_bytes(&mut self, bytes: u64) {
        self.bytes_since += bytes;
    }

    /// One interrupt or poll round reaped `n` entries: the moderator's sample (with the
    /// bytes since the last). True when it scheduled its work item (a new level to
    /// program).
    #[inline]
    pub(crate) fn feed_moderator(&mut self, now: u64, n: u32) -> bool {
        let Some(m) = self.moderator.as_mut() else {
            return false;
        };
        let bytes = std::mem::take(&mut self.bytes_since);
        m.on_event(now, n, bytes).is_some()
    }

    /// The moderator's work item programs the level it chose into the device, then
    /// acknowledges. Returns the level and what the device does; None without a
    /// moderator.
    pub(crate) fn program_moderation(
        &mut self,
        now: u64,
        unacked: u32,
    ) -> Option<(usize, MsixAction)> {
        let m = self.moderator.as_mut()?;
        let p = m.profile();
        let level = m.level();
        let params = CoalesceParams::from_usec_count(u32::from(p.usec), u32::from(p.count));
        let a = self.msix.program(params, now, unacked);
        m.ack();
        Some((level, self.decided(a)))
    }

    // ---------------------------------------------------------------- counters

    /// A message left the device (or its host's irqfd).
    #[inline]
    pub(crate) fn count_message(&mut self) {
        self.messages += 1;
    }

    /// A message merged into a pending one (IRR, PIR, or the device's held message).
    #[inline]
    pub(crate) fn count_merged(&mut self) {
        self.merged += 1;
    }

    /// Its handler ran for an interrupt on CPU `c` (/proc/interrupts).
    #[inline(always)]
    pub(crate) fn count_handled(&mut self, c: usize) {
        self.per_cpu[c] += 1;
    }

    /// Requests completed through it.
    #[inline(always)]
    pub(crate) fn count_completions(&mut self, n: u64) {
        self.completions += n;
    }

    /// ramp_time is over: every counter starts from zero.
    pub(crate) fn open_window(&mut self) {
        self.messages = 0;
        self.per_cpu.iter_mut().for_each(|x| *x = 0);
        self.device_coalesced = 0;
        self.completions = 0;
        self.merged = 0;
        self.pended = 0;
        self.resent = 0;
        self.withheld = 0;
    }

    pub(crate) fn messages(&self) -> u64 {
        self.messages
    }

    /// Interrupts handled on each CPU.
    pub(crate) fn per_cpu(&self) -> &[u64] {
        &self.per_cpu
    }

    pub(crate) fn device_coalesced(&self) -> u64 {
        self.device_coalesced
    }

    pub(crate) fn completions(&self) -> u64 {
        self.completions
    }

    pub(crate) fn merged(&self) -> u64 {
        self.merged
    }

    pub(crate) fn pended(&self) -> u64 {
        self.pended
    }

    pub(crate) fn resent(&self) -> u64 {
        self.resent
    }

    pub(crate) fn withheld(&self) -> u64 {
        self.withheld
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use irqlab_core::nvme::{DeviceIrq, MsiRule};

    fn vector() -> Vector {
        let msix = MsixVector::new(DeviceIrq::Off, MsiRule::UntilDoorbell);
        Vector::new(
            "nvme0q1".into(),
            QueueId::new(0),
            CpuId::new(1),
            0x21,
            msix,
            2,
        )
    }

    #[test]
    fn a_raise_refused_by_the_one_message_rule_is_withheld_until_the_doorbell() {
        let mut v = vector();
        let a = v.post_completion(0, Hint::default(), 1, true);
        assert_eq!(a, MsixAction::SendMsi);
        let again = v.post_completion(10, Hint::default(), 2, true);
        assert!(matches!(again, MsixAction::Quiet(Quiet::Outstanding)));
        assert_eq!(v.withheld(), 1);
        // The doorbell acknowledged one entry: the other still owes a message.
        assert_eq!(v.cq_head_doorbell(1), MsixAction::SendMsi);
        v.open_window();
        assert_eq!(v.withheld(), 0);
    }

    #[test]
    fn an_interrupt_found_disabled_is_pended_masked_and_resent_at_enable() {
        let mut v = vector();
        v.disable_nosync();
        assert_eq!(v.edge(), Edge::Pend { mask: true });
        assert_eq!(v.pended(), 1);
        assert!(v.is_pending());
        // Masked, the device remembers a completion in its pending bit.
        let a = v.post_completion(0, Hint::default(), 1, true);
        assert!(matches!(a, MsixAction::Quiet(Quiet::Masked)));
        let e = v.enable(1, true, false).expect("balanced");
        assert!(e.was_masked && e.resend);
        assert_eq!(e.action, MsixAction::SendMsi, "the pending bit's message");
        assert_eq!(v.resent(), 0, "not measuring");
        assert!(
            v.enable(1, true, true).is_none(),
            "unbalanced: nothing changes"
        );
    }

    #[test]
    fn runthread_is_taken_once_and_counters_follow_the_cpu() {
        let mut v = vector();
        v.set_runthread();
        assert!(v.take_runthread());
        assert!(!v.take_runthread());
        v.fit_cpus(3);
        v.count_handled(2);
        assert_eq!(v.per_cpu(), &[0, 0, 1]);
        v.retarget(CpuId::new(2), 0x22);
        assert_eq!((v.cpu().ix(), v.idt()), (2, 0x22));
    }
}
