//! Every output format, from one hand-built report whose numbers are known.

use irqlab_report::trace::{Arg, Scope, TraceWriter, parse_window};
use irqlab_report::{
    CHIP_POSTED, CHIP_REMAPPED, CpuReport, DiskUtil, Engine, HostMeasures, JobReport, Latency,
    ModerationReport, RunReport, VectorReport, fio_json, proc_interrupts, text,
};
use serde_json::Value;

const MS: u64 = 1_000_000;

/// 100 000 4 KiB reads in 100 ms. clat: 10.0..19.9 us evenly, plus 100 outliers at
/// 200 us. So p50 = 15.0 us, p99 = 19.9 us, mean = 15.14 us.
fn report(engine: Engine, cpus: usize) -> RunReport {
    let mut job = JobReport {
        name: "randread".into(),
        options: vec![
            ("rw".into(), "randread".into()),
            ("iodepth".into(), "32".into()),
            ("numjobs".into(), "1".into()),
            ("bs".into(), "4k".into()),
            ("time_based".into(), String::new()),
        ],
        usr_ns: 10 * MS,
        sys_ns: 50 * MS,
        ctx: 1234,
        runtime_ns: 100 * MS,
        iodepth_level: [0, 0, 0, 0, 0, 100_000, 0],
        iodepth_submit: [0, 0, 0, 10_000, 0, 0, 0],
        submit_calls: 10_000,
        iodepth_complete: [0, 5_000, 5_000, 0, 0, 0, 0],
        complete_calls: 10_000,
        members: 1,
        thread_number: 1,
        latency_depth: 32,
        clat_percentiles: true,
        job_start_ns: 3 * MS,
        ..JobReport::default()
    };
    for iops in [990_000, 1_000_000, 1_010_000, 1_000_000] {
        job.read.iops_samples.add(iops);
        job.read.bw_samples.add(iops * 4);
    }
    job.read.total_ios = 100_000;
    job.read.io_bytes = 4096 * 100_000;
    job.read.runtime_ns = 100 * MS;
    for i in 0..100_000u64 {
        let clat = if i % 1000 == 0 {
            200_000
        } else {
            10_000 + (i % 100) * 100
        };
        job.read.clat.record_clat(clat);
        job.read.slat.record(500);
        job.read.lat.record(clat + 500);
    }
    let mut cpu_reports: Vec<CpuReport> = (0..cpus)
        .map(|cpu| CpuReport {
            cpu,
            ..CpuReport::default()
        })
        .collect();
    cpu_reports[0].pmn = 10_000;
    cpu_reports[0].timer_ticks = 100;
    cpu_reports[0].hardirq_ns = 5 * MS;
    cpu_reports[0].idle_ns = 40 * MS;
    let last = cpus.min(6) - 1;
    cpu_reports[last].timer_ticks = 100;
    for t in [1_000, 2_000, 3_000, 50_000] {
        cpu_reports[0].tick_lateness.record(t);
    }
    let mut q2 = vec![0; cpus];
    q2[last] = 20_000;
    let mut q1 = vec![0; cpus];
    q1[0] = 40_000;
    RunReport {
        engine,
        platform: "test-host".into(),
        policy: vec![
            ("delivery".into(), "posted".into()),
            ("moderation".into(), "dim".into()),
        ],
        seed: 7,
        duration_ns: 100 * MS,
        end_ns: 2_500 * MS,
        global_options: vec![("ioengine".into(), "io_uring".into())],
        jobs: vec![job],
        disks: vec![DiskUtil {
            name: "nvme0n1".into(),
            ios: [100_000, 0],
            sectors: [800_000, 0],
            ticks_ms: [1_560, 0],
            in_queue_ms: 1_560,
            busy_ms: 95,
            window_ms: 100,
        }],
        cpus: cpu_reports,
        vectors: vec![
            VectorReport {
                name: "nvme0q1".into(),
                chip: CHIP_POSTED.into(),
                device: "0000:01:00.0".into(),
                hwirq: 1,
                messages: 50_000,
                per_cpu: q1,
                device_coalesced: 10_000,
                completions: 80_000,
                moderation: Some(ModerationReport {
                    moderator: "net_dim".into(),
                    final_level: 2,
                    programs: 5,
                    level_ns: vec![10 * MS, 30 * MS, 60 * MS, 0],
                    course_ns: 50 * MS,
                    course: vec![vec![10 * MS, 30 * MS, 10 * MS, 0], vec![0, 0, 50 * MS, 0]],
                }),
            },
            VectorReport {
                name: "nvme0q2".into(),
                chip: CHIP_REMAPPED.into(),
                device: "0000:01:00.0".into(),
                hwirq: 2,
                messages: 20_000,
                per_cpu: q2,
                device_coalesced: 0,
                completions: 20_000,
                moderation: None,
            },
        ],
        measured: (engine == Engine::RealThreads).then_some(HostMeasures {
            wall_ns: 100 * MS,
            wakeups: 5_000,
            voluntary_ctx: 4_000,
            involuntary_ctx: 10,
            usr_ns: 10 * MS,
            sys_ns: 50 * MS,
            cpu_stolen_ns: vec![0; cpus],
        }),
        extra: vec![("events".into(), 123_456.0)],
        notes: vec![],
    }
}

fn has_line(out: &str, want: &str) {
    assert!(
        out.lines().any(|l| l == want),
        "no line {want:?} in:\n{out}"
    );
}

#[test]
fn text_reads_like_fio() {
    let out = text::render(&report(Engine::Simulated, 2));
    assert!(out.starts_with("irqlab-0.1.0: engine=simulated, platform=test-host, seed=7\n"));
    has_line(&out, "policy: delivery=posted, moderation=dim");
    has_line(
        &out,
        "randread: (groupid=0, jobs=1): err= 0: pid=0: simulated",
    );
    has_line(
        &out,
        "  read: IOPS=1000k, BW=3906MiB/s (4096MB/s)(391MiB/100msec)",
    );
    has_line(
        &out,
        "    slat (nsec): min=500, max=500, avg=500.00, stdev= 0.00",
    );
    assert!(
        out.contains("\n    clat (usec): min=10, max=200, avg=15.14, stdev="),
        "{out}"
    );
    has_line(&out, "    clat percentiles (usec):");
    let rows: Vec<&str> = out.lines().filter(|l| l.contains("th=[")).collect();
    assert_eq!(rows.len(), 5, "17 percentiles, 4 per line");
    assert!(
        rows[0].starts_with("     |  1.00th=[   11],  5.00th=["),
        "{}",
        rows[0]
    );
    assert_eq!(rows[0].matches("th=[").count(), 4);
    assert!(
        out.contains(" 50.00th=[   16],"),
        "p50 15.0 us rounds up as fio does"
    );
    assert!(out.contains(" 99.00th=[   20],"));
    // fio's bucket middle of 200 us is 199680 ns, 200 us rounded up.
    assert!(rows[4].ends_with(" 99.99th=[  200]"), "{}", rows[4]);
    has_line(&out, "  lat (usec)   : 20=99.90%, 250=0.10%");
    has_line(
        &out,
        "  cpu          : usr=10.00%, sys=50.00%, ctx=1234, majf=0, minf=0",
    );
    has_line(
        &out,
        "  IO depths    : 1=0.0%, 2=0.0%, 4=0.0%, 8=0.0%, 16=0.0%, 32=100.0%, >=64=0.0%",
    );
    has_line(
        &out,
        "     submit    : 0=0.0%, 4=0.0%, 8=0.0%, 16=100.0%, 32=0.0%, 64=0.0%, >=64=0.0%",
    );
    has_line(
        &out,
        "     complete  : 0=0.0%, 4=50.0%, 8=50.0%, 16=0.0%, 32=0.0%, 64=0.0%, >=64=0.0%",
    );
    has_line(
        &out,
        "     latency   : target=0.00ns, window=0.00ns, percentile=100.00%, depth=32",
    );
    has_line(
        &out,
        "   bw (  MiB/s): min= 3867, max= 3945, per=100.00%, avg=3906.25, stdev=31.89, samples=4",
    );
    has_line(
        &out,
        "   iops        : min=990000, max=1010000, avg=1000000.00, stdev=8164.97, samples=4",
    );
    has_line(&out, "Disk stats (read/write):");
    has_line(
        &out,
        "  nvme0n1: ios=100000/0, sectors=800000/0, merge=0/0, ticks=1560/0, in_queue=1560, util=95.00%",
    );
    has_line(&out, "Run status group 0 (all jobs):");
    has_line(
        &out,
        "   READ: bw=3906MiB/s (4096MB/s), 3906MiB/s-3906MiB/s (4096MB/s-4096MB/s), io=391MiB (410MB), run=100-100msec",
    );
    assert!(!out.contains("WRITE:"), "no writes, no WRITE line");
    // The irqlab section: rates over the 100 ms window.
    assert!(
        out.contains("  nvme0q1      INTEL-IR-POST         40000     400000.0"),
        "{out}"
    );
    assert!(
        out.contains("  nvme0q2      INTEL-IR              20000"),
        "{out}"
    );
    has_line(&out, "  PMN (posted MSI notifications): 10000 (100000.0/s)");
    has_line(
        &out,
        "  notifications=30000 (300000.0/s), vector interrupts=60000, coalescing ratio=2.00, I/Os per notification=3.33",
    );
    assert!(
        out.contains("   0   0.00%   0.00%    5.00%"),
        "hardirq share of CPU 0"
    );
    assert!(
        out.contains("  2.01us/49.92us/50.00us\n"),
        "tick lateness p50/p99 (fio's bucket middles, not above the max) and the exact max: {out}"
    );
    has_line(&out, "  events=123456");
    assert!(!out.contains("Measured on this host"));
    // Deterministic for the simulator.
    assert_eq!(out, text::render(&report(Engine::Simulated, 2)));
}

#[test]
fn text_shows_host_measures_for_the_runtime() {
    let out = text::render(&report(Engine::RealThreads, 2));
    has_line(
        &out,
        "randread: (groupid=0, jobs=1): err= 0: pid=0: real threads",
    );
    has_line(
        &out,
        "  wall=100.00ms, wake-ups=5000 (50000.0/s), ctx switches: voluntary=4000, involuntary=10",
    );
    has_line(&out, "  CPU: usr=10.00ms, sys=50.00ms, per I/O=600ns");
    // The runtime's CPU table says what the host stole; the simulator's has no column.
    let mut r = report(Engine::RealThreads, 2);
    r.measured.as_mut().unwrap().cpu_stolen_ns = vec![25 * MS, 0];
    let out = text::render(&r);
    let header = out
        .lines()
        .find(|l| l.trim_start().starts_with("CPU     usr"))
        .unwrap();
    assert!(header.contains("    idle  stolen        ctx"), "{header}");
    let row0 = out.lines().find(|l| l.starts_with("     0 ")).unwrap();
    assert!(row0.contains(" 40.00%  25.00% "), "{row0}");
    let sim = text::render(&report(Engine::Simulated, 2));
    assert!(!sim.contains("stolen"), "{sim}");
}

#[test]
fn an_interrupted_run_says_so_at_the_top() {
    let mut r = report(Engine::RealThreads, 1);
    assert!(!r.flag(irqlab_report::EXTRA_INTERRUPTED));
    assert!(!text::render(&r).contains("interrupted"));
    r.extra
        .push((irqlab_report::EXTRA_INTERRUPTED.to_string(), 1.0));
    assert!(r.flag(irqlab_report::EXTRA_INTERRUPTED));
    let out = text::render(&r);
    assert_eq!(
        out.lines().nth(2),
        Some("interrupted: the run was stopped (Ctrl-C); the figures cover the run up to then")
    );
}

#[test]
fn json_has_what_fio_tools_read() {
    let r = report(Engine::Simulated, 2);
    let v = fio_json::render(&r, false);
    assert_eq!(v["fio version"], "irqlab-0.1.0");
    // Simulated time at the end of the run, from the Unix epoch.
    assert_eq!(v["timestamp"], 2);
    assert_eq!(v["timestamp_ms"], 2_500);
    assert_eq!(v["time"], "Thu Jan  1 00:00:02 1970");
    assert_eq!(v["global options"]["ioengine"], "io_uring");
    let job = &v["jobs"][0];
    assert_eq!(job["job_start"], 3);
    assert_eq!(job["elapsed"], 3);
    assert_eq!(job["latency_depth"], 32);
    assert_eq!(job["latency_target"], 0);
    assert_eq!(job["latency_percentile"].as_f64(), Some(100.0));
    assert_eq!(job["latency_window_us"], 0);
    assert!(job.get("desc").is_none(), "no description, no desc");
    assert_eq!(job["iodepth_submit"]["16"].as_f64(), Some(100.0));
    assert_eq!(job["iodepth_complete"]["4"].as_f64(), Some(50.0));
    let opts = &job["job options"];
    assert_eq!(opts["rw"], "randread");
    assert_eq!(opts["iodepth"], "32");
    assert_eq!(opts["numjobs"], "1");
    assert_eq!(opts["bs"], "4k");
    assert_eq!(opts["time_based"], "");
    let read = &job["read"];
    assert_eq!(read["iops"].as_f64(), Some(1_000_000.0));
    assert_eq!(read["bw"], 4_000_000, "KiB/s");
    assert_eq!(read["bw_bytes"], 4_096_000_000u64);
    assert_eq!(read["runtime"], 100, "ms");
    assert_eq!(read["io_kbytes"], 400_000);
    assert_eq!(read["total_ios"], 100_000);
    assert_eq!(read["lat_ns"]["mean"].as_f64(), Some(15_640.0));
    assert!(
        read["lat_ns"].get("percentile").is_none(),
        "fio: only clat has percentiles"
    );
    assert_eq!(read["clat_ns"]["N"], 100_000);
    let pct = read["clat_ns"]["percentile"].as_object().unwrap();
    assert_eq!(pct.len(), 17);
    assert_eq!(pct.keys().next().map(String::as_str), Some("1.000000"));
    // stat.c plat_idx_to_val: the middles of the buckets holding 15, 19.9 and 200 us.
    assert_eq!(pct["50.000000"], 15_040);
    assert_eq!(pct["99.000000"], 19_840);
    assert_eq!(pct["99.950000"], 199_680);
    assert!(pct.contains_key("99.990000"));
    assert!(read["clat_ns"].get("bins").is_none());
    assert_eq!(read["bw_samples"], 4);
    assert_eq!(read["bw_min"], 3_960_000);
    assert_eq!(read["bw_agg"].as_f64(), Some(100.0));
    assert_eq!(read["iops_mean"].as_f64(), Some(1_000_000.0));
    assert_eq!(read["iops_samples"], 4);
    let dev = read["iops_stddev"].as_f64().unwrap();
    assert!((dev - 8164.97).abs() < 0.01, "{dev}");
    let disk = &v["disk_util"][0];
    assert_eq!(disk["name"], "nvme0n1");
    assert_eq!(disk["read_ios"], 100_000);
    assert_eq!(disk["util"].as_f64(), Some(95.0));
    assert_eq!(job["write"]["total_ios"], 0);
    assert_eq!(job["trim"]["io_bytes"], 0);
    assert_eq!(job["usr_cpu"].as_f64(), Some(10.0));
    assert_eq!(job["sys_cpu"].as_f64(), Some(50.0));
    assert_eq!(job["job_runtime"], 100);
    assert_eq!(job["iodepth_level"]["32"].as_f64(), Some(100.0));
    assert_eq!(job["latency_us"]["20"].as_f64(), Some(99.9));
    assert_eq!(job["latency_us"]["250"].as_f64(), Some(0.1));
    assert_eq!(job["latency_ms"][">=2000"].as_f64(), Some(0.0));

    let x = &v["x-irqlab"];
    assert_eq!(x["engine"], "simulated");
    assert_eq!(x["seed"], 7);
    assert_eq!(x["policy"]["delivery"], "posted");
    assert_eq!(x["notifications"], 30_000);
    assert_eq!(x["pmn"], 10_000);
    assert_eq!(x["coalescing_ratio"].as_f64(), Some(2.0));
    assert_eq!(x["vectors"][0]["per_cpu"][0], 40_000);
    let m = &x["vectors"][0]["moderation"];
    assert_eq!(m["moderator"], "net_dim");
    assert_eq!(m["final_level"], 2);
    assert_eq!(m["programs"], 5);
    assert_eq!(m["level_ns"][1], 30 * MS);
    assert!(x["vectors"][1].get("moderation").is_none());
    assert_eq!(x["cpus"][0]["tick_lateness_ns"]["N"], 4);
    assert!(x.get("measured").is_none());
    assert_eq!(x["extra"]["events"].as_f64(), Some(123_456.0));

    // Byte-identical per seed, and keys in fio's order.
    let a = serde_json::to_string(&v).unwrap();
    assert_eq!(
        a,
        serde_json::to_string(&fio_json::render(&r, false)).unwrap()
    );
    let keys: Vec<&String> = v.as_object().unwrap().keys().collect();
    assert_eq!(
        keys,
        [
            "fio version",
            "timestamp",
            "timestamp_ms",
            "time",
            "global options",
            "jobs",
            "disk_util",
            "x-irqlab"
        ]
    );
    assert_eq!(x["clock"]["base"], "simulated");
    assert_eq!(x["exact"][0]["read"]["runtime_ns"], 100 * MS);
}

#[test]
fn groups_descriptions_and_percentile_switches_show() {
    let mut r = report(Engine::Simulated, 2);
    let mut second = r.jobs[0].clone();
    second.group_reporting = true;
    r.jobs[0].group_reporting = true;
    r.jobs[0].description = Some("qd32 reads".into());
    r.jobs.push(second);
    r.jobs = irqlab_report::group_reporting(std::mem::take(&mut r.jobs));
    assert_eq!(r.jobs.len(), 1);
    let out = text::render(&r);
    has_line(
        &out,
        "randread: (groupid=0, jobs=2): err= 0: pid=0: simulated",
    );
    has_line(&out, "  Description  : [qd32 reads]");
    let v = fio_json::render(&r, false);
    assert_eq!(v["jobs"][0]["desc"], "qd32 reads");
    assert_eq!(v["jobs"][0]["read"]["total_ios"], 200_000);
    assert_eq!(v["jobs"][0]["read"]["iops_samples"], 8);
    // clat_percentiles=0: no percentile block, no percentiles or bins in JSON.
    r.jobs[0].clat_percentiles = false;
    assert!(!text::render(&r).contains("clat percentiles"));
    let v = fio_json::render(&r, true);
    assert!(v["jobs"][0]["read"]["clat_ns"].get("percentile").is_none());
    assert!(v["jobs"][0]["read"]["clat_ns"].get("bins").is_none());
}

#[test]
fn text_shows_each_moderated_vector_with_its_levels() {
    let out = text::render(&report(Engine::Simulated, 2));
    has_line(
        &out,
        "Moderation (whole run): final level, programs, time at each level",
    );
    has_line(
        &out,
        "  nvme0q1      net_dim   final=L2 programs=5  L0 10.0% L1 30.0% L2 60.0%",
    );
    assert!(!out.contains("nvme0q2      net_dim"), "{out}");
    // The level histogram over time: one row per 50 ms interval, shares of that row.
    has_line(
        &out,
        "Moderation over time: the moderated vectors' time at each level, per 50.00ms",
    );
    has_line(&out, "         0ns   20.0%  60.0%  20.0%");
    has_line(&out, "     50.00ms    0.0%   0.0% 100.0%");
    let v = fio_json::render(&report(Engine::Simulated, 2), false);
    let m = &v["x-irqlab"]["vectors"][0]["moderation"];
    assert_eq!(m["course_ns"], 50_000_000);
    assert_eq!(m["course"][1][2], 50_000_000);
}

#[test]
fn json_plus_bins_count_every_sample() {
    let v = fio_json::render(&report(Engine::Simulated, 2), true);
    let bins = v["jobs"][0]["read"]["clat_ns"]["bins"].as_object().unwrap();
    let total: u64 = bins.values().map(|c| c.as_u64().unwrap()).sum();
    assert_eq!(total, 100_000);
    // fio's bucket middles: 9984..10111 ns holds the 900 reads of 10.0 us and the 1000
    // of 10.1 us, keyed 10048; the 100 outliers of 200 us are keyed 199680.
    assert_eq!(bins["10048"], 1_900);
    assert_eq!(bins["199680"], 100);
    assert!(bins.keys().all(|k| k.parse::<u64>().is_ok()));
}

#[test]
fn json_has_real_time_for_the_runtime() {
    let mut r = report(Engine::RealThreads, 2);
    r.end_ns = 1_700_000_000_123_000_000;
    let v = fio_json::render(&r, false);
    assert_eq!(v["timestamp"], 1_700_000_000u64);
    assert_eq!(v["timestamp_ms"], 1_700_000_000_123u64);
    assert_eq!(v["time"], "Tue Nov 14 22:13:20 2023");
    assert_eq!(v["x-irqlab"]["clock"]["base"], "wall");
    assert_eq!(v["x-irqlab"]["measured"]["wakeups"], 5_000);
}

#[test]
fn empty_report_has_no_nan() {
    let mut r = report(Engine::Simulated, 1);
    r.jobs = vec![JobReport::default()];
    r.vectors.clear();
    r.cpus[0] = CpuReport::default();
    r.duration_ns = 0;
    let s = serde_json::to_string(&fio_json::render(&r, true)).unwrap();
    assert!(!s.contains("null"), "{s}");
    let t = text::render(&r);
    assert!(
        !t.contains("NaN") && !t.contains("=inf") && !t.contains(" inf"),
        "{t}"
    );
    assert!(!proc_interrupts::render(&r).is_empty());
}

/// The count columns of a /proc/interrupts row.
fn counts(row: &str) -> Vec<u64> {
    row.split_once(':')
        .unwrap()
        .1
        .split_whitespace()
        .map_while(|w| w.parse().ok())
        .collect()
}

#[test]
fn proc_interrupts_layout() {
    let r = report(Engine::Simulated, 2);
    let out = proc_interrupts::render(&r);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], format!("{:11}CPU0       CPU1       ", ""));
    // The MSI-X chip of the device, whether its parent chip posts or remaps.
    assert_eq!(
        lines[1],
        "128:      40000          0 IR-PCI-MSIX-0000:01:00.0   1-edge      nvme0q1"
    );
    assert_eq!(
        lines[2],
        "129:          0      20000 IR-PCI-MSIX-0000:01:00.0   2-edge      nvme0q2"
    );
    assert_eq!(
        lines[3],
        "LOC:        100        100   Local timer interrupts"
    );
    assert_eq!(
        lines[4],
        "PMN:      10000          0   Posted MSI notification event"
    );
    assert_eq!(lines.len(), 5);
    for (row, v) in lines[1..3].iter().zip(&r.vectors) {
        assert_eq!(counts(row).iter().sum::<u64>(), v.handled());
    }
    // Count columns line up under their CPU headers.
    let header_end = lines[0].find("CPU1").unwrap() + 4;
    let value_end = lines[1].rfind("0 IR-PCI").unwrap() + 1;
    assert_eq!(header_end, value_end);
}

#[test]
fn proc_interrupts_shows_every_cpu() {
    let r = report(Engine::Simulated, 16);
    let out = proc_interrupts::render(&r);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0].split_whitespace().count(), 16);
    assert_eq!(counts(lines[2]).len(), 16);
    assert_eq!(counts(lines[2])[5], 20_000);
    assert!(lines.iter().all(|l| !l.starts_with('(')), "no trailer line");
}

#[test]
fn trace_is_valid_chrome_json() {
    let mut w = TraceWriter::new(Vec::new()).unwrap();
    w.process_name(1, "sim \"host\"").unwrap();
    w.thread_name(1, 0, "CPU0\t\u{1}é").unwrap();
    w.complete(
        1,
        0,
        "hardirq",
        "irq",
        12_345,
        1_500,
        &[("vector", Arg::Str("nvme0q1")), ("n", Arg::U64(3))],
    )
    .unwrap();
    w.instant(1, 0, "PMN", "irq", 20_000, Scope::Thread, &[])
        .unwrap();
    w.counter(1, "cq", 21_001, &[("depth", 4.0), ("bad", f64::NAN)])
        .unwrap();
    assert_eq!(w.events_written(), 5);
    let bytes = w.finish().unwrap();
    let raw = String::from_utf8(bytes).unwrap();
    assert!(raw.contains("\"ts\":12.345,\"dur\":1.500"), "{raw}");
    let v: Value = serde_json::from_str(&raw).unwrap();
    assert_eq!(v["displayTimeUnit"], "ns");
    let ev = v["traceEvents"].as_array().unwrap();
    assert_eq!(ev[0]["args"]["name"], "sim \"host\"");
    assert_eq!(ev[1]["ph"], "M");
    assert_eq!(ev[1]["args"]["name"], "CPU0\t\u{1}é");
    let x = &ev[2];
    assert_eq!(
        (x["ph"].as_str(), x["pid"].as_u64(), x["tid"].as_u64()),
        (Some("X"), Some(1), Some(0))
    );
    assert_eq!(x["ts"].as_f64(), Some(12.345));
    assert_eq!(x["dur"].as_f64(), Some(1.5));
    assert_eq!(x["args"]["vector"], "nvme0q1");
    assert_eq!(
        (ev[3]["ph"].as_str(), ev[3]["s"].as_str()),
        (Some("i"), Some("t"))
    );
    assert_eq!(ev[4]["ph"], "C");
    assert_eq!(ev[4]["ts"].as_f64(), Some(21.001));
    assert_eq!(ev[4]["args"]["bad"], 0);
}

#[test]
fn trace_window_drops_and_clips() {
    let mut w = TraceWriter::with_window(Vec::new(), 1_000..2_000).unwrap();
    w.complete(1, 0, "before", "t", 0, 500, &[]).unwrap();
    w.complete(1, 0, "left", "t", 500, 1_000, &[]).unwrap();
    w.complete(1, 0, "inside", "t", 1_200, 100, &[]).unwrap();
    w.complete(1, 0, "right", "t", 1_900, 1_000, &[]).unwrap();
    w.complete(1, 0, "covers", "t", 0, 10_000, &[]).unwrap();
    w.complete(1, 0, "after", "t", 2_000, 10, &[]).unwrap();
    w.instant(1, 0, "out", "t", 999, Scope::Global, &[])
        .unwrap();
    w.instant(1, 0, "in", "t", 1_000, Scope::Process, &[])
        .unwrap();
    w.counter(1, "c", 2_000, &[("v", 1.0)]).unwrap();
    let v: Value = serde_json::from_slice(&w.finish().unwrap()).unwrap();
    let ev = v["traceEvents"].as_array().unwrap();
    let got: Vec<(&str, f64, f64)> = ev
        .iter()
        .filter(|e| e["ph"] == "X")
        .map(|e| {
            (
                e["name"].as_str().unwrap(),
                e["ts"].as_f64().unwrap(),
                e["dur"].as_f64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        got,
        [
            ("left", 1.0, 0.5),
            ("inside", 1.2, 0.1),
            ("right", 1.9, 0.1),
            ("covers", 1.0, 1.0)
        ]
    );
    let instants: Vec<&str> = ev
        .iter()
        .filter(|e| e["ph"] == "i")
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    assert_eq!(instants, ["in"]);
    assert!(
        ev.iter().all(|e| e["ph"] != "C"),
        "counter at the window end is outside"
    );
}

#[test]
fn trace_window_parsing() {
    assert_eq!(parse_window("1000..2000"), Ok(1_000..2_000));
    assert_eq!(parse_window("1ms..2ms"), Ok(1_000_000..2_000_000));
    assert_eq!(parse_window("5us.."), Ok(5_000..u64::MAX));
    assert_eq!(parse_window("..1s"), Ok(0..1_000_000_000));
    assert!(parse_window("2..1").is_err());
    assert!(parse_window("1-2").is_err());
    assert!(parse_window("1xs..2").is_err());
}

#[test]
fn latency_percentiles_are_within_a_fio_bucket() {
    let mut l = Latency::new();
    for v in 1..=100_000u64 {
        l.record(v * 37);
    }
    for p in [1.0, 50.0, 99.0, 99.9, 99.99] {
        let want = (p / 100.0 * 100_000.0_f64).ceil() * 37.0;
        let got = l.percentile(p) as f64;
        // A bucket is 1/64 of its value wide and the middle stands for it.
        assert!(
            (got - want).abs() / want <= 1.0 / 64.0,
            "p{p}: {got} vs {want}"
        );
    }
}
