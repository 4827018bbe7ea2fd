//! The same inputs and seed give byte-identical output; another seed gives another run.

mod common;
use common::*;
use irqlab_core::{Delivery, Policy};

fn json(seed: u64, policy: Policy) -> String {
    let r = run(FOUR_DISKS, policy, &[], seed);
    let v = irqlab_report::fio_json::render(&r, true);
    format!("{}\n{:?}", serde_json::to_string(&v).unwrap(), r)
}

#[test]
fn same_seed_gives_identical_output() {
    for policy in [
        Policy::default(),
        Policy {
            delivery: Delivery::Posted { max_loop: 3 },
            ..Policy::default()
        },
    ] {
        assert_eq!(json(7, policy), json(7, policy));
    }
}

#[test]
fn different_seed_gives_different_output() {
    assert_ne!(json(7, Policy::default()), json(8, Policy::default()));
}

#[test]
fn runs_in_parallel_threads_agree() {
    let one = json(3, Policy::default());
    let handles: Vec<_> = (0..2)
        .map(|_| std::thread::spawn(|| json(3, Policy::default())))
        .collect();
    for h in handles {
        assert_eq!(h.join().unwrap(), one);
    }
}
