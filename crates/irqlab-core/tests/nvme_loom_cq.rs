//! Loom model check of the completion ring shared by one device thread and one host
//! thread: entries arrive in order with their fields, none lost, none overwritten before
//! the head doorbell released it. Run with
//! `RUSTFLAGS="--cfg loom" CARGO_TARGET_DIR=target/loom cargo test -p irqlab-core --release --test nvme_loom_cq`.
#![cfg(loom)]

use irqlab_core::nvme::{CompletionQueue, Cqe};
use loom::sync::Arc;
use loom::thread;

#[test]
fn device_and_host_share_a_two_slot_ring() {
    let mut b = loom::model::Builder::new();
    b.preemption_bound = Some(3);
    b.check(|| {
        // Depth 2 holds one entry: every post after the first waits on the doorbell.
        let cq = Arc::new(CompletionQueue::new(2).unwrap());
        let n = 3u16;
        let dev = {
            let cq = Arc::clone(&cq);
            thread::spawn(move || {
                let mut id = 0;
                while id < n {
                    let cqe = Cqe {
                        result: u32::from(id) + 100,
                        command_id: id,
                        ..Cqe::default()
                    };
                    if cq.post(cqe).is_ok() {
                        id += 1;
                    } else {
                        thread::yield_now();
                    }
                }
            })
        };
        let mut next = 0u16;
        while next < n {
            let found = cq.poll_cq(u32::MAX, |c| {
                assert_eq!(c.command_id, next, "out of order, lost or repeated");
                assert_eq!(
                    c.result,
                    u32::from(next) + 100,
                    "payload not visible with the phase"
                );
                next += 1;
            });
            if found == 0 {
                thread::yield_now();
            }
        }
        dev.join().unwrap();
        assert!(!cq.cqe_pending());
    });
}
