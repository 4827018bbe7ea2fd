//! The `Moderator` facade and property tests: levels stay in range for any input, and
//! irq_poll never overspends its budget by more than one weight nor loses an instance.

use irqlab_core::ModeratorKind;
use irqlab_core::dim::{CqPeriodMode, NET_DIM_RX_EQE_PROFILES, Profile, RDMA_DIM_PROFILES};
use irqlab_core::irq_poll::IrqPollCpu;
use irqlab_core::moderator::{LEVEL_COURSE_INTERVALS, LEVEL_COURSE_NS, Moderator, is_per_cpu};
use irqlab_core::nvme::coalesce::PERIOD_MODE;
use proptest::prelude::*;

#[test]
fn built_from_the_policy_kind() {
    for kind in [ModeratorKind::None, ModeratorKind::Gsim] {
        assert!(Moderator::new(kind, None).unwrap().is_none());
    }
    assert!(is_per_cpu(ModeratorKind::Gsim) && !is_per_cpu(ModeratorKind::NetDim));
    let net = Moderator::new(ModeratorKind::NetDim, None)
        .unwrap()
        .unwrap();
    // The device coalescer's timer starts at the first withheld completion (EQE style),
    // so net_dim programs it from the RX EQE table, as net_dim_get_rx_moderation would.
    assert_eq!(PERIOD_MODE, CqPeriodMode::StartFromEqe);
    assert_eq!(
        (net.level(), net.levels()),
        (1, &NET_DIM_RX_EQE_PROFILES[..])
    );
    assert_eq!(net.tune_state(), "parking_on_top");
    let rdma = Moderator::new(ModeratorKind::RdmaDim, None)
        .unwrap()
        .unwrap();
    assert_eq!((rdma.level(), rdma.tune_state()), (0, "going_right"));
    let am = Moderator::new(ModeratorKind::IrqAm, None).unwrap().unwrap();
    assert_eq!(
        (am.levels(), am.tune_state()),
        (&RDMA_DIM_PROFILES[..], "going_up")
    );
    let custom = [Profile::new(0, 1), Profile::new(50, 32)];
    let m = Moderator::new(ModeratorKind::NetDim, Some(&custom))
        .unwrap()
        .unwrap();
    assert_eq!(m.profile(), Profile::new(50, 32));
    let err = Moderator::new(ModeratorKind::IrqAm, Some(&[])).unwrap_err();
    assert!(
        err.to_string()
            .starts_with("irq_am moderator: moderation table is empty")
    );
}

#[test]
fn requests_wait_for_the_ack_and_are_counted() {
    let mut m = Moderator::new(ModeratorKind::RdmaDim, None)
        .unwrap()
        .unwrap();
    let mut now = 1_000_000;
    let mut requests = vec![];
    // Growing completions per window: rdma_dim climbs one level per window.
    for w in 0..4u32 {
        for _ in 0..70 {
            now += 15_000;
            if let Some(r) = m.on_event(now, 4 + 2 * w, 4096) {
                requests.push(r);
            }
        }
        if m.awaiting_ack() {
            m.ack();
        }
    }
    assert!(!requests.is_empty());
    assert_eq!(requests[0].level, 1);
    assert_eq!(requests[0].profile, RDMA_DIM_PROFILES[1]);
    let c = m.counters();
    assert_eq!(c.events, 280);
    assert_eq!(c.programs, requests.len() as u64);
    assert!(
        c.samples_ignored > 0,
        "events after a request, before its ack"
    );
}

#[test]
fn time_between_events_is_booked_to_the_level_the_device_runs() {
    let mut m = Moderator::new(ModeratorKind::RdmaDim, None)
        .unwrap()
        .unwrap();
    assert_eq!(m.applied_level(), 0);
    let mut now = 0;
    let mut first = None;
    // rdma_dim climbs with growing completions; the request is acknowledged one event
    // later, as a work item would be.
    for w in 0..4u32 {
        for _ in 0..70 {
            now += 15_000;
            let req = m.on_event(now, 4 + 2 * w, 4096);
            if req.is_some() && first.is_none() {
                first = Some(now);
                assert_eq!(m.applied_level(), 0, "not applied before the ack");
            }
            if m.awaiting_ack() && req.is_none() {
                m.ack();
            }
        }
    }
    let first = first.expect("rdma_dim moved");
    let t = m.level_ns();
    assert_eq!(t.len(), m.levels().len());
    // Level 0 holds at least the time up to the event after the first request (the ack
    // came then); the clock starts at the first event, 15 µs in.
    assert!(t[0] >= first, "{t:?}");
    assert_eq!(t.iter().sum::<u64>(), now - 15_000, "every gap booked once");
    assert_eq!(m.applied_level(), m.level());
    assert!(t[1..].iter().any(|&x| x > 0));
    // The course over time books the same time: per level, summed over its intervals.
    let (width, course) = m.level_course();
    assert_eq!(width, LEVEL_COURSE_NS);
    assert_eq!(course.len() as u64, now.div_ceil(width));
    for (level, &total) in t.iter().enumerate() {
        assert_eq!(
            course.iter().map(|i| i[level]).sum::<u64>(),
            total,
            "level {level}"
        );
    }
    // The first interval is all level 0 (the first request came later); the last is not.
    assert!(course[0][1..].iter().all(|&x| x == 0), "{:?}", course[0]);
    assert!(course.last().unwrap()[1..].iter().any(|&x| x > 0));
}

#[test]
fn a_long_run_widens_the_course_and_keeps_every_nanosecond() {
    let mut m = Moderator::new(ModeratorKind::IrqAm, None).unwrap().unwrap();
    // 3 s of events 100 µs apart: 3000 one-millisecond intervals would be too many.
    let mut now = 0;
    while now < 3_000_000_000 {
        now += 100_000;
        if m.on_event(now, 1, 512).is_some() {
            m.ack();
        }
    }
    let (width, course) = m.level_course();
    assert!(
        course.len() <= LEVEL_COURSE_INTERVALS,
        "{} intervals",
        course.len()
    );
    assert_eq!(width, 4 * LEVEL_COURSE_NS);
    let booked: u64 = course.iter().flatten().sum();
    assert_eq!(booked, m.level_ns().iter().sum::<u64>());
    assert_eq!(booked, now - 100_000);
}

fn kinds() -> impl Strategy<Value = ModeratorKind> {
    prop_oneof![
        Just(ModeratorKind::NetDim),
        Just(ModeratorKind::RdmaDim),
        Just(ModeratorKind::IrqAm)
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn moderator_levels_stay_in_range(
        kind in kinds(),
        table_len in 1usize..12,
        custom in any::<bool>(),
        events in prop::collection::vec((0u64..200_000, 0u32..600, 0u64..1_000_000, any::<bool>()), 1..2_000),
    ) {
        let table: Vec<Profile> = (0..table_len).map(|i| Profile::new(i as u16 * 8, 1 << i.min(15))).collect();
        let mut m = Moderator::new(kind, custom.then_some(&table[..])).unwrap().unwrap();
        let mut now = 0u64;
        for (dt, comps, bytes, ack) in events {
            now += dt;
            if let Some(r) = m.on_event(now, comps, bytes) {
                prop_assert!(r.level < m.levels().len());
                prop_assert_eq!(r.profile, m.levels()[r.level]);
            }
            prop_assert!(m.level() < m.levels().len());
            if ack && m.awaiting_ack() {
                m.ack();
            }
        }
    }

    #[test]
    fn irq_poll_spends_at_most_one_weight_over_budget_and_loses_nobody(
        weights in prop::collection::vec(1u32..200, 1..6),
        runs in prop::collection::vec(
            (prop::collection::vec((0u32..=100, any::<bool>()), 0..40), prop::collection::vec(0usize..6, 0..6), any::<bool>()),
            1..30,
        ),
    ) {
        let mut cpu = IrqPollCpu::default();
        let ids: Vec<_> = weights.iter().map(|&w| cpu.init(w).unwrap()).collect();
        let max_weight = u64::from(*weights.iter().max().unwrap());
        for (jiffy, (polls, scheds, tick)) in (0u64..).zip(runs) {
            for s in scheds {
                if let Some(&id) = ids.get(s) {
                    cpu.sched(id).unwrap();
                }
            }
            cpu.start_softirq(jiffy).unwrap();
            let mut polls = polls.into_iter();
            let mut spent = 0u64;
            loop {
                // A tick mid-run, when asked for, after the first poll.
                let now = if tick && spent > 0 { jiffy + 1 } else { jiffy };
                let Some((id, weight)) = cpu.next_poll(now).unwrap() else { break };
                // Once the script runs out the drivers find nothing left and complete.
                let (pct, complete) = polls.next().unwrap_or((0, true));
                let work = weight * pct / 100; // work never exceeds weight
                cpu.poll_done(id, work, complete && work < weight).unwrap();
                spent += u64::from(work);
            }
            let (_, _, work) = cpu.finish().unwrap();
            prop_assert_eq!(work, spent);
            prop_assert!(spent < u64::from(irqlab_core::irq_poll::IRQ_POLL_BUDGET) + max_weight);
            // Every scheduled instance is listed exactly once; nothing else is listed.
            let listed: Vec<_> = cpu.listed().collect();
            for &id in &ids {
                let n = listed.iter().filter(|&&x| x == id).count();
                prop_assert_eq!(n, usize::from(cpu.is_scheduled(id)));
            }
        }
    }
}
