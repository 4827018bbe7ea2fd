//! Loom model checks of the posted-interrupt protocol: concurrent posters against one CPU
//! handler running the demux. Run with
//! `RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom cargo test -p irqlab-core --release --test loom_posted`.
#![cfg(loom)]

use irqlab_core::posted::{Demux, PiDesc, PirSnapshot};
use loom::sync::Arc;
use loom::sync::atomic::{AtomicU32, Ordering};
use loom::thread;

const NV: u8 = 0xeb;

/// Per-vector bookkeeping: posts made and dispatches seen, for the vectors in use.
struct Ledger {
    posts: [AtomicU32; 2],
    dispatches: [AtomicU32; 2],
    /// Notifications sent (posts that returned true): the handler's IRR.
    notified: AtomicU32,
    posters_done: AtomicU32,
}

const VECS: [u8; 2] = [0x41, 0x42];

fn slot(v: u8) -> usize {
    VECS.iter()
        .position(|&x| x == v)
        .expect("only VECS are posted")
}

fn poster(desc: &PiDesc, ledger: &Ledger, vectors: &[u8]) {
    for &v in vectors {
        ledger.posts[slot(v)].fetch_add(1, Ordering::SeqCst);
        if desc.post(v) {
            ledger.notified.fetch_add(1, Ordering::Release);
        }
    }
    ledger.posters_done.fetch_add(1, Ordering::Release);
}

/// The correct handler: the Demux step machine, extra round included.
fn correct_handler(desc: &PiDesc, max_loop: u32, dispatch: &mut dyn FnMut(&PirSnapshot)) {
    let mut demux = Demux::new(max_loop);
    while let Some(snap) = demux.next_round(desc) {
        dispatch(&snap);
    }
}

/// A deliberately broken handler: clears ON but skips the extra round.
fn broken_handler(desc: &PiDesc, max_loop: u32, dispatch: &mut dyn FnMut(&PirSnapshot)) {
    let mut i = 0;
    while i + 1 < max_loop {
        i += 1;
        let snap = PirSnapshot::from_words(desc.harvest(), i, false);
        dispatch(&snap);
        if snap.is_empty() {
            break;
        }
    }
    desc.clear_on();
}

type Handler = fn(&PiDesc, u32, &mut dyn FnMut(&PirSnapshot));

/// Two posters and one CPU thread; checks no post is lost and none is invented.
fn scenario(handler: Handler, max_loop: u32, a: &'static [u8], b: &'static [u8]) {
    let desc = Arc::new(PiDesc::new(NV, 0));
    let ledger = Arc::new(Ledger {
        posts: [AtomicU32::new(0), AtomicU32::new(0)],
        dispatches: [AtomicU32::new(0), AtomicU32::new(0)],
        notified: AtomicU32::new(0),
        posters_done: AtomicU32::new(0),
    });
    let spawn_poster = |vs: &'static [u8]| {
        let (d, l) = (Arc::clone(&desc), Arc::clone(&ledger));
        thread::spawn(move || poster(&d, &l, vs))
    };
    let pa = spawn_poster(a);
    let pb = spawn_poster(b);

    // The CPU: run one handler per notification until the posters are done and every
    // notification has been handled.
    let mut handled = 0;
    loop {
        if ledger.notified.load(Ordering::Acquire) > handled {
            handled += 1;
            handler(&desc, max_loop, &mut |snap| {
                for v in snap.vectors() {
                    let s = slot(v);
                    let d = ledger.dispatches[s].fetch_add(1, Ordering::SeqCst) + 1;
                    // No dispatch without a post since the last one: dispatches never
                    // outnumber posts.
                    assert!(
                        d <= ledger.posts[s].load(Ordering::SeqCst),
                        "vector {v:#x} invented"
                    );
                }
            });
            continue;
        }
        if ledger.posters_done.load(Ordering::Acquire) == 2
            && ledger.notified.load(Ordering::Acquire) == handled
        {
            break;
        }
        thread::yield_now();
    }
    pa.join().unwrap();
    pb.join().unwrap();

    // No post lost: nothing is left in the PIR with no handler to come, and every vector
    // that was posted was dispatched after its last post (the PIR bit that post set was
    // harvested by a later round).
    assert_eq!(desc.pending_words(), [0; 4], "a post was lost in the PIR");
    assert!(!desc.on(), "ON left set with no handler to clear it");
    for s in 0..VECS.len() {
        let posts = ledger.posts[s].load(Ordering::SeqCst);
        let dispatches = ledger.dispatches[s].load(Ordering::SeqCst);
        assert!(dispatches <= posts);
        assert_eq!(
            posts > 0,
            dispatches > 0,
            "vector {:#x} posted but never dispatched",
            VECS[s]
        );
    }
}

fn builder() -> loom::model::Builder {
    let mut b = loom::model::Builder::new();
    b.preemption_bound = Some(3);
    b
}

#[test]
fn two_posters_distinct_vectors() {
    builder().check(|| scenario(correct_handler, 3, &[0x41], &[0x42]));
}

#[test]
fn two_posters_same_vector_twice() {
    builder().check(|| scenario(correct_handler, 3, &[0x41, 0x42], &[0x41]));
}

#[test]
fn only_the_extra_round() {
    builder().check(|| scenario(correct_handler, 1, &[0x41], &[0x41, 0x42]));
}

#[test]
fn loom_catches_a_handler_without_the_extra_round() {
    let caught = std::panic::catch_unwind(|| {
        builder().check(|| scenario(broken_handler, 2, &[0x41], &[0x42]));
    });
    assert!(caught.is_err(), "loom should find the lost post");
}
