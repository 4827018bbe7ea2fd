//! The interrupt handler a CPU runs for a vector of its delivery path, as a step machine:
//! the engine asks for the next [`Step`], carries it out (the simulator charges its time,
//! the runtime does it) and asks again until [`Step::Eoi`]; `next` returns None after.
//!
//! - A device vector (remapped, or one that reached the IRR by an IPI: a retrigger, a
//!   self-IPI): common_interrupt's one handler call, then apic_eoi (arch/x86/kernel/irq.c).
//! - The posted notification vector: sysvec_posted_msi_notification's rounds
//!   ([`crate::posted::Demux`]: at most `max_loop - 1` rounds while ON is set, then
//!   pi_clear_on and the extra round), each vector of a round dispatched in ascending
//!   order, then one apic_eoi. A [`PostedMode`] changes what the demux does: interrupts
//!   enabled while it runs, or self-IPIs instead of handler calls.

use super::DeliveryPath;
use crate::posted::{Demux, DemuxOutcome, PirSnapshot, PirVectors};

/// What a posted notification handler does differently (the modes' files define them).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PostedMode {
    /// The `--notification` name.
    pub name: &'static str,
    /// The notification vector NV the descriptor is set up with.
    pub nv: u8,
    /// local_irq_enable() in the demux: vectors of a higher priority class than NV are
    /// taken between its steps (NV itself stays in service: no reentry until the EOI).
    pub preemptable: bool,
    /// Harvested vectors are sent to this CPU as IPIs (apic->send_IPI_self) instead of
    /// having their handlers called in the demux.
    pub self_ipi: bool,
}

/// One step of an interrupt handler, for the engine to carry out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// handle_pending_pir harvested this copy of the PIR (possibly empty: its reads
    /// still cost).
    Round(PirSnapshot),
    /// Call device vector `v`'s flow handler (handle_edge_irq, then the driver's).
    Dispatch(u8),
    /// Attempt #3: send device vector `v` to this CPU as an IPI; it is taken from the IRR
    /// as its own interrupt after this handler's EOI.
    SelfIpi(u8),
    /// Attempt #2: local_irq_enable(); pending vectors of a higher class than the one in
    /// service may now preempt the handler between its steps.
    IrqsOn,
    /// local_irq_disable() before the EOI.
    IrqsOff,
    /// apic_eoi(), then irq_exit(): the handler is over.
    Eoi,
}

#[derive(Clone, Debug)]
enum Kind {
    /// A device vector: dispatch, then EOI.
    Device { dispatched: bool },
    Posted {
        demux: Demux,
        mode: PostedMode,
        /// The round being dispatched: its snapshot and the vectors left.
        round: Option<(PirSnapshot, PirVectors)>,
        started: bool,
        rounds_over: bool,
    },
}

/// One interrupt's handler on one CPU.
#[derive(Clone, Debug)]
pub struct NotificationHandler {
    idt: u8,
    kind: Kind,
    out: DemuxOutcome,
    irqs_on: bool,
    done: bool,
}

impl NotificationHandler {
    /// common_interrupt for device vector `idt`.
    pub fn device(idt: u8) -> NotificationHandler {
        NotificationHandler {
            idt,
            kind: Kind::Device { dispatched: false },
            out: DemuxOutcome::default(),
            irqs_on: false,
            done: false,
        }
    }

    /// sysvec_posted_msi_notification (or a mode's variant of it) entered on `idt`.
    pub fn posted(idt: u8, mode: PostedMode, max_loop: u32) -> NotificationHandler {
        NotificationHandler {
            idt,
            kind: Kind::Posted {
                demux: Demux::new(max_loop),
                mode,
                round: None,
                started: false,
                rounds_over: false,
            },
            out: DemuxOutcome::default(),
            irqs_on: false,
            done: false,
        }
    }

    /// The IDT vector the CPU entered with.
    pub fn idt(&self) -> u8 {
        self.idt
    }

    /// Whether this is a posted notification: inc_irq_stat(posted_msi_notification_count),
    /// the PMN row.
    pub fn counts_pmn(&self) -> bool {
        matches!(self.kind, Kind::Posted { .. })
    }

    /// Whether interrupts are enabled between this handler's steps now.
    pub fn irqs_enabled(&self) -> bool {
        self.irqs_on
    }

    /// Whether the EOI has been returned.
    pub fn is_done(&self) -> bool {
        self.done
    }

    /// What the handler did so far: rounds, vectors dispatched (or sent as self-IPIs),
    /// those found by the extra round, dropped bits.
    pub fn outcome(&self) -> DemuxOutcome {
        self.out
    }

    /// The next step on `path` (the path [`DeliveryPath::begin`] was called on); None once
    /// the EOI was returned.
    pub fn next(&mut self, path: &DeliveryPath) -> Option<Step> {
        if self.done {
            return None;
        }
        let step = match &mut self.kind {
            Kind::Device { dispatched } => {
                if *dispatched {
                    Step::Eoi
                } else {
                    *dispatched = true;
                    self.out.vectors += 1;
                    Step::Dispatch(self.idt)
                }
            }
            Kind::Posted {
                demux,
                mode,
                round,
                started,
                rounds_over,
            } => {
                if !*started {
                    *started = true;
                    if mode.preemptable {
                        self.irqs_on = true;
                        return Some(Step::IrqsOn);
                    }
                }
                posted_step(demux, *mode, round, rounds_over, path, &mut self.out).unwrap_or_else(
                    || {
                        if self.irqs_on {
                            self.irqs_on = false;
                            Step::IrqsOff
                        } else {
                            Step::Eoi
                        }
                    },
                )
            }
        };
        if step == Step::Eoi {
            self.done = true;
        }
        Some(step)
    }
}

/// The demux's next round or vector; None when the rounds are over.
fn posted_step(
    demux: &mut Demux,
    mode: PostedMode,
    round: &mut Option<(PirSnapshot, PirVectors)>,
    rounds_over: &mut bool,
    path: &DeliveryPath,
    out: &mut DemuxOutcome,
) -> Option<Step> {
    if *rounds_over {
        return None;
    }
    if let Some((snap, vectors)) = round.as_mut()
        && let Some(v) = vectors.next()
    {
        out.vectors += 1;
        if snap.is_extra_round() {
            out.extra_round_vectors += 1;
        }
        return Some(if mode.self_ipi {
            Step::SelfIpi(v)
        } else {
            Step::Dispatch(v)
        });
    }
    // A path without a descriptor has nothing to harvest: the handler ends.
    let Some(snap) = path.pi_desc().and_then(|d| demux.next_round(d)) else {
        *rounds_over = true;
        *round = None;
        return None;
    };
    out.rounds += 1;
    out.dropped += snap.dropped();
    *round = Some((snap, snap.vectors()));
    Some(Step::Round(snap))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::delivery::{Delivery, DeliveryPath, preemptable, self_ipi};
    use crate::posted::POSTED_MSI_NOTIFICATION_VECTOR as NV;

    fn run(path: &DeliveryPath, idt: u8) -> (Vec<Step>, NotificationHandler) {
        let mut h = path.begin(idt);
        let mut steps = Vec::new();
        while let Some(s) = h.next(path) {
            steps.push(s);
            assert!(steps.len() < 100, "the handler ends");
        }
        (steps, h)
    }

    fn rounds_and_calls(steps: &[Step]) -> Vec<String> {
        steps
            .iter()
            .map(|s| match s {
                Step::Round(snap) => format!("R{}", snap.round()),
                Step::Dispatch(v) => format!("D{v:x}"),
                Step::SelfIpi(v) => format!("I{v:x}"),
                Step::IrqsOn => "on".into(),
                Step::IrqsOff => "off".into(),
                Step::Eoi => "eoi".into(),
            })
            .collect()
    }

    #[test]
    fn a_device_vector_is_one_call_and_an_eoi() {
        let path = DeliveryPath::for_delivery(Delivery::Remapped, 0).unwrap();
        let (steps, h) = run(&path, 0x41);
        assert_eq!(steps, [Step::Dispatch(0x41), Step::Eoi]);
        assert!(!h.counts_pmn() && h.is_done());
        assert_eq!(h.outcome().vectors, 1);
    }

    #[test]
    fn the_kernel_demux_dispatches_ascending_then_clears_on_and_runs_the_extra_round() {
        // arch/x86/kernel/irq.c: rounds while the PIR had bits, at most max_loop - 1,
        // then pi_clear_on and one more round; one apic_eoi for the notification.
        let path = DeliveryPath::for_delivery(Delivery::Posted { max_loop: 3 }, 0).unwrap();
        for v in [0x42, 0x41, 0x80] {
            let _ = path.post(v);
        }
        let (steps, h) = run(&path, NV);
        assert_eq!(
            rounds_and_calls(&steps),
            ["R1", "D41", "D42", "D80", "R2", "R3", "eoi"]
        );
        assert!(h.counts_pmn());
        let out = h.outcome();
        assert_eq!(
            (out.rounds, out.vectors, out.extra_round_vectors),
            (3, 3, 0)
        );
        assert!(!path.pi_desc().unwrap().on(), "ON cleared");
    }

    #[test]
    fn a_post_during_the_demux_is_found_by_a_later_round() {
        let path = DeliveryPath::for_delivery(Delivery::Posted { max_loop: 3 }, 0).unwrap();
        let _ = path.post(0x41);
        let mut h = path.begin(NV);
        assert!(matches!(h.next(&path), Some(Step::Round(_))));
        assert_eq!(h.next(&path), Some(Step::Dispatch(0x41)));
        // A message arrives while the handler runs: ON is still set, no notification.
        assert!(path.post(0x43).notify.is_none());
        assert!(matches!(h.next(&path), Some(Step::Round(s)) if s.round() == 2));
        assert_eq!(h.next(&path), Some(Step::Dispatch(0x43)));
        let rest: Vec<Step> = std::iter::from_fn(|| h.next(&path)).collect();
        assert_eq!(rest.last(), Some(&Step::Eoi));
        assert_eq!(h.outcome().vectors, 2);
    }

    #[test]
    fn attempt_2_enables_interrupts_for_the_rounds_and_disables_them_before_the_eoi() {
        let path =
            DeliveryPath::for_delivery(Delivery::PostedPreemptable { max_loop: 3 }, 0).unwrap();
        let _ = path.post(0x41);
        let nv = preemptable::PREEMPTABLE.nv;
        let mut h = path.begin(nv);
        assert!(!h.irqs_enabled());
        assert_eq!(h.next(&path), Some(Step::IrqsOn));
        assert!(h.irqs_enabled());
        let mut steps = vec![Step::IrqsOn];
        while let Some(s) = h.next(&path) {
            if matches!(s, Step::Dispatch(_) | Step::Round(_)) {
                assert!(h.irqs_enabled(), "{s:?} runs with interrupts on");
            }
            steps.push(s);
        }
        assert_eq!(
            rounds_and_calls(&steps),
            ["on", "R1", "D41", "R2", "R3", "off", "eoi"]
        );
        assert!(!h.irqs_enabled() && h.counts_pmn());
    }

    #[test]
    fn attempt_3_sends_each_harvested_vector_as_a_self_ipi() {
        let path = DeliveryPath::for_delivery(Delivery::PostedSelfIpi { max_loop: 3 }, 0).unwrap();
        let _ = path.post(0x41);
        let _ = path.post(0x52);
        let (steps, h) = run(&path, self_ipi::SELF_IPI.nv);
        assert_eq!(
            rounds_and_calls(&steps),
            ["R1", "I41", "I52", "R2", "R3", "eoi"]
        );
        assert_eq!(h.outcome().vectors, 2);
        // The IPI'd vector comes back as a device interrupt of its own.
        let (steps, _) = run(&path, 0x41);
        assert_eq!(steps, [Step::Dispatch(0x41), Step::Eoi]);
    }

    #[test]
    fn an_empty_notification_is_two_rounds_and_an_eoi() {
        let path = DeliveryPath::for_delivery(Delivery::Posted { max_loop: 3 }, 0).unwrap();
        let (steps, h) = run(&path, NV);
        assert_eq!(rounds_and_calls(&steps), ["R1", "R2", "eoi"]);
        assert_eq!(h.outcome().vectors, 0);
    }
}
