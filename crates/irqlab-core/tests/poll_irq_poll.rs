//! lib/irq_poll.c: the shared 256 budget, round robin, the one-jiffy time limit, ownership
//! by weight, disable/enable.

use irqlab_core::irq_poll::{
    IRQ_POLL_BUDGET, IrqPollCpu, IrqPollError, IrqPollId, IrqPollUntil, StopReason, jiffies,
};

/// Runs one softirq at a fixed jiffy where every poll consumes its whole weight.
fn run_busy(cpu: &mut IrqPollCpu, jiffy: u64) -> (Vec<IrqPollId>, bool, StopReason, u64) {
    cpu.start_softirq(jiffy).expect("not running");
    let mut order = vec![];
    while let Some((id, weight)) = cpu.next_poll(jiffy).expect("running") {
        order.push(id);
        cpu.poll_done(id, weight, false)
            .expect("owned by the softirq");
    }
    let (rearm, stop, work) = cpu.finish().expect("run over");
    (order, rearm, stop, work)
}

#[test]
fn two_busy_instances_share_the_256_budget_round_robin_and_re_raise() {
    let mut cpu = IrqPollCpu::default();
    let a = cpu.init(64).unwrap();
    let b = cpu.init(64).unwrap();
    assert!(cpu.sched(a).unwrap());
    assert!(cpu.sched(b).unwrap());
    assert!(
        !cpu.sched(a).unwrap(),
        "already scheduled: the first scheduler owns it"
    );
    assert!(cpu.softirq_pending());
    let (order, rearm, stop, work) = run_busy(&mut cpu, 100);
    assert_eq!(order, vec![a, b, a, b]);
    assert_eq!(work, u64::from(IRQ_POLL_BUDGET));
    assert_eq!(stop, StopReason::BudgetExhausted);
    assert!(
        rearm && cpu.softirq_pending(),
        "budget spent with work left: re-raised"
    );
    assert_eq!(
        cpu.listed().collect::<Vec<_>>(),
        vec![a, b],
        "both still listed, in order"
    );
    assert!(cpu.is_scheduled(a) && cpu.is_scheduled(b));
    assert_eq!(cpu.counters().budget_exhausted, 1);
}

#[test]
fn round_robin_order_carries_over_to_the_next_run() {
    let mut cpu = IrqPollCpu::default();
    let ids: Vec<_> = (0..3).map(|_| cpu.init(64).unwrap()).collect();
    for &id in &ids {
        cpu.sched(id).unwrap();
    }
    let (first, ..) = run_busy(&mut cpu, 7);
    assert_eq!(first, vec![ids[0], ids[1], ids[2], ids[0]]);
    let (second, ..) = run_busy(&mut cpu, 8);
    assert_eq!(second, vec![ids[1], ids[2], ids[0], ids[1]]);
}

#[test]
fn the_run_stops_as_soon_as_the_jiffy_changes() {
    let mut cpu = IrqPollCpu::default();
    let a = cpu.init(32).unwrap();
    cpu.sched(a).unwrap();
    cpu.start_softirq(500).unwrap();
    let (id, w) = cpu.next_poll(500).unwrap().unwrap();
    cpu.poll_done(id, w, false).unwrap();
    // Budget is 224, but the tick moved jiffies: time_after(jiffies, start_time).
    assert_eq!(cpu.next_poll(501).unwrap(), None);
    let (rearm, stop, work) = cpu.finish().unwrap();
    assert_eq!((rearm, stop, work), (true, StopReason::TimeLimit, 32));
    assert_eq!(cpu.counters().time_limit, 1);
    // jiffies from ns: HZ=1000 ticks each ms, HZ=250 each 4 ms.
    assert_eq!(jiffies(3_999_999, 1000), 3);
    assert_eq!(jiffies(3_999_999, 250), 0);
}

#[test]
fn under_weight_the_driver_completes_and_leaves_the_list() {
    let mut cpu = IrqPollCpu::default();
    let a = cpu.init(64).unwrap();
    let b = cpu.init(64).unwrap();
    cpu.sched(a).unwrap();
    cpu.sched(b).unwrap();
    cpu.start_softirq(0).unwrap();
    let (id, _) = cpu.next_poll(0).unwrap().unwrap();
    assert_eq!(id, a);
    cpu.poll_done(a, 10, true).unwrap();
    let (id, _) = cpu.next_poll(0).unwrap().unwrap();
    cpu.poll_done(id, 3, true).unwrap();
    assert_eq!(cpu.next_poll(0).unwrap(), None);
    let (rearm, stop, work) = cpu.finish().unwrap();
    assert_eq!((rearm, stop, work), (false, StopReason::Empty, 13));
    assert!(!cpu.softirq_pending());
    assert!(!cpu.is_scheduled(a));
    assert!(
        cpu.sched(a).unwrap(),
        "completed instances can be scheduled again"
    );
}

#[test]
fn under_weight_without_completing_is_polled_again_at_the_head() {
    let mut cpu = IrqPollCpu::default();
    let a = cpu.init(64).unwrap();
    let b = cpu.init(64).unwrap();
    cpu.sched(a).unwrap();
    cpu.sched(b).unwrap();
    cpu.start_softirq(0).unwrap();
    let (id, _) = cpu.next_poll(0).unwrap().unwrap();
    cpu.poll_done(id, 5, false).unwrap();
    assert_eq!(cpu.next_poll(0).unwrap().map(|p| p.0), Some(a));
}

#[test]
fn contract_violations_are_errors_not_corruption() {
    let mut cpu = IrqPollCpu::default();
    assert_eq!(cpu.init(0), Err(IrqPollError::ZeroWeight));
    let a = cpu.init(8).unwrap();
    cpu.sched(a).unwrap();
    assert_eq!(cpu.next_poll(0), Err(IrqPollError::NoSoftirqRunning));
    cpu.start_softirq(0).unwrap();
    assert_eq!(
        cpu.start_softirq(0),
        Err(IrqPollError::SoftirqAlreadyRunning)
    );
    let (id, w) = cpu.next_poll(0).unwrap().unwrap();
    assert!(matches!(
        cpu.poll_done(id, w, true),
        Err(IrqPollError::CompletedAtFullWeight { .. })
    ));
    assert_eq!(cpu.finish(), Err(IrqPollError::NotPolling(id)));
    cpu.poll_done(id, w, false).unwrap();
    assert_eq!(cpu.finish(), Err(IrqPollError::RunNotOver));
    assert_eq!(cpu.enable(a), Err(IrqPollError::EnableWhileListed(a)));
    assert_eq!(
        cpu.sched(IrqPollId(9)),
        Err(IrqPollError::UnknownInstance(IrqPollId(9)))
    );
}

#[test]
fn disable_waits_for_the_softirq_to_let_go_then_blocks_scheduling() {
    let mut cpu = IrqPollCpu::default();
    let a = cpu.init(16).unwrap();
    cpu.sched(a).unwrap();
    assert!(
        !cpu.try_disable(a).unwrap(),
        "the softirq owns it: msleep(1) and retry"
    );
    assert!(!cpu.sched(a).unwrap(), "DISABLE refuses new scheduling");
    cpu.start_softirq(0).unwrap();
    let (id, w) = cpu.next_poll(0).unwrap().unwrap();
    // Full weight with DISABLE set: the softirq completes it instead of requeueing.
    cpu.poll_done(id, w, false).unwrap();
    assert_eq!(cpu.next_poll(0).unwrap(), None);
    assert_eq!(cpu.finish().unwrap().1, StopReason::Empty);
    assert!(cpu.try_disable(a).unwrap());
    assert!(!cpu.sched(a).unwrap(), "disabled: SCHED is held");
    cpu.enable(a).unwrap();
    assert_eq!(cpu.enable(a), Err(IrqPollError::EnableWithoutSched(a)));
    assert!(cpu.sched(a).unwrap());
}

#[test]
fn sagis_variant_polls_past_the_budget_and_the_jiffy_until_need_resched() {
    let mut cpu = IrqPollCpu::with_until(IrqPollUntil::Resched);
    let a = cpu.init(64).unwrap();
    cpu.sched(a).unwrap();
    cpu.start_softirq(10).unwrap();
    // Ten full polls: 640 CQEs, past the 256 budget, and across two jiffies.
    for jiffy in 10..20 {
        let (id, weight) = cpu.next_poll_checked(jiffy / 5, false).unwrap().unwrap();
        cpu.poll_done(id, weight, false).unwrap();
    }
    assert_eq!(
        cpu.next_poll_checked(99, true).unwrap(),
        None,
        "need_resched"
    );
    let (rearm, stop, work) = cpu.finish().unwrap();
    assert_eq!((rearm, stop, work), (true, StopReason::NeedResched, 640));
    assert_eq!(cpu.counters().need_resched, 1);
    // The kernel's rule ignores need_resched inside the run and stops on the budget.
    let mut kernel = IrqPollCpu::default();
    let b = kernel.init(64).unwrap();
    kernel.sched(b).unwrap();
    kernel.start_softirq(10).unwrap();
    let mut polls = 0;
    while let Some((id, weight)) = kernel.next_poll_checked(10, true).unwrap() {
        kernel.poll_done(id, weight, false).unwrap();
        polls += 1;
    }
    assert_eq!(polls, 4);
    assert_eq!(kernel.finish().unwrap().1, StopReason::BudgetExhausted);
}
