//! Task placement of fio jobs without cpus_allowed (model/placement.rs, after
//! kernel/sched/fair.c select_task_rq_fair): a job woken by a completion interrupt on
//! another, idle CPU of its LLC while its own CPU is taken moves there (wake_affine_idle)
//! under the v5.3 and the v6.6 rules; a pinned job stays; forks spread over idle CPUs; a
//! moved job that finds its queue full waits for a tag; a run of pinned jobs keeps no
//! placement state at all.

mod common;
use common::*;
use irqlab_core::Policy;
use irqlab_report::RunReport;

/// Job `x` reads nvme0 at QD1, its vectors all on CPU 2; from 1 ms on a CPU hog pinned to
/// CPU 1 (think time spun, after one read of nvme1) shares x's CPU. x forks onto CPU 1:
/// find_idlest_cpu leaves the parent's CPU 0 for the next idle one.
const AFFINE: &str = "\
[global]
rw=randread
bs=4k
time_based
runtime=6ms
[x]
ioengine=pvsync2
iodepth=1
filename=nvme0n1
[hog]
ioengine=psync
filename=nvme1n1
cpus_allowed=1
startdelay=1ms
thinktime=20ms
thinktime_spin=20ms
thinktime_blocks=1
";

fn affine(job: &str, sets: &[&str]) -> RunReport {
    let mut all = vec!["cpu.count=3", "devices.0.irq_cpu=2"];
    all.extend_from_slice(sets);
    run(job, Policy::default(), &all, 1)
}

fn pinned_x() -> String {
    AFFINE.replace("[x]\n", "[x]\ncpus_allowed=1\n")
}

#[test]
fn a_woken_job_follows_its_interrupt_to_an_idle_cpu_of_its_llc() {
    for scheduler in ["cpu.scheduler=cfs", "cpu.scheduler=eevdf"] {
        let moved = affine(AFFINE, &[scheduler]);
        let stayed = affine(&pinned_x(), &[scheduler]);
        let (m, s) = (&moved.jobs[0], &stayed.jobs[0]);
        assert!(
            m.migrations.is_some_and(|n| n >= 1),
            "{scheduler}: the unpinned job moved ({:?})",
            m.migrations
        );
        assert_eq!(
            s.migrations, None,
            "{scheduler}: a pinned job is not placed"
        );
        // It ran on the interrupt's CPU, and kept its rate there.
        assert!(moved.cpus[2].sys_ns > 0 && stayed.cpus[2].sys_ns == 0);
        assert!(
            m.read.total_ios > 2 * s.read.total_ios,
            "{scheduler}: moved {} I/Os, pinned beside the hog {}",
            m.read.total_ios,
            s.read.total_ios
        );
    }
}

#[test]
fn forked_jobs_spread_over_the_idle_cpus_one_each() {
    // 16 CPU-bound jobs on 16 CPUs in two nodes of cores of 2: find_idlest_cpu places
    // each fork on an idle CPU, the NUMA rule keeps the last ones local, and the idle CPUs
    // pull the stacked ones at the first tick.
    let job = "[spin]\nioengine=psync\nrw=randread\nbs=4k\nfilename=nvme0n1\nnumjobs=16\ntime_based\nruntime=4ms\nramp_time=2ms\nthinktime=20ms\nthinktime_spin=20ms\nthinktime_blocks=1\n";
    let sets = [
        "cpu.threads_per_core=2",
        "cpu.llc_cpus=4",
        "cpu.node_cpus=8",
        "cpu.scheduler=cfs",
    ];
    let r = run(job, Policy::default(), &sets, 1);
    for c in &r.cpus {
        let busy = c.usr_ns + c.sys_ns;
        assert!(
            busy * 10 > r.duration_ns * 9,
            "CPU {} ran a job {busy} of {} ns",
            c.cpu,
            r.duration_ns
        );
        assert!(
            c.ctx_switches <= 1,
            "CPU {}: {} switches",
            c.cpu,
            c.ctx_switches
        );
    }
}

#[test]
fn a_job_finding_its_queue_full_waits_for_a_tag() {
    // Four movable jobs of depth 8 on one queue of 16 entries: more than it holds, which
    // pinned jobs are refused for; a moved job sleeps in blk_mq_get_tag instead.
    let job = "[w]\nioengine=libaio\nrw=randread\nbs=4k\niodepth=8\nfilename=nvme0n1\nnumjobs=4\nnumber_ios=400\n";
    let sets = ["devices.0.queues=1", "devices.0.queue_depth=16"];
    let r = run(job, Policy::default(), &sets, 1);
    assert_eq!(r.total_ios(), 1600);
    assert_eq!(extra(&r, "ios_reaped"), 1600.0);
    let pinned = job.replace("numjobs=4\n", "numjobs=4\ncpus_allowed=0-3\n");
    let e = irqlab_sim::simulate(
        &jobs(&pinned),
        &platform(&sets),
        &Policy::default(),
        &irqlab_sim::SimOptions::overriding(1),
    );
    assert!(e.is_err(), "pinned jobs over the queue's depth are refused");
}

#[test]
fn a_run_of_pinned_jobs_keeps_no_placement_state() {
    let r = run(FOUR_DISKS, Policy::default(), &[], 1);
    assert!(r.jobs.iter().all(|j| j.migrations.is_none()));
    assert!(!r.extra.iter().any(|(k, _)| k == "migrations"));
    let json = irqlab_report::fio_json::render(&r, false).to_string();
    assert!(!json.contains("migrations"));
}

#[test]
fn placement_is_deterministic() {
    let a = affine(AFFINE, &["cpu.scheduler=cfs"]);
    let b = affine(AFFINE, &["cpu.scheduler=cfs"]);
    assert_eq!(
        irqlab_report::fio_json::render(&a, false).to_string(),
        irqlab_report::fio_json::render(&b, false).to_string()
    );
}

/// An SQPOLL ring's owner with hipri: the SQ thread polls the device's poll queues and the
/// owner, no longer polling, stays on them when it moves (fuzzing found a panic here: the
/// owner was looked up in the interrupt-driven queue set, which no job had built).
const SQPOLL_HIPRI: &str = "\
[global]
ioengine=io_uring
filename=nvme0n1
iodepth=32
bs=4k
hipri=1
time_based
runtime=2ms
stonewall=1
[w]
rw=randwrite
sqthread_poll=1
[r]
rw=randread
";

#[test]
fn an_sqpoll_owner_that_moves_keeps_its_poll_queues() {
    let r = run(SQPOLL_HIPRI, Policy::default(), &[], 1);
    assert!(
        r.jobs
            .iter()
            .all(|j| j.read.total_ios + j.write.total_ios > 0),
        "every job ran"
    );
    assert!(
        r.jobs.iter().any(|j| j.migrations.is_some_and(|n| n >= 1)),
        "a job moved: {:?}",
        r.jobs.iter().map(|j| j.migrations).collect::<Vec<_>>()
    );
}
