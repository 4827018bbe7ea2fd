//! NVMe queue pair: phase tags, cq_head, doorbells, full rings (drivers/nvme/host/pci.c).

use irqlab_core::nvme::{
    CompletionQueue, CqFull, Cqe, MsiRule, QueuePair, SqFull, Sqe, VectorGate,
};
use std::sync::Arc;

fn cqe(id: u16) -> Cqe {
    Cqe {
        command_id: id,
        ..Cqe::default()
    }
}

#[test]
fn depth_outside_range_is_an_error() {
    assert!(CompletionQueue::new(1).is_err());
    assert!(CompletionQueue::new(65537).is_err());
    assert!(QueuePair::new(1, 1, 2).is_ok());
}

#[test]
fn fresh_queue_expects_phase_one_and_has_nothing_pending() {
    let cq = CompletionQueue::new(4).unwrap();
    assert_eq!((cq.cq_head(), cq.cq_phase()), (0, 1));
    assert!(!cq.cqe_pending(), "zeroed memory carries phase 0");
    cq.post(cqe(7)).unwrap();
    assert!(cq.cqe_pending());
}

#[test]
fn phase_flips_on_wrap_for_both_sides() {
    let cq = CompletionQueue::new(4).unwrap();
    let mut ids = Vec::new();
    for round in 0..3u16 {
        for i in 0..3 {
            cq.post(cqe(round * 10 + i)).unwrap();
        }
        assert_eq!(
            cq.poll_cq(u32::MAX, |c| ids.push((c.command_id, c.phase()))),
            3
        );
        assert!(!cq.cqe_pending());
    }
    // 9 entries through a 4-slot ring: phase 1 for slots 0..3, then 0, then 1 again.
    let phases: Vec<u16> = ids.iter().map(|p| p.1).collect();
    assert_eq!(phases, vec![1, 1, 1, 1, 0, 0, 0, 0, 1]);
    assert_eq!(
        ids.iter().map(|p| p.0).collect::<Vec<_>>(),
        vec![0, 1, 2, 10, 11, 12, 20, 21, 22]
    );
    assert_eq!((cq.cq_head(), cq.cq_phase()), (1, 1));
}

#[test]
fn doorbell_rung_once_per_batch_and_not_when_empty() {
    let cq = CompletionQueue::new(16).unwrap();
    for i in 0..5 {
        cq.post(cqe(i)).unwrap();
    }
    assert_eq!(cq.poll_cq(u32::MAX, |_| {}), 5);
    assert_eq!(cq.doorbell_writes(), 1);
    assert_eq!(cq.head_doorbell(), 5);
    assert_eq!(cq.poll_cq(u32::MAX, |_| {}), 0);
    assert_eq!(cq.doorbell_writes(), 1, "IRQ_NONE path writes no doorbell");
}

#[test]
fn budget_limits_one_reap_and_leaves_the_rest_pending() {
    let cq = CompletionQueue::new(16).unwrap();
    for i in 0..10 {
        cq.post(cqe(i)).unwrap();
    }
    assert_eq!(cq.poll_cq(4, |_| {}), 4);
    assert!(cq.cqe_pending());
    assert_eq!(cq.unacked(), 6);
    assert_eq!(cq.poll_cq(100, |_| {}), 6);
    assert_eq!(cq.doorbell_writes(), 2);
}

#[test]
fn device_cannot_overwrite_entries_the_host_has_not_released() {
    let cq = CompletionQueue::new(4).unwrap();
    for i in 0..3 {
        cq.post(cqe(i)).unwrap();
    }
    assert!(cq.is_full(), "a 4-slot ring holds 3 entries");
    assert_eq!(cq.post(cqe(3)), Err(CqFull));
    // Consuming without the doorbell would not help the device: only the doorbell does.
    assert_eq!(cq.poll_cq(1, |_| {}), 1);
    assert!(!cq.is_full());
    cq.post(cqe(3)).unwrap();
    let mut ids = Vec::new();
    cq.poll_cq(u32::MAX, |c| ids.push(c.command_id));
    assert_eq!(ids, vec![1, 2, 3]);
}

#[test]
fn sq_doorbell_written_on_last_or_before_the_ring_fills() {
    let qp = QueuePair::new(1, 1, 4).unwrap();
    let s = |id| Sqe {
        command_id: id,
        ..Sqe::default()
    };
    assert_eq!(
        qp.submit(s(1), true),
        Ok(true),
        "bd->last writes the doorbell"
    );
    assert_eq!(qp.fetch().map(|e| e.command_id), Some(1));
    assert_eq!(qp.submit(s(2), false), Ok(false));
    assert_eq!(qp.fetch(), None, "nothing visible before the doorbell");
    assert_eq!(qp.submit(s(3), false), Ok(false));
    // sq_tail is now 3; the next tail (0) is not last_sq_tail (1): still batching.
    assert_eq!(qp.sq.doorbell_writes(), 1);
    qp.complete(1, 0, 0).unwrap();
    qp.poll_cq(u32::MAX, |c| assert_eq!(c.sq_head, 1));
    // Slot 3 filled: the next tail (0) is free, and next-next (1) is last_sq_tail: write.
    assert_eq!(
        qp.submit(s(4), false),
        Ok(true),
        "next tail would reach last_sq_tail"
    );
    assert_eq!(
        qp.submit(s(5), true),
        Err(SqFull),
        "SQ head reported so far is 1"
    );
    let ids: Vec<u16> = std::iter::from_fn(|| qp.fetch())
        .map(|e| e.command_id)
        .collect();
    assert_eq!(ids, vec![2, 3, 4]);
    assert_eq!(qp.sq.doorbell_writes(), 2);
}

#[test]
fn completion_carries_status_and_sq_id() {
    let qp = QueuePair::new(3, 2, 8).unwrap();
    qp.complete(9, 0x2, 77).unwrap();
    let mut got = None;
    qp.poll_cq(u32::MAX, |c| got = Some(c));
    let c = got.unwrap();
    assert_eq!(
        (c.command_id, c.status_code(), c.result, c.sq_id, c.phase()),
        (9, 2, 77, 3, 1)
    );
}

#[test]
fn vector_gate_holds_until_doorbell_then_resends_if_entries_remain() {
    let mut g = VectorGate::new();
    assert!(g.raise(1));
    assert!(!g.raise(2), "one message outstanding");
    assert!(g.has_withheld());
    assert!(
        g.on_cq_doorbell(2),
        "withheld raise and unconsumed entries: send"
    );
    assert!(g.is_outstanding());
    assert!(!g.raise(3));
    assert!(
        !g.on_cq_doorbell(0),
        "the handler consumed everything: nothing to send"
    );
    assert!(g.raise(1));
    assert_eq!((g.sent, g.withheld_raises), (3, 2));
}

#[test]
fn per_completion_rule_sends_a_message_for_every_entry() {
    let mut g = VectorGate::with_rule(MsiRule::PerCompletion);
    assert!(g.raise(1));
    assert!(g.raise(2), "no outstanding message holds the next one");
    assert!(!g.is_outstanding());
    assert!(
        !g.on_cq_doorbell(1),
        "the doorbell owes nothing: each entry had its message"
    );
    assert!(!g.raise(0), "nothing unconsumed: nothing to signal");
    assert_eq!((g.sent, g.withheld_raises, g.empty_raises), (2, 0, 1));
}

#[test]
fn msi_rules_parse_by_their_platform_names() {
    for r in [MsiRule::PerCompletion, MsiRule::UntilDoorbell] {
        assert_eq!(r.as_str().parse::<MsiRule>(), Ok(r));
    }
    let e = "per_cqe".parse::<MsiRule>().unwrap_err();
    assert!(
        e.to_string().contains("per_completion or until_doorbell"),
        "{e}"
    );
}

#[test]
fn vector_gate_owes_nothing_for_entries_already_reaped() {
    let mut g = VectorGate::new();
    // A reap after submit took every entry before the device raised: no message, and the
    // gate stays open so the next completion is signalled.
    assert!(!g.raise(0));
    assert!(!g.is_outstanding());
    assert!(
        g.raise(1),
        "the next completion is not lost behind a shut gate"
    );
    assert_eq!((g.sent, g.empty_raises), (1, 1));
}

#[test]
fn one_device_thread_and_one_host_thread_share_a_queue() {
    let qp = Arc::new(QueuePair::new(1, 1, 8).unwrap());
    let n: u16 = 5000;
    let dev = {
        let qp = Arc::clone(&qp);
        std::thread::spawn(move || {
            let mut id = 0;
            while id < n {
                if qp.complete(id, 0, u32::from(id) * 3).is_ok() {
                    id += 1;
                } else {
                    std::thread::yield_now();
                }
            }
        })
    };
    let mut next = 0u16;
    while next < n {
        qp.cq.poll_cq(u32::MAX, |c| {
            assert_eq!(c.command_id, next, "in order, none lost or repeated");
            assert_eq!(
                c.result,
                u32::from(next) * 3,
                "fields visible with the phase"
            );
            next += 1;
        });
        std::thread::yield_now();
    }
    dev.join().unwrap();
    assert!(!qp.cqe_pending());
}
