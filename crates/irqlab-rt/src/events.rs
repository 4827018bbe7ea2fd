//! `--event` on real threads: a queue's vector moved to another CPU thread, or a CPU
//! thread taken offline, at a given time of the run. The run's watcher thread carries
//! them out as the kernel's affinity code would from a CPU of its own: a vector
//! allocated on the target, the IRTE rewritten and flushed (core's `Irte`), the old
//! vector's cleanup asked of the CPU it leaves (core's `vector_cleanup`, run there);
//! going offline also moves every interrupt of the CPU and retriggers, at their new CPU,
//! the vectors still pending in its IRR or PIR (fixup_irqs, core's `offline_fixup`).
//!
//! An offline CPU thread takes no interrupt and no tick after; its jobs keep running on
//! it, as if the scheduler had moved their tasks to a CPU of their own (the runtime's
//! jobs belong to their CPU thread).

use crate::error::RtError;
use crate::shared::{Cpus, migrate_queue};
use crate::topology::Topology;
use irqlab_core::Policy;
use irqlab_core::delivery::events::unmovable;
use irqlab_core::delivery::migrate::{Fixup, offline_fixup, offline_target};
use irqlab_core::delivery::{AffinityChange, AffinityEvent, DeliveryPath, plan_events};

/// One event resolved against the topology.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Change {
    Migrate { owner: usize, q: usize, to: usize },
    Offline { cpu: usize },
}

/// The run's events in time order, and what carrying them out did.
#[derive(Debug, Default)]
pub(crate) struct Events {
    /// (ns after the run's start, change), in time order.
    plan: Vec<(u64, Change)>,
    next: usize,
    online: Vec<bool>,
    pub(crate) counts: EventCounts,
}

/// What the events did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct EventCounts {
    /// Vectors that moved (an offline CPU's included).
    pub migrations: u64,
    pub offlined: u64,
    /// Vectors pending on a CPU going offline, retriggered at their new CPU.
    pub retriggered: u64,
}

/// The interrupt queues' names with their (CPU thread, index).
fn queue_names(topo: &Topology) -> Vec<(String, usize, usize, bool)> {
    let mut out = Vec::new();
    for (c, cpu) in topo.cpus.iter().enumerate() {
        for (q, plan) in cpu.queues.iter().enumerate() {
            let name = plan.name(&topo.controllers[plan.controller]);
            out.push((name, c, q, plan.polled));
        }
    }
    out
}

impl Events {
    /// Checks `events` against the policy and the topology and resolves them.
    pub(crate) fn plan(
        events: &[AffinityEvent],
        policy: &Policy,
        topo: &Topology,
        first_system_vector: u8,
    ) -> Result<Events, RtError> {
        let ncpus = topo.cpus.len();
        let mut out = Events {
            online: vec![true; ncpus],
            ..Events::default()
        };
        if events.is_empty() {
            return Ok(out);
        }
        refuse_policy(policy)?;
        let names = queue_names(topo);
        // Which CPU each queue's vector is on, and how many vectors each CPU holds.
        let mut at: Vec<Vec<usize>> = topo
            .cpus
            .iter()
            .enumerate()
            .map(|(c, cpu)| vec![c; cpu.queues.len()])
            .collect();
        let mut used: Vec<usize> = topo.cpus.iter().map(|c| c.queues.len()).collect();
        let room = usize::from(first_system_vector - irqlab_core::posted::FIRST_EXTERNAL_VECTOR);
        let mut online = vec![true; ncpus];
        for e in plan_events(events, ncpus)? {
            let mut moves: Vec<(usize, usize, usize)> = Vec::new();
            let change = match &e.change {
                AffinityChange::Migrate { queue, cpu } => {
                    let Some(&(_, owner, q, polled)) = names.iter().find(|n| &n.0 == queue) else {
                        return Err(RtError::Event(format!(
                            "--event {e}: the run has no queue {queue}; its queues are {}",
                            names
                                .iter()
                                .map(|n| n.0.as_str())
                                .collect::<Vec<_>>()
                                .join(", ")
                        )));
                    };
                    if polled {
                        return Err(RtError::Event(format!(
                            "--event {e}: {queue} is a poll queue, which has no interrupt to move"
                        )));
                    }
                    moves.push((owner, q, *cpu));
                    Change::Migrate { owner, q, to: *cpu }
                }
                AffinityChange::Offline { cpu } => {
                    online[*cpu] = false;
                    let to = offline_target(*cpu, &online).unwrap_or(*cpu);
                    for (owner, queues) in at.iter().enumerate() {
                        for (q, &on) in queues.iter().enumerate() {
                            if on == *cpu && !topo.cpus[owner].queues[q].polled {
                                moves.push((owner, q, to));
                            }
                        }
                    }
                    Change::Offline { cpu: *cpu }
                }
            };
            for (owner, q, to) in moves {
                if at[owner][q] != to {
                    used[to] += 1;
                    at[owner][q] = to;
                    if used[to] > room {
                        return Err(RtError::Event(format!(
                            "--event {e}: CPU thread {to} has no free vector left ({room} device vectors)"
                        )));
                    }
                }
            }
            out.plan.push((e.at_ns, change));
        }
        Ok(out)
    }

    /// When the next event is due (ns after the run's start).
    pub(crate) fn next_at(&self) -> Option<u64> {
        self.plan.get(self.next).map(|&(at, _)| at)
    }

    /// Carries out every event due at `since_start` ns after the run's start.
    pub(crate) fn apply_due(&mut self, since_start: u64, cpus: &Cpus) {
        while let Some(&(at, change)) = self.plan.get(self.next) {
            if at > since_start {
                return;
            }
            self.next += 1;
            self.apply(change, cpus);
        }
    }

    fn apply(&mut self, change: Change, cpus: &Cpus) {
        match change {
            Change::Migrate { owner, q, to } => {
                if let Some((old, new)) = migrate_queue(cpus, owner, q, to)
                    && old != new
                {
                    self.counts.migrations += 1;
                }
            }
            Change::Offline { cpu } => {
                self.online[cpu] = false;
                self.counts.offlined += 1;
                let dying = &cpus[cpu];
                dying.set_offline();
                let Some(to) = offline_target(cpu, &self.online) else {
                    return;
                };
                for (owner, c) in cpus.iter().enumerate() {
                    for (q, qs) in c.queues.iter().enumerate() {
                        if qs.plan.polled || qs.irte.route().cpu as usize != cpu {
                            continue;
                        }
                        let Some((old, new)) = migrate_queue(cpus, owner, q, to) else {
                            continue;
                        };
                        self.counts.migrations += 1;
                        // fixup_irqs: pending in the dying CPU's PIR or IRR, the vector
                        // is retriggered at its new CPU (taken, so it runs once).
                        let pir = dying
                            .path
                            .as_ref()
                            .and_then(DeliveryPath::pi_desc)
                            .is_some_and(|d| d.take_vector(old.vector));
                        let irr = dying.irr.clear(old.vector);
                        if offline_fixup(irr, pir) == Fixup::Retrigger {
                            cpus[to].ipi(new.vector);
                            self.counts.retriggered += 1;
                        }
                    }
                }
            }
        }
    }
}

/// What the runtime cannot move yet, with why.
fn refuse_policy(policy: &Policy) -> Result<(), RtError> {
    match unmovable(policy) {
        Some(why) => Err(RtError::Refused(why.to_string())),
        None => Ok(()),
    }
}
