//! fio's own submission paths on a virtio-blk guest: a SQPOLL thread, offload workers
//! and a synchronous trim each put their requests in the avail ring and make the kick
//! the ring asks for (virtio_queue_rq, then the notify exit), or the host, asleep until
//! kicked, never serves them. And a SQPOLL run that ends inside its thread's idle time
//! is not cut short by a timer that would fire after the run.

mod common;
use common::{extra, jobs};
use irqlab_core::Policy;
use irqlab_report::{EXTRA_CUT_SHORT, JobReport, RunReport};
use irqlab_sim::{Platform, SimOptions, simulate};
use std::path::PathBuf;

fn vm(sets: &[&str]) -> Platform {
    let p =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../platforms/firecracker-epyc-vm.toml");
    let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
    Platform::load(&p, &sets).expect("the development VM's platform loads")
}

fn sim(text: &str, p: &Platform) -> RunReport {
    simulate(
        &jobs(text),
        p,
        &Policy::default(),
        &SimOptions::overriding(1),
    )
    .unwrap_or_else(|e| panic!("simulation runs: {e}"))
}

fn ios(j: &JobReport) -> u64 {
    j.read.total_ios + j.write.total_ios + j.trim.total_ios
}

const VDA: &str =
    "[global]\nfilename=/dev/vda\nbs=4k\ndirect=1\ntime_based\nruntime=4ms\n[j]\ncpus_allowed=0\n";

#[test]
fn sqpoll_offload_and_sync_trims_are_served_by_a_virtio_host() {
    let cases: [(&str, &str, &[&str]); 3] = [
        (
            "sqpoll",
            "ioengine=io_uring\nrw=randread\niodepth=8\nsqthread_poll=1\n",
            &[],
        ),
        (
            "offload",
            "ioengine=libaio\nrw=randread\niodepth=4\nio_submit_mode=offload\n",
            &[],
        ),
        (
            "sync trim",
            "ioengine=libaio\nrw=randtrim\niodepth=4\n",
            &["devices.0.trim_ns=20000"],
        ),
    ];
    for (what, opts, sets) in cases {
        let r = sim(&format!("{VDA}{opts}"), &vm(sets));
        let n = ios(&r.jobs[0]);
        // A request left unkicked stalls its ring: a handful of I/Os, then nothing.
        assert!(n > 40, "{what}: {n} I/Os in 4 ms");
        assert_eq!(extra(&r, EXTRA_CUT_SHORT), 0.0, "{what}: the run ended");
        assert_eq!(
            extra(&r, "ios_submitted"),
            extra(&r, "ios_completed"),
            "{what}: every request came back"
        );
    }
}

#[test]
fn a_sqpoll_run_shorter_than_the_idle_time_is_not_cut_short() {
    let text = "[j]\nioengine=io_uring\nrw=randread\nbs=4k\niodepth=8\nfilename=/dev/nvme0n1\ncpus_allowed=0\nsqthread_poll=1\ntime_based\nruntime=3ms\n";
    let r = sim(text, &common::platform(&[]));
    assert!(ios(&r.jobs[0]) > 100);
    assert_eq!(extra(&r, EXTRA_CUT_SHORT), 0.0);
}
