//! kernel/irq/resend.c's software resend (v5.3): interrupts that came while their IRQ was
//! disabled, replayed by one global tasklet when the chip cannot retrigger them (before
//! v5.10 only the outermost chip was asked; pci-hyperv's has no irq_retrigger).
//!
//! `irqs_resend` is one bitmap for the machine and `resend_tasklet` one tasklet:
//! tasklet_schedule queues it on the scheduling CPU unless it is already queued
//! somewhere (TASKLET_STATE_SCHED); the CPU that runs it clears SCHED, takes the RUN
//! lock and replays every bit set, whichever CPU set it, lowest IRQ first. A CPU whose
//! tasklet_action finds it locked by another CPU (scheduled again while it ran) puts it
//! back on its list and raises TASKLET_SOFTIRQ again (kernel/softirq.c
//! tasklet_action_common): its softirq restarts until the runner is done.

use std::collections::BTreeSet;

/// What TASKLET_SOFTIRQ on one CPU does with the resend tasklet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TaskletAction {
    /// The tasklet is not on this CPU's list.
    NotHere,
    /// Another CPU holds its RUN lock: back on the list, TASKLET_SOFTIRQ raised again.
    Locked,
    /// This CPU runs it now (resend_irqs): take the vectors with [`ResendTasklet::replay_next`].
    Run,
}

/// The machine's resend bitmap and its tasklet.
#[derive(Clone, Debug, Default)]
pub struct ResendTasklet {
    /// Vectors (by index, the IRQ order) whose replay is pending.
    pending: BTreeSet<usize>,
    /// The CPU whose tasklet list holds it (TASKLET_STATE_SCHED).
    queued_on: Option<usize>,
    /// The CPU running it (TASKLET_STATE_RUN).
    running_on: Option<usize>,
    /// Passes that found it locked (for the report).
    pub contended: u64,
}

impl ResendTasklet {
    /// check_irq_resend → irq_sw_resend on CPU `c`: set the vector's bit and
    /// tasklet_schedule. Returns true when TASKLET_SOFTIRQ must be raised on `c`.
    pub fn resend(&mut self, c: usize, v: usize) -> bool {
        self.pending.insert(v);
        if self.queued_on.is_some() {
            return false;
        }
        self.queued_on = Some(c);
        true
    }

    /// tasklet_action_common on CPU `c`.
    pub fn action(&mut self, c: usize) -> TaskletAction {
        if self.queued_on != Some(c) {
            return TaskletAction::NotHere;
        }
        if self.running_on.is_some_and(|r| r != c) {
            self.contended += 1;
            return TaskletAction::Locked;
        }
        self.queued_on = None;
        self.running_on = Some(c);
        TaskletAction::Run
    }

    /// resend_irqs: the next vector to replay, lowest first; None (and the RUN lock
    /// released) when the bitmap is empty.
    pub fn replay_next(&mut self) -> Option<usize> {
        let v = self.pending.pop_first();
        if v.is_none() {
            self.running_on = None;
        }
        v
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_tasklet_replays_every_cpus_vectors_and_locks_out_the_others() {
        let mut t = ResendTasklet::default();
        assert!(t.resend(0, 7), "queued on CPU 0");
        assert!(!t.resend(1, 3), "already queued: CPU 1 only sets its bit");
        assert_eq!(t.action(1), TaskletAction::NotHere);
        assert_eq!(t.action(0), TaskletAction::Run);
        // Scheduled again by CPU 1 while CPU 0 runs it: CPU 1 spins on the lock.
        assert!(t.resend(1, 9));
        assert_eq!(t.action(1), TaskletAction::Locked);
        assert_eq!(t.replay_next(), Some(3));
        assert_eq!(t.replay_next(), Some(7));
        assert_eq!(t.replay_next(), Some(9));
        assert_eq!(t.replay_next(), None);
        assert_eq!(t.action(1), TaskletAction::Run);
        assert_eq!(t.replay_next(), None);
        assert_eq!(t.contended, 1);
    }
}
