//! The notification path (model/delivery.rs): the IIO stack of a root port, which takes
//! its ports' MSIs one at a time (a remapped one until the router sent it on: strong
//! ordering with DMA), the socket's shared interrupt router, and how posted delivery
//! relieves exactly that path.

mod common;
use common::*;
use irqlab_core::{Delivery, Policy};
use irqlab_report::RunReport;
use irqlab_sim::{Platform, SimOptions, simulate};
use std::path::PathBuf;

/// Four disks on one port, four jobs each at depth 64 on the example's 16 CPUs: the
/// disks, the port's bandwidth and the CPUs could carry ~6M IOPS; only the interrupt
/// path can hold them back.
const FOUR_DEEP: &str = "\
[global]
ioengine=libaio
rw=randread
bs=4k
iodepth=64
iodepth_batch_submit=8
runtime=4ms
ramp_time=1ms
time_based
numjobs=4
cpus_allowed_policy=split
[a]
filename=nvme0n1
cpus_allowed=0-3
[b]
filename=nvme1n1
cpus_allowed=4-7
[c]
filename=nvme2n1
cpus_allowed=8-11
[d]
filename=nvme3n1
cpus_allowed=12-15
";

const FAST_DISKS: [&str; 4] = [
    "devices.0.max_iops=3000000",
    "devices.0.read_ns=20000",
    "root_ports.0.credits=64",
    "root_ports.0.bytes_per_ns=50.0",
];

fn posted() -> Policy {
    Policy {
        delivery: Delivery::Posted { max_loop: 3 },
        ..Policy::default()
    }
}

fn per_sec(r: &RunReport, n: u64) -> f64 {
    n as f64 * 1e9 / r.duration_ns as f64
}

fn iops(r: &RunReport) -> f64 {
    per_sec(r, r.total_ios())
}

fn messages(r: &RunReport) -> u64 {
    r.vectors.iter().map(|v| v.messages).sum()
}

fn with(extra_sets: &[&str]) -> Vec<&'static str> {
    let mut v: Vec<&'static str> = FAST_DISKS.to_vec();
    for s in extra_sets {
        v.push(Box::leak(s.to_string().into_boxed_str()));
    }
    v
}

#[test]
fn one_remapped_msi_per_stack_caps_interrupts_at_the_path_time_and_posted_lifts_it() {
    // The stack's round trip 65 + the router's 150 = 215 ns per remapped interrupt: 4.65M/s.
    let sets = with(&["uncore.stack_rtt_ns=65", "uncore.ubox_ns=150"]);
    let remapped = run(FOUR_DEEP, Policy::default(), &sets, 1);
    let cap = 1e9 / 215.0;
    let rate = per_sec(&remapped, messages(&remapped));
    assert!(
        (rate - cap).abs() / cap < 0.05,
        "remapped messages/s {rate:.0} should sit at the stack's limit {cap:.0}"
    );
    assert!(
        extra(&remapped, "port0_stalled_pct") > 10.0,
        "the DMA behind an MSI that waits for its stack waits"
    );
    let p = run(FOUR_DEEP, posted(), &sets, 1);
    assert!(
        iops(&p) > 1.3 * iops(&remapped),
        "a posted MSI holds its stack only for the PID update: {:.0} vs {:.0}",
        iops(&p),
        iops(&remapped)
    );
    // Without the stack's and router's time the same disks run past it: the path, not
    // the disks, limited.
    let free = run(
        FOUR_DEEP,
        Policy::default(),
        &with(&["uncore.stack_rtt_ns=0", "uncore.ubox_ns=0"]),
        1,
    );
    assert!(iops(&free) > 1.2 * iops(&remapped));
}

fn spr(sets: &[&str]) -> Platform {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../platforms/spr-gen5.toml");
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    Platform::load(&path, &sets).expect("spr-gen5 loads")
}

/// Jobs on `disks` disks (nvme0-3 on x4 ports rp0-3 of stack iio0, nvme4-7 on rp4-7 of
/// iio1), six each, one CPU each.
fn spr_job(disks: usize) -> String {
    let mut s = String::from(
        "[global]\nioengine=libaio\nrw=randread\nbs=4k\niodepth=64\niodepth_batch_submit=8\nruntime=3ms\nramp_time=1ms\ntime_based\n",
    );
    let mut cpu = 0;
    for d in 0..disks {
        for _ in 0..6 {
            s.push_str(&format!(
                "[j{cpu}]\nfilename=nvme{d}n1\ncpus_allowed={cpu}\n"
            ));
            cpu += 1;
        }
    }
    s
}

fn spr_run(disks: usize, policy: Policy, sets: &[&str]) -> RunReport {
    simulate(
        &jobs(&spr_job(disks)),
        &spr(sets),
        &policy,
        &SimOptions::with_seed(1),
    )
    .expect("runs")
}

#[test]
fn every_stack_shares_the_sockets_router() {
    // One stack is held to one remapped MSI at a time; two stacks would carry twice
    // that, but the socket's router (150 ns a message) serves both.
    let one_port = spr_run(4, Policy::default(), &[]);
    let two_ports = spr_run(8, Policy::default(), &[]);
    let unit_cap = 1e9 / 150.0;
    let n2 = per_sec(&two_ports, two_ports.notifications());
    assert!(
        n2 <= unit_cap * 1.01,
        "notifications {n2:.0} above the router's {unit_cap:.0}"
    );
    assert!(extra(&two_ports, "router_busy_pct") > 95.0);
    let n1 = per_sec(&one_port, one_port.notifications());
    assert!(
        n2 < 1.7 * n1,
        "the second stack gains far less than 2x: {n1:.0} -> {n2:.0}"
    );
    assert!(n2 > 1.2 * n1);
    // The same eight ports put on one stack are held to that stack's one remapped MSI
    // at a time (stack_rtt + router + the MSI write per MSI).
    let one_stack: Vec<String> = (4..8)
        .map(|p| format!("root_ports.{p}.stack=iio0"))
        .collect();
    let sets: Vec<&str> = one_stack.iter().map(String::as_str).collect();
    let one = spr_run(8, Policy::default(), &sets);
    let p = spr(&[]);
    let per_msi = (p.uncore.stack_rtt_ns + p.uncore.ubox_ns + p.root_ports[0].msi_ns) as f64;
    let cap = 1e9 / per_msi;
    let m1 = per_sec(&one, messages(&one));
    assert!(
        m1 <= cap * 1.01 && m1 > 0.9 * cap,
        "one stack: {m1:.0} messages/s against its {cap:.0}"
    );
    assert!(per_sec(&two_ports, messages(&two_ports)) > 1.25 * m1);
}

#[test]
fn a_busy_router_keeps_on_set_so_posted_messages_coalesce() {
    let busy = spr_run(8, posted(), &[]);
    let idle = spr_run(8, posted(), &["uncore.ubox_ns=0"]);
    let ratio =
        |r: &RunReport| messages(r) as f64 / r.cpus.iter().map(|c| c.pmn).sum::<u64>() as f64;
    assert!(
        ratio(&busy) > 1.5 * ratio(&idle),
        "messages per notification: {:.2} with a saturated router, {:.2} with an instant one",
        ratio(&busy),
        ratio(&idle)
    );
    assert!(ratio(&busy) > 2.0, "{:.2}", ratio(&busy));
    // And posted delivery lifts the socket past the remapped limit.
    let remapped = spr_run(8, Policy::default(), &[]);
    assert!(iops(&busy) > 2.0 * iops(&remapped));
}

#[test]
fn per_completion_devices_send_a_message_per_cqe_and_gated_ones_batch() {
    let per = run(
        FOUR_DEEP,
        Policy::default(),
        &with(&["devices.0.msi=per_completion"]),
        2,
    );
    let completions: u64 = per.vectors.iter().map(|v| v.completions).sum();
    let m = messages(&per) as f64;
    assert!(
        (m / completions as f64 - 1.0).abs() < 0.02,
        "per completion: {m} messages for {completions} completions"
    );
    let gated = run(
        FOUR_DEEP,
        Policy::default(),
        &with(&["devices.0.msi=until_doorbell"]),
        2,
    );
    let completions: u64 = gated.vectors.iter().map(|v| v.completions).sum();
    assert!(
        (messages(&gated) as f64) < 0.9 * completions as f64,
        "until the doorbell, one message covers the entries posted meanwhile"
    );
}

#[test]
fn the_notification_path_conserves_every_io() {
    for policy in [Policy::default(), posted()] {
        let r = spr_run(8, policy, &[]);
        assert_eq!(extra(&r, "ios_submitted"), extra(&r, "ios_reaped"));
        assert_eq!(extra(&r, "cqes_posted"), extra(&r, "ios_completed"));
        assert_eq!(extra(&r, "cut_short"), 0.0);
    }
}
