//! Loom model checks of a posted vector that moves to another CPU while messages are in
//! flight: the IRTE's drain with the old CPU's vector cleanup (no post lands on a freed
//! vector), and handle_edge_irq's IRQS_PENDING rerun when the moved vector's next
//! interrupt arrives while the old CPU still runs its handler (no completion is left
//! behind, and no two CPUs reap the queue at once). Run with `make loom`.
#![cfg(loom)]

use irqlab_core::delivery::migrate::{Cleanup, Irte, Route, vector_cleanup};
use irqlab_core::irq::{AfterHandler, Edge, IrqDesc};
use irqlab_core::posted::{Demux, PiDesc};
use loom::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use loom::sync::{Arc, Mutex};
use loom::thread;

const NV: u8 = 0xeb;
const OLD: Route = Route {
    cpu: 0,
    vector: 0x41,
};
const NEW: Route = Route {
    cpu: 1,
    vector: 0x52,
};

fn builder() -> loom::model::Builder {
    let mut b = loom::model::Builder::new();
    b.preemption_bound = Some(3);
    b
}

struct Machine {
    irte: Irte,
    descs: [PiDesc; 2],
    /// Notifications sent to each CPU.
    notified: [AtomicU32; 2],
    /// The old vector was freed on CPU 0 by the cleanup.
    old_freed: AtomicBool,
}

/// The device's messages: each reads the IRTE and posts on the CPU it names.
fn device(m: &Machine, messages: u32) {
    for _ in 0..messages {
        let msg = m.irte.message();
        let r = msg.route();
        if m.descs[r.cpu as usize].post_vector(r.vector).notify {
            m.notified[r.cpu as usize].fetch_add(1, Ordering::SeqCst);
        }
        drop(msg);
    }
}

/// irq_set_affinity on the host, then __vector_cleanup on the old CPU.
fn migrate(m: &Machine, drain: bool) {
    if drain {
        m.irte.retarget(NEW, thread::yield_now);
    } else {
        m.irte.retarget_without_drain(NEW);
    }
    let pending = m.descs[OLD.cpu as usize].is_pending(OLD.vector);
    if vector_cleanup(false, pending) == Cleanup::Free {
        m.old_freed.store(true, Ordering::SeqCst);
    }
}

/// One CPU runs a handler per notification; returns the vectors it dispatched.
fn drain_cpu(m: &Machine, cpu: usize) -> Vec<u8> {
    let mut seen = Vec::new();
    for _ in 0..m.notified[cpu].load(Ordering::SeqCst) {
        let mut demux = Demux::new(3);
        while let Some(snap) = demux.next_round(&m.descs[cpu]) {
            seen.extend(snap.vectors());
        }
    }
    seen
}

fn move_while_posting(drain: bool, messages: u32) {
    let m = Arc::new(Machine {
        irte: Irte::new(OLD),
        descs: [PiDesc::new(NV, 0), PiDesc::new(NV, 1)],
        notified: [AtomicU32::new(0), AtomicU32::new(0)],
        old_freed: AtomicBool::new(false),
    });
    let d = {
        let m = Arc::clone(&m);
        thread::spawn(move || device(&m, messages))
    };
    let h = {
        let m = Arc::clone(&m);
        thread::spawn(move || migrate(&m, drain))
    };
    d.join().unwrap();
    h.join().unwrap();
    let old = drain_cpu(&m, 0);
    let new = drain_cpu(&m, 1);
    // A post on the old CPU after its vector was freed would find no handler there.
    assert!(
        !(m.old_freed.load(Ordering::SeqCst) && old.contains(&OLD.vector)),
        "a message landed on the freed old vector: its completion is lost"
    );
    // Every message was dispatched on the CPU it reached, and nothing is left pending.
    assert!(!old.is_empty() || !new.is_empty());
    for c in 0..2 {
        assert_eq!(m.descs[c].pending_words(), [0; 4]);
        assert!(!m.descs[c].on());
    }
    assert!(old.iter().all(|&v| v == OLD.vector) && new.iter().all(|&v| v == NEW.vector));
}

#[test]
fn a_vector_moved_while_posted_loses_no_message() {
    builder().check(|| move_while_posting(true, 1));
}

#[test]
fn two_messages_around_the_move() {
    builder().check(|| move_while_posting(true, 2));
}

#[test]
fn loom_catches_a_move_without_the_flush() {
    let caught = std::panic::catch_unwind(|| {
        builder().check(|| move_while_posting(false, 1));
    });
    assert!(
        caught.is_err(),
        "loom should find the message on the freed vector"
    );
}

/// One queue whose interrupt is handled on two CPUs: the old target takes the first,
/// the new target the second, possibly while the first handler still runs.
struct Queue {
    desc: Mutex<IrqDesc>,
    /// Completions posted, and reaped by handlers.
    posted: AtomicU32,
    reaped: AtomicU32,
    reaping: AtomicBool,
}

/// One CPU's interrupt for the queue: handle_edge_irq's flow around the reaping handler.
fn cpu_interrupt(q: &Queue, rerun: bool) {
    if q.desc.lock().unwrap().edge() != Edge::Handle {
        // IRQS_PENDING: the CPU running the handler runs it again.
        return;
    }
    loop {
        assert!(
            !q.reaping.swap(true, Ordering::SeqCst),
            "two CPUs reap the queue at once"
        );
        let posted = q.posted.load(Ordering::SeqCst);
        q.reaped.store(posted, Ordering::SeqCst);
        q.reaping.store(false, Ordering::SeqCst);
        match q.desc.lock().unwrap().handler_done() {
            AfterHandler::Again { .. } if rerun => {}
            _ => return,
        }
    }
}

fn handler_moves_under_load(rerun: bool) {
    let q = Arc::new(Queue {
        desc: Mutex::new(IrqDesc::new()),
        posted: AtomicU32::new(0),
        reaped: AtomicU32::new(0),
        reaping: AtomicBool::new(false),
    });
    // The device: a completion and an interrupt to the old CPU, then (the vector has
    // moved) a completion and an interrupt to the new one; each CPU takes its interrupt
    // when it arrives.
    let cpus: Vec<_> = (0..2)
        .map(|_| {
            q.posted.fetch_add(1, Ordering::SeqCst);
            let q = Arc::clone(&q);
            thread::spawn(move || cpu_interrupt(&q, rerun))
        })
        .collect();
    for t in cpus {
        t.join().unwrap();
    }
    assert_eq!(
        q.reaped.load(Ordering::SeqCst),
        2,
        "a completion was left in the CQ"
    );
    let d = q.desc.lock().unwrap();
    assert!(!d.in_progress() && !d.is_pending());
}

#[test]
fn an_interrupt_of_the_moved_vector_during_the_old_handler_reruns_it() {
    builder().check(|| handler_moves_under_load(true));
}

#[test]
fn loom_catches_a_flow_handler_without_the_rerun() {
    let caught = std::panic::catch_unwind(|| {
        builder().check(|| handler_moves_under_load(false));
    });
    assert!(
        caught.is_err(),
        "loom should find the completion left behind"
    );
}
