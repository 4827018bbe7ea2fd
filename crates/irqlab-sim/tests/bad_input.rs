//! Impossible requests are clear errors, never panics.

mod common;
use common::*;
use irqlab_core::Policy;
use irqlab_sim::{Platform, SimError, SimOptions, simulate};

fn err(job: &str, sets: &[&str]) -> String {
    simulate(
        &jobs(job),
        &platform(sets),
        &Policy::default(),
        &SimOptions::default(),
    )
    .unwrap_err()
    .to_string()
}

#[test]
fn cpu_that_does_not_exist() {
    let e = err("[j]\nfilename=nvme0n1\ncpus_allowed=99\nruntime=1ms\n", &[]);
    // At the option's line, not the section header's (issue 23).
    assert!(e.contains("CPU 99") && e.contains(":3: job 'j'"), "{e}");
}

#[test]
fn unknown_device_names_the_filename_line() {
    let e = err("[global]\nruntime=1ms\n\n[j]\nfilename=/dev/sda\n", &[]);
    assert!(
        e.contains("'/dev/sda'") && e.contains(":5: job 'j'") && e.contains("nvme0"),
        "{e}"
    );
}

#[test]
fn iodepth_zero_is_refused() {
    let dir = std::env::temp_dir().join(format!("irqlab-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("zero.fio");
    std::fs::write(&path, "[j]\nfilename=nvme0n1\niodepth=0\nruntime=1ms\n").unwrap();
    // The parser may refuse it; if it does not, the simulator must.
    if let Ok(jobs) = irqlab_fio::parse_file(&path) {
        let e = simulate(
            &jobs,
            &platform(&[]),
            &Policy::default(),
            &SimOptions::default(),
        )
        .unwrap_err();
        assert!(
            matches!(e, SimError::Job { .. }) && e.to_string().contains("iodepth"),
            "{e}"
        );
    }
}

#[test]
fn unknown_set_key_lists_the_known_ones() {
    let e = Platform::load(&example_path(), &["kernel.cqe_nss=1".to_string()]).unwrap_err();
    assert!(
        e.to_string().contains("unknown key 'cqe_nss'") && e.to_string().contains("cqe_ns"),
        "{e}"
    );
    let e = Platform::load(&example_path(), &["devices.5.count=1".to_string()]).unwrap_err();
    assert!(e.to_string().contains("out of range"), "{e}");
}

#[test]
fn a_job_that_never_ends_is_refused() {
    let e = err("[j]\nfilename=nvme0n1\n", &[]);
    assert!(e.contains("never ends"), "{e}");
}

#[test]
fn libaio_cannot_poll() {
    let policy = Policy {
        delivery: irqlab_core::Delivery::Polled,
        ..Policy::default()
    };
    let e = simulate(
        &jobs("[j]\nioengine=libaio\nfilename=nvme0n1\nruntime=1ms\n"),
        &platform(&[]),
        &policy,
        &SimOptions::default(),
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("libaio cannot poll"), "{e}");
}

#[test]
fn too_many_ios_for_a_queue() {
    let e = err(
        "[j]\nioengine=libaio\niodepth=600\nnumjobs=2\ncpus_allowed=0\nfilename=nvme0n1\nruntime=1ms\n",
        &[],
    );
    assert!(e.contains("in flight"), "{e}");
}

#[test]
fn absurd_platform_values_are_refused_not_simulated() {
    for (set, want) in [
        ("root_ports.0.write_ns=9223372036854775807", "more than 1 s"),
        ("cpu.irq_entry_ns=2000000000", "cpu.irq_entry_ns"),
        ("root_ports.0.bytes_per_ns=1e-300", "bytes_per_ns"),
        ("devices.0.max_iops=1e15", "parallel media servers"),
        ("cpu.tick_ns=2000000", "tick period"),
    ] {
        let path = example_path();
        let e = Platform::load(&path, &[set.to_string()])
            .map(|_| ())
            .unwrap_err()
            .to_string();
        assert!(e.contains(want), "--set {set}: {e}");
    }
}

#[test]
fn runs_too_long_and_ios_too_big_are_refused() {
    let e = err(
        "[j]\nfilename=nvme0n1\ntime_based\nruntime=2ms\nramp_time=1000h\n",
        &[],
    );
    assert!(e.contains("over 600 s"), "{e}");
    let e = err("[j]\nfilename=nvme0n1\nbs=4g\nruntime=2ms\n", &[]);
    assert!(e.contains("bs is over 16 MiB"), "{e}");
}

#[test]
fn a_queue_of_65536_entries_uses_every_command_id() {
    let r = run(
        "[j]\nfilename=nvme0n1\niodepth=8\nnumber_ios=200\n",
        Policy::default(),
        &["devices.0.queue_depth=65536"],
        1,
    );
    assert_eq!(r.total_ios(), 200);
}

#[test]
fn a_retired_uncore_key_names_what_replaced_it() {
    // In the file: the error is at the key's line and names the replacement.
    let text = std::fs::read_to_string(example_path())
        .unwrap()
        .replace("[iommu]\n", "[iommu]\ndeliver_ns = 150\n");
    let e = Platform::from_toml(&text, "old.toml", &[]).unwrap_err().0;
    let line = text
        .lines()
        .position(|l| l.starts_with("deliver_ns"))
        .unwrap()
        + 1;
    assert!(
        e.starts_with(&format!("old.toml:{line}: iommu.deliver_ns: "))
            && e.contains("replaced by uncore.ubox_ns"),
        "{e}"
    );
    let text = std::fs::read_to_string(example_path())
        .unwrap()
        .replace("msi_ns = {", "notify_slots = 2\nmsi_ns = {");
    let e = Platform::from_toml(&text, "old.toml", &[]).unwrap_err().0;
    assert!(
        e.contains("root_ports.0.notify_slots") && e.contains("root_ports.N.stack"),
        "{e}"
    );
    // As a --set, the same.
    let e = Platform::load(&example_path(), &["iommu.post_ns=90".to_string()])
        .unwrap_err()
        .0;
    assert!(
        e.contains("iommu.post_ns is no longer a platform key") && e.contains("uncore.pid_ns"),
        "{e}"
    );
}

#[test]
fn wait_for_set_by_hand_to_no_job_above_is_refused() {
    // The parser refuses it; a spec changed after parsing (a sweep, a caller) reaches
    // the plan's Start::Unresolved, which the build names at the section.
    let mut specs =
        jobs("[a]\nfilename=nvme0n1\nruntime=1ms\n[b]\nfilename=nvme0n1\nruntime=1ms\n");
    specs[1].controls.wait_for = Some("c".into());
    let e = simulate(
        &specs,
        &platform(&[]),
        &Policy::default(),
        &SimOptions::default(),
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("waitee job c unknown") && e.contains("job 'b'"),
        "{e}"
    );
}
