//! Changes to where interrupts go, at given times of a run: a queue's vector moved to
//! another CPU (`echo N > /proc/irq/IRQ/smp_affinity_list`), or a CPU taken offline
//! (`echo 0 > /sys/devices/system/cpu/cpuN/online`). What each does to messages in flight
//! is [`super::migrate`]'s.

use crate::delivery::Delivery;
use crate::policy::{HandlerStyle, ModeratorKind, Policy};
use std::fmt;

/// One change.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum AffinityChange {
    /// The vector of queue `queue` (its name, e.g. "nvme0q3") moves to CPU `cpu`.
    Migrate { queue: String, cpu: usize },
    /// CPU `cpu` goes offline: its interrupts move away (irq_migrate_all_off_this_cpu,
    /// fixup_irqs) and it takes none after.
    Offline { cpu: usize },
}

/// A change at `at_ns` after the run's start.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AffinityEvent {
    pub at_ns: u64,
    pub change: AffinityChange,
}

impl fmt::Display for AffinityEvent {
    /// The `--event` spelling, with the time in ns.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.change {
            AffinityChange::Migrate { queue, cpu } => {
                write!(f, "{}ns:migrate={queue}:cpu{cpu}", self.at_ns)
            }
            AffinityChange::Offline { cpu } => write!(f, "{}ns:offline=cpu{cpu}", self.at_ns),
        }
    }
}

/// Events no kernel would carry out.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EventError {
    /// A CPU the run does not have.
    NoSuchCpu { event: String, cpus: usize },
    /// irq_set_affinity to a mask with no online CPU fails (-EINVAL).
    MigrateToOffline { event: String },
    /// The CPU went offline at an earlier event.
    OfflineTwice { event: String },
    /// The last online CPU cannot go offline (cpu_down refuses it).
    LastCpu { event: String },
}

impl fmt::Display for EventError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EventError::NoSuchCpu { event, cpus } => {
                write!(
                    f,
                    "--event {event}: the run has CPUs 0 to {}",
                    cpus.saturating_sub(1)
                )
            }
            EventError::MigrateToOffline { event } => write!(
                f,
                "--event {event}: that CPU is offline by then (irq_set_affinity refuses a CPU that is not online)"
            ),
            EventError::OfflineTwice { event } => {
                write!(f, "--event {event}: that CPU is offline already")
            }
            EventError::LastCpu { event } => write!(
                f,
                "--event {event}: it is the last online CPU, which cannot go offline"
            ),
        }
    }
}

impl std::error::Error for EventError {}

/// The events in time order (a stable sort: simultaneous events keep their order),
/// checked against a run of `cpus` CPUs.
pub fn plan_events(
    events: &[AffinityEvent],
    cpus: usize,
) -> Result<Vec<AffinityEvent>, EventError> {
    let mut plan = events.to_vec();
    plan.sort_by_key(|e| e.at_ns);
    let mut online = vec![true; cpus];
    for e in &plan {
        let event = e.to_string();
        let cpu = match &e.change {
            AffinityChange::Migrate { cpu, .. } | AffinityChange::Offline { cpu } => *cpu,
        };
        if cpu >= cpus {
            return Err(EventError::NoSuchCpu { event, cpus });
        }
        match e.change {
            AffinityChange::Migrate { .. } if !online[cpu] => {
                return Err(EventError::MigrateToOffline { event });
            }
            AffinityChange::Migrate { .. } => {}
            AffinityChange::Offline { .. } if !online[cpu] => {
                return Err(EventError::OfflineTwice { event });
            }
            AffinityChange::Offline { .. } if online.iter().filter(|&&o| o).count() == 1 => {
                return Err(EventError::LastCpu { event });
            }
            AffinityChange::Offline { .. } => online[cpu] = false,
        }
    }
    Ok(plan)
}

/// Why a run's interrupts cannot be moved under its policy, in either engine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unmovable {
    /// The delivery raises no interrupts: there is nothing to move.
    NoInterrupts(Delivery),
    /// An irq thread or a poll instance would have to move with the vector.
    Handler(HandlerStyle),
    /// GSIM's per-CPU state would have to follow the moved vectors.
    Gsim,
}

impl fmt::Display for Unmovable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Unmovable::NoInterrupts(d) => {
                write!(f, "--event moves interrupts, and --delivery {d} raises none")
            }
            Unmovable::Handler(h) => write!(
                f,
                "--event with --handler {h}: only hardirq handlers' vectors move (an irq thread or a poll instance would have to move with them, kernel/irq/manage.c irq_thread_check_affinity); use --handler hardirq"
            ),
            Unmovable::Gsim => f.write_str(
                "--event with --moderator gsim: GSIM's per-CPU state would have to follow the moved vectors",
            ),
        }
    }
}

impl std::error::Error for Unmovable {}

/// What keeps `policy`'s interrupts from moving, if anything (both engines refuse these).
pub fn unmovable(policy: &Policy) -> Option<Unmovable> {
    if !policy.delivery.takes_interrupts() {
        return Some(Unmovable::NoInterrupts(policy.delivery));
    }
    if policy.handler != HandlerStyle::Hardirq {
        return Some(Unmovable::Handler(policy.handler));
    }
    (policy.moderator == ModeratorKind::Gsim).then_some(Unmovable::Gsim)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn migrate(at_ns: u64, cpu: usize) -> AffinityEvent {
        AffinityEvent {
            at_ns,
            change: AffinityChange::Migrate {
                queue: "nvme0q1".into(),
                cpu,
            },
        }
    }

    fn offline(at_ns: u64, cpu: usize) -> AffinityEvent {
        AffinityEvent {
            at_ns,
            change: AffinityChange::Offline { cpu },
        }
    }

    #[test]
    fn events_are_ordered_in_time_and_checked_against_the_cpus_online_then() {
        let plan = plan_events(&[offline(8, 1), migrate(5, 1)], 2).unwrap();
        assert_eq!(plan, [migrate(5, 1), offline(8, 1)]);
        assert!(matches!(
            plan_events(&[offline(5, 1), migrate(8, 1)], 2),
            Err(EventError::MigrateToOffline { .. })
        ));
        assert!(matches!(
            plan_events(&[offline(5, 1), offline(8, 0)], 2),
            Err(EventError::LastCpu { .. })
        ));
        assert!(matches!(
            plan_events(&[offline(5, 1), offline(8, 1)], 3),
            Err(EventError::OfflineTwice { .. })
        ));
        let e = plan_events(&[migrate(5, 4)], 2).unwrap_err();
        assert_eq!(
            e.to_string(),
            "--event 5ns:migrate=nvme0q1:cpu4: the run has CPUs 0 to 1"
        );
    }

    #[test]
    fn a_policy_whose_interrupts_cannot_move_says_why() {
        let hardirq = Policy::default();
        assert_eq!(unmovable(&hardirq), None);
        let polled = Policy {
            delivery: Delivery::Polled,
            ..Policy::default()
        };
        assert!(matches!(
            unmovable(&polled),
            Some(Unmovable::NoInterrupts(_))
        ));
        let threaded = Policy {
            handler: HandlerStyle::Threaded,
            ..Policy::default()
        };
        let why = unmovable(&threaded).unwrap().to_string();
        assert!(
            why.contains("--handler threaded") && why.contains("irq_thread_check_affinity"),
            "{why}"
        );
        let gsim = Policy {
            moderator: ModeratorKind::Gsim,
            ..Policy::default()
        };
        assert_eq!(unmovable(&gsim), Some(Unmovable::Gsim));
    }
}
