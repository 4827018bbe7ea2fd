//! The real captures kept as fixtures: the development VM (a 2-vCPU Firecracker guest on
//! AMD EPYC) and the lent 16-core Emerald Rapids KVM guest, each built from two of its
//! runs and asked to predict the others (docs/your-machine.md has the tables).

use irqlab_calib::Metric;
use irqlab_capture::Capture;
use std::path::{Path, PathBuf};

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn build(name: &str, runs: &[&str]) -> irqlab_fromcapture::Built {
    let c = Capture::open(
        &root()
            .join("crates/irqlab-capture/tests/fixtures")
            .join(name),
    )
    .unwrap();
    let mut opts = irqlab_fromcapture::Options::new(root().join("platforms"));
    opts.runs = Some(runs.iter().map(|s| s.to_string()).collect());
    opts.max_evals = 40;
    opts.ios_per_run = 4000;
    let b =
        irqlab_fromcapture::build(&c, &opts, &mut irqlab_calib::Threads(2), &mut |_| {}).unwrap();
    println!("{}", irqlab_fromcapture::report(&b));
    b
}

fn err(b: &irqlab_fromcapture::Built, run: &str, m: Metric) -> f64 {
    b.held_out
        .iter()
        .find(|f| f.run == run && f.metric == m)
        .unwrap_or_else(|| panic!("{run}:{m} not predicted"))
        .error_pct()
}

#[test]
fn the_development_vm_from_two_runs_predicts_the_others() {
    let b = build("dev-vm-2vcpu", &["qd1-psync", "qd32x2-libaio"]);
    // A guest: a [guest] section, its virtio-blk disk with the ring as negotiated.
    assert!(b.resolved.platform.guest.is_some());
    let d = &b.resolved.platform.devices[0];
    let v = d.virtio.as_ref().unwrap();
    assert!(v.event_idx && !v.indirect && v.ring_size == 256, "{v:?}");
    assert_eq!(d.irq_cpu, Some(1));
    // The host's time per request is pinned by the deep run; the I/Os per interrupt of
    // the held-out runs come from the mechanism (a pass per round), not from a fit.
    assert!(
        b.outcome
            .fitted
            .iter()
            .any(|f| f.param.key() == "devices.0.host.service_ns")
    );
    for run in ["qd32-libaio", "qd32-uring-batch"] {
        let e = err(&b, run, Metric::IosPerInterrupt);
        assert!(e.abs() < 10.0, "{run} I/Os per interrupt {e:+.1}%");
    }
    let e = err(&b, "qd32-libaio", Metric::Iops);
    assert!(e.abs() < 10.0, "qd32-libaio IOPS {e:+.1}%");
}

#[test]
fn the_16_core_vm_from_two_runs_predicts_the_third_and_names_the_run_it_cannot_take() {
    let b = build("xeon16-emr-vm", &["qd1-psync", "qd32-libaio"]);
    // 4 jobs x 32 in flight do not fit a ring of 256 entries without indirect
    // descriptors (85 requests): the model refuses the run, and says so.
    assert!(
        b.left_out
            .iter()
            .any(|l| l.starts_with("qd32x4-libaio: the model cannot run it here")),
        "{:?}",
        b.left_out
    );
    for m in [Metric::Iops, Metric::ClatMeanUs, Metric::IosPerInterrupt] {
        let e = err(&b, "qd32-uring-batch", m);
        assert!(e.abs() < 10.0, "qd32-uring-batch {m} {e:+.1}%");
    }
}
