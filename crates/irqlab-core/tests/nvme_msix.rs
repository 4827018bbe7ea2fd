//! The device's MSI-X vector state machine: never a lost raise, never two messages
//! outstanding under the until-doorbell rule, and the same decisions, step for step, as
//! the glue each engine had before it (the simulator's model/device.rs and the runtime's
//! ctrl.rs, copied below as they were).

use irqlab_core::DeviceCoalescing;
use irqlab_core::nvme::{
    CoalesceParams, DeviceIrq, Hint, IrqDecision, MsiRule, MsixAction, MsixVector, Quiet,
    VectorGate,
};
use proptest::prelude::*;

/// What an engine does outside the vector.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Out {
    Msi,
    Timer { at: u64, epoch: u32 },
}

/// model/device.rs before the port: the vector's fields and the functions that glued
/// DeviceIrq, VectorGate and the mask together (always measuring).
struct SimGlue {
    irq: DeviceIrq,
    gate: VectorGate,
    timer_gen: u32,
    masked: bool,
    mask_pending: bool,
    withheld: u64,
    device_coalesced: u64,
    out: Vec<Out>,
}

impl SimGlue {
    fn new(c: DeviceCoalescing, rule: MsiRule) -> Self {
        SimGlue {
            irq: DeviceIrq::from_policy(c),
            gate: VectorGate::with_rule(rule),
            timer_gen: 0,
            masked: false,
            mask_pending: false,
            withheld: 0,
            device_coalesced: 0,
            out: Vec::new(),
        }
    }

    fn emit_completion(&mut self, now: u64, hint: Hint, unacked: u32) {
        if self.masked {
            self.mask_pending = true;
            self.withheld += 1;
            return;
        }
        self.target_receive(now, hint, unacked);
    }

    /// model/target.rs: the same decision without the mask check.
    fn target_receive(&mut self, now: u64, hint: Hint, unacked: u32) {
        match self.irq.on_completion(now, hint) {
            IrqDecision::Fire(_) => self.gate_raise(unacked),
            IrqDecision::ArmTimer { deadline_ns } => {
                self.device_coalesced += 1;
                self.arm_coalesce_timer(deadline_ns.max(now));
            }
            IrqDecision::Hold => self.device_coalesced += 1,
        }
    }

    fn coalesce_timer(&mut self, now: u64, epoch: u32, unacked: u32) {
        if self.timer_gen != epoch {
            return;
        }
        if self.irq.on_timer(now).is_some() {
            if self.masked {
                self.mask_pending = true;
            } else {
                self.gate_raise(unacked);
            }
        }
    }

    fn arm_coalesce_timer(&mut self, at: u64) {
        self.timer_gen = self.timer_gen.wrapping_add(1);
        self.out.push(Out::Timer {
            at,
            epoch: self.timer_gen,
        });
    }

    fn gate_raise(&mut self, unacked: u32) {
        if self.gate.raise(unacked) {
            self.out.push(Out::Msi);
        } else {
            self.withheld += 1;
        }
    }

    fn cq_doorbell_arrives(&mut self, unacked: u32) {
        if self.masked {
            let owed = self.gate.has_withheld() && unacked > 0;
            self.gate.on_cq_doorbell(0);
            self.mask_pending |= owed;
            return;
        }
        if self.gate.on_cq_doorbell(unacked) {
            self.out.push(Out::Msi);
        }
    }

    fn unmask_vector(&mut self, unacked: u32, cqe_pending: bool) -> bool {
        let was_masked = std::mem::take(&mut self.masked);
        let pending = std::mem::take(&mut self.mask_pending);
        if pending || cqe_pending {
            self.gate_raise(unacked);
        }
        was_masked
    }

    fn moderator_program(&mut self, params: CoalesceParams, now: u64, unacked: u32) {
        match self.irq.program(params, now) {
            IrqDecision::Fire(_) => {
                if self.masked {
                    self.mask_pending = true;
                } else {
                    self.gate_raise(unacked);
                }
            }
            IrqDecision::ArmTimer { deadline_ns } => self.arm_coalesce_timer(deadline_ns.max(now)),
            IrqDecision::Hold => {}
        }
    }
}

/// The simulator ported onto MsixVector, as the table in nvme/msix.rs maps it.
struct SimPorted {
    v: MsixVector,
    withheld: u64,
    device_coalesced: u64,
    out: Vec<Out>,
}

impl SimPorted {
    fn carry(&mut self, a: MsixAction) {
        match a {
            MsixAction::SendMsi => self.out.push(Out::Msi),
            MsixAction::ArmTimer { deadline_ns, epoch } => self.out.push(Out::Timer {
                at: deadline_ns,
                epoch,
            }),
            MsixAction::Quiet(Quiet::Outstanding | Quiet::Consumed) => self.withheld += 1,
            MsixAction::Quiet(_) => {}
        }
    }

    /// A completion: the device counts what it aggregated and what the mask held, too.
    fn completion(&mut self, a: MsixAction) {
        match a {
            MsixAction::ArmTimer { .. } | MsixAction::Quiet(Quiet::Coalesced) => {
                self.device_coalesced += 1
            }
            MsixAction::Quiet(Quiet::Masked) => self.withheld += 1,
            _ => {}
        }
        self.carry(a);
    }
}

/// The host side of one CQ: entries past the head doorbell, how many of them reached host
/// memory (the others are on their way), and how many the host consumed with the
/// doorbell for them still on its way.
#[derive(Default)]
struct Host {
    now: u64,
    unacked: u32,
    landed: u32,
    reaped: u32,
    timers: Vec<(u64, u32)>,
}

impl Host {
    /// nvme_cqe_pending: an entry the host has not consumed is in host memory.
    fn cqe_pending(&self) -> bool {
        self.landed > self.reaped
    }

    fn land(&mut self) {
        self.landed = self.unacked;
    }

    fn reap(&mut self) {
        self.reaped = self.landed;
    }

    /// The doorbell for what the host consumed reaches the device.
    fn doorbell(&mut self) {
        self.unacked -= self.reaped;
        self.landed -= self.reaped;
        self.reaped = 0;
    }

    /// The earliest timer, stale ones included (the simulator pops those too).
    fn next_timer(&mut self) -> Option<(u64, u32)> {
        let i = (0..self.timers.len()).min_by_key(|&i| self.timers[i].0)?;
        let (at, epoch) = self.timers.remove(i);
        self.now = self.now.max(at);
        Some((at, epoch))
    }

    fn push(&mut self, outs: &[Out]) {
        for o in outs {
            if let Out::Timer { at, epoch } = *o {
                self.timers.push((at, epoch));
            }
        }
    }
}

#[derive(Clone, Copy, Debug)]
enum Op {
    Complete(u8),
    TargetComplete,
    Timer,
    /// Entries on their way reach host memory.
    Land,
    /// The host consumes every entry in host memory; its doorbell is on its way.
    Reap,
    Doorbell,
    Mask,
    Unmask,
    Program(u16, u16),
    Advance(u64),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0u8..4).prop_map(Op::Complete),
        1 => Just(Op::TargetComplete),
        3 => Just(Op::Timer),
        3 => Just(Op::Land),
        3 => Just(Op::Reap),
        3 => Just(Op::Doorbell),
        1 => Just(Op::Mask),
        1 => Just(Op::Unmask),
        1 => (0u16..64, 0u16..8).prop_map(|(u, c)| Op::Program(u, c)),
        3 => (0u64..20_000).prop_map(Op::Advance),
    ]
}

fn coalescing() -> impl Strategy<Value = DeviceCoalescing> {
    prop_oneof![
        Just(DeviceCoalescing::Off),
        (0u8..6, 0u8..3).prop_map(|(thr, time_100us)| DeviceCoalescing::Nvme { thr, time_100us }),
        Just(DeviceCoalescing::Calibrated),
    ]
}

fn rule() -> impl Strategy<Value = MsiRule> {
    prop_oneof![Just(MsiRule::UntilDoorbell), Just(MsiRule::PerCompletion)]
}

/// The runtime's ctrl.rs before the port: its CtrlQueue's apply, raise, doorbell and timer.
struct RtGlue {
    irq: DeviceIrq,
    gate: VectorGate,
    timer: Option<u64>,
    messages: u64,
    coalesced: u64,
    gated: u64,
    stale: u64,
    sends: u64,
}

impl RtGlue {
    fn apply(&mut self, d: IrqDecision, unacked: u32) {
        match d {
            IrqDecision::Fire(f) => {
                self.timer = None;
                self.coalesced += u64::from(f.coalesced.saturating_sub(1));
                self.raise(unacked);
            }
            IrqDecision::ArmTimer { deadline_ns } => self.timer = Some(deadline_ns),
            IrqDecision::Hold => {}
        }
    }

    fn raise(&mut self, unacked: u32) {
        if self.gate.raise(unacked) {
            self.messages += 1;
            self.sends += 1;
        } else if unacked == 0 {
            self.stale += 1;
        } else {
            self.gated += 1;
        }
    }

    fn doorbell(&mut self, unacked: u32) {
        if self.gate.on_cq_doorbell(unacked) {
            self.messages += 1;
            self.sends += 1;
        }
    }

    fn timers(&mut self, now: u64, unacked: u32) {
        if let Some(deadline) = self.timer
            && now >= deadline
        {
            self.timer = None;
            if let Some(f) = self.irq.on_timer(now) {
                self.apply(IrqDecision::Fire(f), unacked);
            }
        }
    }
}

/// ctrl.rs on MsixVector.
struct RtPorted {
    v: MsixVector,
    timer: Option<(u64, u32)>,
    sends: u64,
}

impl RtPorted {
    fn carry(&mut self, a: MsixAction) {
        match a {
            MsixAction::SendMsi => self.sends += 1,
            MsixAction::ArmTimer { deadline_ns, epoch } => self.timer = Some((deadline_ns, epoch)),
            MsixAction::Quiet(_) => {}
        }
    }

    fn timers(&mut self, now: u64, unacked: u32) {
        if let Some((deadline, epoch)) = self.timer
            && now >= deadline
        {
            self.timer = None;
            let a = self.v.timer_expired(now, epoch, unacked);
            self.carry(a);
        }
    }
}

/// A host that takes every message: its handler consumes what it finds and rings the
/// doorbell.
struct HostRun {
    v: MsixVector,
    h: Host,
    /// Messages sent and not yet handled.
    messages: u32,
    since_doorbell: u32,
    /// The most messages sent between two doorbells.
    most: u32,
}

impl HostRun {
    fn carry(&mut self, a: MsixAction) {
        match a {
            MsixAction::SendMsi => {
                // PCIe ordering: the message follows the entries the device wrote before it.
                self.h.land();
                self.messages += 1;
                self.since_doorbell += 1;
                self.most = self.most.max(self.since_doorbell);
            }
            MsixAction::ArmTimer { deadline_ns, epoch } => self.h.timers.push((deadline_ns, epoch)),
            MsixAction::Quiet(_) => {}
        }
    }

    fn doorbell(&mut self) {
        self.h.doorbell();
        self.since_doorbell = 0;
        let a = self.v.cq_head_doorbell(self.h.unacked);
        self.carry(a);
    }

    fn timer(&mut self) -> bool {
        let Some((_, epoch)) = self.h.next_timer() else {
            return false;
        };
        let a = self.v.timer_expired(self.h.now, epoch, self.h.unacked);
        self.carry(a);
        true
    }

    fn unmask(&mut self) {
        let a = self.v.unmask(self.h.unacked, self.h.cqe_pending());
        self.carry(a);
    }

    fn step(&mut self, o: Op) {
        let h = &mut self.h;
        let a = match o {
            Op::Complete(bits) => {
                h.unacked += 1;
                self.v
                    .post_completion(h.now, Hint::from_sqe_hints(bits), h.unacked)
            }
            Op::TargetComplete => {
                h.unacked += 1;
                self.v.post_completion(h.now, Hint::None, h.unacked)
            }
            Op::Timer => {
                self.timer();
                return;
            }
            Op::Land => {
                h.land();
                return;
            }
            // A message's handler, or a poller: consumes what it finds.
            Op::Reap => {
                self.messages = self.messages.saturating_sub(1);
                h.reap();
                return;
            }
            Op::Doorbell => {
                if h.reaped > 0 {
                    self.doorbell();
                }
                return;
            }
            Op::Mask => {
                self.v.mask();
                return;
            }
            Op::Unmask => {
                self.unmask();
                return;
            }
            Op::Program(usec, count) => {
                let p = CoalesceParams::from_usec_count(u32::from(usec), u32::from(count));
                self.v.program(p, h.now, h.unacked)
            }
            Op::Advance(dt) => {
                h.now += dt;
                return;
            }
        };
        self.carry(a);
    }

    /// enable_irq, then every doorbell lands, every message is handled, every timer runs. Returns whether every
    /// entry was consumed and acknowledged.
    fn drain(&mut self) -> bool {
        self.unmask();
        for _ in 0..10_000 {
            if self.h.reaped > 0 {
                self.doorbell();
            } else if self.messages > 0 {
                self.messages -= 1;
                self.h.reap();
            } else if !self.timer() {
                break;
            }
        }
        self.h.unacked == 0
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn every_completion_is_covered_by_a_message_once_unmasked_and_acknowledged(
        c in coalescing(),
        r in rule(),
        ops in prop::collection::vec(op(), 0..120),
    ) {
        let mut run = HostRun {
            v: MsixVector::from_policy(c, r),
            h: Host::default(),
            messages: 0,
            since_doorbell: 0,
            most: 0,
        };
        for &o in &ops {
            run.step(o);
        }
        prop_assert!(run.drain(), "an entry was left without a message");
        if r == MsiRule::UntilDoorbell {
            prop_assert!(run.most <= 1, "{} messages between two doorbells", run.most);
        }
    }

    #[test]
    fn the_simulator_on_msix_vector_decides_as_its_own_glue_did(
        c in coalescing(),
        r in rule(),
        ops in prop::collection::vec(op(), 0..120),
    ) {
        let mut glue = SimGlue::new(c, r);
        let mut port = SimPorted {
            v: MsixVector::from_policy(c, r),
            withheld: 0,
            device_coalesced: 0,
            out: Vec::new(),
        };
        let mut h = Host::default();
        for &o in &ops {
            match o {
                Op::Complete(bits) => {
                    h.unacked += 1;
                    let hint = Hint::from_sqe_hints(bits);
                    glue.emit_completion(h.now, hint, h.unacked);
                    let a = port.v.post_completion(h.now, hint, h.unacked);
                    port.completion(a);
                }
                Op::TargetComplete => {
                    h.unacked += 1;
                    glue.target_receive(h.now, Hint::None, h.unacked);
                    let a = port.v.post_completion_ignoring_mask(h.now, Hint::None, h.unacked);
                    port.completion(a);
                }
                Op::Timer => {
                    if let Some((_, epoch)) = h.next_timer() {
                        glue.coalesce_timer(h.now, epoch, h.unacked);
                        let a = port.v.timer_expired(h.now, epoch, h.unacked);
                        port.carry(a);
                    }
                }
                Op::Land => h.land(),
                Op::Reap => h.reap(),
                Op::Doorbell => {
                    h.doorbell();
                    glue.cq_doorbell_arrives(h.unacked);
                    let a = port.v.cq_head_doorbell(h.unacked);
                    port.carry(a);
                }
                Op::Mask => {
                    glue.masked = true;
                    port.v.mask();
                }
                Op::Unmask => {
                    let was = glue.unmask_vector(h.unacked, h.cqe_pending());
                    prop_assert_eq!(was, port.v.is_masked());
                    let a = port.v.unmask(h.unacked, h.cqe_pending());
                    port.carry(a);
                }
                Op::Program(usec, count) => {
                    let p = CoalesceParams::from_usec_count(u32::from(usec), u32::from(count));
                    glue.moderator_program(p, h.now, h.unacked);
                    let a = port.v.program(p, h.now, h.unacked);
                    port.carry(a);
                }
                Op::Advance(dt) => h.now += dt,
            }
            prop_assert_eq!(&glue.out, &port.out, "after {:?}", o);
            prop_assert_eq!(glue.withheld, port.withheld, "withheld after {:?}", o);
            prop_assert_eq!(glue.device_coalesced, port.device_coalesced);
            prop_assert_eq!(glue.masked, port.v.is_masked());
            prop_assert_eq!(glue.mask_pending, port.v.is_pending());
            prop_assert_eq!(glue.timer_gen, port.v.timer_epoch());
            h.push(&glue.out);
            glue.out.clear();
            port.out.clear();
        }
    }

    #[test]
    fn the_runtime_on_msix_vector_decides_as_its_own_glue_did(
        c in coalescing(),
        r in rule(),
        ops in prop::collection::vec(op(), 0..120),
    ) {
        let mut glue = RtGlue {
            irq: DeviceIrq::from_policy(c),
            gate: VectorGate::with_rule(r),
            timer: None,
            messages: 0,
            coalesced: 0,
            gated: 0,
            stale: 0,
            sends: 0,
        };
        let mut port = RtPorted { v: MsixVector::from_policy(c, r), timer: None, sends: 0 };
        let mut h = Host::default();
        for &o in &ops {
            match o {
                Op::Complete(bits) => {
                    h.unacked += 1;
                    let hint = Hint::from_sqe_hints(bits);
                    let d = glue.irq.on_completion(h.now, hint);
                    glue.apply(d, h.unacked);
                    let a = port.v.post_completion(h.now, hint, h.unacked);
                    port.carry(a);
                }
                Op::Land => h.land(),
                Op::Reap => h.reap(),
                Op::Doorbell => {
                    h.doorbell();
                    glue.doorbell(h.unacked);
                    let a = port.v.cq_head_doorbell(h.unacked);
                    port.carry(a);
                }
                Op::Program(usec, count) => {
                    let p = CoalesceParams::from_usec_count(u32::from(usec), u32::from(count));
                    let d = glue.irq.program(p, h.now);
                    glue.apply(d, h.unacked);
                    let a = port.v.program(p, h.now, h.unacked);
                    port.carry(a);
                }
                Op::Advance(dt) => h.now += dt,
                // The runtime checks its timer each pass; it never masks the machine.
                Op::Timer | Op::TargetComplete | Op::Mask | Op::Unmask => {}
            }
            glue.timers(h.now, h.unacked);
            port.timers(h.now, h.unacked);
            let k = port.v.counters();
            prop_assert_eq!(glue.sends, port.sends, "after {:?}", o);
            prop_assert_eq!(
                (glue.messages, glue.coalesced, glue.gated, glue.stale),
                (k.messages, k.coalesced, k.outstanding_raises, k.consumed_raises)
            );
        }
    }
}
