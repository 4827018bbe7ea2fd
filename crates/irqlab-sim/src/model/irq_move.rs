//! `--event` in the simulator: a queue's vector moved to another CPU, or a CPU taken
//! offline, at a simulated time (irqlab-core delivery/events.rs). The kernel's decisions
//! are irqlab-core's delivery/migrate.rs, the ones the runtime's events.rs carries out.
//!
//! A move is irq_set_affinity: a vector is allocated on the target CPU (the lowest free
//! one, as the vector matrix's bitmap search gives), the IRTE is rewritten (the vector's
//! `cpu` and `idt`: remapped, the target CPU and vector; posted, the target's
//! descriptor), and the old vector stays in the old CPU's table until __vector_cleanup
//! (arch/x86/kernel/apic/vector.c), a timer on the old CPU one jiffy later that re-arms
//! while core's `vector_cleanup` says the vector is still pending there. A message the
//! IOMMU had already remapped (held by an IIO stack with the route it read, or waiting in
//! the router) lands where the old entry said and runs the old vector's handler there.
//! The IRTE flush (qi_flush_iec) waits for such messages before the cleanup is scheduled;
//! here they are counted as pending in the IRR they are about to reach.
//!
//! Offline is cpu_down's interrupt part: every vector on the CPU moves (core's
//! `offline_target`), fixup_irqs retriggers at its new CPU each vector pending in the dying
//! CPU's IRR or PIR (core's `offline_fixup`), and the CPU takes no interrupt and no tick
//! after; a message that read the old entry and lands later is retriggered the same way
//! (the flush would have made it land before fixup_irqs looked). Tasks are not moved off
//! the CPU (kernel/sched/core.c migrate_tasks): a CPU some job may run on is refused.

use super::ids::{CpuId, VectorId};
use super::state::*;
use crate::SimError;
use crate::engine::Event;
use crate::observer::Observer;
use irqlab_core::delivery::events::{Unmovable, unmovable};
use irqlab_core::delivery::migrate::{
    Cleanup, Fixup, offline_fixup, offline_target, vector_cleanup,
};
use irqlab_core::delivery::{AffinityChange, AffinityEvent, plan_events};
use irqlab_core::{ModeratorKind, Policy};

/// One event resolved against the machine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Change {
    Migrate { vector: VectorId, to: usize },
    Offline { cpu: usize },
}

/// The run's events in time order, which CPUs are online, and what the events did.
pub(crate) struct IrqMoves {
    /// (ns, change, the event as `--event` spells it).
    plan: Vec<(u64, Change, String)>,
    online: Vec<bool>,
    counts: MoveCounts,
    /// What the report should say about events not carried out.
    notes: Vec<String>,
}

/// What the events did, under the runtime's report keys.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct MoveCounts {
    /// Vectors that moved (an offline CPU's included).
    migrations: u64,
    offlined: u64,
    /// Vectors pending on a CPU gone offline, retriggered at their new CPU.
    retriggered: u64,
    /// __vector_cleanup found the old vector still pending and tried again a jiffy later.
    rearms: u64,
}

/// Checks `events` against the policy and the machine, in time order, and resolves
/// them; None without events. `run_end`: when the jobs end at the latest (ns).
pub(crate) fn plan<O: Observer>(
    sim: &Sim<'_, O>,
    events: &[AffinityEvent],
    run_end: u64,
) -> Result<Option<Box<IrqMoves>>, SimError> {
    if events.is_empty() {
        return Ok(None);
    }
    refuse_policy(&sim.policy)?;
    if sim.devices.iter().any(|d| d.is_virtio()) {
        return Err(SimError::Unsupported(
            "--event with a virtio-blk device: a guest's interrupts are injected by the VMM, with no IRTE in the model to rewrite".into(),
        ));
    }
    let ncpus = sim.cpus.len();
    let names = super::build::queue_names(sim);
    let mut at: Vec<usize> = sim.vectors.iter().map(|v| v.cpu().ix()).collect();
    let mut used = vec![0usize; ncpus];
    for &c in &at {
        used[c] += 1;
    }
    let mut online = vec![true; ncpus];
    let mut plan = Vec::new();
    let planned = plan_events(events, ncpus).map_err(|e| SimError::Config(e.to_string()))?;
    for e in planned {
        if e.at_ns >= run_end {
            return Err(SimError::Config(format!(
                "--event {e}: the run's jobs end by {:.3} ms; expected a time before that",
                run_end as f64 / 1e6
            )));
        }
        let mut moves = Vec::new();
        let change = match &e.change {
            AffinityChange::Migrate { queue, cpu } => {
                let Some(q) = names.iter().position(|n| n == queue) else {
                    return Err(SimError::Config(format!(
                        "--event {e}: the run has no queue {queue}; its queues are {}",
                        names.join(", ")
                    )));
                };
                let Some(v) = sim.queues[q].vector() else {
                    return Err(SimError::Config(format!(
                        "--event {e}: {queue} is a poll queue, which has no interrupt to move"
                    )));
                };
                moves.push((v.ix(), *cpu));
                Change::Migrate {
                    vector: v,
                    to: *cpu,
                }
            }
            AffinityChange::Offline { cpu } => {
                refuse_threads(sim, *cpu, &e)?;
                online[*cpu] = false;
                let to = offline_target(*cpu, &online).unwrap_or(*cpu);
                moves.extend((0..at.len()).filter(|&v| at[v] == *cpu).map(|v| (v, to)));
                Change::Offline { cpu: *cpu }
            }
        };
        for (v, to) in moves {
            refuse_vector(sim, v, &e)?;
            if at[v] == to {
                continue;
            }
            at[v] = to;
            used[to] += 1;
            let room = sim.cpus[to].apic.device_vectors();
            if used[to] > room {
                return Err(SimError::Config(format!(
                    "--event {e}: CPU {to} has no free vector left ({room} device vectors)"
                )));
            }
        }
        plan.push((e.at_ns, change, e.to_string()));
    }
    Ok(Some(Box::new(IrqMoves {
        plan,
        online: vec![true; ncpus],
        counts: MoveCounts::default(),
        notes: Vec::new(),
    })))
}

/// The policies whose interrupts the model cannot move yet, with why (as the runtime).
fn refuse_policy(policy: &Policy) -> Result<(), SimError> {
    match unmovable(policy) {
        Some(why @ Unmovable::NoInterrupts(_)) => return Err(SimError::Config(why.to_string())),
        Some(why) => return Err(SimError::Unsupported(why.to_string())),
        None => {}
    }
    if policy.moderator != ModeratorKind::None {
        return Err(SimError::Unsupported(format!(
            "--event with --moderator {}: the moderator's work item runs on a kworker the model builds only on the vector's first CPU",
            policy.moderator
        )));
    }
    if policy.flood_detection {
        return Err(SimError::Unsupported(
            "--event with --flood-detection: the detector's rescue thread is bound to the vector's first CPU".into(),
        ));
    }
    Ok(())
}

/// A vector whose handler has more than the hardirq to move.
fn refuse_vector<O: Observer>(
    sim: &Sim<'_, O>,
    v: usize,
    e: &AffinityEvent,
) -> Result<(), SimError> {
    let vec = &sim.vectors[v];
    let q = &sim.queues[vec.queue().ix()];
    let why = if q.is_target() {
        "an NVMe over RDMA target's interrupt, which does not pass the host's IRTE"
    } else if vec.ib_eq_ns().is_some() || vec.iop().is_some() {
        "its irq_poll instance would have to move with it"
    } else if vec.thread().is_some() {
        "its irq thread would have to move with it (kernel/irq/manage.c irq_thread_check_affinity)"
    } else {
        return Ok(());
    };
    Err(SimError::Unsupported(format!(
        "--event {e}: {} is {why}",
        vec.name()
    )))
}

/// A CPU some job may run on cannot go offline here: the simulator does not move tasks
/// (migrate_tasks, select_fallback_rq).
fn refuse_threads<O: Observer>(
    sim: &Sim<'_, O>,
    cpu: usize,
    e: &AffinityEvent,
) -> Result<(), SimError> {
    let fallback = "the simulator does not move tasks off a CPU going offline (kernel/sched/core.c migrate_tasks, select_fallback_rq); pin the jobs with cpus_allowed to CPUs that stay online";
    if sim.place.is_some() {
        return Err(SimError::Unsupported(format!(
            "--event {e}: some job has no cpus_allowed, so the scheduler may place it on cpu{cpu}; {fallback}"
        )));
    }
    for th in &sim.threads {
        if th.cpu().ix() == cpu
            && let ThreadKind::Job(j) = th.kind()
        {
            return Err(SimError::Unsupported(format!(
                "--event {e}: job '{}' runs on cpu{cpu}; {fallback}",
                sim.jobs[j.ix()].name()
            )));
        }
    }
    Ok(())
}

impl<O: Observer> Sim<'_, O> {
    /// Queues the run's events (model/mod.rs `start`).
    pub(crate) fn schedule_irq_moves(&mut self) {
        let Some(m) = self.moves.as_ref() else {
            return;
        };
        for (i, &(at, _, _)) in m.plan.iter().enumerate() {
            self.q.push(at, Event::IrqMove { index: i as u32 });
        }
    }

    /// Whether CPU `c` has gone offline.
    #[inline]
    pub(crate) fn cpu_offline(&self, c: usize) -> bool {
        self.moves.as_ref().is_some_and(|m| !m.online[c])
    }

    /// Event `index` of the plan is due.
    pub(crate) fn irq_move(&mut self, index: usize) {
        let Some(m) = self.moves.as_mut() else {
            return;
        };
        let change = m.plan[index].1;
        if self.draining {
            // The jobs ended first (a run bounded by size, not time).
            let note = format!(
                "--event {} did not happen: the jobs ended before it",
                m.plan[index].2
            );
            m.notes.push(note);
            return;
        }
        match change {
            Change::Migrate { vector, to } => {
                if self.move_vector(vector.ix(), to) {
                    self.counts().migrations += 1;
                } else if self.vectors[vector.ix()].cpu().ix() != to {
                    // irq_set_affinity failed with -ENOSPC: old vectors awaiting their
                    // cleanup still hold the target's free ones.
                    let m = self.moves.as_mut().expect("the run has events");
                    let note = format!(
                        "--event {}: CPU {to} had no free vector; the interrupt stayed where it was",
                        m.plan[index].2
                    );
                    m.notes.push(note);
                }
            }
            Change::Offline { cpu } => self.offline(cpu),
        }
    }

    fn counts(&mut self) -> &mut MoveCounts {
        &mut self.moves.as_mut().expect("the run has events").counts
    }

    /// irq_set_affinity of vector `v` to CPU `to`: a vector allocated there and the IRTE
    /// rewritten; the old vector's cleanup timer armed on its CPU. False when the vector
    /// is there already, or `to` has no free vector (-ENOSPC: the affinity stays).
    fn move_vector(&mut self, v: usize, to: usize) -> bool {
        let (from, old_idt) = (self.vectors[v].cpu(), self.vectors[v].idt());
        if from.ix() == to {
            return false;
        }
        let Some(idt) = self.cpus[to].apic.allocate(VectorId::new(v)) else {
            return false;
        };
        self.vectors[v].retarget(CpuId::new(to), idt);
        // __vector_schedule_cleanup: the old CPU's cleanup timer, at jiffies + 1.
        self.q.push(
            self.now + self.costs.tick_period,
            Event::VectorCleanup {
                cpu: from,
                idt: old_idt,
            },
        );
        true
    }

    /// __vector_cleanup on CPU `c` for its old vector `idt`: freed when pending nowhere,
    /// else tried again a jiffy later.
    pub(crate) fn vector_cleanup(&mut self, c: usize, idt: u16) {
        let Some(v) = self.cpus[c].apic.vector_at(idt) else {
            return;
        };
        let vec = &self.vectors[v.ix()];
        let again = self.now + self.costs.tick_period;
        let retry = Event::VectorCleanup {
            cpu: CpuId::new(c),
            idt,
        };
        if vec.cpu().ix() == c && vec.idt() == idt {
            // The vector is this one again: nothing to free.
            return;
        }
        if matches!(self.cpus[c].mode(), Mode::HardIrq | Mode::IdleExit) {
            // The timer runs in softirq: not before the hardirq in progress returns (it
            // may be the old vector's handler, or a PIR round holding its bit).
            self.q.push(again, retry);
            return;
        }
        let cpu = &self.cpus[c];
        let irr = cpu.apic.is_pending(idt) || self.fabric.remapped_in_flight(v, CpuId::new(c), idt);
        let pir = cpu.apic.path().vector_pending(idt as u8);
        match vector_cleanup(irr, pir) {
            Cleanup::Free => self.cpus[c].apic.free(idt),
            Cleanup::Rearm => {
                self.counts().rearms += 1;
                self.q.push(again, retry);
            }
        }
    }

    /// CPU `c` goes offline: its vectors move to the next online CPU, fixup_irqs
    /// retriggers what is pending, and nothing else pending there is taken.
    fn offline(&mut self, c: usize) {
        let m = self.moves.as_mut().expect("the run has events");
        m.online[c] = false;
        m.counts.offlined += 1;
        let Some(to) = offline_target(c, &m.online) else {
            return;
        };
        for v in 0..self.vectors.len() {
            if self.vectors[v].cpu().ix() == c && self.move_vector(v, to) {
                self.counts().migrations += 1;
            }
        }
        self.fixup_pending(c);
        // Its tick and IPIs die with it (the stopper thread ran there last).
        self.cpus[c].apic.drop_pending();
    }

    /// fixup_irqs on offline CPU `c`: every vector of its table pending in its IRR or PIR
    /// is retriggered where its interrupt is now.
    fn fixup_pending(&mut self, c: usize) {
        let first = u16::from(self.cpus[c].apic.path().first_system_vector());
        for idt in FIRST_DEVICE_VECTOR..first {
            let cpu = &mut self.cpus[c];
            let Some(v) = cpu.apic.vector_at(idt) else {
                continue;
            };
            let pir = cpu.apic.take_posted(idt);
            let irr = cpu.apic.clear(idt);
            if offline_fixup(irr, pir) == Fixup::Retrigger {
                self.retrigger(v.ix());
            }
        }
        self.report_pir_pending(c);
    }

    /// chip->irq_retrigger (apic_retrigger_irq): an IPI with the vector's current route.
    fn retrigger(&mut self, v: usize) {
        self.counts().retriggered += 1;
        let (cpu, vec) = (self.vectors[v].cpu(), self.vectors[v].idt());
        self.q
            .push(self.now + self.costs.ipi.max(1), Event::Notify { cpu, vec });
    }

    /// An interrupt message reaches CPU `c` (model/cpu.rs `notify`): true when `c` is
    /// offline and the message was dealt with here. A device vector that read the old
    /// entry is retriggered at its new CPU, as fixup_irqs would have after the flush; a
    /// posted notification's PIR bits likewise; the rest is dropped.
    pub(crate) fn offline_notify(&mut self, c: usize, vec: u16) -> bool {
        if !self.cpu_offline(c) {
            return false;
        }
        if vec == RESCHEDULE_VECTOR {
            self.cpus[c].apic.ipi_arrived();
        }
        if let Some(v) = self.cpus[c].apic.vector_at(vec) {
            // Pending in the IRR it would have reached before fixup_irqs looked.
            if offline_fixup(true, false) == Fixup::Retrigger {
                self.retrigger(v.ix());
            }
        } else if self.cpus[c].apic.path().is_notification(vec as u8) {
            self.fixup_pending(c);
        }
        true
    }

    /// The report's counters, under the runtime's keys (crates/irqlab-rt/src/report.rs).
    pub(crate) fn irq_move_counters(&self) -> Vec<(String, f64)> {
        let Some(m) = self.moves.as_ref() else {
            return Vec::new();
        };
        let c = m.counts;
        vec![
            (
                irqlab_report::EXTRA_IRQ_MIGRATIONS.into(),
                c.migrations as f64,
            ),
            (irqlab_report::EXTRA_CPUS_OFFLINED.into(), c.offlined as f64),
            (
                irqlab_report::EXTRA_OFFLINE_RETRIGGERED.into(),
                c.retriggered as f64,
            ),
            (
                irqlab_report::EXTRA_VECTOR_CLEANUP_REARMS.into(),
                c.rearms as f64,
            ),
        ]
    }

    /// Notes for the report: the events not carried out, and why.
    pub(crate) fn irq_move_notes(&self) -> Vec<(String, String)> {
        self.moves.as_ref().map_or_else(Vec::new, |m| {
            m.notes
                .iter()
                .map(|n| ("event".to_string(), n.clone()))
                .collect()
        })
    }
}
