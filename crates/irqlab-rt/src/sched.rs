//! Scheduling settings of the emulated kernel threads: irq threads run SCHED_FIFO at
//! priority 50 as the kernel's do (kernel/irq/manage.c setup_irq_thread,
//! sched_set_fifo), where this host allows it; CPU threads sleep with 1 ns timer slack so
//! hrtimer-like deadlines (GSIM's timer, hybrid polling's sleep) are not 50 µs late.

/// The priority sched_set_fifo() gives irq threads: MAX_RT_PRIO / 2.
pub const IRQ_THREAD_FIFO_PRIORITY: i32 = 50;

/// Makes the calling thread SCHED_FIFO at `priority`. Err when the host refuses (no
/// CAP_SYS_NICE or RLIMIT_RTPRIO): the thread then stays SCHED_OTHER.
pub fn set_fifo(priority: i32) -> Result<(), std::io::Error> {
    let param = libc::sched_param {
        sched_priority: priority,
    };
    // SAFETY: pid 0 is the calling thread; `param` is a valid sched_param.
    let rc = unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// PR_SET_TIMERSLACK for the calling thread (1 ns: timers fire when due).
pub fn set_timer_slack_ns(ns: u64) {
    // SAFETY: PR_SET_TIMERSLACK takes one unsigned long; failure leaves the default.
    let _ = unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, ns as libc::c_ulong, 0, 0, 0) };
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether the calling thread runs SCHED_FIFO (only the test asks).
    fn is_fifo() -> bool {
        // SAFETY: pid 0 is the calling thread.
        unsafe { libc::sched_getscheduler(0) == libc::SCHED_FIFO }
    }

    #[test]
    fn fifo_is_granted_or_refused_with_a_reason() {
        std::thread::spawn(|| match set_fifo(IRQ_THREAD_FIFO_PRIORITY) {
            Ok(()) => assert!(is_fifo()),
            Err(e) => {
                assert!(e.raw_os_error().is_some(), "{e}");
                assert!(!is_fifo());
            }
        })
        .join()
        .unwrap();
        assert!(!is_fifo(), "only the spawned thread changed");
    }
}
