//! The capture of this project's development machine (a 2-vCPU KVM guest whose root disk
//! is virtio-blk with one request queue), recorded by `irqlab capture` and kept as it
//! was written: it reads back, and what it measured hangs together.

mod common;

use irqlab_capture::{Capture, DeviceKind};

#[test]
fn the_dev_vm_capture_reads_back_and_its_figures_agree() {
    let c = Capture::open(&common::fixture("dev-vm-2vcpu")).unwrap();
    let m = c.manifest.as_ref().unwrap();
    let t = &c.host.topology;
    assert!(t.virtualized && t.cpus() == 2, "{t:?}");
    let target = m.target.as_ref().unwrap();
    assert!(target.created);
    let vda = c.host.device(target.device.as_deref().unwrap()).unwrap();
    assert_eq!(vda.kind, DeviceKind::VirtioBlk);
    assert!(!vda.vectors.is_empty() && vda.poll_queues == 0);
    // No poll queues: no polled run; the other four ran.
    let names: Vec<&str> = c.runs.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(
        names,
        m.runs.iter().map(|r| r.name.as_str()).collect::<Vec<_>>()
    );
    assert!(
        !names.contains(&"qd1-hipri") && names.len() == 4,
        "{names:?}"
    );
    for r in &c.runs {
        assert!(r.interrupts > 0, "{}", r.name);
        // fio's IOPS is its I/Os over its runtime.
        let iops = r.summary.total_ios as f64 / r.summary.runtime_s;
        assert!(
            (iops / r.summary.iops - 1.0).abs() < 0.01,
            "{}: {iops} vs {}",
            r.name,
            r.summary.iops
        );
        // Every I/O fio completed was a completion the disk signalled: the disk's own
        // count (all processes) is at least fio's, give or take fio's ramp.
        let (a, b) = (
            r.ios_per_interrupt.unwrap(),
            r.device_ios_per_interrupt.unwrap(),
        );
        assert!(
            b > 0.9 * a,
            "{}: disk {b} vs fio {a} I/Os per interrupt",
            r.name
        );
        // The interrupts went where the vectors' effective affinity says.
        let allowed: Vec<u32> = vda
            .vectors
            .iter()
            .flat_map(|v| v.effective_cpus.clone())
            .collect();
        for (cpu, n) in r.cpus.iter().zip(r.interrupts_per_cpu()) {
            assert!(
                n == 0 || allowed.contains(cpu),
                "{}: {n} interrupts on CPU{cpu}",
                r.name
            );
        }
    }
    // virtio-blk's interrupt suppression (virtblk_done) reaps many completions per
    // interrupt under load and about one at QD1.
    let qd1 = c.run("qd1-psync").unwrap().ios_per_interrupt.unwrap();
    let qd32 = c.run("qd32-libaio").unwrap().ios_per_interrupt.unwrap();
    assert!(qd1 < 1.5 && qd32 > 10.0 * qd1, "qd1 {qd1}, qd32 {qd32}");
    assert!(c.bench.is_some(), "bench.json");
}
