//! Azure's b111 device (platforms/azure-l80sv2.toml): its own aggregation runs from the
//! first entry the host has not acknowledged, and a CQ head doorbell that acknowledges
//! every entry cancels it (docs/research/azure-device.md R4). At 110K IOPS one interrupt
//! carries about 8 completions (Ming Lei: 13-14K interrupts/s), and a job that reaps
//! after submitting is rarely interrupted.

mod common;
use common::*;
use irqlab_core::Policy;
use irqlab_report::RunReport;
use irqlab_sim::{Platform, SimOptions, simulate};
use std::path::PathBuf;

/// C6's job (one libaio job on CPU 3, depth 64, batches of 16), 10 ms.
const C6: &str = "\
[global]
ioengine=libaio
rw=randread
bs=4k
iodepth=64
iodepth_batch_submit=16
iodepth_batch_complete_min=16
time_based
runtime=10ms
ramp_time=2ms
[c6]
filename=/dev/nvme0n1
cpus_allowed=3
";

fn run_azure(text: &str, reap_after_submit: bool, sets: &[&str]) -> RunReport {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../platforms/azure-l80sv2.toml");
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    let platform = Platform::load(&path, &sets).expect("azure-l80sv2 loads");
    let policy = Policy {
        reap_after_submit,
        ..Policy::default()
    };
    simulate(&jobs(text), &platform, &policy, &SimOptions::with_seed(1)).expect("runs")
}

fn ios_per_interrupt(r: &RunReport) -> f64 {
    r.total_ios() as f64 / r.vector_interrupts().max(1) as f64
}

#[test]
fn at_110k_iops_an_interrupt_carries_about_eight_completions() {
    let text = C6
        .replace(
            "iodepth_batch_submit=16\niodepth_batch_complete_min=16\n",
            "",
        )
        .replace("time_based", "rate_iops=110000\ntime_based");
    let r = run_azure(&text, false, &[]);
    let n = ios_per_interrupt(&r);
    assert!((5.0..=16.0).contains(&n), "{n:.1} I/Os per interrupt");
    // The 410 us timer fitted before issue 21 batched ~50.
    let slow = run_azure(&text, false, &["devices.0.coalesce_time_ns=410000"]);
    assert!(
        ios_per_interrupt(&slow) > 3.0 * n,
        "{:.1}",
        ios_per_interrupt(&slow)
    );
}

#[test]
fn reaping_after_submission_acknowledges_entries_and_cancels_the_timer() {
    let unacked = run_azure(C6, true, &[]);
    let withheld = run_azure(C6, true, &["devices.0.coalesce_from=first_withheld"]);
    // The same timer run from the first withheld completion is not cancelled by the
    // job's own reaping: it keeps interrupting.
    assert!(
        (unacked.vector_interrupts() as f64) < 0.6 * withheld.vector_interrupts() as f64,
        "interrupts: first_unacked {} vs first_withheld {}",
        unacked.vector_interrupts(),
        withheld.vector_interrupts()
    );
    assert!(unacked.total_ios() > 0 && withheld.total_ios() > 0);
}
