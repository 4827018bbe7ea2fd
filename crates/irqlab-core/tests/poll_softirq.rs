//! kernel/softirq.c handle_softirqs restart rule and ksoftirqd hand-over; NAPI deferral in
//! napi_complete_done (net/core/dev.c).

use irqlab_core::napi_defer::{NapiComplete, NapiDefer, NapiDeferConfig};
use irqlab_core::softirq::{
    SoftirqConfig, SoftirqContext, SoftirqCpu, SoftirqStep, SoftirqVec, msecs_to_jiffies,
};

/// Runs one invocation in which every IRQ_POLL action re-raises itself (budget never
/// enough); returns the number of passes and how it ended.
fn self_raising(
    cpu: &mut SoftirqCpu,
    jiffy_at_pass: impl Fn(u32) -> u64,
    resched_at: Option<u32>,
) -> (u32, SoftirqStep) {
    cpu.raise(SoftirqVec::IrqPoll);
    assert!(cpu.irq_exit_should_run());
    assert!(cpu.begin(jiffy_at_pass(0), SoftirqContext::IrqExit));
    let mut passes = 0;
    loop {
        let step = cpu.next(jiffy_at_pass(passes), resched_at == Some(passes));
        match step {
            SoftirqStep::Run(v) => {
                assert_eq!(v, SoftirqVec::IrqPoll);
                passes += 1;
                cpu.raise(SoftirqVec::IrqPoll);
            }
            end => return (passes, end),
        }
    }
}

#[test]
fn ten_passes_then_ksoftirqd_takes_over() {
    let mut cpu = SoftirqCpu::new(SoftirqConfig::new(1000));
    let (passes, end) = self_raising(&mut cpu, |_| 0, None);
    // MAX_SOFTIRQ_RESTART 10 with --max_restart: ten passes, nine restarts.
    assert_eq!(passes, 10);
    assert_eq!(end, SoftirqStep::WakeKsoftirqd);
    assert_eq!(cpu.counters().restarts, 9);
    assert!(cpu.ksoftirqd_awake());
    assert!(
        cpu.is_pending(SoftirqVec::IrqPoll),
        "the work is left for ksoftirqd"
    );
    assert!(cpu.ksoftirqd_should_run());
}

#[test]
fn two_milliseconds_of_jiffies_end_the_restarts() {
    let mut cpu = SoftirqCpu::new(SoftirqConfig::new(1000));
    // Each pass takes a jiffy (1 ms at HZ=1000): at pass 2, jiffies == start + 2.
    let (passes, end) = self_raising(&mut cpu, u64::from, None);
    assert_eq!((passes, end), (2, SoftirqStep::WakeKsoftirqd));
    // msecs_to_jiffies rounds up: 2 ms is one jiffy at HZ=100 and HZ=250.
    assert_eq!(msecs_to_jiffies(2, 1000), 2);
    assert_eq!(msecs_to_jiffies(2, 250), 1);
    assert_eq!(msecs_to_jiffies(2, 100), 1);
    let mut slow = SoftirqCpu::new(SoftirqConfig::new(250));
    assert_eq!(self_raising(&mut slow, u64::from, None).0, 1);
}

#[test]
fn need_resched_hands_over_after_the_current_pass() {
    let mut cpu = SoftirqCpu::new(SoftirqConfig::default());
    let (passes, end) = self_raising(&mut cpu, |_| 0, Some(3));
    assert_eq!((passes, end), (3, SoftirqStep::WakeKsoftirqd));
}

#[test]
fn actions_run_in_bit_order_and_work_raised_meanwhile_restarts() {
    let mut cpu = SoftirqCpu::new(SoftirqConfig::default());
    cpu.raise(SoftirqVec::Rcu);
    cpu.raise(SoftirqVec::NetRx);
    cpu.raise(SoftirqVec::Timer);
    assert!(cpu.begin(0, SoftirqContext::IrqExit));
    assert!(
        !cpu.any_pending(),
        "the mask is cleared before the actions run"
    );
    assert!(cpu.in_softirq() && !cpu.irq_exit_should_run());
    assert_eq!(cpu.next(0, false), SoftirqStep::Run(SoftirqVec::Timer));
    // A hardirq during NET_RX raises IRQ_POLL: handled in a second pass.
    assert_eq!(cpu.next(0, false), SoftirqStep::Run(SoftirqVec::NetRx));
    cpu.raise(SoftirqVec::IrqPoll);
    assert_eq!(cpu.next(0, false), SoftirqStep::Run(SoftirqVec::Rcu));
    assert_eq!(cpu.next(0, false), SoftirqStep::Run(SoftirqVec::IrqPoll));
    assert_eq!(cpu.next(0, false), SoftirqStep::Done);
    assert!(!cpu.ksoftirqd_awake());
    assert_eq!(cpu.counters().actions[SoftirqVec::IrqPoll as usize], 1);
}

#[test]
fn inline_at_irq_exit_even_with_ksoftirqd_awake_unless_the_2016_rule_is_chosen() {
    let mut cpu = SoftirqCpu::new(SoftirqConfig::default());
    self_raising(&mut cpu, |_| 0, None);
    assert!(cpu.ksoftirqd_awake());
    cpu.raise(SoftirqVec::Block);
    assert!(
        cpu.irq_exit_should_run(),
        "v6.5 reverted 'let ksoftirqd do its job'"
    );
    let mut old = SoftirqCpu::new(SoftirqConfig {
        defer_to_running_ksoftirqd: true,
        ..SoftirqConfig::default()
    });
    self_raising(&mut old, |_| 0, None);
    assert!(!old.irq_exit_should_run());
    // ksoftirqd_running(): HI and TASKLET (SOFTIRQ_NOW_MASK) still run at irq_exit.
    let mut tasklet = old.clone();
    tasklet.raise(SoftirqVec::Tasklet);
    assert!(tasklet.irq_exit_should_run());
    // ksoftirqd runs the same loop; when it drains everything it sleeps again.
    assert!(old.ksoftirqd_should_run());
    assert!(old.begin(5, SoftirqContext::Ksoftirqd));
    assert_eq!(old.next(5, false), SoftirqStep::Run(SoftirqVec::IrqPoll));
    assert_eq!(old.next(5, false), SoftirqStep::Done);
    assert!(!old.ksoftirqd_awake());
    assert_eq!(old.counters().ksoftirqd_runs, 1);
}

fn napi(defer: u32, gro_ns: u64) -> NapiDefer {
    NapiDefer::new(NapiDeferConfig {
        napi_defer_hard_irqs: defer,
        gro_flush_timeout_ns: gro_ns,
        ..NapiDeferConfig::default()
    })
}

#[test]
fn napi_keeps_the_irq_masked_for_n_empty_polls_spaced_by_gro_flush_timeout() {
    let mut n = napi(2, 20_000);
    let masked = NapiComplete::KeepMasked { timer_ns: 20_000 };
    // Poll with work reloads the count (2) and spends one: masked, timer armed.
    assert_eq!(n.napi_complete_done(5), masked);
    assert_eq!(n.defer_hard_irqs_count(), 1);
    // Timer poll finds nothing: the last deferral.
    assert_eq!(n.napi_complete_done(0), masked);
    // Another empty poll: out of deferrals, re-enable the interrupt.
    assert_eq!(n.napi_complete_done(0), NapiComplete::ReenableIrq);
    // New traffic restarts the sequence; progress in the middle reloads it.
    assert_eq!(n.napi_complete_done(1), masked);
    assert_eq!(n.napi_complete_done(3), masked);
    assert_eq!(n.napi_complete_done(0), masked);
    assert_eq!(n.napi_complete_done(0), NapiComplete::ReenableIrq);
    assert_eq!(n.deferrals(), (5, 0));
}

#[test]
fn napi_without_a_timeout_or_count_re_enables_at_once() {
    let mut no_timer = napi(4, 0);
    assert_eq!(no_timer.napi_complete_done(9), NapiComplete::ReenableIrq);
    assert_eq!(
        no_timer.defer_hard_irqs_count(),
        3,
        "the count is spent even so"
    );
    let mut no_count = napi(0, 50_000);
    assert_eq!(no_count.napi_complete_done(9), NapiComplete::ReenableIrq);
}

#[test]
fn irq_suspension_wins_while_the_application_busy_polls() {
    let mut n = NapiDefer::new(NapiDeferConfig {
        napi_defer_hard_irqs: 1,
        gro_flush_timeout_ns: 20_000,
        irq_suspend_timeout_ns: 2_000_000,
        prefer_busy_poll: true,
    });
    let suspended = NapiComplete::KeepMasked {
        timer_ns: 2_000_000,
    };
    for _ in 0..5 {
        assert_eq!(n.napi_complete_done(0), suspended);
    }
    assert_eq!(n.busy_poll_stop(), Some(2_000_000));
    // epoll found no events and sleeps: back to ordinary deferral.
    n.set_prefer_busy_poll(false);
    assert_eq!(
        n.napi_complete_done(4),
        NapiComplete::KeepMasked { timer_ns: 20_000 }
    );
    assert_eq!(n.napi_complete_done(0), NapiComplete::ReenableIrq);
    assert_eq!(n.deferrals(), (1, 5));
}
