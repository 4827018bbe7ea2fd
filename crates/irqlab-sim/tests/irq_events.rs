//! `--event` in the simulator (model/irq_move.rs): a vector moved while messages are in
//! flight, and a CPU taken offline, lose no completion and double none; messages that
//! read the old entry are handled where it said.

mod common;

use common::{extra, jobs, platform};
use irqlab_core::delivery::{AffinityChange, AffinityEvent};
use irqlab_core::{Delivery, HandlerStyle, ModeratorKind, Policy};
use irqlab_report::RunReport;
use irqlab_sim::{Observer, SimError, SimOptions, simulate, simulate_observed};

/// One libaio job on nvme0 pinned to CPU 0: its queue nvme0q1's vector starts on CPU 0.
const ONE_JOB: &str = "\
[j]
ioengine=libaio
rw=randread
bs=4k
iodepth=32
runtime=6ms
time_based
filename=/dev/nvme0n1
cpus_allowed=0
";

fn posted() -> Policy {
    Policy {
        delivery: Delivery::Posted { max_loop: 3 },
        ..Policy::default()
    }
}

fn migrate(at_ns: u64, queue: &str, cpu: usize) -> AffinityEvent {
    AffinityEvent {
        at_ns,
        change: AffinityChange::Migrate {
            queue: queue.into(),
            cpu,
        },
    }
}

fn offline(at_ns: u64, cpu: usize) -> AffinityEvent {
    AffinityEvent {
        at_ns,
        change: AffinityChange::Offline { cpu },
    }
}

/// What a run showed: each vector interrupt counted (time, CPU, vector), and each change
/// of a CPU's posted PIR bits (time, CPU, bits set).
#[derive(Default)]
struct Seen {
    irqs: Vec<(u64, usize, usize)>,
    pir: Vec<(u64, usize, u32)>,
    /// Notifications delivered by the router: (time, CPU).
    delivered: Vec<(u64, usize)>,
}

impl Observer for Seen {
    fn wants_counters(&self) -> bool {
        true
    }
    fn counter(&mut self, now: u64, name: &str, index: usize, value: f64) {
        if name == "pir_pending" {
            self.pir.push((now, index, value as u32));
        }
    }
    fn notification(&mut self, now: u64, cpu: usize, _pmn: bool) {
        self.delivered.push((now, cpu));
    }
    fn irq_counted(&mut self, now: u64, cpu: usize, vector: Option<usize>) {
        if let Some(v) = vector {
            self.irqs.push((now, cpu, v));
        }
    }
}

impl Seen {
    /// The first time at or after `from` at which CPU `c` has PIR bits set that stay set
    /// for more than 1 ns.
    fn pir_set_on(&self, c: usize, from: u64) -> u64 {
        let mine: Vec<_> = self.pir.iter().filter(|p| p.1 == c).collect();
        mine.windows(2)
            .find(|w| w[0].0 >= from && w[0].2 > 0 && w[1].0 > w[0].0 + 1)
            .map(|w| w[0].0)
            .expect("CPU has PIR bits pending at some point")
    }

    /// CPU `c`'s PIR bits set just before `t`.
    fn pir_before(&self, c: usize, t: u64) -> u32 {
        self.pir
            .iter()
            .rfind(|p| p.1 == c && p.0 < t)
            .map_or(0, |p| p.2)
    }
}

fn run_seen(policy: Policy, events: Vec<AffinityEvent>) -> (RunReport, Seen) {
    run_seen_on(&[], policy, events)
}

fn run_seen_on(sets: &[&str], policy: Policy, events: Vec<AffinityEvent>) -> (RunReport, Seen) {
    let mut seen = Seen::default();
    let r = simulate_observed(
        &jobs(ONE_JOB),
        &platform(sets),
        &policy,
        &SimOptions::default().with_events(events),
        &mut seen,
    )
    .unwrap_or_else(|e| panic!("simulation runs: {e}"));
    (r, seen)
}

fn run_err(events: Vec<AffinityEvent>, policy: Policy, text: &str) -> SimError {
    simulate(
        &jobs(text),
        &platform(&[]),
        &policy,
        &SimOptions::default().with_events(events),
    )
    .expect_err("refused")
}

/// Every I/O submitted completed and was reaped once.
fn conserved(r: &RunReport) {
    let s = extra(r, "ios_submitted");
    assert!(s > 100.0, "the job ran: {s}");
    assert_eq!(extra(r, "ios_completed"), s);
    assert_eq!(extra(r, "ios_reaped"), s);
    assert_eq!(extra(r, "cut_short"), 0.0, "the run ended on its own");
}

fn vector(r: &RunReport, name: &str) -> usize {
    r.vectors
        .iter()
        .position(|v| v.name == name)
        .unwrap_or_else(|| panic!("no vector {name}"))
}

#[test]
fn a_posted_vector_moved_with_pir_bits_set_still_handles_them_on_the_old_cpu() {
    // Where CPU 0's PIR has a bit set after 2 ms: the move lands 1 ns later, before the
    // notification handler harvests it.
    let (_, before) = run_seen(posted(), vec![]);
    let set = before.pir_set_on(0, 2_000_000);
    let at = set + 1;
    let (r, seen) = run_seen(posted(), vec![migrate(at, "nvme0q1", 2)]);
    conserved(&r);
    assert_eq!(extra(&r, "irq_migrations"), 1.0);
    assert!(
        seen.pir_before(0, at) > 0,
        "PIR bits pending on CPU 0 at the move"
    );
    let v = vector(&r, "nvme0q1");
    let mine: Vec<_> = seen.irqs.iter().filter(|i| i.2 == v).collect();
    // The pending bit ran the old vector's handler on CPU 0 once after the move (its
    // one PIR bit) ...
    let stale: Vec<_> = mine.iter().filter(|i| i.0 >= at && i.1 == 0).collect();
    assert_eq!(
        stale.len(),
        1,
        "the pending PIR bit was handled on CPU 0: {stale:?}"
    );
    assert!(stale[0].0 < at + 100_000, "soon after the move: {stale:?}");
    // ... and every other interrupt after the move came to CPU 2, none before it.
    let s0: (u64, usize, usize) = **stale[0];
    assert!(
        mine.iter()
            .filter(|i| i.1 != 0 || i.0 >= at)
            .all(|i| i.1 == 2 && i.0 >= at || **i == s0)
    );
    // /proc/interrupts moves with it.
    let per_cpu = &r.vectors[v].per_cpu;
    assert!(per_cpu[0] > 0 && per_cpu[2] > per_cpu[0], "{per_cpu:?}");
}

#[test]
fn a_remapped_move_loses_nothing_and_counts_move_to_the_new_cpu() {
    let (r, seen) = run_seen(Policy::default(), vec![migrate(3_000_000, "nvme0q1", 5)]);
    conserved(&r);
    assert_eq!(extra(&r, "irq_migrations"), 1.0);
    let v = vector(&r, "nvme0q1");
    assert!(
        seen.irqs
            .iter()
            .filter(|i| i.2 == v)
            .all(|i| (i.1 == 5) == (i.0 >= 3_000_000) || i.1 == 0 && i.0 < 3_010_000),
        "CPU 0 before the move (and what was in flight at it), CPU 5 after"
    );
    assert!(r.vectors[v].per_cpu[5] > 0);
}

#[test]
fn offline_retriggers_a_pending_vector_at_the_next_cpu() {
    // The vector moves to CPU 5 (no job there); CPU 5 goes offline while its PIR holds
    // the vector's bit, which fixup_irqs retriggers at CPU 6.
    let first = migrate(2_000_000, "nvme0q1", 5);
    let (_, before) = run_seen(posted(), vec![first.clone()]);
    let at = before.pir_set_on(5, 3_000_000) + 1;
    let (r, seen) = run_seen(posted(), vec![first, offline(at, 5)]);
    conserved(&r);
    assert!(
        seen.pir_before(5, at) > 0,
        "PIR bits pending on CPU 5 when it went offline"
    );
    assert_eq!(extra(&r, "cpus_offlined"), 1.0);
    assert!(extra(&r, "offline_retriggered") >= 1.0);
    // nvme0q1 to CPU 5, then CPU 5's own vectors and nvme0q1 to CPU 6.
    assert!(extra(&r, "irq_migrations") >= 2.0);
    let v = vector(&r, "nvme0q1");
    assert!(
        seen.irqs.iter().all(|i| i.1 != 5 || i.0 < at),
        "an offline CPU takes no interrupt"
    );
    assert!(seen.irqs.iter().any(|i| i.2 == v && i.1 == 6 && i.0 >= at));
}

#[test]
fn a_run_without_events_reports_no_event_counters() {
    let (r, _) = run_seen(posted(), vec![]);
    assert!(!r.extra.iter().any(|(k, _)| k == "irq_migrations"));
}

#[test]
fn bad_events_are_refused_with_what_was_expected() {
    let cases = [
        (
            vec![migrate(1_000_000, "nvme0q99", 1)],
            "the run has no queue nvme0q99",
        ),
        (
            vec![migrate(1_000_000, "nvme0q1", 99)],
            "the run has CPUs 0 to 15",
        ),
        (
            vec![migrate(50_000_000, "nvme0q1", 1)],
            "expected a time before that",
        ),
        (vec![offline(1_000_000, 0)], "job 'j' runs on cpu0"),
    ];
    for (events, want) in cases {
        let e = run_err(events, Policy::default(), ONE_JOB).to_string();
        assert!(e.contains(want), "{e}");
    }
    // Every CPU but one offline, then that one.
    let p = irqlab_sim::Platform::load(&common::example_path(), &["cpu.count=2".into()])
        .expect("two CPUs");
    let e = simulate(
        &jobs(ONE_JOB),
        &p,
        &Policy::default(),
        &SimOptions::default().with_events(vec![offline(1_000_000, 1), offline(2_000_000, 0)]),
    )
    .expect_err("refused")
    .to_string();
    assert!(e.contains("last online CPU"), "{e}");
    // Unpinned jobs may be anywhere: offline is refused.
    let unpinned = ONE_JOB.replace("cpus_allowed=0\n", "");
    let e = run_err(vec![offline(1_000_000, 3)], Policy::default(), &unpinned).to_string();
    assert!(e.contains("has no cpus_allowed"), "{e}");
}

#[test]
fn handlers_that_would_have_to_move_with_the_vector_are_refused() {
    for (policy, want) in [
        (
            Policy {
                handler: HandlerStyle::IrqPoll {
                    budget: 32,
                    weight: 32,
                },
                ..Policy::default()
            },
            "--handler irq_poll",
        ),
        (
            Policy {
                handler: HandlerStyle::Threaded,
                ..Policy::default()
            },
            "--handler threaded",
        ),
        (
            Policy {
                moderator: ModeratorKind::Gsim,
                ..Policy::default()
            },
            "--moderator gsim",
        ),
    ] {
        let e = run_err(vec![migrate(1_000_000, "nvme0q1", 1)], policy, ONE_JOB).to_string();
        assert!(
            e.contains(want) && e.contains("not supported by the simulator"),
            "{e}"
        );
    }
}

#[test]
fn a_run_with_events_keeps_the_machine_whole() {
    // The C3 rig's drives (instant router) split into parts; an event moves a vector between
    // them, so the run does not split, and on threads it reports the one-thread bytes.
    let c3 = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../platforms/optane-gen2.toml");
    let p = irqlab_sim::Platform::load(&c3, &["uncore.ubox_ns=0".into()]).expect("C3 loads");
    let mut text = String::from(
        "[global]\nioengine=libaio\nrw=randread\nbs=512\niodepth=8\ntime_based\nruntime=2ms\n",
    );
    for d in 0..4 {
        text.push_str(&format!(
            "[d{d}]\nfilename=/dev/nvme{d}n1\ncpus_allowed={d}\n"
        ));
    }
    let jobs = jobs(&text);
    let policy = Policy::default();
    let plain = SimOptions::default();
    let parts = irqlab_sim::independent_parts(&jobs, &p, &policy, &plain).unwrap();
    assert!(parts > 1, "the rig splits without events: {parts}");
    let moved = plain
        .clone()
        .with_events(vec![migrate(1_000_000, "nvme0q1", 1)]);
    assert_eq!(
        irqlab_sim::independent_parts(&jobs, &p, &policy, &moved).unwrap(),
        1,
        "without events it splits into {parts}"
    );
    let one = simulate(&jobs, &p, &policy, &moved).unwrap();
    let many = irqlab_sim::simulate_parallel(&jobs, &p, &policy, &moved, 4).unwrap();
    assert_eq!(format!("{one:?}"), format!("{many:?}"));
    assert_eq!(extra(&one, "irq_migrations"), 1.0);
}

#[test]
fn an_event_after_a_size_bounded_run_ended_is_noted_not_carried_out() {
    let text = ONE_JOB.replace("runtime=6ms\ntime_based\n", "number_ios=200\n");
    let r = simulate(
        &jobs(&text),
        &platform(&[]),
        &Policy::default(),
        &SimOptions::default().with_events(vec![migrate(500_000_000, "nvme0q1", 1)]),
    )
    .expect("runs");
    conserved(&r);
    assert_eq!(extra(&r, "irq_migrations"), 0.0);
    assert!(
        r.notes
            .iter()
            .any(|(k, n)| k == "event" && n.contains("did not happen")),
        "{:?}",
        r.notes
    );
}

/// A slow interrupt router (2 µs a message): a remapped notification is past the IRTE
/// for at least that long before it reaches its CPU.
const SLOW_ROUTER: &[&str] = &["uncore.ubox_ns=2000"];

/// A notification to CPU `c` delivered after `from`: the time it arrived.
fn arrival(seen: &Seen, c: usize, from: u64) -> u64 {
    seen.delivered
        .iter()
        .find(|d| d.1 == c && d.0 > from)
        .expect("a notification arrives")
        .0
}

#[test]
fn a_remapped_message_in_the_router_at_the_move_is_handled_on_the_old_cpu() {
    let (_, before) = run_seen_on(SLOW_ROUTER, Policy::default(), vec![]);
    // 1 ns before a notification reaches CPU 0 it is in the router, past the IRTE.
    let at = arrival(&before, 0, 2_000_000) - 1;
    let (r, seen) = run_seen_on(
        SLOW_ROUTER,
        Policy::default(),
        vec![migrate(at, "nvme0q1", 3)],
    );
    conserved(&r);
    assert_eq!(
        arrival(&seen, 0, at - 1),
        at + 1,
        "it still landed on CPU 0"
    );
    let v = vector(&r, "nvme0q1");
    let stale: Vec<_> = seen
        .irqs
        .iter()
        .filter(|i| i.2 == v && i.1 == 0 && i.0 > at)
        .collect();
    assert_eq!(stale.len(), 1, "its handler ran there once: {stale:?}");
    assert!(seen.irqs.iter().any(|i| i.2 == v && i.1 == 3 && i.0 > at));
}

#[test]
fn a_remapped_message_in_the_router_when_its_cpu_goes_offline_is_retriggered() {
    // The vector moves to CPU 5; CPU 5 goes offline 1 ns before a notification reaches
    // it: the message read the old entry, so it is retriggered at CPU 6.
    let first = migrate(2_000_000, "nvme0q1", 5);
    let (_, before) = run_seen_on(SLOW_ROUTER, Policy::default(), vec![first.clone()]);
    let at = arrival(&before, 5, 3_000_000) - 1;
    let (r, seen) = run_seen_on(SLOW_ROUTER, Policy::default(), vec![first, offline(at, 5)]);
    conserved(&r);
    assert_eq!(
        arrival(&seen, 5, at - 1),
        at + 1,
        "it reached offline CPU 5"
    );
    assert!(extra(&r, "offline_retriggered") >= 1.0);
    let v = vector(&r, "nvme0q1");
    assert!(seen.irqs.iter().all(|i| i.1 != 5 || i.0 < at));
    assert!(seen.irqs.iter().any(|i| i.2 == v && i.1 == 6 && i.0 > at));
}

#[test]
fn a_message_that_finds_the_handler_running_on_the_old_cpu_pends_and_reruns_it() {
    // Four moves 1 µs apart: a message that read an old entry is handled on the old CPU
    // while the next lands on the new one. handle_edge_irq (core's IrqDesc, as in the
    // runtime) sees IRQD_IRQ_INPROGRESS there, marks IRQS_PENDING and the CPU in the
    // handler runs it again: with the hardirq handler nothing else pends an interrupt.
    let moves: Vec<AffinityEvent> = [1, 2, 3, 0]
        .iter()
        .enumerate()
        .map(|(i, &cpu)| migrate(2_000_000 + 1_000 * i as u64, "nvme0q1", cpu))
        .collect();
    let mut pended = 0.0;
    for seed in 1..=12 {
        for policy in [Policy::default(), posted()] {
            let r = simulate(
                &jobs(ONE_JOB),
                &platform(&[]),
                &policy,
                &SimOptions::with_seed(seed).with_events(moves.clone()),
            )
            .expect("runs");
            conserved(&r);
            assert_eq!(extra(&r, "irq_migrations"), 4.0);
            pended += extra(&r, "irq_pended");
        }
    }
    assert!(
        pended > 0.0,
        "no message met the handler still running elsewhere"
    );
}
