//! irq-am (Sagi Grimberg's 2018 RFC) wired as the RFC does, into the RDMA CQs of both the
//! nvme-rdma host and the nvmet-rdma target (platforms/nvmeof-rdma-cx5.toml): under a
//! steady load some vectors leave level 0 and save interrupts, and at QD1, where every event
//! carries one completion, it stays out of the way.

mod common;
use common::*;
use irqlab_core::{ModeratorKind, Policy};
use irqlab_report::RunReport;
use irqlab_sim::{Observer, Platform, SimOptions, simulate_observed};
use std::path::PathBuf;

const DEEP: &str = "\
[global]
ioengine=libaio
rw=randread
bs=512
iodepth=64
iodepth_batch_submit=16
numjobs=16
cpus_allowed=0-15
cpus_allowed_policy=split
time_based
runtime=5ms
ramp_time=10ms
[c5]
filename=/dev/nvme0n1
";

const QD1: &str = "\
[qd1]
ioengine=pvsync2
rw=randread
bs=512
filename=/dev/nvme0n1
cpus_allowed=0
time_based
runtime=10ms
ramp_time=1ms
";

#[derive(Default)]
struct Levels {
    changes: u64,
    top: f64,
}

impl Observer for Levels {
    fn wants_counters(&self) -> bool {
        true
    }
    fn counter(&mut self, _now: u64, name: &str, _index: usize, value: f64) {
        if name == "moderation_level" {
            self.changes += 1;
            self.top = self.top.max(value);
        }
    }
}

fn run_rig(text: &str, moderator: ModeratorKind) -> (RunReport, Levels) {
    let path =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../platforms/nvmeof-rdma-cx5.toml");
    let platform = Platform::load(&path, &[]).expect("platform");
    let policy = Policy {
        moderator,
        ..Policy::default()
    };
    let mut levels = Levels::default();
    let r = simulate_observed(
        &jobs(text),
        &platform,
        &policy,
        &SimOptions::with_seed(1),
        &mut levels,
    )
    .expect("runs");
    (r, levels)
}

#[test]
fn irq_am_leaves_level_zero_under_steady_load_and_gains() {
    let (none, _) = run_rig(DEEP, ModeratorKind::None);
    let (am, levels) = run_rig(DEEP, ModeratorKind::IrqAm);
    assert!(
        levels.top >= 2.0,
        "irq-am reached level {} only",
        levels.top
    );
    // No throughput gain is asserted: fed two work completions per I/O, the RFC's rule
    // finds no window 20% better at level 0 under a steady load on most vectors
    // (docs/calibration.md finding 6); the vectors that climb still save interrupts.
    assert!(
        am.vector_interrupts() < none.vector_interrupts(),
        "interrupts: irq-am {} vs none {}",
        am.vector_interrupts(),
        none.vector_interrupts()
    );
}

#[test]
fn irq_am_costs_little_latency_at_qd1() {
    let (none, _) = run_rig(QD1, ModeratorKind::None);
    let (am, _) = run_rig(QD1, ModeratorKind::IrqAm);
    let (a, b) = (clat_mean(&am), clat_mean(&none));
    // The RFC: "up to 2%". Each window's program is a kworker's work on the I/O's CPU
    // (wake, firmware command, the switch back), so the cost is small but not zero.
    assert!(
        a > b && a < 1.02 * b,
        "QD1 clat with irq-am {a:.0} ns vs {b:.0} ns without"
    );
}

#[test]
fn at_qd1_irq_am_stays_at_level_zero_and_reprograms_every_window() {
    // Every event carries one work completion (the SEND's and the RECV come apart), so
    // nothing is gained by moderating and the rates do not move 20%: the level stays at
    // 0, and the edge rule (irq_am_decision: `changed` includes irq_am_on_edge) programs
    // it again at the end of every 64-event window.
    let (am, _) = run_rig(QD1, ModeratorKind::IrqAm);
    let v = &am.vectors[0];
    let m = v.moderation.as_ref().expect("irq-am's course");
    assert!(m.level_pct(0) > 99.0, "level histogram {:?}", m.level_ns);
    let windows = v.messages / 64;
    assert!(
        m.programs * 2 >= windows && m.programs <= windows + 2,
        "{} programs for {} windows of 64 events",
        m.programs,
        windows
    );
}

/// Every level program of the target's vectors, as (time, vector index, level).
#[derive(Default)]
struct Course {
    programs: Vec<(u64, usize, f64)>,
}

impl Observer for Course {
    fn wants_counters(&self) -> bool {
        true
    }
    fn counter(&mut self, now: u64, name: &str, index: usize, value: f64) {
        if name == "moderation_level" {
            self.programs.push((now, index, value));
        }
    }
}

#[test]
fn after_the_load_drops_the_target_comes_back_to_level_zero() {
    // One libaio job at depth 64 for 10 ms, then the same CPU at QD1 (stonewall). The
    // target's CQ climbs under the load; at QD1 each event carries one work completion
    // (the command's RECV and the response's SEND come a round trip apart), and the
    // RFC's `cpe == 1` rule calls a step down better, so it walks back to level 0.
    const DROP: &str = "\
[global]
rw=randread
bs=512
filename=/dev/nvme0n1
cpus_allowed=0
time_based
[heavy]
ioengine=libaio
iodepth=64
iodepth_batch_submit=16
runtime=10ms
[light]
stonewall
ioengine=pvsync2
runtime=10ms
";
    let path =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../platforms/nvmeof-rdma-cx5.toml");
    let platform = Platform::load(&path, &[]).expect("platform");
    let policy = Policy {
        moderator: ModeratorKind::IrqAm,
        ..Policy::default()
    };
    let mut course = Course::default();
    let r = simulate_observed(
        &jobs(DROP),
        &platform,
        &policy,
        &SimOptions::with_seed(1),
        &mut course,
    )
    .expect("runs");
    let target = r
        .vectors
        .iter()
        .position(|v| v.name.contains("-target") && v.completions > 0)
        .expect("the target's busy vector");
    let mine: Vec<(u64, f64)> = course
        .programs
        .iter()
        .filter(|p| p.1 == target)
        .map(|p| (p.0, p.2))
        .collect();
    let drop_ns = 10_000_000;
    let top = mine
        .iter()
        .filter(|p| p.0 < drop_ns)
        .map(|p| p.1)
        .fold(0.0, f64::max);
    assert!(
        top >= 2.0,
        "the target reached level {top} under load: {mine:?}"
    );
    let last = mine.last().expect("programs").1;
    assert_eq!(last, 0.0, "after the drop: {mine:?}");
    // The report's level histogram over time (both engines fill it from core's
    // Moderator) shows the same course: the target's millisecond intervals hold levels
    // 2 and up under the load and only level 0 from a few ms after the drop.
    let m = r.vectors[target]
        .moderation
        .as_ref()
        .expect("irq-am's course");
    assert_eq!(m.course_ns, 1_000_000);
    let high = |i: &Vec<u64>| i[2..].iter().sum::<u64>();
    assert!(
        m.course[..10]
            .iter()
            .any(|i| high(i) * 2 > i.iter().sum::<u64>()),
        "under load: {:?}",
        m.course
    );
    assert!(
        m.course[15..].iter().all(|i| i[0] == i.iter().sum::<u64>()),
        "after the drop: {:?}",
        m.course
    );
    // The host's kworker programs every window (the edge rule at level 0) even beside a
    // busy fio: it wakes with a sleeper's credit, not a CFS slice later.
    let host = course
        .programs
        .iter()
        .filter(|p| p.1 == 0 && p.0 < drop_ns)
        .count();
    assert!(host >= 10, "{host} host programs under load");
}
