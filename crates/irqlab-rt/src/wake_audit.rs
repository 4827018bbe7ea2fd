//! The lost-wake-up audit: tells a CPU thread that sleeps through its work apart from
//! one the host has not run yet. A starved thread is runnable (its wake-up was issued,
//! the host runs others); a lost wake-up leaves it blocked in futex_wait with work that
//! a notification or kick stood for and nobody left to issue one.
//!
//! The run's watchdog samples every CPU thread at intervals. A sample is suspect when
//! the thread is armed to sleep ([`crate::wake::Notifier::is_halted`]: no notification or
//! kick pending on its word), work waits for it ([`CpuShared::has_pending_work`]) and no
//! delivery is under way ([`CpuShared::begin_delivery`]: a sender between publishing and
//! notifying, which a preempted sender can be for long). Two suspect samples in a row
//! with no notification, kick or new sleep between them are a lost wake-up: the thread
//! slept the whole interval next to work whose delivery had ended without waking it.

use crate::shared::CpuShared;

/// What one sample of a CPU thread saw.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Sample {
    /// Notifications and kicks sent, and sleeps begun, so far.
    signals: u64,
    sleeps: u64,
    suspect: bool,
}

fn sample(cpu: &CpuShared) -> Sample {
    let n = &cpu.notifier;
    let (signals, sleeps) = (n.notifications() + n.kicks(), n.sleeps());
    // Pending work first, the delivery count last: a delivery that publishes after the
    // first read and notifies before the last one moves `signals`.
    let pending = cpu.has_pending_work();
    let halted = n.is_halted();
    let quiet = cpu.deliveries_under_way() == 0;
    let steady = n.notifications() + n.kicks() == signals && n.sleeps() == sleeps;
    Sample {
        signals,
        sleeps,
        suspect: pending && halted && quiet && steady,
    }
}

/// The audit of a run's CPU threads.
#[derive(Debug, Default)]
pub struct WakeAudit {
    last: Vec<Option<Sample>>,
    /// The sample of each CPU's last lost wake-up, so one sleep counts once.
    reported: Vec<Option<Sample>>,
    lost: u64,
}

impl WakeAudit {
    /// Samples every CPU thread once; returns the lost wake-ups found so far.
    pub fn check(&mut self, cpus: &[std::sync::Arc<CpuShared>]) -> u64 {
        self.last.resize(cpus.len(), None);
        self.reported.resize(cpus.len(), None);
        for (i, cpu) in cpus.iter().enumerate() {
            let now = sample(cpu);
            let same_sleep = |s: &Sample| (s.signals, s.sleeps) == (now.signals, now.sleeps);
            if now.suspect
                && self.last[i].is_some_and(|s| s.suspect && same_sleep(&s))
                && !self.reported[i].is_some_and(|s| same_sleep(&s))
            {
                self.lost += 1;
                self.reported[i] = Some(now);
            }
            self.last[i] = Some(now);
        }
        self.lost
    }

    /// Lost wake-ups found.
    pub fn lost(&self) -> u64 {
        self.lost
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::topology::QueuePlan;
    use irqlab_core::Delivery;
    use irqlab_core::delivery::DeliveryPath;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering::SeqCst};
    use std::time::Duration;

    fn cpu(delivery: Delivery) -> Arc<CpuShared> {
        let q = crate::shared::QueueShared::new(
            QueuePlan {
                controller: 0,
                qid: 1,
                vector: 0x20,
                polled: false,
                q_depth: 8,
            },
            0,
            1,
        )
        .unwrap();
        Arc::new(CpuShared::new(
            0,
            DeliveryPath::for_delivery(delivery, 0),
            vec![q],
        ))
    }

    /// A CPU thread that halts until told to stop, taking each notification as the
    /// interrupt path does (the IRR or PIR emptied).
    fn halting(cpu: &Arc<CpuShared>, done: &Arc<AtomicBool>) -> std::thread::JoinHandle<()> {
        let (cpu, done) = (cpu.clone(), done.clone());
        std::thread::spawn(move || {
            while !done.load(SeqCst) {
                cpu.notifier.wait(|| done.load(SeqCst));
                while cpu.irr.take_highest().is_some() {}
                if let Some(d) = cpu.path.as_ref().and_then(DeliveryPath::pi_desc) {
                    let _ = d.harvest();
                    d.clear_on();
                }
            }
        })
    }

    fn wait_halted(cpu: &CpuShared) {
        while !cpu.notifier.is_halted() {
            std::thread::yield_now();
        }
        std::thread::sleep(Duration::from_millis(20));
    }

    #[test]
    fn work_published_without_a_wake_up_is_found_and_a_delivered_one_is_not() {
        for delivery in [Delivery::Remapped, Delivery::Posted { max_loop: 3 }] {
            let c = cpu(delivery);
            let done = Arc::new(AtomicBool::new(false));
            let t = halting(&c, &done);
            let mut audit = WakeAudit::default();
            wait_halted(&c);
            // A delivery that notifies: the thread wakes, takes it and halts again.
            assert!(c.deliver(0x20));
            wait_halted(&c);
            for _ in 0..3 {
                assert_eq!(audit.check(std::slice::from_ref(&c)), 0, "{delivery:?}");
            }
            // A sender preempted between publishing and notifying is no lost wake-up.
            let under_way = c.begin_delivery();
            c.irr.set(0x20);
            if let Some(d) = c.path.as_ref().and_then(DeliveryPath::pi_desc) {
                d.post(0x21);
            }
            for _ in 0..3 {
                assert_eq!(audit.check(std::slice::from_ref(&c)), 0, "{delivery:?}");
            }
            // The delivery ends without notifying: the work waits, the thread sleeps.
            drop(under_way);
            assert_eq!(
                audit.check(std::slice::from_ref(&c)),
                0,
                "one sample is not enough"
            );
            assert_eq!(audit.check(std::slice::from_ref(&c)), 1, "{delivery:?}");
            assert_eq!(
                audit.check(std::slice::from_ref(&c)),
                1,
                "the same sleep counts once"
            );
            // A notification ends it; the thread goes back to sleep with nothing pending.
            c.notifier.notify();
            wait_halted(&c);
            assert!(!c.has_pending_work());
            assert_eq!(audit.check(std::slice::from_ref(&c)), 1);
            assert_eq!(audit.lost(), 1);
            done.store(true, SeqCst);
            c.notifier.wake_to_stop();
            t.join().unwrap();
        }
    }

    #[test]
    fn completions_handed_over_without_a_kick_are_found() {
        let c = cpu(Delivery::Remapped);
        let done = Arc::new(AtomicBool::new(false));
        // This sleeper ignores its inbox, as a CPU thread whose ready() missed it would.
        let t = halting(&c, &done);
        wait_halted(&c);
        let mut audit = WakeAudit::default();
        c.inbox.post(crate::shared::Reaped {
            queue: 0,
            command_ids: vec![1],
            at_ns: 0,
        });
        audit.check(std::slice::from_ref(&c));
        assert_eq!(audit.check(std::slice::from_ref(&c)), 1);
        done.store(true, SeqCst);
        c.notifier.wake_to_stop();
        t.join().unwrap();
    }
}
