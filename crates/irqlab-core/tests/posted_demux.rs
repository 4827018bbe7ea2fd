//! Posted MSI: the descriptor protocol and the demux loop, worked examples and
//! single-thread interleavings (arch/x86/kernel/irq.c sysvec_posted_msi_notification).

use irqlab_core::posted::{
    Demux, FIRST_EXTERNAL_VECTOR, FIRST_SYSTEM_VECTOR, MAX_POSTED_MSI_COALESCING_LOOP,
    POSTED_MSI_NOTIFICATION_VECTOR, PiDesc, PirSnapshot, PostedStats, handle_notification,
};
use proptest::prelude::*;

fn desc() -> PiDesc {
    PiDesc::new(POSTED_MSI_NOTIFICATION_VECTOR, 3)
}

fn vectors(s: &PirSnapshot) -> Vec<u8> {
    s.vectors().collect()
}

#[test]
fn control_word_holds_nv_and_ndst() {
    let d = PiDesc::new(0xeb, 0x1234_5678);
    assert_eq!(d.nv(), 0xeb);
    assert_eq!(d.ndst(), 0x1234_5678);
    assert!(!d.on() && !d.sn());
}

#[test]
fn second_post_finds_on_set_and_sends_nothing() {
    let d = desc();
    assert!(d.post(0x50), "first post takes ON and notifies");
    assert!(d.on());
    assert!(!d.post(0x51), "ON already set: PIR bit only");
    assert!(!d.post(0x50), "same vector again: still coalesced");
    assert_eq!(d.pending_words(), [0, (1 << 0x10) | (1 << 0x11), 0, 0]);
}

#[test]
fn extra_round_catches_a_post_made_after_the_empty_round() {
    let d = desc();
    assert!(d.post(0x40));
    let mut demux = Demux::new(MAX_POSTED_MSI_COALESCING_LOOP);
    let r1 = demux.next_round(&d).unwrap();
    assert_eq!((r1.round(), r1.is_extra_round()), (1, false));
    assert_eq!(vectors(&r1), vec![0x40]);
    let r2 = demux.next_round(&d).unwrap();
    assert!(r2.is_empty() && !r2.is_extra_round());
    assert!(d.on(), "ON stays set until the loop ends");
    // A post between round 2 and the clear: ON is set, so no notification is sent.
    assert!(!d.post(0x41));
    let r3 = demux.next_round(&d).unwrap();
    assert_eq!((r3.round(), r3.is_extra_round()), (3, true));
    assert_eq!(vectors(&r3), vec![0x41]);
    assert!(!d.on(), "ON cleared before the extra round");
    assert_eq!(demux.next_round(&d), None);
    assert_eq!(demux.rounds(), 3);
    assert!(d.post(0x42), "after the handler, a post notifies again");
}

#[test]
fn full_loop_runs_max_loop_rounds_with_the_extra_one_last() {
    let d = desc();
    assert!(d.post(0x20));
    let mut demux = Demux::new(3);
    assert_eq!(vectors(&demux.next_round(&d).unwrap()), vec![0x20]);
    assert!(!d.post(0x21));
    assert_eq!(vectors(&demux.next_round(&d).unwrap()), vec![0x21]);
    assert!(!d.post(0x22));
    let r3 = demux.next_round(&d).unwrap();
    assert!(r3.is_extra_round());
    assert_eq!(r3.round(), 3);
    assert_eq!(vectors(&r3), vec![0x22]);
    assert!(demux.next_round(&d).is_none());
}

#[test]
fn max_loop_one_runs_only_the_extra_round() {
    for max_loop in [0, 1] {
        let d = desc();
        assert!(d.post(0x50));
        let mut demux = Demux::new(max_loop);
        let r = demux.next_round(&d).unwrap();
        assert!(r.is_extra_round());
        assert_eq!(r.round(), 1);
        assert_eq!(vectors(&r), vec![0x50]);
        assert!(!d.on());
        assert!(demux.next_round(&d).is_none());
        assert!(demux.is_done());
    }
}

#[test]
fn snapshot_dispatches_ascending_and_drops_out_of_range_bits() {
    let d = desc();
    for v in [0xea, 0x10, 0x7f, 0x20, 0xec, 0x80, 0x3f, 0x40] {
        d.post(v);
    }
    let snap = PirSnapshot::from_words(d.harvest(), 1, false);
    assert_eq!(vectors(&snap), vec![0x20, 0x3f, 0x40, 0x7f, 0x80, 0xea]);
    assert_eq!(snap.dropped(), 2, "0x10 and 0xec are outside 0x20..0xeb");
    assert_eq!(
        d.pending_words(),
        [0; 4],
        "harvest clears even dropped bits"
    );
    assert_eq!(FIRST_EXTERNAL_VECTOR, 0x20);
    assert_eq!(FIRST_SYSTEM_VECTOR, 0xeb);
}

#[test]
fn suppressed_posts_notify_when_sn_clears() {
    let d = desc();
    d.set_sn();
    assert!(!d.post(0x60), "SN: no notification");
    assert!(!d.on());
    assert!(
        d.clear_sn(),
        "pending PIR after SN clears: the caller notifies"
    );
    assert!(d.on());
    let e = desc();
    e.set_sn();
    assert!(!e.clear_sn(), "nothing pending, nothing to send");
}

#[test]
fn handle_notification_counts_rounds_and_extra_round_vectors() {
    let d = desc();
    assert!(d.post(0x21));
    assert!(!d.post(0x22));
    let mut seen = Vec::new();
    let out = handle_notification(&d, 3, |v| seen.push(v));
    assert_eq!(seen, vec![0x21, 0x22]);
    assert_eq!(
        out.rounds, 3,
        "round 1 harvests, round 2 is empty, then the extra round"
    );
    assert_eq!(out.vectors, 2);
    assert_eq!(out.extra_round_vectors, 0);
    let mut stats = PostedStats::default();
    stats.record_post(true);
    stats.record_post(false);
    stats.record_handler(&out);
    assert_eq!(stats.notifications, 1);
    assert_eq!(stats.coalescing_ratio(), 2.0);
    assert_eq!(stats.vectors_per_notification(), 2.0);
}

#[derive(Clone, Debug)]
enum Op {
    Post(u8),
    Step,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        3 => (FIRST_EXTERNAL_VECTOR..FIRST_SYSTEM_VECTOR).prop_map(Op::Post),
        2 => Just(Op::Step),
    ]
}

/// The CPU side on one thread: notifications queue (IRR), the handler runs step by step.
struct Cpu {
    demux: Option<Demux>,
    queued: u32,
    runs: u64,
    owed: [bool; 256],
    dispatches: u64,
}

impl Cpu {
    /// One handler step; false when there was nothing to do.
    fn step(&mut self, d: &PiDesc, max_loop: u32) -> bool {
        if self.demux.is_none() {
            if self.queued == 0 {
                return false;
            }
            self.queued -= 1;
            self.runs += 1;
            self.demux = Some(Demux::new(max_loop));
        }
        match self.demux.as_mut().unwrap().next_round(d) {
            Some(snap) => {
                for v in snap.vectors() {
                    assert!(
                        self.owed[v as usize],
                        "vector {v:#x} dispatched without a post since its last dispatch"
                    );
                    self.owed[v as usize] = false;
                    self.dispatches += 1;
                }
            }
            None => self.demux = None,
        }
        true
    }
}

proptest! {
    #[test]
    fn no_post_is_lost_and_none_is_invented(ops in prop::collection::vec(op(), 1..200), max_loop in 0u32..5) {
        let d = desc();
        let mut cpu = Cpu { demux: None, queued: 0, runs: 0, owed: [false; 256], dispatches: 0 };
        let (mut posts, mut sent) = (0u64, 0u64);
        for op in ops {
            match op {
                Op::Post(v) => {
                    posts += 1;
                    cpu.owed[v as usize] = true;
                    if d.post(v) {
                        sent += 1;
                        cpu.queued += 1;
                    }
                }
                Op::Step => { cpu.step(&d, max_loop); }
            }
        }
        while cpu.step(&d, max_loop) {}
        prop_assert!(cpu.owed.iter().all(|o| !o), "a post was never dispatched");
        prop_assert_eq!(d.pending_words(), [0; 4]);
        prop_assert!(!d.on());
        prop_assert!(sent <= posts);
        prop_assert_eq!(cpu.runs, sent, "one handler run per notification");
        prop_assert!(cpu.dispatches <= posts);
    }
}
