//! fio's engines beyond the kernel's asynchronous ones (issue 23): null completes at
//! submission with no device, POSIX aio keeps iodepth psync calls in flight, and a
//! device's max_iops is reached even when max_iops x read_ns is not a whole number.

mod common;

use common::{jobs, platform, sim};
use irqlab_core::{Delivery, Policy};
use irqlab_report::RunReport;
use irqlab_sim::{SimOptions, simulate};

#[test]
fn null_completes_at_submission_without_a_device_or_an_interrupt() {
    let r = sim(
        "[n]\nioengine=null\nrw=randread\nbs=4k\niodepth=8\nruntime=1ms\ncpus_allowed=0\n",
        &[],
    );
    let d = &r.jobs[0].read;
    assert!(
        d.total_ios > 1000,
        "null I/O is only fio's own work: {}",
        d.total_ios
    );
    assert_eq!(r.vector_interrupts(), 0);
    assert!(r.disks.is_empty(), "no device was used");
    // No syscall: the job's time is user time, and an I/O completes within its batch.
    assert!(
        r.jobs[0].usr_ns > 50 * r.jobs[0].sys_ns.max(1),
        "{} {}",
        r.jobs[0].usr_ns,
        r.jobs[0].sys_ns
    );
    assert!(d.clat.max() < 10_000, "{}", d.clat.max());
}

#[test]
fn posixaio_keeps_iodepth_in_flight_at_psync_costs() {
    let job = |engine: &str| {
        format!(
            "[p]\nioengine={engine}\nrw=randread\nbs=4k\niodepth=16\nruntime=5ms\nfilename=/dev/nvme0n1\ncpus_allowed=0\n"
        )
    };
    let aio = sim(&job("posixaio"), &[]);
    let psync = sim(&job("psync"), &[]);
    let iops = |r: &RunReport| r.jobs[0].read.total_ios;
    // Deeper than psync's one I/O at a time, and each I/O costs at least a psync call.
    assert!(
        iops(&aio) > 4 * iops(&psync),
        "{} vs {}",
        iops(&aio),
        iops(&psync)
    );
    let e = &platform(&[]).engine;
    let cpu_per_io = (aio.jobs[0].usr_ns + aio.jobs[0].sys_ns) / iops(&aio).max(1);
    let psync_call = e.usr_io_ns + e.pvsync2.submit_call_ns + e.pvsync2.submit_io_ns;
    assert!(cpu_per_io >= psync_call, "{cpu_per_io} vs {psync_call}");
    // POSIX aio cannot poll.
    let polled = Policy {
        delivery: Delivery::Polled,
        ..Policy::default()
    };
    let e = simulate(
        &jobs(&job("posixaio")),
        &platform(&[]),
        &polled,
        &SimOptions::default(),
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains(":2: job 'p': posixaio cannot poll"), "{e}");
}

#[test]
fn a_device_reaches_its_max_iops_when_its_units_are_not_whole() {
    // 30 K IOPS x 80 us = 2.4 units: two whole ones and 0.4 of a third (issue 23: 25.1 K).
    let r = sim(
        "[j]\nioengine=libaio\nrw=randread\nbs=4k\niodepth=128\nruntime=100ms\nfilename=/dev/nvme0n1\n",
        &["devices.0.max_iops=30000"],
    );
    let iops = r.jobs[0].read.iops();
    assert!((29_400.0..=30_300.0).contains(&iops), "{iops}");
    // One I/O at a time still sees the whole units' read time.
    let qd1 = sim(
        "[j]\nioengine=libaio\nrw=randread\nbs=4k\niodepth=1\nruntime=20ms\nfilename=/dev/nvme0n1\n",
        &["devices.0.max_iops=30000"],
    );
    assert!(
        qd1.jobs[0].read.clat.max() < 200_000,
        "{}",
        qd1.jobs[0].read.clat.max()
    );
}
