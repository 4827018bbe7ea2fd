//! Every fio option irqlab accepts either changes what a run reports, as it would change
//! fio's result, or is listed in irqlab-fio's README as having no meaning in the model
//! (and then changes nothing); options irqlab does not model are refused at FILE:LINE.

use irqlab_core::Policy;
use irqlab_sim::{Platform, SimOptions, simulate};
use std::path::Path;

const GLOBAL: &str = "[global]\nioengine=libaio\nrw=randread\nbs=4k\niodepth=8\n\
    filename=/dev/nvme0n1\ncpus_allowed=0\n";
const TIMED: &str = "time_based\nruntime=3ms\n";

/// (option, job sections without it, the same with it).
fn changing() -> Vec<(&'static str, String, String)> {
    let one = |opt: &'static str, base: &str, line: &str| {
        (opt, format!("[j]\n{base}"), format!("[j]\n{base}{line}\n"))
    };
    let t = TIMED;
    let tw = |s: &str| format!("{TIMED}{s}\n");
    vec![
        one("name", t, "name=other"),
        one("ioengine", t, "ioengine=io_uring"),
        one("rw", t, "rw=randwrite"),
        one("rwmixread", &tw("rw=randrw"), "rwmixread=20"),
        one("rwmixwrite", &tw("rw=randrw"), "rwmixwrite=20"),
        one("bs", t, "bs=8k"),
        one("iodepth", t, "iodepth=2"),
        one("iodepth_batch", &tw("iodepth=16"), "iodepth_batch=8"),
        one(
            "iodepth_batch_complete_min",
            &tw("iodepth=16"),
            "iodepth_batch_complete_min=8",
        ),
        one(
            "iodepth_batch_complete_max",
            &tw("iodepth=16\niodepth_batch_complete_min=1"),
            "iodepth_batch_complete_max=16",
        ),
        one("numjobs", t, "numjobs=2"),
        one("cpus_allowed", t, "cpus_allowed=1"),
        one("filename", t, "filename=/dev/nvme1n1"),
        one("runtime", t, "runtime=4ms"),
        one("ramp_time", t, "ramp_time=1ms"),
        one("time_based", "runtime=3ms\nsize=256k\n", "time_based"),
        one("size", "runtime=3ms\n", "size=64k"),
        one("number_ios", "runtime=3ms\n", "number_ios=100"),
        one("loops", "runtime=3ms\nsize=64k\n", "loops=2"),
        one("hipri", &tw("ioengine=io_uring"), "hipri"),
        one("group_reporting", &tw("numjobs=2"), "group_reporting"),
        one("kb_base", t, "kb_base=1000"),
        one("rate", t, "rate=4m"),
        one("rate_iops", t, "rate_iops=1000"),
        one(
            "rate_process",
            &tw("rate_iops=1000"),
            "rate_process=poisson",
        ),
        one("thinktime", t, "thinktime=50"),
        one("thinktime_spin", &tw("thinktime=50"), "thinktime_spin=20"),
        one(
            "thinktime_blocks",
            &tw("thinktime=50"),
            "thinktime_blocks=4",
        ),
        one(
            "thinktime_blocks_type",
            &tw("thinktime=50\nthinktime_blocks=4"),
            "thinktime_blocks_type=issue",
        ),
        one("bsrange", t, "bsrange=4k-16k"),
        one("bssplit", t, "bssplit=4k/50:16k/50"),
        one("bs_unaligned", &tw("bsrange=1k-16k"), "bs_unaligned"),
        one("randseed", &tw("rw=randrw"), "randseed=5"),
        one("randrepeat", &tw("rw=randrw"), "randrepeat=0"),
        one("startdelay", t, "startdelay=1ms"),
        (
            "stonewall",
            format!("[a]\n{t}[b]\n{t}"),
            format!("[a]\n{t}[b]\n{t}stonewall\n"),
        ),
        (
            "new_group",
            format!("[a]\n{t}[b]\n{t}"),
            format!("[a]\n{t}[b]\n{t}new_group\n"),
        ),
        one("description", t, "description=hello"),
        one("write_lat_log", t, "write_lat_log=x"),
        one("write_bw_log", t, "write_bw_log=x"),
        one("write_iops_log", t, "write_iops_log=x"),
        one("log_avg_msec", &tw("write_lat_log=x"), "log_avg_msec=1"),
        one("per_job_logs", &tw("write_lat_log=x"), "per_job_logs=0"),
        one("bwavgtime", t, "bwavgtime=1"),
        one("iopsavgtime", t, "iopsavgtime=1"),
        one("clat_percentiles", t, "clat_percentiles=0"),
        one("io_size", "runtime=3ms\nsize=1m\n", "io_size=64k"),
        one("filesize", "runtime=3ms\n", "filesize=64k"),
        one("fill_device", "runtime=3ms\nsize=64k\n", "fill_device=1"),
        one("io_submit_mode", t, "io_submit_mode=offload"),
        one("sqthread_poll", &tw("ioengine=io_uring"), "sqthread_poll"),
        one(
            "sqthread_poll_cpu",
            &tw("ioengine=io_uring\nsqthread_poll"),
            "sqthread_poll_cpu=3",
        ),
        two("exitall", "exitall\n"),
        (
            "exit_what",
            format!("[a]\ntime_based\nruntime=1ms\nexitall\n[b]\n{t}new_group\ncpus_allowed=1\n"),
            format!(
                "[a]\ntime_based\nruntime=1ms\nexitall\nexit_what=all\n[b]\n{t}new_group\ncpus_allowed=1\n"
            ),
        ),
        (
            "exitall_on_error",
            format!("[a]\n{t}max_latency=1us\n[b]\n{t}new_group\n"),
            format!("[a]\n{t}max_latency=1us\nexitall_on_error\n[b]\n{t}new_group\n"),
        ),
        two("flow", "flow=2\n"),
        two("flow_id", "flow=2\nflow_id=RR\n"),
        two("flow_sleep", "flow=2\nflow_sleep=20\n"),
        one("rate_min", SLOW, "rate_min=1m"),
        one("rate_iops_min", SLOW, "rate_iops_min=20"),
        one(
            "rate_cycle",
            &format!("{SLOW}rate_min=45k\n"),
            "rate_cycle=3000",
        ),
        one("latency_target", &tw("iodepth=32"), "latency_target=50us"),
        one(
            "latency_window",
            &tw("iodepth=32\nlatency_target=100us"),
            "latency_window=300us",
        ),
        one(
            "latency_percentile",
            &tw("iodepth=32\nlatency_target=100us"),
            "latency_percentile=50",
        ),
        one(
            "latency_run",
            &tw("iodepth=32\nlatency_target=200us\nlatency_window=300us"),
            "latency_run=1",
        ),
        one("max_latency", t, "max_latency=10us"),
        one("steadystate_duration", STEADY, "steadystate_duration=2s"),
        one(
            "steadystate",
            &format!("{STEADY}ss_dur=2s\n"),
            "steadystate=iops:10%",
        ),
        one(
            "steadystate_ramp_time",
            &format!("{STEADY}ss_dur=2s\n"),
            "steadystate_ramp_time=1s",
        ),
        one(
            "steadystate_check_interval",
            &format!("{STEADY}ss_dur=4s\n"),
            "steadystate_check_interval=2s",
        ),
        one("cpuload", &tw("ioengine=cpuio\ncpuload=50"), "cpuload=20"),
        one(
            "cpuchunks",
            &tw("ioengine=cpuio\ncpuload=50"),
            "cpuchunks=100",
        ),
        one(
            "cpumode",
            &tw("ioengine=cpuio\ncpuload=50"),
            "cpumode=qsort",
        ),
        (
            "exit_on_io_done",
            format!(
                "[a]\n{t}ioengine=cpuio\ncpuload=50\ncpuchunks=100\n[b]\ntime_based\nruntime=1ms\ncpus_allowed=1\n"
            ),
            format!(
                "[a]\n{t}ioengine=cpuio\ncpuload=50\ncpuchunks=100\nexit_on_io_done=1\n[b]\ntime_based\nruntime=1ms\ncpus_allowed=1\n"
            ),
        ),
        (
            "wait_for",
            format!("[a]\ntime_based\nruntime=1ms\n[b]\n{t}cpus_allowed=1\n"),
            format!("[a]\ntime_based\nruntime=1ms\n[b]\n{t}cpus_allowed=1\nwait_for=a\n"),
        ),
        one("zonemode", &tw(ZONED.trim_end()), "zonemode=zbd"),
        one(
            "zonesize",
            &tw(&format!("{ZONED}zonemode=zbd")),
            "zonesize=256k",
        ),
        one(
            "zonecapacity",
            &tw(&format!("{ZONED}zonemode=zbd")),
            "zonecapacity=512k",
        ),
        // The open zones decide which zone the frequency's resets find written.
        one(
            "max_open_zones",
            &tw(&format!("{ZONED}zonemode=zbd\nzone_reset_frequency=0.5")),
            "max_open_zones=1",
        ),
        one(
            "job_max_open_zones",
            &tw(&format!("{ZONED}zonemode=zbd\nzone_reset_frequency=0.5")),
            "job_max_open_zones=1",
        ),
        one(
            "zone_reset_frequency",
            &tw(&format!("{ZONED}zonemode=zbd")),
            "zone_reset_frequency=0.5",
        ),
        one(
            "zone_reset_threshold",
            &tw(&format!("{ZONED}zonemode=zbd\nzone_reset_frequency=0.5")),
            "zone_reset_threshold=0.9",
        ),
        one(
            "write_mode",
            &tw("ioengine=io_uring_cmd\nrw=randwrite"),
            "write_mode=zeroes",
        ),
        one(
            "num_range",
            &tw("ioengine=io_uring_cmd\nrw=randtrim"),
            "num_range=4",
        ),
    ]
}

/// A job of about 10 I/Os a second over 3.2 s: the minimum-rate check looks at 2 s and
/// every rate_cycle after.
const SLOW: &str = "time_based\nruntime=3200ms\nioengine=psync\nthinktime=100ms\n";

/// A steady job over 2.1 s: steady state checks every second.
const STEADY: &str = "time_based\nruntime=2100ms\nrate_iops=1000\n";

/// Random writes over four 1 MiB zones' worth of range.
const ZONED: &str = "rw=randwrite\nzonesize=1m\nsize=4z\nbs=64k\n";

/// Two jobs of one group, the first ending at 1 ms: `extra` goes into both, with `RR`
/// the job's letter (a different flow id per job).
fn two(opt: &'static str, extra: &str) -> (&'static str, String, String) {
    let jobs = |with: bool| {
        ["a", "b"]
            .iter()
            .map(|n| {
                let run = if *n == "a" { "1ms" } else { "3ms" };
                let x = if with {
                    extra.replace("RR", if *n == "a" { "1" } else { "2" })
                } else {
                    extra
                        .lines()
                        .filter(|l| !l.starts_with(opt))
                        .map(|l| format!("{l}\n"))
                        .collect::<String>()
                        .replace("RR", "0")
                };
                let x = if opt == "flow" && !with { String::new() } else { x };
                let cpu = if *n == "a" { 0 } else { 1 };
                format!(
                    "[{n}]\ntime_based\nruntime={run}\ncpus_allowed={cpu}\nfilename=/dev/nvme{cpu}n1\n{x}"
                )
            })
            .collect::<String>()
    };
    (opt, jobs(false), jobs(true))
}

/// Options that name a job's files: the parser's tests check the names they make
/// (crates/irqlab-fio/tests/parse.rs files_are_named_as_fio_names_them) and
/// irqlab-inputs' map the names onto devices.
const NAMING: &[&str] = &["directory", "filename_format", "nrfiles", "libblkio_path"];

/// Options accepted where they ask for what the model always does (the README says so
/// beside the table), with a harmless value; the catalogue's inert options come from
/// `irqlab_fio::catalogue::sample_line`.
const ALWAYS: &[(&str, &str)] = &[
    ("direct", "direct=1"),
    ("buffered", "buffered=0"),
    ("cpus_allowed_policy", "cpus_allowed_policy=split"),
    // The example platform is one NUMA node: node 0 is every CPU.
    ("numa_cpu_nodes", "numa_cpu_nodes=0"),
];

fn platform() -> Platform {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../platforms/example.toml");
    Platform::load(&path, &[]).unwrap()
}

/// Everything a run prints or writes: fio's text, json+ and the log files.
fn output(sections: &str) -> Result<String, String> {
    let text = format!("{GLOBAL}{sections}");
    let jobs = irqlab_fio::parse_str(&text, Path::new("opts.fio")).map_err(|e| e.to_string())?;
    let r = simulate(
        &jobs,
        &platform(),
        &Policy::default(),
        &SimOptions::default(),
    )
    .map_err(|e| e.to_string())?;
    let mut out = irqlab_report::text::render(&r);
    out.push_str(&irqlab_report::fio_json::render(&r, true).to_string());
    for log in r.jobs.iter().flat_map(|j| &j.logs) {
        out.push_str(&log.file_name);
        out.push_str(&log.text());
    }
    Ok(out)
}

#[test]
fn every_option_changes_the_result_or_is_documented_inert() {
    let cases = changing();
    let readme = include_str!("../../irqlab-fio/README.md");
    let inert_lines: Vec<(String, String)> = irqlab_fio::no_meaning()
        .filter_map(|(name, _)| Some((name.to_string(), irqlab_fio::catalogue::sample_line(name)?)))
        .chain(ALWAYS.iter().map(|(n, l)| (n.to_string(), l.to_string())))
        .collect();
    for name in irqlab_fio::accepted_options() {
        let tested = cases.iter().any(|c| c.0 == name) || NAMING.contains(&name);
        let inert = inert_lines.iter().any(|i| i.0 == name);
        assert!(
            tested || inert,
            "option {name} is accepted but neither tested to change a run nor listed as inert"
        );
        if inert {
            assert!(
                readme.contains(&format!("`{name}`")),
                "{name} changes nothing, but the README does not list it as such"
            );
        }
    }
    for (name, base, with) in &cases {
        let a = output(base).unwrap_or_else(|e| panic!("{name}: base: {e}"));
        let b = output(with).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_ne!(a, b, "{name} did not change the result");
    }
    // Every inert option at once changes nothing but the JSON's "job options".
    let base = output(&format!("[j]\n{TIMED}numjobs=2\ncpus_allowed=0-1\n")).unwrap();
    let lines: Vec<&str> = inert_lines.iter().map(|(_, l)| l.as_str()).collect();
    let with = output(&format!(
        "[j]\n{TIMED}numjobs=2\ncpus_allowed=0-1\n{}\n",
        lines.join("\n")
    ))
    .unwrap_or_else(|e| panic!("the inert options: {e}"));
    let mut without_opts = with;
    for line in &lines {
        without_opts = without_opts.replacen(&option_json(line), "", 2);
    }
    assert_eq!(base, without_opts, "an inert option changed the result");
}

/// How a `key=value` (or bare key) line shows in the JSON's "job options".
fn option_json(line: &str) -> String {
    let (k, v) = line.split_once('=').unwrap_or((line, ""));
    format!(",\"{k}\":\"{v}\"")
}

#[test]
fn options_irqlab_does_not_model_are_refused_at_their_line() {
    for line in [
        "rate_ignore_thinktime=1",
        "direct=0",
        "buffered",
        "ioengine=net",
        "bs=4k-64k",
        "thinktime_iotime=1s",
        "fsync=1",
        "sqthread_poll=1",
        "write_mode=zeroes",
        "sync=1",
    ] {
        let err = output(&format!("[j]\n{TIMED}{line}\n")).unwrap_err();
        assert!(err.starts_with("opts.fio:11: "), "{line}: {err}");
    }
}
