//! What fio does besides each job's I/O pattern, in the model: offloaded submission,
//! SQPOLL rings, exitall, flow control, minimum rates, latency targets, steady state,
//! cpuio, trims and NVMe write commands, emulated zones and wait_for. Each test checks
//! what the mechanism means for CPUs and interrupts, against the same job without it.

mod common;

use common::{jobs, platform, sim};
use irqlab_core::Policy;
use irqlab_report::{JobReport, RunReport};
use irqlab_sim::{SimOptions, simulate};

fn refusal(text: &str, sets: &[&str]) -> String {
    match simulate(
        &jobs(text),
        &platform(sets),
        &Policy::default(),
        &SimOptions::default(),
    ) {
        Ok(_) => panic!("the job should be refused"),
        Err(e) => e.to_string(),
    }
}

fn ios(j: &JobReport) -> u64 {
    j.read.total_ios + j.write.total_ios + j.trim.total_ios
}

fn ms(ns: u64) -> f64 {
    ns as f64 / 1e6
}

fn pct(part: u64, whole: u64) -> f64 {
    100.0 * part as f64 / whole as f64
}

// ---------------------------------------------------------------- offload

const OFFLOAD: &str = "[j]\nioengine=libaio\nrw=randread\nbs=4k\niodepth=4\nfilename=/dev/nvme0n1\ncpus_allowed=0-3\nrate_iops=20000\ntime_based\nruntime=5ms\n";

#[test]
fn offload_workers_are_threads_that_take_cpu_time_and_switches_on_their_cpus() {
    let inline = sim(OFFLOAD, &[]);
    let off = sim(&format!("{OFFLOAD}io_submit_mode=offload\n"), &[]);
    for r in [&inline, &off] {
        let iops = r.jobs[0].read.iops();
        assert!((iops - 20_000.0).abs() < 1_500.0, "{iops}");
    }
    // The job runs on CPU 0; inline, CPUs 1-3 only take their interrupts' handlers.
    let busy = |r: &RunReport, c: usize| {
        let cpu = &r.cpus[c];
        (cpu.sys_ns, cpu.ctx_switches)
    };
    for c in 1..4 {
        assert_eq!(busy(&inline, c).1, 0, "CPU {c} inline: no thread runs");
        let (sys, ctx) = busy(&off, c);
        assert!(
            sys > 0 && ctx > 10,
            "CPU {c} with offload: sys {sys} ns, ctx {ctx}"
        );
    }
    // Each I/O wakes a worker and each worker wakes on its completion: the job's
    // own thread submits nothing, so its sys time is only the hand-over's wake-ups,
    // while the workers' submit calls show on their CPUs.
    let job = &off.jobs[0];
    let workers_sys: u64 = (1..4).map(|c| off.cpus[c].sys_ns).sum();
    assert!(
        workers_sys > job.sys_ns,
        "workers {workers_sys} ns, job {}",
        job.sys_ns
    );
    // fio's cpu line counts the job's thread only (RUSAGE_THREAD).
    let cpu0 = off.cpus[0].usr_ns + off.cpus[0].sys_ns;
    assert!(job.usr_ns + job.sys_ns <= cpu0);
}

#[test]
fn offload_keeps_iodepth_synchronous_calls_in_flight() {
    let psync = "[j]\nioengine=psync\nrw=randread\nbs=4k\niodepth=8\nfilename=/dev/nvme0n1\ncpus_allowed=0-7\ntime_based\nruntime=4ms\n";
    let qd1 = sim(psync, &[]);
    let off = sim(&format!("{psync}io_submit_mode=offload\n"), &[]);
    let (a, b) = (qd1.jobs[0].read.fio_iops(), off.jobs[0].read.fio_iops());
    // psync pins its depth to 1; eight workers each have one call in flight.
    assert!(b > 5.0 * a, "offload {b:.0} IOPS, inline {a:.0}");
    assert_eq!(qd1.jobs[0].latency_depth, 1);
}

#[test]
fn io_uring_cannot_offload_as_in_fio() {
    let e = irqlab_fio::parse_str(
        "[j]\nioengine=io_uring\nio_submit_mode=offload\nfilename=/dev/nvme0n1\n",
        std::path::Path::new("o.fio"),
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("can't be used with offloaded submit"), "{e}");
}

// ---------------------------------------------------------------- SQPOLL

const URING: &str = "[j]\nioengine=io_uring\nrw=randread\nbs=4k\niodepth=16\nfilename=/dev/nvme0n1\ncpus_allowed=0\ntime_based\nruntime=4ms\n";

#[test]
fn sqpoll_takes_the_submit_syscalls_off_the_job_and_burns_its_cpu() {
    let plain = sim(URING, &[]);
    let sq = sim(
        &format!("{URING}sqthread_poll=1\nsqthread_poll_cpu=2\n"),
        &[],
    );
    let (p, s) = (&plain.jobs[0], &sq.jobs[0]);
    assert!(ios(s) > 0 && ios(p) > 0);
    // Without SQPOLL the job's kernel time is its io_uring_enter calls.
    assert!(
        p.sys_ns > 10 * s.sys_ns.max(1),
        "plain sys {} ns, sqpoll sys {} ns",
        p.sys_ns,
        s.sys_ns
    );
    // The job spins on its CQ ring in user space instead of sleeping in the kernel.
    assert!(s.usr_ns > p.usr_ns);
    assert!(s.ctx < p.ctx, "sqpoll ctx {}, plain ctx {}", s.ctx, p.ctx);
    // CPU 2 polls the ring all the time (kernel time), where it idled before; the
    // I/O it submits completes there too (its queue's interrupts).
    let (c2p, c2s) = (&plain.cpus[2], &sq.cpus[2]);
    assert!(pct(c2p.idle_ns, plain.duration_ns) > 99.0);
    assert!(pct(c2s.idle_ns, sq.duration_ns) < 1.0);
    assert!(
        pct(c2s.sys_ns, sq.duration_ns) > 70.0,
        "{}",
        pct(c2s.sys_ns, sq.duration_ns)
    );
    assert!(c2s.hardirqs > 100 && c2p.hardirqs == 0);
    // fio disables slat on a SQPOLL ring.
    assert_eq!(s.read.slat.count(), 0);
    assert!(p.read.slat.count() > 0);
}

#[test]
fn the_sq_thread_sleeps_after_its_idle_time_and_the_job_wakes_it() {
    // A burst, then 1.5 s of think time: the SQ thread gives up after sq_thread_idle
    // (1 s) and sleeps; the next burst enters the kernel to wake it.
    let text = "[j]\nioengine=io_uring\nrw=randread\nbs=4k\niodepth=4\nfilename=/dev/nvme0n1\ncpus_allowed=0\nsqthread_poll=1\nsqthread_poll_cpu=3\nthinktime=1500ms\nthinktime_blocks=64\ntime_based\nruntime=3200ms\n";
    let r = sim(text, &[]);
    let cpu3 = &r.cpus[3];
    let busy = pct(cpu3.sys_ns, r.duration_ns);
    // Three bursts, each followed by at most a second of polling: about two seconds
    // of 3.2 busy, far from all of them.
    assert!((45.0..80.0).contains(&busy), "SQ thread busy {busy:.1}%");
    assert!(cpu3.ctx_switches >= 2, "it slept and was woken");
    // The wake-ups are io_uring_enter calls in the job.
    assert!(r.jobs[0].sys_ns > 0);
}

// ---------------------------------------------------------------- exitall

#[test]
fn exitall_ends_the_group_stonewall_or_everything() {
    let base = "[global]\nioengine=libaio\nrw=randread\nbs=4k\niodepth=4\ntime_based\nexitall\n[short]\nfilename=/dev/nvme0n1\ncpus_allowed=0\nruntime=2ms\nEXIT\n[long]\nfilename=/dev/nvme1n1\ncpus_allowed=1\nruntime=20ms\n[other]\nnew_group\nfilename=/dev/nvme2n1\ncpus_allowed=2\nruntime=20ms\n[later]\nstonewall\nfilename=/dev/nvme3n1\ncpus_allowed=3\nruntime=1ms\n";
    let end = |r: &RunReport, name: &str| {
        let j = r.jobs.iter().find(|j| j.name == name).unwrap();
        (ms(j.job_start_ns + j.runtime_ns), ios(j))
    };
    // group (the default): `long` shares short's group and stops with it; `other` runs on.
    let g = sim(&base.replace("EXIT", ""), &[]);
    assert!(end(&g, "long").0 < 3.0, "{:?}", end(&g, "long"));
    assert!(end(&g, "other").0 > 19.0, "{:?}", end(&g, "other"));
    assert!(end(&g, "later").1 > 0, "the next wave runs");
    // stonewall: every running job stops; the next wave still runs.
    let s = sim(&base.replace("EXIT", "exit_what=stonewall"), &[]);
    assert!(end(&s, "other").0 < 3.0, "{:?}", end(&s, "other"));
    assert!(end(&s, "later").1 > 0);
    // all: the next wave never starts either.
    let a = sim(&base.replace("EXIT", "exit_what=all"), &[]);
    assert!(end(&a, "other").0 < 3.0);
    assert_eq!(end(&a, "later").1, 0, "terminated before it started");
    // Without exitall nothing ends early.
    let n = sim(&base.replace("exitall\n", "").replace("EXIT", ""), &[]);
    assert!(end(&n, "long").0 > 19.0);
}

// ---------------------------------------------------------------- flow

#[test]
fn flow_keeps_the_jobs_issued_io_in_the_ratio_of_their_weights() {
    let text = "[global]\nioengine=libaio\nrw=randread\nbs=4k\niodepth=8\ntime_based\nruntime=5ms\nFLOW\n[a]\nfilename=/dev/nvme0n1\ncpus_allowed=0\nflow=1\n[b]\nfilename=/dev/nvme1n1\ncpus_allowed=1\nflow=3\n";
    for sleep in ["", "flow_sleep=100"] {
        let r = sim(&text.replace("FLOW", sleep), &[]);
        let (a, b) = (ios(&r.jobs[0]) as f64, ios(&r.jobs[1]) as f64);
        let ratio = b / a;
        assert!(
            (2.8..3.2).contains(&ratio),
            "{sleep}: {a} and {b} I/Os, ratio {ratio:.2}"
        );
        // Both jobs together do no more than the free one alone would.
        if sleep.is_empty() {
            // Held back without flow_sleep, a job spins in fio's loop: user time.
            let spin = r.jobs.iter().map(|j| j.usr_ns).max().unwrap();
            assert!(
                pct(spin, r.duration_ns) > 20.0,
                "{}",
                pct(spin, r.duration_ns)
            );
        }
    }
    let free = sim(
        &text
            .replace("FLOW", "")
            .replace("flow=1\n", "")
            .replace("flow=3\n", ""),
        &[],
    );
    let ratio = ios(&free.jobs[1]) as f64 / ios(&free.jobs[0]) as f64;
    assert!((0.9..1.1).contains(&ratio), "without flow: {ratio:.2}");
}

// ---------------------------------------------------------------- minimum rates

#[test]
fn a_job_below_its_minimum_rate_ends_with_eio_and_exitall_on_error_stops_the_rest() {
    // About 100 IOPS (10 ms of think time per I/O) against a minimum of 500.
    let text = "[global]\nioengine=psync\nrw=randread\nbs=4k\ntime_based\nruntime=6s\n[slow]\nfilename=/dev/nvme0n1\ncpus_allowed=0\nthinktime=10ms\nrate_iops_min=500\nexitall_on_error\n[other]\nfilename=/dev/nvme1n1\ncpus_allowed=1\nthinktime=10ms\n";
    let r = sim(text, &[]);
    let slow = &r.jobs[0];
    let e = slow.error.as_ref().expect("the job failed");
    assert_eq!(e.code, 5, "EIO");
    assert!(e.msg.contains("rate_iops_min=500 not met"), "{}", e.msg);
    // fio allows 2 s to settle, then checks every rate_cycle (1 s).
    let ended = ms(slow.job_start_ns + slow.runtime_ns);
    assert!((2_900.0..3_200.0).contains(&ended), "failed at {ended} ms");
    let other = &r.jobs[1];
    assert!(other.error.is_none());
    assert!(
        ms(other.runtime_ns) < 3_300.0,
        "stopped with it: {}",
        ms(other.runtime_ns)
    );
    // Met, it runs its full time.
    let ok = sim(&text.replace("rate_iops_min=500", "rate_iops_min=50"), &[]);
    assert!(ok.jobs[0].error.is_none());
    assert!(ms(ok.jobs[0].runtime_ns) > 5_900.0);
}

// ---------------------------------------------------------------- latency target

#[test]
fn latency_target_searches_the_depth_that_meets_it_and_runs_a_final_window() {
    // 16 media units at 80 us: beyond 16 in flight commands queue in the device.
    let text = "[j]\nioengine=libaio\nrw=randread\nbs=4k\niodepth=64\nfilename=/dev/nvme0n1\ncpus_allowed=0\nlatency_target=150us\nlatency_window=2ms\nlatency_percentile=90\ntime_based\nruntime=200ms\n";
    let sets = ["devices.0.max_iops=200000", "devices.0.service_cv=0"];
    let r = sim(text, &sets);
    let j = &r.jobs[0];
    let depth = j.latency_depth;
    assert!((8..=28).contains(&depth), "found depth {depth}");
    // The search ended the job (fio's td->done) long before its runtime: the report is
    // the final window at that depth, whose I/Os meet the target.
    assert!(
        ms(j.runtime_ns) < 20.0,
        "final window {} ms",
        ms(j.runtime_ns)
    );
    let p90 = j.read.clat.percentile(90.0);
    assert!(p90 < 160_000, "p90 clat {p90} ns");
    let t = j.latency_target.as_ref().unwrap();
    assert_eq!((t.target_ns, t.window_us), (150_000, 2_000));
    // Without a target the job keeps 64 in flight, far beyond it.
    let free = sim(&text.replace("latency_target=150us\n", ""), &sets);
    assert_eq!(free.jobs[0].latency_depth, 64);
    assert!(free.jobs[0].read.clat.mean() > 250_000.0);
}

// ---------------------------------------------------------------- steady state

#[test]
fn steady_state_ends_a_steady_job_early() {
    let text = "[j]\nioengine=libaio\nrw=randread\nbs=4k\niodepth=4\nfilename=/dev/nvme0n1\ncpus_allowed=0\nrate_iops=2000\ntime_based\nruntime=10s\nsteadystate=iops:5%\nsteadystate_duration=2s\nsteadystate_check_interval=1s\n";
    let r = sim(text, &[]);
    let j = &r.jobs[0];
    let ss = j.steadystate.as_ref().expect("steadystate");
    assert!(ss.attained);
    // Two 1 s measurements at 2000 IOPS: steady at the second check.
    let ended = ms(j.runtime_ns);
    assert!((1_990.0..2_100.0).contains(&ended), "ended at {ended} ms");
    assert_eq!(ss.iops.len(), 2);
    assert!(
        ss.iops.iter().all(|&i| (1_900..2_100).contains(&i)),
        "{:?}",
        ss.iops
    );
    // A limit nothing meets keeps it to its runtime, unattained.
    let never = sim(
        &text
            .replace("iops:5%", "iops_slope:0%")
            .replace("10s", "3s"),
        &[],
    );
    assert!(!never.jobs[0].steadystate.as_ref().unwrap().attained);
    assert!(ms(never.jobs[0].runtime_ns) > 2_990.0);
}

// ---------------------------------------------------------------- cpuio

#[test]
fn cpuio_burns_its_load_on_its_cpu_and_the_interrupts_there_wait_for_it() {
    let text = "[burn]\nioengine=cpuio\ncpuload=40\ncpuchunks=1000\ncpus_allowed=0\ntime_based\nruntime=100ms\n";
    let r = sim(text, &[]);
    let cpu0 = pct(r.cpus[0].usr_ns, r.duration_ns);
    assert!((38.0..42.0).contains(&cpu0), "CPU 0 usr {cpu0:.1}%");
    assert_eq!(ios(&r.jobs[0]), 0);
    assert!(
        irqlab_report::sanity::warnings(&r).is_empty(),
        "no I/O is its design"
    );
    // A full burner on a CPU whose interrupts run in irq threads (SCHED_FIFO) and
    // whose job completes I/O there: it gets what they leave.
    let burn = "[burn]\nioengine=cpuio\ncpuload=100\ncpuchunks=1000\ncpus_allowed=0\ntime_based\nruntime=20ms\n";
    let io = "[io]\nioengine=libaio\nrw=randread\nbs=4k\niodepth=8\nfilename=/dev/nvme0n1\ncpus_allowed=0\ntime_based\nruntime=20ms\n";
    let threaded = irqlab_core::Policy {
        handler: irqlab_core::HandlerStyle::Threaded,
        ..Policy::default()
    };
    let run =
        |t: &str| simulate(&jobs(t), &platform(&[]), &threaded, &SimOptions::default()).unwrap();
    let alone = run(burn);
    let shared = run(&format!("{burn}{io}"));
    let b = |r: &RunReport| pct(r.jobs[0].usr_ns, r.jobs[0].runtime_ns);
    assert!(b(&alone) > 99.0, "{}", b(&alone));
    let c = &shared.cpus[0];
    let others = c.irq_thread_ns + c.hardirq_ns + shared.jobs[1].usr_ns + shared.jobs[1].sys_ns;
    assert!(c.irq_thread_ns > 0 && shared.jobs[1].read.total_ios > 0);
    // It loses what they take, and the context switches between them.
    let lost = b(&alone) - b(&shared);
    let taken = pct(others, shared.duration_ns);
    assert!(
        taken > 5.0 && lost > taken && lost < taken + 15.0,
        "burner lost {lost:.1}%, the I/O took {taken:.1}%"
    );
}

// ---------------------------------------------------------------- trims and commands

#[test]
fn trims_take_the_devices_trim_time_and_are_their_own_direction() {
    let uring = "[j]\nioengine=io_uring\nrw=randtrim\nbs=64k\niodepth=4\nfilename=/dev/nvme0n1\ncpus_allowed=0\ntime_based\nruntime=4ms\n";
    let r = sim(uring, &["devices.0.service_cv=0"]);
    let j = &r.jobs[0];
    assert!(j.trim.total_ios > 100 && j.read.total_ios + j.write.total_ios == 0);
    // The media's 20 us plus the path's fetch, completion and interrupt.
    let clat = j.trim.clat.mean();
    assert!(
        (20_000.0..30_000.0).contains(&clat),
        "trim clat {clat} ns (trim_ns 20 us)"
    );
    // diskstats counts discards apart: the disk's read and write counts stay 0.
    assert_eq!(r.disks[0].ios, [0, 0]);
    // libaio trims through an ioctl, one at a time, blocking the job each time.
    let aio = sim(
        &uring.replace("io_uring", "libaio"),
        &["devices.0.service_cv=0"],
    );
    let a = &aio.jobs[0];
    assert_eq!(a.iodepth_level[0], a.trim.total_ios, "depth 1");
    assert!(a.ctx >= a.trim.total_ios);
    // trimwrite: every trimmed block is written.
    let tw = sim(&uring.replace("randtrim", "trimwrite"), &[]);
    let d = tw.jobs[0].trim.total_ios as i64 - tw.jobs[0].write.total_ios as i64;
    assert!(
        d.abs() <= 4,
        "{} trims, {} writes",
        tw.jobs[0].trim.total_ios,
        tw.jobs[0].write.total_ios
    );
    // A trim of four ranges (io_uring_cmd's num_range) deallocates four.
    let multi = sim(
        &uring.replace("io_uring\n", "io_uring_cmd\nnum_range=4\n"),
        &["devices.0.service_cv=0"],
    );
    let m = multi.jobs[0].trim.clat.mean();
    assert!(
        (m - clat - 60_000.0).abs() < 3_000.0,
        "4-range trim clat {m} ns, 1-range {clat}"
    );
    // A platform without a trim time refuses the job, naming the key.
    let text = std::fs::read_to_string(common::example_path()).unwrap();
    let without: String = text
        .lines()
        .filter(|l| !l.starts_with("trim_ns"))
        .map(|l| format!("{l}\n"))
        .collect();
    let p = irqlab_sim::Platform::from_toml(&without, "no-trim.toml", &[]).unwrap();
    let e = simulate(&jobs(uring), &p, &Policy::default(), &SimOptions::default())
        .unwrap_err()
        .to_string();
    assert!(e.contains("devices.N.trim_ns") && e.contains(":3:"), "{e}");
    let _ = refusal;
}

#[test]
fn write_mode_mixes_nvme_write_commands_with_their_own_times() {
    let text = "[j]\nioengine=io_uring_cmd\nrw=randwrite\nbs=4k\niodepth=1\nfilename=/dev/nvme0n1\ncpus_allowed=0\ntime_based\nruntime=20ms\nWM\n";
    let sets = [
        "devices.0.service_cv=0",
        "devices.0.write_zeroes_ns=100000",
        "devices.0.verify_ns=200000",
    ];
    let plain = sim(&text.replace("WM", ""), &sets).jobs[0]
        .write
        .clat
        .mean();
    let mixed = sim(
        &text.replace("WM", "write_mode=write/50:zeroes/25:verify/25"),
        &sets,
    );
    let m = mixed.jobs[0].write.clat.mean();
    // Half at 20 us, a quarter at 100, a quarter at 200: 85 us of media time.
    assert!(
        m - plain > 55_000.0 && m - plain < 75_000.0,
        "plain {plain}, mixed {m}"
    );
    let zeroes = sim(&text.replace("WM", "write_mode=zeroes"), &sets).jobs[0]
        .write
        .clat
        .mean();
    assert!(
        (zeroes - plain - 80_000.0).abs() < 3_000.0,
        "{zeroes} vs {plain}"
    );
}

// ---------------------------------------------------------------- zones and wait_for

#[test]
fn zoned_writes_reset_full_zones_after_a_quiesce() {
    let text = "[j]\nioengine=libaio\nrw=randwrite\nbs=64k\niodepth=8\nfilename=/dev/nvme0n1\ncpus_allowed=0\nzonemode=zbd\nzonesize=1m\nsize=4z\ntime_based\nruntime=5ms\n";
    let r = sim(text, &[]);
    let j = &r.jobs[0];
    let resets = j.zone_resets.expect("a zoned job counts resets");
    // 4 zones of 16 writes: after the first 64 writes every 16th needs a reset.
    let writes = j.write.total_ios;
    assert!(
        resets > 0 && resets >= writes / 16 - 5,
        "{resets} resets, {writes} writes"
    );
    // Each reset waits for the I/O in flight: the depth falls below 8 then.
    let below: u64 = j.iodepth_level[..3].iter().sum();
    assert!(below > 0, "{:?}", j.iodepth_level);
    let free = sim(
        &text.replace("zonemode=zbd\nzonesize=1m\nsize=4z\n", ""),
        &[],
    );
    assert!(free.jobs[0].zone_resets.is_none());
    assert!(free.jobs[0].write.fio_iops() > j.write.fio_iops());
}

#[test]
fn wait_for_starts_a_job_when_the_named_one_has_exited() {
    let text = "[global]\nioengine=libaio\nrw=randread\nbs=4k\niodepth=4\ntime_based\n[first]\nfilename=/dev/nvme0n1\ncpus_allowed=0\nruntime=3ms\n[second]\nwait_for=first\nfilename=/dev/nvme1n1\ncpus_allowed=1\nruntime=2ms\n[free]\nfilename=/dev/nvme2n1\ncpus_allowed=2\nruntime=2ms\n";
    let r = sim(text, &[]);
    let start = |n: &str| ms(r.jobs.iter().find(|j| j.name == n).unwrap().job_start_ns);
    assert!((3.0..3.2).contains(&start("second")), "{}", start("second"));
    assert_eq!(start("free"), 0.0);
}

// ---------------------------------------------------------------- determinism

#[test]
fn every_mechanism_replays_byte_for_byte() {
    let text = format!(
        "{}[s]\nioengine=io_uring\nrw=randread\nfilename=/dev/nvme2n1\ncpus_allowed=4\nsqthread_poll=1\ntime_based\nruntime=2ms\n[f1]\nioengine=libaio\nrw=randread\nfilename=/dev/nvme3n1\ncpus_allowed=5\nflow=2\ntime_based\nruntime=2ms\n[f2]\nioengine=libaio\nrw=randwrite\nfilename=/dev/nvme3n1\ncpus_allowed=6\nflow=1\ntime_based\nruntime=2ms\n",
        OFFLOAD.replace("rate_iops=20000\n", "io_submit_mode=offload\n")
    );
    let a = irqlab_report::fio_json::render(&sim(&text, &[]), false);
    let b = irqlab_report::fio_json::render(&sim(&text, &[]), false);
    assert_eq!(a, b);
}
