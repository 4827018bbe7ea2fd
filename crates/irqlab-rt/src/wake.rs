//! The wake primitive of a CPU thread: one futex word that plays the local APIC's IRR bit
//! for "a notification is pending" and records whether the thread is halted (blocked).
//!
//! A notification is a futex wake system call, issued whether or not the thread sleeps:
//! it stands for the interrupt message, whose cost the sender pays per notification
//! (with `lazy` set, the call is skipped when the thread is running).
//!
//! Protocol (arm / check / sleep): a notifier first publishes its work (a CQE, a PIR bit),
//! then calls [`Notifier::notify`], which sets NOTIFIED and wakes the thread if it had
//! armed SLEEPING. The sleeper consumes NOTIFIED, checks for work, then arms
//! SLEEPING with a compare-exchange from 0 and calls futex wait on the value SLEEPING, so a
//! notify that lands anywhere after the check either makes the exchange fail or finds
//! SLEEPING and wakes it: no wake-up can be lost.

use crate::clock::now_ns;
use rustix::thread::futex::{self, Timespec};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering::*};

const NOTIFIED: u32 = 1;
const SLEEPING: u32 = 2;
/// Work was published for `ready()` (no interrupt): the thread must look again.
const KICKED: u32 = 4;

/// One CPU thread's notification word and its counters.
#[derive(Debug, Default)]
pub struct Notifier {
    word: AtomicU32,
    /// Skip the futex call when the thread is not halted.
    lazy: bool,
    /// Notifications raised (calls to notify).
    notifications: AtomicU64,
    /// Futex wakes that found the thread blocked: the real wake-ups.
    wakeups: AtomicU64,
    /// Times the thread really blocked in futex wait.
    sleeps: AtomicU64,
    /// Calls to kick (work published for `ready()`).
    kicks: AtomicU64,
}

/// Why [`Notifier::wait`] returned.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Woken {
    /// A notification was pending: run the interrupt path.
    Notified,
    /// `ready()` reported work without a notification (e.g. an I/O completed by a reap).
    Ready,
    /// The deadline of [`Notifier::wait_until`] passed (an hrtimer of the CPU fired).
    Timeout,
}

impl Notifier {
    /// A notifier whose every notification is a futex wake call.
    pub fn new() -> Self {
        Self::default()
    }

    /// A notifier that calls futex wake only when the thread has armed SLEEPING.
    pub fn lazy() -> Self {
        Notifier {
            lazy: true,
            ..Self::default()
        }
    }

    /// Raises a notification (an interrupt to this CPU thread). Returns true when the
    /// thread was halted and this call woke it.
    pub fn notify(&self) -> bool {
        self.notifications.fetch_add(1, Relaxed);
        let old = self.word.fetch_or(NOTIFIED, SeqCst);
        if self.lazy && old & SLEEPING == 0 {
            return false;
        }
        // Errors can only be EFAULT on a valid reference: nothing to do about them.
        let woke = futex::wake(&self.word, futex::Flags::PRIVATE, 1).unwrap_or(0) > 0;
        if woke {
            self.wakeups.fetch_add(1, Relaxed);
        }
        woke
    }

    /// Wakes the thread for work its `ready()` check finds (a completion an irq thread
    /// handed over: the wake-up of the fio task), without raising a notification.
    /// Returns true when the thread was halted and this call woke it.
    pub fn kick(&self) -> bool {
        self.kicks.fetch_add(1, Relaxed);
        let old = self.word.fetch_or(KICKED, SeqCst);
        if old & SLEEPING == 0 {
            return false;
        }
        let woke = futex::wake(&self.word, futex::Flags::PRIVATE, 1).unwrap_or(0) > 0;
        if woke {
            self.wakeups.fetch_add(1, Relaxed);
        }
        woke
    }

    /// Wakes the thread to end it: like [`Notifier::notify`] but counted nowhere, so the
    /// counters hold only the run's own notifications and wake-ups.
    pub fn wake_to_stop(&self) {
        self.word.fetch_or(NOTIFIED, SeqCst);
        let _ = futex::wake(&self.word, futex::Flags::PRIVATE, 1);
    }

    /// Takes a pending notification without blocking (the check at an interrupt-enabled
    /// point of a running CPU).
    pub fn take(&self) -> bool {
        self.word.load(Relaxed) & NOTIFIED != 0 && self.word.swap(0, SeqCst) & NOTIFIED != 0
    }

    /// Blocks (the CPU halts) until a notification arrives or `ready()` is true.
    pub fn wait(&self, ready: impl Fn() -> bool) -> Woken {
        self.wait_until(ready, None)
    }

    /// [`Notifier::wait`] that also returns at `deadline_ns` (monotonic), like a halted
    /// CPU woken by its own hrtimer. The sleep is a futex wait with a relative timeout:
    /// how late it returns is the host's timer slack and wake-up latency.
    pub fn wait_until(&self, ready: impl Fn() -> bool, deadline_ns: Option<u64>) -> Woken {
        loop {
            if self.word.swap(0, SeqCst) & NOTIFIED != 0 {
                return Woken::Notified;
            }
            if ready() {
                return Woken::Ready;
            }
            if self
                .word
                .compare_exchange(0, SLEEPING, SeqCst, SeqCst)
                .is_err()
            {
                continue;
            }
            // Re-check after arming: work published without a notify (a reaper's
            // completion) would otherwise sleep until the next unrelated notification.
            if ready() {
                self.word.fetch_and(!SLEEPING, SeqCst);
                continue;
            }
            let timeout = match deadline_ns {
                None => None,
                Some(d) => {
                    let left = d.saturating_sub(now_ns());
                    if left == 0 {
                        self.word.fetch_and(!SLEEPING, SeqCst);
                        return Woken::Timeout;
                    }
                    Some(Timespec {
                        tv_sec: (left / 1_000_000_000) as i64,
                        tv_nsec: (left % 1_000_000_000) as i64,
                    })
                }
            };
            self.sleeps.fetch_add(1, Relaxed);
            // EAGAIN (word changed before sleeping), EINTR and ETIMEDOUT all mean: look
            // again (the deadline check above ends the wait).
            let _ = futex::wait(
                &self.word,
                futex::Flags::PRIVATE,
                SLEEPING,
                timeout.as_ref(),
            );
        }
    }

    /// Whether the thread is halted with no notification pending (for watchdogs).
    pub fn is_halted(&self) -> bool {
        self.word.load(SeqCst) == SLEEPING
    }

    pub fn notifications(&self) -> u64 {
        self.notifications.load(Relaxed)
    }

    pub fn wakeups(&self) -> u64 {
        self.wakeups.load(Relaxed)
    }

    pub fn sleeps(&self) -> u64 {
        self.sleeps.load(Relaxed)
    }

    pub fn kicks(&self) -> u64 {
        self.kicks.load(Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;
    use std::sync::atomic::AtomicBool;

    #[test]
    fn a_pending_notification_is_taken_once_and_repeats_merge() {
        let n = Notifier::new();
        assert!(!n.notify(), "nobody was halted");
        assert!(!n.notify());
        assert_eq!(n.notifications(), 2);
        assert_eq!(n.wakeups(), 0);
        assert_eq!(n.wait(|| false), Woken::Notified);
        assert!(!n.take());
        assert_eq!(n.wait(|| true), Woken::Ready);
    }

    #[test]
    fn a_halted_thread_is_woken_and_the_wake_is_counted() {
        a_halted_thread_is_woken(Notifier::new());
        a_halted_thread_is_woken(Notifier::lazy());
    }

    fn a_halted_thread_is_woken(n: Notifier) {
        let n = Arc::new(n);
        let done = Arc::new(AtomicBool::new(false));
        let t = {
            let (n, done) = (n.clone(), done.clone());
            std::thread::spawn(move || {
                let mut rounds = 0;
                while !done.load(SeqCst) {
                    n.wait(|| done.load(SeqCst));
                    rounds += 1;
                }
                rounds
            })
        };
        while !n.is_halted() {
            std::thread::yield_now();
        }
        // Armed; give it time to enter futex wait.
        std::thread::sleep(std::time::Duration::from_millis(50));
        assert!(n.notify(), "the thread was halted, so this notify wakes it");
        done.store(true, SeqCst);
        n.notify();
        assert!(t.join().unwrap() >= 1);
        assert!(n.wakeups() >= 1);
        assert!(n.sleeps() >= 1);
    }

    #[test]
    fn a_kick_wakes_a_halted_thread_without_a_notification() {
        let n = Arc::new(Notifier::new());
        let work = Arc::new(AtomicBool::new(false));
        let t = {
            let (n, work) = (n.clone(), work.clone());
            std::thread::spawn(move || n.wait(|| work.load(SeqCst)))
        };
        while !n.is_halted() {
            std::thread::yield_now();
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
        work.store(true, SeqCst);
        assert!(n.kick(), "the thread was halted");
        assert_eq!(t.join().unwrap(), Woken::Ready);
        assert_eq!(n.notifications(), 0);
        assert_eq!(n.wakeups(), 1);
        assert!(!n.kick(), "nobody sleeps now");
        assert!(!n.take(), "a kick is not an interrupt");
    }

    #[test]
    fn a_stop_wake_ends_the_wait_uncounted() {
        let n = Arc::new(Notifier::lazy());
        let t = {
            let n = n.clone();
            std::thread::spawn(move || n.wait(|| false))
        };
        while !n.is_halted() {
            std::thread::yield_now();
        }
        n.wake_to_stop();
        assert_eq!(t.join().unwrap(), Woken::Notified);
        assert_eq!((n.notifications(), n.wakeups()), (0, 0));
    }

    #[test]
    fn a_deadline_ends_the_wait_and_a_notification_still_wins() {
        let n = Notifier::new();
        let t = now_ns();
        assert_eq!(n.wait_until(|| false, Some(t + 2_000_000)), Woken::Timeout);
        assert!(now_ns() >= t + 2_000_000);
        assert_eq!(n.wait_until(|| false, Some(0)), Woken::Timeout, "past");
        n.notify();
        assert_eq!(
            n.wait_until(|| false, Some(now_ns() + 1_000_000_000)),
            Woken::Notified
        );
        assert!(!n.is_halted());
    }

    #[test]
    fn ping_pong_never_loses_a_wake_up() {
        // Two threads hand a token back and forth 20_000 times through two notifiers; a
        // lost wake-up would hang the test.
        let a = Arc::new(Notifier::lazy());
        let b = Arc::new(Notifier::new());
        let t = {
            let (a, b) = (a.clone(), b.clone());
            std::thread::spawn(move || {
                for _ in 0..20_000 {
                    b.wait(|| false);
                    a.notify();
                }
            })
        };
        for _ in 0..20_000 {
            b.notify();
            a.wait(|| false);
        }
        t.join().unwrap();
        assert_eq!(a.notifications(), 20_000);
    }
}
