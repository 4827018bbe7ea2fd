//! virtio-blk on a guest platform: where "I/Os per interrupt" comes from. A serial host
//! that publishes once per pass over the avail ring makes one round of QD requests with
//! one kick and one interrupt; a host faster than the guest's submissions ends a pass per
//! request; the kick shows in fio's slat as a + kick/QD; EVENT_IDX off behaves as the
//! NO_NOTIFY and NO_INTERRUPT flags do; posted delivery is refused on a guest.

mod common;
use common::jobs;
use irqlab_core::{Delivery, HandlerStyle, Policy};
use irqlab_report::RunReport;
use irqlab_sim::{Platform, PolicyRefused, SimError, SimOptions, simulate};
use std::path::PathBuf;

fn vm(sets: &[&str]) -> Platform {
    let p =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../platforms/firecracker-epyc-vm.toml");
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    Platform::load(&p, &sets).expect("the development VM's platform loads")
}

/// One libaio job at `qd` on the vector's CPU, `ms` of simulated time.
fn job(engine: &str, qd: u32, ms: u32) -> String {
    format!(
        "[global]\nfilename=/dev/vda\nrw=randread\nbs=4k\ndirect=1\ntime_based\nruntime={ms}ms\nramp_time=2ms\nioengine={engine}\niodepth={qd}\n[j]\ncpus_allowed=1\n"
    )
}

fn run_on(text: &str, p: &Platform, policy: Policy) -> Result<RunReport, SimError> {
    simulate(&jobs(text), p, &policy, &SimOptions::overriding(1))
}

fn run(qd: u32, sets: &[&str]) -> RunReport {
    run_on(&job("libaio", qd, 40), &vm(sets), Policy::default())
        .unwrap_or_else(|e| panic!("simulation runs: {e}"))
}

fn ios_per_interrupt(r: &RunReport) -> f64 {
    r.total_ios() as f64 / r.vector_interrupts().max(1) as f64
}

fn slat_us(r: &RunReport) -> f64 {
    r.jobs[0].read.slat.mean() / 1000.0
}

fn messages(r: &RunReport) -> u64 {
    r.vectors.iter().map(|v| v.messages).sum()
}

#[test]
fn a_serial_host_completes_a_round_of_qd_requests_per_interrupt() {
    for qd in [4, 16, 32] {
        let r = run(qd, &[]);
        let per = ios_per_interrupt(&r);
        assert!(
            (per - f64::from(qd)).abs() < 0.05 * f64::from(qd),
            "QD{qd}: {per:.2} I/Os per interrupt"
        );
        // One irqfd write per round: nothing merged, nothing spurious (give or take the
        // message on its way when the window opens).
        assert!(messages(&r).abs_diff(r.vector_interrupts()) <= 1, "QD{qd}");
    }
}

#[test]
fn a_host_faster_than_the_guest_ends_a_pass_per_request() {
    let fast = run(16, &["devices.0.host.service_ns=1000"]);
    let per = ios_per_interrupt(&fast);
    assert!(per < 1.2, "{per:.2} I/Os per interrupt with a 1 us host");
    // ... and every request found the host idle: a kick each.
    let kick = vm(&[]).guest.expect("a guest").kick_ns as f64 / 1000.0;
    assert!(slat_us(&fast) > kick, "slat {:.2} us", slat_us(&fast));
}

#[test]
fn slat_falls_as_a_plus_kick_over_qd() {
    let kick = vm(&[]).guest.expect("a guest").kick_ns as f64 / 1000.0;
    let s: Vec<f64> = [1, 4, 16]
        .iter()
        .map(|&qd| slat_us(&run(qd, &[])))
        .collect();
    // a + k/QD at three depths: the differences give k twice.
    let k1 = (s[0] - s[2]) / (1.0 - 1.0 / 16.0);
    let k4 = (s[1] - s[2]) / (0.25 - 1.0 / 16.0);
    for k in [k1, k4] {
        assert!(
            (k - kick).abs() < 0.1 * kick,
            "kick from slat {k:.2} us, platform {kick:.2} us ({s:?})"
        );
    }
    // Without the kick's exit the depth does not matter.
    let free: Vec<f64> = [1, 16]
        .iter()
        .map(|&qd| slat_us(&run(qd, &["guest.kick_ns=0"])))
        .collect();
    assert!((free[0] - free[1]).abs() < 0.3, "{free:?}");
}

#[test]
fn per_completion_publishing_breaks_the_lockstep() {
    let pass = run(16, &[]);
    let each = run(16, &["devices.0.host.publish=per_completion_batch"]);
    assert!(
        ios_per_interrupt(&each) < 0.5 * ios_per_interrupt(&pass),
        "{:.2} against {:.2}",
        ios_per_interrupt(&each),
        ios_per_interrupt(&pass)
    );
}

/// EVENT_IDX off: the device's NO_NOTIFY is clear until its thread runs, so submissions
/// while it wakes kick again; the driver's NO_INTERRUPT is clear until its handler runs,
/// so publishes while the interrupt is on its way send more irqfd writes. With EVENT_IDX
/// the first crossing of avail_event / used_event is the only one.
#[test]
fn event_idx_off_behaves_as_the_flags_do() {
    let slow_wake = ["devices.0.host.wake_ns=20000"];
    let ev = run(4, &slow_wake);
    let fl = run(4, &[slow_wake[0], "devices.0.virtio.event_idx=false"]);
    assert!(
        slat_us(&fl) > slat_us(&ev) + 0.5,
        "flags {:.2} us, event_idx {:.2} us",
        slat_us(&fl),
        slat_us(&ev)
    );
    let each = "devices.0.host.publish=per_completion_batch";
    let ev = run(16, &[each]);
    let fl = run(16, &[each, "devices.0.virtio.event_idx=false"]);
    assert!(
        messages(&ev).abs_diff(ev.vector_interrupts()) <= 1,
        "event_idx: one write per interrupt"
    );
    assert!(
        messages(&fl) > fl.vector_interrupts() + fl.vector_interrupts() / 20,
        "flags: {} writes for {} interrupts",
        messages(&fl),
        fl.vector_interrupts()
    );
    // On the serial host that publishes once per pass the two modes agree.
    let a = run(16, &[]);
    let b = run(16, &["devices.0.virtio.event_idx=false"]);
    assert_eq!(a.vector_interrupts(), b.vector_interrupts());
}

#[test]
fn posted_delivery_is_refused_on_a_guest_with_the_reason() {
    let posted = Policy {
        delivery: Delivery::Posted { max_loop: 3 },
        ..Policy::default()
    };
    let e = run_on(&job("libaio", 4, 5), &vm(&[]), posted).unwrap_err();
    assert!(
        matches!(e, SimError::Refused(PolicyRefused::PostedOnGuest { .. })),
        "{e}"
    );
    assert!(e.to_string().contains("bare-metal only"), "{e}");
    // The Azure platforms are Hyper-V guests: their NVMe disk refuses it too.
    let azure = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../platforms/azure-l80sv2.toml");
    let azure = Platform::load(&azure, &[]).expect("azure loads");
    let nvme = "[j]\nfilename=/dev/nvme0n1\nrw=randread\nbs=4k\nioengine=libaio\niodepth=4\ntime_based\nruntime=1ms\n";
    let e = run_on(nvme, &azure, posted).unwrap_err();
    assert!(
        e.to_string().contains("'azure-l80sv2', a hyper-v guest"),
        "{e}"
    );
    assert!(run_on(nvme, &azure, Policy::default()).is_ok());
}

#[test]
fn virtio_blk_refuses_nvme_only_handlers_and_a_platform_without_a_guest() {
    let threaded = Policy {
        handler: HandlerStyle::Threaded,
        ..Policy::default()
    };
    let e = run_on(&job("libaio", 4, 5), &vm(&[]), threaded).unwrap_err();
    assert!(e.to_string().contains("virtblk_done"), "{e}");
    let text = std::fs::read_to_string(
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../platforms/firecracker-epyc-vm.toml"),
    )
    .expect("platform text");
    let start = text.find("[guest]").expect("a [guest] section");
    let end = start + text[start..].find("\n\n").expect("the section ends");
    let bare = format!("{}{}", &text[..start], &text[end..]);
    let e = Platform::from_toml(&bare, "bare.toml", &[]).unwrap_err();
    assert!(e.to_string().contains("needs a [guest] section"), "{e}");
    // More in flight than the ring holds (85 requests of 3 descriptors in 256 entries).
    let e = run_on(&job("libaio", 100, 5), &vm(&[]), Policy::default()).unwrap_err();
    assert!(e.to_string().contains("holds 85"), "{e}");
}

#[test]
fn the_same_seed_gives_the_same_bytes() {
    let a = run(8, &["devices.0.host.publish=per_completion_batch"]);
    let b = run(8, &["devices.0.host.publish=per_completion_batch"]);
    assert_eq!(format!("{a:?}"), format!("{b:?}"));
}

#[test]
fn poll_queues_complete_without_interrupts() {
    let text = job("io_uring", 8, 10).replace("iodepth=8", "iodepth=8\nhipri");
    let p = vm(&["devices.0.queues=2", "devices.0.virtio.poll_queues=1"]);
    let r = run_on(&text, &p, Policy::default()).expect("runs");
    assert!(r.total_ios() > 0);
    assert_eq!(r.vector_interrupts(), 0);
    let e = run_on(&text, &vm(&[]), Policy::default()).unwrap_err();
    assert!(e.to_string().contains("no poll queues"), "{e}");
}
