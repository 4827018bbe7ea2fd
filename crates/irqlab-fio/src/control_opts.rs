//! The options of `control` (submission, exitall, flow, minimum rates, latency targets,
//! steady state, cpuio, zones, write commands): their names as in fio's options.c and
//! engines' option tables, how each value is read, and the checks fio makes on them.

use crate::control::*;
use crate::entry_value::{bad_value, bool01, flag, int, per_dir, time_s, time_us};
use crate::error::JobFileError;
use crate::ini::Entry;
use crate::options::{Opt, OptDef, def};
use crate::values;

/// One option of [`CONTROL`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ctl {
    SubmitMode,
    SqThreadPoll,
    SqThreadPollCpu,
    ExitAll,
    ExitWhat,
    ExitAllOnError,
    FlowId,
    Flow,
    FlowSleep,
    RateMin,
    RateIopsMin,
    RateCycle,
    LatencyTarget,
    LatencyWindow,
    LatencyPercentile,
    LatencyRun,
    MaxLatency,
    SteadyState,
    SsDuration,
    SsRamp,
    SsInterval,
    CpuLoad,
    CpuChunks,
    CpuMode,
    ExitOnIoDone,
    WaitFor,
    ZoneMode,
    ZoneSize,
    ZoneCapacity,
    MaxOpenZones,
    JobMaxOpenZones,
    ZoneResetThreshold,
    ZoneResetFrequency,
    WriteMode,
    NumRange,
}

impl Ctl {
    /// fio's FIO_OPT_STR_SET options: a bare name sets them.
    pub fn is_flag(self) -> bool {
        matches!(self, Ctl::SqThreadPoll | Ctl::ExitAll | Ctl::ExitAllOnError)
    }
}

const fn ctl(name: &'static str, aliases: &'static [&'static str], c: Ctl) -> OptDef {
    def(name, aliases, Opt::Control(c))
}

/// Names and aliases as in fio's options.c and the io_uring and cpuio engines' tables.
pub const CONTROL: &[OptDef] = &[
    ctl("io_submit_mode", &[], Ctl::SubmitMode),
    ctl("sqthread_poll", &[], Ctl::SqThreadPoll),
    ctl("sqthread_poll_cpu", &[], Ctl::SqThreadPollCpu),
    ctl("exitall", &[], Ctl::ExitAll),
    ctl("exit_what", &[], Ctl::ExitWhat),
    ctl("exitall_on_error", &[], Ctl::ExitAllOnError),
    ctl("flow_id", &[], Ctl::FlowId),
    ctl("flow", &[], Ctl::Flow),
    ctl("flow_sleep", &[], Ctl::FlowSleep),
    ctl("rate_min", &["ratemin"], Ctl::RateMin),
    ctl("rate_iops_min", &[], Ctl::RateIopsMin),
    ctl("rate_cycle", &["ratecycle"], Ctl::RateCycle),
    ctl("latency_target", &[], Ctl::LatencyTarget),
    ctl("latency_window", &[], Ctl::LatencyWindow),
    ctl("latency_percentile", &[], Ctl::LatencyPercentile),
    ctl("latency_run", &[], Ctl::LatencyRun),
    ctl("max_latency", &[], Ctl::MaxLatency),
    ctl("steadystate", &["ss"], Ctl::SteadyState),
    ctl("steadystate_duration", &["ss_dur"], Ctl::SsDuration),
    ctl("steadystate_ramp_time", &["ss_ramp"], Ctl::SsRamp),
    ctl(
        "steadystate_check_interval",
        &["ss_interval"],
        Ctl::SsInterval,
    ),
    ctl("cpuload", &[], Ctl::CpuLoad),
    ctl("cpuchunks", &[], Ctl::CpuChunks),
    ctl("cpumode", &[], Ctl::CpuMode),
    ctl("exit_on_io_done", &[], Ctl::ExitOnIoDone),
    ctl("wait_for", &[], Ctl::WaitFor),
    ctl("zonemode", &[], Ctl::ZoneMode),
    ctl("zonesize", &[], Ctl::ZoneSize),
    ctl("zonecapacity", &[], Ctl::ZoneCapacity),
    ctl("max_open_zones", &[], Ctl::MaxOpenZones),
    ctl("job_max_open_zones", &[], Ctl::JobMaxOpenZones),
    ctl("zone_reset_threshold", &[], Ctl::ZoneResetThreshold),
    ctl("zone_reset_frequency", &[], Ctl::ZoneResetFrequency),
    ctl("write_mode", &[], Ctl::WriteMode),
    ctl("num_range", &[], Ctl::NumRange),
];

/// What the file says, before fio's defaults and checks (`resolve` makes [`Controls`]).
#[derive(Clone, Debug, Default)]
pub(crate) struct WrittenControls {
    offload: bool,
    sqpoll: bool,
    sqpoll_cpu: Option<usize>,
    pub exitall: bool,
    exit_what: ExitWhat,
    exitall_on_error: bool,
    flow_id: u32,
    flow: u32,
    flow_sleep_ns: u64,
    rate_min: RateMin,
    latency_target_ns: u64,
    latency_window_ns: u64,
    latency_percentile: Option<f64>,
    latency_run: bool,
    max_latency_ns: Option<u64>,
    ss: Option<(SsMetric, bool, bool, f64)>,
    ss_dur_ns: u64,
    ss_ramp_ns: u64,
    ss_interval_ns: Option<u64>,
    cpuload: Option<u32>,
    cpuchunks_us: Option<u64>,
    cpumode: Option<CpuMode>,
    exit_on_io_done: bool,
    wait_for: Option<String>,
    zbd: bool,
    zone_size: u64,
    zone_capacity: u64,
    max_open_zones: u32,
    job_max_open_zones: u32,
    zone_reset_threshold: f64,
    zone_reset_frequency: f64,
    write_mode: Vec<(WriteCmd, u32)>,
    zone_append: bool,
    num_range: Option<u32>,
}

fn float(e: &Entry, text: &str) -> Result<f64, JobFileError> {
    match text.trim().parse::<f64>() {
        Ok(x) if x.is_finite() && x >= 0.0 => Ok(x),
        _ => Err(bad_value(e, "a number", "a decimal number (e.g. 0.5)")),
    }
}

/// `R[,W[,T]]` per direction into `dst`; an empty part keeps what `dst` held.
fn per_ddir(
    e: &Entry,
    text: &str,
    parse: impl Fn(&str) -> Result<u64, JobFileError>,
    dst: &mut [u64; 3],
) -> Result<(), JobFileError> {
    let (r, w, t) = per_dir(e, text, "VALUE or READ,WRITE[,TRIM]", parse)?;
    for (d, v) in [r, w, t].into_iter().enumerate() {
        if let Some(v) = v {
            dst[d] = v;
        }
    }
    Ok(())
}

/// `steadystate=iops:10%`, `bw_slope:1%`, `lat:5%`, `iops:500`, `bw:10m`, `lat:2ms`
/// (options.c str_steadystate_cb).
fn steadystate(
    e: &Entry,
    text: &str,
    kb_base: u64,
) -> Result<(SsMetric, bool, bool, f64), JobFileError> {
    const EXPECTED: &str = "iops, iops_slope, bw, bw_slope, lat or lat_slope, then ':' and a limit (e.g. iops:10%, bw_slope:1%, lat:2ms)";
    let (kind, limit) = text
        .split_once(':')
        .ok_or_else(|| bad_value(e, "a steady-state criterion", EXPECTED))?;
    let (metric, slope) = match kind.trim() {
        "iops" => (SsMetric::Iops, false),
        "iops_slope" => (SsMetric::Iops, true),
        "bw" => (SsMetric::Bw, false),
        "bw_slope" => (SsMetric::Bw, true),
        "lat" => (SsMetric::Lat, false),
        "lat_slope" => (SsMetric::Lat, true),
        _ => return Err(bad_value(e, "a steady-state criterion", EXPECTED)),
    };
    let limit = limit.trim();
    if let Some(pct) = limit.strip_suffix('%') {
        return Ok((metric, slope, true, float(e, pct)?));
    }
    let value = match metric {
        SsMetric::Iops => float(e, limit)?,
        SsMetric::Bw => {
            values::size(limit, kb_base).map_err(|x| bad_value(e, "a bandwidth", x))? as f64
        }
        // A latency limit is a time whose bare number is µs, kept in ns.
        SsMetric::Lat => time_us(e, limit)? as f64,
    };
    Ok((metric, slope, false, value))
}

/// io_uring_cmd's `write_mode`: one command, or `MODE/PCT:MODE/PCT...` whose blank
/// percentages share the rest (engines/io_uring.c str_write_mode_cb).
fn write_mode(e: &Entry, text: &str) -> Result<(Vec<(WriteCmd, u32)>, bool), JobFileError> {
    const EXPECTED: &str =
        "write, zeroes, uncor, verify or zone_append, or a mix such as write/60:zeroes/40";
    let cmd = |s: &str| -> Result<Option<WriteCmd>, JobFileError> {
        Ok(Some(match s {
            "write" => WriteCmd::Write,
            "zeroes" => WriteCmd::Zeroes,
            "uncor" => WriteCmd::Uncor,
            "verify" => WriteCmd::Verify,
            "zone_append" => return Ok(None),
            _ => return Err(bad_value(e, "a write_mode", EXPECTED)),
        }))
    };
    if !text.contains(':') {
        return Ok(match cmd(text)? {
            Some(c) => (vec![(c, 100)], false),
            None => (vec![(WriteCmd::Write, 100)], true),
        });
    }
    let mut entries: Vec<(WriteCmd, Option<u32>)> = Vec::new();
    for tok in text.split(':') {
        let (mode, pct) = tok
            .split_once('/')
            .ok_or_else(|| bad_value(e, "a write_mode mix", EXPECTED))?;
        let Some(c) = cmd(mode)? else {
            return Err(JobFileError::at(
                &e.file,
                e.line,
                format!("{}={text} mixes zone_append with other writes", e.key),
                "zone_append alone",
            ));
        };
        let pct = if pct.is_empty() {
            None
        } else {
            Some(
                pct.parse::<u32>()
                    .map_err(|_| bad_value(e, "a write_mode mix", EXPECTED))?,
            )
        };
        entries.push((c, pct));
        if entries.len() > 16 {
            return Err(bad_value(
                e,
                "a write_mode mix",
                "at most 16 entries (fio's WMODE_SPLIT_MAX)",
            ));
        }
    }
    let given: u32 = entries.iter().filter_map(|x| x.1).sum();
    let missing = entries.iter().filter(|x| x.1.is_none()).count() as u32;
    if entries.len() < 2 || given > 100 || (missing == 0 && given != 100) {
        return Err(bad_value(
            e,
            "a write_mode mix",
            "at least two entries whose percentages add up to 100",
        ));
    }
    let fill = (100 - given).checked_div(missing).unwrap_or(0);
    Ok((
        entries
            .into_iter()
            .map(|(c, p)| (c, p.unwrap_or(fill)))
            .collect(),
        false,
    ))
}

impl WrittenControls {
    /// One option of [`CONTROL`] as written (`v` is None for a bare name).
    pub(crate) fn apply(
        &mut self,
        c: Ctl,
        e: &Entry,
        v: Option<&str>,
        text: &str,
        kb_base: u64,
    ) -> Result<(), JobFileError> {
        match c {
            Ctl::SubmitMode => {
                self.offload = match text {
                    "inline" => false,
                    "offload" => true,
                    _ => return Err(bad_value(e, "a submit mode", "inline or offload")),
                }
            }
            Ctl::SqThreadPoll => self.sqpoll = flag(e, v)?,
            Ctl::SqThreadPollCpu => {
                let cpu = int(e, text, kb_base)?;
                self.sqpoll_cpu = Some(
                    usize::try_from(cpu)
                        .ok()
                        .filter(|&c| c <= values::MAX_CPU)
                        .ok_or_else(|| bad_value(e, "a CPU", "a CPU number from 0 to 4095"))?,
                );
            }
            Ctl::ExitAll => self.exitall |= flag(e, v)?,
            Ctl::ExitWhat => {
                self.exit_what = match text {
                    "group" => ExitWhat::Group,
                    "stonewall" => ExitWhat::Stonewall,
                    "all" => ExitWhat::All,
                    _ => return Err(bad_value(e, "an exit_what", "group, stonewall or all")),
                }
            }
            Ctl::ExitAllOnError => self.exitall_on_error = flag(e, v)?,
            Ctl::FlowId => {
                self.flow_id = u32::try_from(int(e, text, kb_base)?)
                    .map_err(|_| bad_value(e, "a flow id", "a number below 4294967296"))?
            }
            Ctl::Flow => {
                // options.c: maxval FLOW_MAX_WEIGHT.
                let w = int(e, text, kb_base)?;
                if w > 1000 {
                    return Err(bad_value(
                        e,
                        "a flow weight",
                        "a weight from 0 to 1000 (fio's FLOW_MAX_WEIGHT)",
                    ));
                }
                self.flow = w as u32;
            }
            Ctl::FlowSleep => {
                // FIO_OPT_INT of µs.
                self.flow_sleep_ns = int(e, text, kb_base)?
                    .checked_mul(1_000)
                    .ok_or_else(|| bad_value(e, "a time", "µs below 584 years"))?
            }
            Ctl::RateMin => per_ddir(
                e,
                text,
                |s| values::size(s, kb_base).map_err(|x| bad_value(e, "a rate in bytes/s", x)),
                &mut self.rate_min.bytes_per_sec,
            )?,
            Ctl::RateIopsMin => per_ddir(
                e,
                text,
                |s| values::int(s, kb_base).map_err(|x| bad_value(e, "an IOPS rate", x)),
                &mut self.rate_min.iops,
            )?,
            Ctl::RateCycle => {
                let ms = int(e, text, kb_base)?;
                if ms == 0 {
                    return Err(bad_value(e, "a rate cycle", "a window of at least 1 ms"));
                }
                self.rate_min.cycle_ms = ms;
            }
            Ctl::LatencyTarget => self.latency_target_ns = time_us(e, text)?,
            Ctl::LatencyWindow => self.latency_window_ns = time_us(e, text)?,
            Ctl::LatencyPercentile => {
                let p = float(e, text)?;
                if !(0.0..=100.0).contains(&p) {
                    return Err(bad_value(e, "a percentile", "a percentile from 0 to 100"));
                }
                self.latency_percentile = Some(p);
            }
            Ctl::LatencyRun => self.latency_run = bool01(e, text)?,
            Ctl::MaxLatency => {
                let mut per = [0u64; 3];
                per_ddir(e, text, |s| time_us(e, s), &mut per)?;
                if per[0] != per[1] {
                    return Err(JobFileError::at(
                        &e.file,
                        e.line,
                        format!("{}={text} sets reads and writes apart", e.key),
                        "one max_latency for every direction",
                    ));
                }
                self.max_latency_ns = Some(per[0]).filter(|&n| n > 0);
            }
            Ctl::SteadyState => self.ss = Some(steadystate(e, text, kb_base)?),
            Ctl::SsDuration => self.ss_dur_ns = time_s(e, text)?,
            Ctl::SsRamp => self.ss_ramp_ns = time_s(e, text)?,
            Ctl::SsInterval => self.ss_interval_ns = Some(time_s(e, text)?),
            Ctl::CpuLoad => {
                // engines/cpu.c: a load above 100 is 100.
                self.cpuload = Some(int(e, text, kb_base)?.min(100) as u32);
            }
            Ctl::CpuChunks => {
                let us = int(e, text, kb_base)?;
                if us == 0 {
                    return Err(bad_value(e, "a burn cycle", "a cycle of at least 1 µs"));
                }
                self.cpuchunks_us = Some(us);
            }
            Ctl::CpuMode => {
                self.cpumode = Some(match text {
                    "noop" => CpuMode::Noop,
                    "qsort" => CpuMode::Qsort,
                    _ => return Err(bad_value(e, "a cpumode", "noop or qsort")),
                })
            }
            Ctl::ExitOnIoDone => self.exit_on_io_done = bool01(e, text)?,
            Ctl::WaitFor => self.wait_for = Some(text.to_string()),
            Ctl::ZoneMode => {
                self.zbd = match text {
                    "none" | "strided" => false,
                    "zbd" => true,
                    _ => return Err(bad_value(e, "a zonemode", "none, strided or zbd")),
                }
            }
            Ctl::ZoneSize => {
                self.zone_size =
                    values::size(text, kb_base).map_err(|x| bad_value(e, "a size", x))?
            }
            Ctl::ZoneCapacity => {
                self.zone_capacity =
                    values::size(text, kb_base).map_err(|x| bad_value(e, "a size", x))?
            }
            Ctl::MaxOpenZones | Ctl::JobMaxOpenZones => {
                let n = int(e, text, kb_base)?;
                // zbd.h ZBD_MAX_WRITE_ZONES.
                if n > 4096 {
                    return Err(bad_value(e, "a zone count", "at most 4096 open zones"));
                }
                if c == Ctl::MaxOpenZones {
                    self.max_open_zones = n as u32;
                } else {
                    self.job_max_open_zones = n as u32;
                }
            }
            Ctl::ZoneResetThreshold | Ctl::ZoneResetFrequency => {
                let x = float(e, text)?;
                if x > 1.0 {
                    return Err(bad_value(e, "a fraction", "a fraction from 0 to 1"));
                }
                if c == Ctl::ZoneResetThreshold {
                    self.zone_reset_threshold = x;
                } else {
                    self.zone_reset_frequency = x;
                }
            }
            Ctl::WriteMode => (self.write_mode, self.zone_append) = write_mode(e, text)?,
            Ctl::NumRange => {
                let n = int(e, text, kb_base)?;
                // fio.h MAX_TRIM_RANGE.
                if n == 0 || n > 256 {
                    return Err(bad_value(
                        e,
                        "a range count",
                        "1 to 256 ranges per trim (fio's MAX_TRIM_RANGE)",
                    ));
                }
                self.num_range = Some(n as u32);
            }
        }
        Ok(())
    }
}

/// Why a job's controls cannot run, with the option to blame and what was expected.
pub(crate) struct Refusal {
    pub option: &'static str,
    pub what: String,
    pub expected: String,
}

fn refuse(option: &'static str, what: impl Into<String>, expected: impl Into<String>) -> Refusal {
    Refusal {
        option,
        what: what.into(),
        expected: expected.into(),
    }
}

/// What the job's engine and other options make of the controls (init.c
/// fixup_options, the engines' init): `engine` is the engine as written, `size` the
/// job's byte budget per pass, `files` how many files it has.
pub(crate) fn resolve(
    c: &WrittenControls,
    engine: &str,
    size: Option<u64>,
    size_zones: Option<u64>,
    files: u64,
) -> Result<Controls, Refusal> {
    let uring = matches!(engine, "io_uring" | "io_uring_cmd");
    if c.sqpoll && !uring {
        return Err(refuse(
            "sqthread_poll",
            format!("sqthread_poll is an option of the io_uring engines, not of ioengine={engine}"),
            "ioengine=io_uring or io_uring_cmd with sqthread_poll",
        ));
    }
    let cpu_opts = c.cpuload.is_some() || c.cpuchunks_us.is_some() || c.cpumode.is_some();
    if engine != "cpuio" && cpu_opts {
        return Err(refuse(
            "cpuload",
            format!(
                "cpuload, cpuchunks and cpumode are options of ioengine=cpuio, not of ioengine={engine}"
            ),
            "ioengine=cpuio",
        ));
    }
    if c.offload && matches!(engine, "io_uring" | "io_uring_cmd" | "libblkio") {
        // ioengines.c check_engine_ops: FIO_NO_OFFLOAD.
        return Err(refuse(
            "io_submit_mode",
            format!(
                "{engine}: can't be used with offloaded submit (fio refuses it too: its ring is not made for several submitting threads)"
            ),
            "io_submit_mode=inline, or a sync engine or libaio with offload",
        ));
    }
    if engine == "cpuio" {
        // cpuio's loop burns and sleeps: none of these has I/O of its own to act on.
        let io_only: [(bool, &'static str); 5] = [
            (c.offload, "io_submit_mode"),
            (c.flow > 0, "flow"),
            (c.latency_target_ns > 0, "latency_target"),
            (c.ss_dur_ns > 0, "steadystate_duration"),
            (c.rate_min.is_set(), "rate_min"),
        ];
        if let Some(&(_, option)) = io_only.iter().find(|x| x.0) {
            return Err(refuse(
                option,
                format!("{option} with ioengine=cpuio, which does no I/O for it to act on"),
                "the option in a job that does I/O",
            ));
        }
    }
    let cpuio = if engine == "cpuio" {
        let Some(load) = c.cpuload.filter(|&l| l > 0) else {
            return Err(refuse(
                if c.cpuload.is_some() {
                    "cpuload"
                } else {
                    "ioengine"
                },
                "ioengine=cpuio without cpuload (fio: cpu thread needs rate (cpuload=))",
                "cpuload=PERCENT, 1 to 100",
            ));
        };
        Some(CpuIo {
            load_pct: load,
            // engines/cpu.c: cpuchunks defaults to 50000 µs.
            chunk_ns: c.cpuchunks_us.unwrap_or(50_000) * 1_000,
            mode: c.cpumode.unwrap_or(CpuMode::Noop),
            exit_on_io_done: c.exit_on_io_done,
        })
    } else {
        None
    };
    if engine != "io_uring_cmd"
        && (c.write_mode.len() > 1
            || c.write_mode.first().is_some_and(|w| w.0 != WriteCmd::Write)
            || c.zone_append)
    {
        return Err(refuse(
            "write_mode",
            format!("write_mode is an option of ioengine=io_uring_cmd, not of ioengine={engine}"),
            "ioengine=io_uring_cmd",
        ));
    }
    if c.zone_append {
        return Err(refuse(
            "write_mode",
            "write_mode=zone_append: Zone Append is a command of zoned namespaces, and the platform's namespaces are conventional",
            "write_mode=write, zeroes, uncor or verify",
        ));
    }
    let latency_target = (c.latency_target_ns > 0).then(|| LatencyTarget {
        target_ns: c.latency_target_ns,
        window_ns: c.latency_window_ns,
        percentile: c.latency_percentile.unwrap_or(100.0),
        run: c.latency_run,
    });
    // init.c: ss_check_interval at least 1 s, and ss_dur a multiple of it and longer.
    let ss_interval_ms = c.ss_interval_ns.unwrap_or(1_000_000_000) / 1_000_000;
    let steadystate = if c.ss_dur_ns > 0 {
        if ss_interval_ms < 1000 {
            return Err(refuse(
                "steadystate_check_interval",
                "ss_check_interval must be at least 1s (fio refuses a shorter one)",
                "steadystate_check_interval=1s or longer",
            ));
        }
        let interval_ns = ss_interval_ms * 1_000_000;
        if !c.ss_dur_ns.is_multiple_of(interval_ns) || c.ss_dur_ns <= interval_ns {
            return Err(refuse(
                "steadystate_duration",
                format!(
                    "ss_duration {}us must be multiple of ss_check_interval {}us (fio's check)",
                    c.ss_dur_ns / 1_000,
                    interval_ns / 1_000
                ),
                "a steadystate_duration that is a multiple of the check interval and longer than it",
            ));
        }
        // options.c: the default criterion is iops_slope:0.01%.
        let (metric, slope, pct, limit) = c.ss.unwrap_or((SsMetric::Iops, true, true, 0.01));
        Some(SteadyState {
            metric,
            slope,
            pct,
            limit,
            duration_s: c.ss_dur_ns / 1_000_000_000,
            ramp_ns: c.ss_ramp_ns,
            interval_ms: ss_interval_ms,
        })
    } else {
        None
    };
    let zbd = if c.zbd {
        // zbd.c init_zone_info: emulated zones need their size.
        if c.zone_size == 0 {
            return Err(refuse(
                "zonemode",
                "zonemode=zbd without zonesize: the platform's namespaces are conventional, and fio emulates zones on them only of a given size (Specifying the zone size is mandatory for regular file/block device with --zonemode=zbd)",
                "zonesize=SIZE with zonemode=zbd",
            ));
        }
        if c.zone_size < 512 {
            return Err(refuse(
                "zonesize",
                "zonesize below 512 bytes (fio refuses it)",
                "zonesize of at least 512 bytes",
            ));
        }
        if c.zone_capacity > c.zone_size {
            return Err(refuse(
                "zonecapacity",
                "zonecapacity larger than zonesize (fio refuses it)",
                "zonecapacity <= zonesize",
            ));
        }
        let per_file = size.map(|s| s / files.max(1));
        Some(Zbd {
            zone_bytes: c.zone_size,
            capacity: if c.zone_capacity == 0 {
                c.zone_size
            } else {
                c.zone_capacity
            },
            zones: size_zones.or(per_file.map(|s| s.div_ceil(c.zone_size).max(1))),
            max_open: match (c.max_open_zones, c.job_max_open_zones) {
                (0, j) => j,
                (m, 0) => m,
                (m, j) => m.min(j),
            },
            reset_threshold: c.zone_reset_threshold,
            reset_frequency: c.zone_reset_frequency,
        })
    } else {
        None
    };
    Ok(Controls {
        submit_mode: if c.offload {
            SubmitMode::Offload
        } else {
            SubmitMode::Inline
        },
        sqpoll: c.sqpoll.then_some(SqPoll { cpu: c.sqpoll_cpu }),
        exit: ExitRule {
            exitall: c.exitall,
            what: c.exit_what,
            on_error: c.exitall_on_error,
        },
        flow: (c.flow > 0).then_some(Flow {
            id: c.flow_id,
            weight: c.flow,
            sleep_ns: c.flow_sleep_ns,
        }),
        rate_min: c.rate_min,
        latency_target,
        max_latency_ns: c.max_latency_ns,
        steadystate,
        cpuio,
        wait_for: c.wait_for.clone(),
        zbd,
        write_mix: if c.write_mode.iter().all(|w| w.0 == WriteCmd::Write) {
            Vec::new()
        } else {
            c.write_mode.clone()
        },
        num_range: c.num_range.unwrap_or(1),
        ss_interval_ms,
    })
}
