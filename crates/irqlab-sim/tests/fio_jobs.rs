//! fio's job semantics in the model: rate limits, think time, block-size mixes, seeds,
//! start delays and stonewall waves, reporting groups, samples, logs and disk counts.

mod common;

use common::{jobs, platform};
use irqlab_core::Policy;
use irqlab_report::RunReport;
use irqlab_report::fio_log::LogKind;
use irqlab_sim::{SimOptions, simulate};

fn sim(text: &str) -> RunReport {
    simulate(
        &jobs(text),
        &platform(&[]),
        &Policy::default(),
        &SimOptions::default(),
    )
    .unwrap_or_else(|e| panic!("simulation runs: {e}"))
}

fn sim_seeded(text: &str, opts: SimOptions) -> RunReport {
    simulate(&jobs(text), &platform(&[]), &Policy::default(), &opts).unwrap()
}

const BASE: &str = "[global]\nioengine=libaio\nrw=randread\nbs=4k\niodepth=8\nfilename=/dev/nvme0n1\ncpus_allowed=0\n";

#[test]
fn rate_iops_gives_the_asked_rate_within_one_percent() {
    for (iodepth, rate, process) in [
        (8, 20_000u64, "linear"),
        (1, 5_000, "linear"),
        (32, 100_000, "linear"),
        (8, 20_000, "poisson"),
    ] {
        let r = sim(&format!(
            "{BASE}[j]\niodepth={iodepth}\nrate_iops={rate}\nrate_process={process}\ntime_based\nruntime=500ms\n"
        ));
        let d = &r.jobs[0].read;
        // fio's iops: I/Os over the runtime in whole ms.
        let iops = d.fio_iops();
        let err = (iops - rate as f64).abs() / rate as f64;
        // A Poisson process of 10 000 arrivals strays by about 1% (1/sqrt(n)).
        let limit = if process == "poisson" { 0.03 } else { 0.01 };
        assert!(
            err < limit,
            "rate_iops={rate} qd{iodepth} {process}: {iops:.0} IOPS ({:.2}% off)",
            err * 100.0
        );
    }
    // Without a rate the same job runs much faster.
    let free = sim(&format!("{BASE}[j]\ntime_based\nruntime=20ms\n"));
    assert!(
        free.jobs[0].read.fio_iops() > 60_000.0,
        "{}",
        free.jobs[0].read.fio_iops()
    );
}

#[test]
fn rate_in_bytes_and_per_direction() {
    // 40 MiB/s of 4 KiB reads is 10240 IOPS.
    let r = sim(&format!("{BASE}[j]\nrate=40m\ntime_based\nruntime=500ms\n"));
    let iops = r.jobs[0].read.fio_iops();
    assert!((iops - 10_240.0).abs() / 10_240.0 < 0.01, "{iops}");
    // Only writes are limited: reads of a mixed job run free, writes at the rate.
    let r = sim(&format!(
        "{BASE}[j]\nrw=randrw\nrate_iops=,2000\ntime_based\nruntime=200ms\n"
    ));
    let (rd, wr) = (r.jobs[0].read.fio_iops(), r.jobs[0].write.fio_iops());
    assert!((wr - 2_000.0).abs() < 40.0, "writes {wr}");
    assert!(rd > 2_000.0, "reads {rd}");
}

#[test]
fn thinktime_stalls_after_each_block_batch() {
    let qd1 = "[global]\nioengine=psync\nrw=randread\nbs=4k\nfilename=/dev/nvme0n1\ncpus_allowed=0\ntime_based\nruntime=100ms\n";
    let free = sim(&format!("{qd1}[j]\n"));
    let lat_us = free.jobs[0].read.lat.mean() / 1e3;
    let think = sim(&format!("{qd1}[j]\nthinktime=100\n"));
    // One I/O, then 100 µs asleep (plus the hrtimer wake-up).
    let iops = think.jobs[0].read.fio_iops();
    let want = 1e6 / (lat_us + 100.0);
    assert!(
        iops < want * 1.01 && iops > want * 0.9,
        "{iops:.0} IOPS, want about {want:.0}"
    );
    // thinktime_blocks=4: four I/Os between stalls.
    let four = sim(&format!("{qd1}[j]\nthinktime=100\nthinktime_blocks=4\n"));
    let want4 = 4e6 / (4.0 * lat_us + 100.0);
    let got4 = four.jobs[0].read.fio_iops();
    assert!(
        got4 < want4 * 1.01 && got4 > want4 * 0.9,
        "{got4:.0} vs {want4:.0}"
    );
    // thinktime_spin burns the CPU instead of sleeping.
    let spin = sim(&format!("{qd1}[j]\nthinktime=100\nthinktime_spin=100\n"));
    assert!(spin.jobs[0].usr_ns > think.jobs[0].usr_ns * 5);
}

#[test]
fn block_size_mixes_follow_bssplit_and_bsrange() {
    let r = sim(&format!(
        "{BASE}[j]\nbssplit=4k/50:64k/50\ntime_based\nruntime=50ms\nwrite_lat_log=mix\n"
    ));
    let d = &r.jobs[0].read;
    let mean = d.io_bytes as f64 / d.total_ios as f64;
    assert!((mean - 34_816.0).abs() / 34_816.0 < 0.03, "mean bs {mean}");
    let log = r.jobs[0]
        .logs
        .iter()
        .find(|l| l.kind == LogKind::Clat)
        .unwrap();
    assert!(log.entries.iter().all(|e| e.bs == 4096 || e.bs == 65536));
    let r = sim(&format!(
        "{BASE}[j]\nbsrange=4k-16k\ntime_based\nruntime=20ms\nwrite_lat_log=range\n"
    ));
    let log = r.jobs[0]
        .logs
        .iter()
        .find(|l| l.kind == LogKind::Lat)
        .unwrap();
    let sizes: std::collections::BTreeSet<u64> = log.entries.iter().map(|e| e.bs).collect();
    assert_eq!(
        sizes.into_iter().collect::<Vec<_>>(),
        [4096, 8192, 12288, 16384]
    );
}

#[test]
fn randseed_feeds_the_jobs_draws_and_seed_overrides_it() {
    let mixed = format!("{BASE}[j]\nrw=randrw\nnumber_ios=2000\n");
    let writes = |r: &RunReport| r.jobs[0].write.total_ios;
    let a = sim(&mixed);
    let b = sim(&format!("{mixed}randseed=7\n"));
    let b2 = sim(&format!("{mixed}randseed=7\n"));
    assert_ne!(
        writes(&a),
        writes(&b),
        "a different randseed draws differently"
    );
    assert_eq!(writes(&b), writes(&b2));
    // randrepeat=0: fio seeds from /dev/urandom; the model from the run's seed.
    let c = sim(&format!("{mixed}randrepeat=0\n"));
    assert_ne!(writes(&a), writes(&c));
    // --seed replaces every job's randseed.
    let o1 = sim_seeded(&mixed, SimOptions::overriding(9));
    let o2 = sim_seeded(&format!("{mixed}randseed=7\n"), SimOptions::overriding(9));
    assert_eq!(writes(&o1), writes(&o2));
    // Clones of one job draw differently (fio's thread_number is in the seed).
    let two = sim(&format!(
        "{BASE}[j]\nrw=randrw\nnumber_ios=2000\nnumjobs=2\n"
    ));
    assert_ne!(two.jobs[0].write.total_ios, two.jobs[1].write.total_ios);
}

#[test]
fn stonewall_runs_groups_in_sequence_and_new_group_only_reports_apart() {
    let text = format!("{BASE}time_based\nruntime=5ms\n[a]\n[b]\nnew_group\n[c]\nstonewall\n[d]\n");
    let r = sim(&text);
    let start = |i: usize| r.jobs[i].job_start_ns;
    let groups: Vec<u32> = r.jobs.iter().map(|j| j.groupid).collect();
    assert_eq!(groups, [0, 1, 2, 2]);
    assert_eq!((start(0), start(1)), (0, 0), "new_group runs alongside");
    // c waits for a and b (each runs 5 ms and then drains), d starts with c.
    assert!(start(2) >= 5_000_000, "c started at {}", start(2));
    assert_eq!(start(2), start(3));
    assert!(r.end_ns >= start(2) + 5_000_000);
    for j in &r.jobs {
        assert!(j.read.total_ios > 0, "{} ran", j.name);
    }
}

#[test]
fn startdelay_starts_a_job_late() {
    let r = sim(&format!(
        "{BASE}time_based\nruntime=5ms\n[a]\n[b]\nstartdelay=3ms\n"
    ));
    assert_eq!(r.jobs[0].job_start_ns, 0);
    assert_eq!(r.jobs[1].job_start_ns, 3_000_000);
    let runtime = |i: usize| r.jobs[i].read.runtime_ns;
    assert!(runtime(1) >= 5_000_000 && runtime(0) >= 5_000_000);
}

#[test]
fn group_reporting_sums_clones_and_labels_them() {
    let text = format!(
        "{BASE}time_based\nruntime=5ms\n[j]\nnumjobs=4\ncpus_allowed=0-3\ncpus_allowed_policy=split\n"
    );
    let apart = sim(&text);
    assert_eq!(apart.jobs.len(), 4);
    assert!(apart.jobs.iter().all(|j| j.members == 1));
    let together = sim(&format!("{text}group_reporting\n"));
    assert_eq!(together.jobs.len(), 1);
    let j = &together.jobs[0];
    assert_eq!(j.members, 4);
    let sum: u64 = apart.jobs.iter().map(|j| j.read.total_ios).sum();
    assert_eq!(j.read.total_ios, sum);
}

#[test]
fn samples_logs_and_depth_histograms_are_measured() {
    let r = sim(&format!(
        "{BASE}[j]\niodepth=32\niodepth_batch_submit=8\niodepth_batch_complete_min=8\n\
         time_based\nruntime=20ms\nramp_time=2ms\nbwavgtime=1\niopsavgtime=1\n\
         write_bw_log=b\nwrite_iops_log=b\nwrite_lat_log=b\nlog_avg_msec=2\n"
    ));
    let j = &r.jobs[0];
    // One sample per ms of the window that saw completions.
    let n = j.read.iops_samples.samples;
    assert!((19..=21).contains(&n), "{n} IOPS samples");
    let (min, max, mean, dev) = j.read.iops_samples.calc().unwrap();
    assert!(min <= max && dev > 0.0, "{min} {max} {dev}");
    assert!((mean - j.read.iops()).abs() / j.read.iops() < 0.05);
    assert_eq!(j.read.bw_samples.samples, n);
    // Reaps of 8 make room for submits of 8: both in the 5-8 bucket.
    assert_eq!(j.iodepth_submit[2], j.submit_calls);
    assert_eq!(j.iodepth_complete[2], j.complete_calls);
    assert!(j.submit_calls * 8 >= j.read.total_ios - 32);
    let names: Vec<&str> = j.logs.iter().map(|l| l.file_name.as_str()).collect();
    assert_eq!(
        names,
        [
            "b_lat.1.log",
            "b_clat.1.log",
            "b_slat.1.log",
            "b_bw.1.log",
            "b_iops.1.log"
        ]
    );
    for log in &j.logs {
        // Latency logs average over log_avg_msec (2 ms); the bandwidth and IOPS logs over
        // the shorter of it and bwavgtime/iopsavgtime (1 ms), as init.c picks.
        let want = if matches!(log.kind, LogKind::Bw | LogKind::Iops) {
            19..=21
        } else {
            9..=11
        };
        assert!(
            want.contains(&log.entries.len()),
            "{}: {}",
            log.file_name,
            log.entries.len()
        );
        assert!(log.entries.iter().all(|e| e.time_ms <= 21));
    }
    let d = &r.disks[0];
    assert_eq!(d.name, "nvme0n1");
    // The disk counts requests the kernel completed in the window, the job those it
    // reaped: they differ by what was in flight when the window opened.
    assert!(
        d.ios[0].abs_diff(j.read.total_ios) <= 32,
        "{} vs {}",
        d.ios[0],
        j.read.total_ios
    );
    assert!(d.util_pct() > 90.0);
}

#[test]
fn runs_with_every_new_option_are_deterministic() {
    let text = format!(
        "{BASE}[j]\nrw=randrw\nbssplit=4k/30:16k/70\nrate_iops=20000\nrate_process=poisson\n\
         thinktime=20\nthinktime_blocks=8\nstartdelay=1ms-2ms\ntime_based\nruntime=10ms\n\
         write_lat_log\nnumjobs=2\ngroup_reporting\n"
    );
    let a = sim(&text);
    let b = sim(&text);
    let render = |r: &RunReport| irqlab_report::fio_json::render(r, true).to_string();
    assert_eq!(render(&a), render(&b));
    let la: Vec<String> = a.jobs[0].logs.iter().map(|l| l.text()).collect();
    let lb: Vec<String> = b.jobs[0].logs.iter().map(|l| l.text()).collect();
    assert_eq!(la, lb);
}
