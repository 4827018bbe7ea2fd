//! Turns one job's options (the globals above it, then its own) into a [`JobSpec`],
//! applying fio's defaults and fix-ups.

use crate::control::{Controls, SubmitMode};
use crate::control_opts::WrittenControls;
use crate::engines::{self, EngineRule};
use crate::entry_value::{bad_value, bool01, flag, int, per_dir, shown, time_s, time_us};
use crate::error::JobFileError;
use crate::ini::{Entry, Section};
use crate::options::{self, Ignored, Opt};
use crate::spec::{
    BlockSizes, CpusPolicy, IoEngine, JobOption, JobSpec, LogOptions, RateLimit, RateProcess,
    RwMode, ThinkTime,
};
use crate::values;
use std::path::PathBuf;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Pattern {
    Read,
    Write,
    RandRead,
    RandWrite,
    ReadWrite,
    RandRw,
    Trim,
    RandTrim,
    TrimWrite,
    RandTrimWrite,
}

/// Option values as they accumulate; later options override earlier ones.
struct Builder {
    name: String,
    ioengine: IoEngine,
    rw: Pattern,
    rwmixread: u8,
    /// `bs=READ,WRITE`: either side may be left empty (`bs=,8k`).
    bs_read: u64,
    bs_write: u64,
    bs_trim: u64,
    iodepth: u32,
    batch_submit: u32,
    complete_min: u32,
    complete_max: Option<u32>,
    numjobs: u32,
    cpus_allowed: Option<Vec<usize>>,
    cpus_policy: CpusPolicy,
    filenames: Vec<String>,
    runtime_ns: Option<u64>,
    ramp_time_ns: u64,
    time_based: bool,
    size: Option<u64>,
    number_ios: Option<u64>,
    loops: u64,
    /// With the line that set it, to blame when the engine cannot poll.
    hipri: Option<(PathBuf, usize)>,
    direct: bool,
    group_reporting: bool,
    /// `bsrange` (read, write) and `bssplit` (read, write): they win over `bs`.
    bs_range: [Option<(u64, u64)>; 3],
    bs_split: [Option<Vec<(u64, u32)>>; 3],
    bs_unaligned: bool,
    rate: RateLimit,
    think_ns: u64,
    think_spin_ns: u64,
    think_blocks: u64,
    think_on_issue: bool,
    randseed: Option<u64>,
    randrepeat: bool,
    startdelay: (u64, u64),
    stonewall: bool,
    new_group: bool,
    description: Option<String>,
    logs: LogOptions,
    bw_avg_ms: Option<u64>,
    iops_avg_ms: Option<u64>,
    clat_percentiles: bool,
    /// `directory=a:b`: clone k's files are under directory k mod the count.
    directory: Vec<String>,
    filename_format: Option<String>,
    nrfiles: u32,
    io_size: Option<u64>,
    filesize: Option<u64>,
    /// `size=N%`, `fill_device`: a share of the device, whose capacity the platform
    /// does not give, so no byte budget.
    no_budget: bool,
    /// `size=Nz`: the job's range in zones.
    size_zones: Option<u64>,
    /// Where the third value of `rate`/`rate_iops` set a trim rate (refused).
    trim_rate: Option<(PathBuf, usize)>,
    /// submission, exitall, flow, minimum rates, latency targets, steady state, cpuio,
    /// zones and write commands (control_opts).
    ctl: WrittenControls,
    libblkio_path: Option<String>,
    numa_nodes: Option<Vec<usize>>,
    /// The engine as written (libblkio needs its driver).
    engine_name: String,
    uses_ncpus: bool,
    options: Vec<JobOption>,
}

impl Builder {
    /// fio's defaults (options.c `.def`): psync, rw=read, bs=4k, iodepth=1,
    /// iodepth_batch=1, iodepth_batch_complete_min=1, rwmixread=50, numjobs=1.
    fn new(name: &str) -> Self {
        Builder {
            name: name.to_string(),
            ioengine: IoEngine::Psync,
            rw: Pattern::Read,
            rwmixread: 50,
            bs_read: 4096,
            bs_write: 4096,
            bs_trim: 4096,
            iodepth: 1,
            batch_submit: 1,
            complete_min: 1,
            complete_max: None,
            numjobs: 1,
            cpus_allowed: None,
            cpus_policy: CpusPolicy::Shared,
            filenames: Vec::new(),
            runtime_ns: None,
            ramp_time_ns: 0,
            time_based: false,
            size: None,
            number_ios: None,
            loops: 1,
            hipri: None,
            direct: false,
            group_reporting: false,
            bs_range: [None, None, None],
            bs_split: [None, None, None],
            bs_unaligned: false,
            rate: RateLimit::default(),
            think_ns: 0,
            think_spin_ns: 0,
            think_blocks: 1,
            think_on_issue: false,
            randseed: None,
            randrepeat: true,
            startdelay: (0, 0),
            stonewall: false,
            new_group: false,
            description: None,
            logs: LogOptions {
                per_job: true,
                ..LogOptions::default()
            },
            bw_avg_ms: None,
            iops_avg_ms: None,
            clat_percentiles: true,
            directory: Vec::new(),
            filename_format: None,
            nrfiles: 1,
            io_size: None,
            filesize: None,
            no_budget: false,
            size_zones: None,
            trim_rate: None,
            ctl: WrittenControls::default(),
            libblkio_path: None,
            numa_nodes: None,
            engine_name: "psync".to_string(),
            uses_ncpus: false,
            options: Vec::new(),
        }
    }
}

/// Checks every option of a `[global]` section on its own, so mistakes in a global
/// with no job below it are still reported.
pub fn check_global(section: &Section) -> Result<(), JobFileError> {
    let kb_base = kb_base(section.entries.iter())?;
    engine_first(section.entries.iter())?;
    let mut b = Builder::new(&section.name);
    section
        .entries
        .iter()
        .try_for_each(|e| apply(&mut b, e, kb_base, true).map_err(|err| unset_note(err, e)))
}

/// A refused engine is the reason a job cannot run, whatever else it says: fio loads
/// the engine before it parses the engine's options.
fn engine_first<'a>(entries: impl Iterator<Item = &'a Entry>) -> Result<(), JobFileError> {
    let entries: Vec<&Entry> = entries.collect();
    if let Some(e) = entries
        .iter()
        .rfind(|e| e.key == "ioengine" && e.bad.is_none())
    {
        ioengine(e, e.value.as_deref().unwrap_or(""))?;
    }
    Ok(())
}

/// Builds the job of `section` with `globals` (the [global] sections above it, in order).
pub fn build(globals: &[&Section], section: &Section) -> Result<JobSpec, JobFileError> {
    let entries: Vec<(&Entry, bool)> = globals
        .iter()
        .flat_map(|g| g.entries.iter().map(|e| (e, true)))
        .chain(section.entries.iter().map(|e| (e, false)))
        .collect();
    let kb_base = kb_base(entries.iter().map(|e| e.0))?;
    engine_first(entries.iter().map(|e| e.0))?;
    let mut b = Builder::new(&section.name);
    for (e, global) in &entries {
        apply(&mut b, e, kb_base, *global).map_err(|err| unset_note(err, e))?;
    }
    finish(b, section)
}

/// fio parses kb_base before the sizes that depend on it; the last one written wins.
fn kb_base<'a>(entries: impl Iterator<Item = &'a Entry>) -> Result<u64, JobFileError> {
    let mut base = 1024;
    for e in entries.filter(|e| e.key == "kb_base") {
        base = match e.value.as_deref() {
            Some("1024") => 1024,
            Some("1000") => 1000,
            _ => return Err(bad_value(e, "a unit base", "kb_base=1024 or kb_base=1000")),
        };
    }
    Ok(base)
}

/// An error about a value that an unset `${VAR}` emptied says so.
fn unset_note(err: JobFileError, e: &Entry) -> JobFileError {
    if e.unset.is_empty() {
        return err;
    }
    let vars: Vec<String> = e.unset.iter().map(|v| format!("${{{v}}}")).collect();
    err.noting(&format!(
        " ({} not set: fio, and irqlab, put an empty string in its place)",
        vars.join(", ")
    ))
}

fn apply(b: &mut Builder, e: &Entry, kb_base: u64, global: bool) -> Result<(), JobFileError> {
    if let Some((what, expected)) = &e.bad {
        return Err(JobFileError::at(&e.file, e.line, what.clone(), *expected));
    }
    let Some(def) = options::find(&e.key) else {
        return Err(unknown(e));
    };
    b.uses_ncpus |= e.ncpus;
    let v = e.value.as_deref();
    // Everything but flags needs a value (parse.c: "Option %s requires an argument").
    let takes_bare = matches!(
        def.opt,
        Opt::TimeBased
            | Opt::Hipri
            | Opt::Direct
            | Opt::Buffered
            | Opt::GroupReporting
            | Opt::BsUnaligned
            | Opt::Stonewall
            | Opt::NewGroup
            | Opt::WriteLatLog
            | Opt::WriteBwLog
            | Opt::WriteIopsLog
            | Opt::FillDevice
            | Opt::Ignored(Ignored::Flag)
    ) || matches!(def.opt, Opt::Control(c) if c.is_flag());
    let text = match v {
        Some(t) if t.is_empty() && !takes_bare => {
            return Err(JobFileError::at(
                &e.file,
                e.line,
                format!("{} has an empty value", e.key),
                format!("{}=VALUE", e.key),
            ));
        }
        Some(t) => t,
        None if takes_bare => "",
        None => {
            return Err(JobFileError::at(
                &e.file,
                e.line,
                format!("option '{}' needs a value", e.key),
                format!("{}=VALUE", e.key),
            ));
        }
    };
    match def.opt {
        Opt::Name => b.name = text.to_string(),
        Opt::IoEngine => {
            b.ioengine = ioengine(e, text)?;
            b.engine_name = text.to_string();
        }
        Opt::Rw => b.rw = rw(e, text)?,
        // options.c str_rwmix_read_cb / str_rwmix_write_cb: each sets the other.
        Opt::RwMixRead => b.rwmixread = percent(e, text, kb_base)?,
        Opt::RwMixWrite => b.rwmixread = 100 - percent(e, text, kb_base)?,
        Opt::IoDepth => b.iodepth = count(e, text, kb_base, 1)?,
        Opt::BatchSubmit => b.batch_submit = count(e, text, kb_base, 0)?,
        Opt::BatchCompleteMin => b.complete_min = count(e, text, kb_base, 0)?,
        Opt::BatchCompleteMax => b.complete_max = Some(count(e, text, kb_base, 0)?),
        // fio.h REAL_MAX_JOBS: fio refuses to run more than 4096 jobs.
        Opt::NumJobs => {
            b.numjobs = count(e, text, kb_base, 1)?;
            if u64::from(b.numjobs) > crate::MAX_JOBS {
                return Err(out_of_range(e, "at most 4096 (fio's REAL_MAX_JOBS)"));
            }
        }
        Opt::CpusAllowed => {
            let cpus = values::cpu_list(text).map_err(|x| bad_value(e, "a CPU list", x))?;
            b.cpus_allowed = Some(cpus);
        }
        Opt::CpusPolicy => {
            b.cpus_policy = match text {
                "shared" => CpusPolicy::Shared,
                "split" => CpusPolicy::Split,
                _ => return Err(bad_value(e, "a CPU policy", "shared or split")),
            }
        }
        Opt::Filename => {
            b.filenames = values::file_list(text);
            if b.filenames.is_empty() {
                return Err(bad_value(e, "a file list", "filename=PATH[:PATH...]"));
            }
            if b.filenames.len() > values::MAX_FILENAMES {
                return Err(JobFileError::at(
                    &e.file,
                    e.line,
                    format!("filename= lists {} files", b.filenames.len()),
                    "at most 4096 names (a platform has at most 4096 devices)",
                ));
            }
        }
        // parse.c: runtime=0 means no time limit.
        Opt::Runtime => b.runtime_ns = Some(time_s(e, text)?).filter(|&t| t > 0),
        Opt::RampTime => b.ramp_time_ns = time_s(e, text)?,
        Opt::TimeBased => b.time_based = flag(e, v)?,
        Opt::Size => {
            // size=30% or size=8z: a share of the device or a count of its zones, whose
            // capacity the platform does not give.
            let zones = text
                .strip_suffix('z')
                .is_some_and(|n| !n.is_empty() && n.bytes().all(|c| c.is_ascii_digit()));
            if zones {
                b.size = None;
                b.no_budget = true;
                b.size_zones = text[..text.len() - 1].parse().ok();
            } else if let Some(pct) = text.strip_suffix('%') {
                match pct.trim().parse::<u8>() {
                    Ok(1..=100) => {
                        b.size = None;
                        b.no_budget = true;
                        b.size_zones = None;
                    }
                    _ => return Err(out_of_range(e, "a percentage from 1 to 100")),
                }
            } else {
                let s = values::size(text, kb_base).map_err(|x| bad_value(e, "a size", x))?;
                if s == 0 {
                    return Err(out_of_range(e, "a size above 0"));
                }
                b.size = Some(s);
                b.no_budget = false;
                b.size_zones = None;
            }
        }
        Opt::IoSize => {
            let s = values::size(text, kb_base).map_err(|x| bad_value(e, "a size", x))?;
            b.io_size = Some(s).filter(|&s| s > 0);
        }
        Opt::FileSize => {
            if text.contains(['-', ':']) {
                return Err(JobFileError::at(
                    &e.file,
                    e.line,
                    format!("{} is a range of file sizes", shown(e)),
                    "one size (files of random sizes are not modelled)",
                ));
            }
            let s = values::size(text, kb_base).map_err(|x| bad_value(e, "a size", x))?;
            b.filesize = Some(s).filter(|&s| s > 0);
        }
        Opt::FillDevice => b.no_budget = flag(e, v)?,
        Opt::Directory => {
            b.directory = values::file_list(text);
            if b.directory.is_empty() {
                return Err(bad_value(e, "a directory list", "directory=PATH[:PATH...]"));
            }
            if b.directory.len() > values::MAX_FILENAMES {
                return Err(out_of_range(e, "at most 4096 directories"));
            }
        }
        Opt::FilenameFormat => b.filename_format = Some(text.to_string()),
        Opt::NrFiles => {
            b.nrfiles = count(e, text, kb_base, 1)?;
            if b.nrfiles as usize > values::MAX_FILENAMES {
                return Err(out_of_range(
                    e,
                    "at most 4096 files (a platform has at most 4096 devices)",
                ));
            }
        }
        Opt::LibblkioPath => b.libblkio_path = Some(text.to_string()),
        Opt::NumaCpuNodes => {
            b.numa_nodes = if text == "all" {
                None
            } else {
                Some(values::cpu_list(text).map_err(|_| {
                    bad_value(e, "a NUMA node list", "all, or nodes such as 0 or 0-1")
                })?)
            };
        }
        // options.c number_ios default 0: no limit.
        Opt::NumberIos => {
            let n = int(e, text, kb_base)?;
            b.number_ios = Some(n).filter(|&n| n > 0);
        }
        Opt::Loops => b.loops = u64::from(count(e, text, kb_base, 1)?),
        Opt::Hipri => {
            b.hipri = flag(e, v)?.then(|| (e.file.clone(), e.line));
        }
        // fio itself wants direct=1; a bare `direct` is taken as 1 here. The model has
        // no page cache, so buffered I/O is refused.
        Opt::Direct => {
            b.direct = flag(e, v)?;
            if !b.direct {
                return Err(buffered(e));
            }
        }
        // options.c: buffered is `direct` negated.
        Opt::Buffered => {
            b.direct = !flag(e, v)?;
            if !b.direct {
                return Err(buffered(e));
            }
        }
        Opt::GroupReporting => b.group_reporting = flag(e, v)?,
        Opt::KbBase => {}
        Opt::Rate => {
            let (r, w, t) = per_dir(e, text, PER_DIR, |s| {
                values::size(s, kb_base).map_err(|x| bad_value(e, "a rate in bytes/s", x))
            })?;
            set_dirs(&mut b.rate.bytes_per_sec, r, w);
            b.trim_rate = t.filter(|&t| t > 0).map(|_| (e.file.clone(), e.line));
        }
        Opt::RateIops => {
            let (r, w, t) = per_dir(e, text, PER_DIR, |s| {
                values::int(s, kb_base).map_err(|x| bad_value(e, "an IOPS rate", x))
            })?;
            set_dirs(&mut b.rate.iops, r, w);
            b.trim_rate = t.filter(|&t| t > 0).map(|_| (e.file.clone(), e.line));
        }
        Opt::RateProcess => {
            b.rate.process = match text {
                "linear" => RateProcess::Linear,
                "poisson" => RateProcess::Poisson,
                _ => return Err(bad_value(e, "a rate process", "linear or poisson")),
            }
        }
        Opt::ThinkTime => b.think_ns = time_us(e, text)?,
        Opt::ThinkTimeSpin => b.think_spin_ns = time_us(e, text)?,
        Opt::ThinkTimeBlocks => b.think_blocks = u64::from(count(e, text, kb_base, 1)?),
        Opt::ThinkTimeBlocksType => {
            b.think_on_issue = match text {
                "complete" => false,
                "issue" => true,
                _ => return Err(bad_value(e, "a thinktime_blocks_type", "complete or issue")),
            }
        }
        Opt::Bs => {
            if text.contains('-') {
                return Err(JobFileError::at(
                    &e.file,
                    e.line,
                    format!(
                        "{} is a range; fio's bs takes one size per direction",
                        shown(e)
                    ),
                    "bsrange=LOW-HIGH for a range of block sizes (bs=4k-64k would be read as 4k by fio)",
                ));
            }
            (b.bs_read, b.bs_write, b.bs_trim) =
                block_sizes(e, text, kb_base, (b.bs_read, b.bs_write, b.bs_trim))?;
        }
        Opt::BsRange => {
            let (r, w, t) = per_dir(e, text, PER_DIR, |s| {
                values::range(s, |x| values::size(x, kb_base))
                    .map_err(|x| bad_value(e, "a block size range", x))
                    .and_then(|(lo, hi)| {
                        if lo == 0 {
                            Err(out_of_range(e, "block sizes above 0"))
                        } else {
                            Ok((lo, hi))
                        }
                    })
            })?;
            b.bs_range = [
                r.or(b.bs_range[0]),
                w.or(b.bs_range[1]),
                t.or(b.bs_range[2]),
            ];
        }
        Opt::BsSplit => {
            let (r, w, t) = per_dir(e, text, PER_DIR, |s| {
                values::bssplit(s, kb_base).map_err(|x| bad_value(e, "a block size split", x))
            })?;
            b.bs_split = [
                r.or(b.bs_split[0].take()),
                w.or(b.bs_split[1].take()),
                t.or(b.bs_split[2].take()),
            ];
        }
        Opt::BsUnaligned => b.bs_unaligned = flag(e, v)?,
        Opt::RandSeed => {
            b.randseed = Some(values::int(text, kb_base).map_err(|x| bad_value(e, "a seed", x))?);
        }
        Opt::RandRepeat => {
            b.randrepeat = bool01(e, text)?;
        }
        Opt::StartDelay => {
            b.startdelay = if text.contains('-') || text.contains(':') {
                values::range(text, values::time_ns).map_err(|x| bad_value(e, "a time range", x))?
            } else {
                let t = time_s(e, text)?;
                (t, t)
            }
        }
        Opt::Stonewall => b.stonewall = flag(e, v)?,
        Opt::NewGroup => b.new_group = flag(e, v)?,
        Opt::Description => b.description = Some(text.to_string()),
        // options.c str_write_*_log_cb: a bare flag uses the job name as the prefix.
        Opt::WriteLatLog => b.logs.lat = Some(text.to_string()),
        Opt::WriteBwLog => b.logs.bw = Some(text.to_string()),
        Opt::WriteIopsLog => b.logs.iops = Some(text.to_string()),
        Opt::LogAvgMsec => b.logs.avg_msec = u64::from(count(e, text, kb_base, 0)?),
        Opt::PerJobLogs => {
            b.logs.per_job = bool01(e, text)?;
        }
        Opt::BwAvgTime => b.bw_avg_ms = Some(u64::from(count(e, text, kb_base, 1)?)),
        Opt::IopsAvgTime => b.iops_avg_ms = Some(u64::from(count(e, text, kb_base, 1)?)),
        Opt::ClatPercentiles => {
            b.clat_percentiles = bool01(e, text)?;
        }
        Opt::Control(c) => b.ctl.apply(c, e, v, text, kb_base)?,
        Opt::Ignored(kind) => ignored(e, v, kind, kb_base)?,
    }
    b.options.push(JobOption {
        name: def.name.to_string(),
        value: v.unwrap_or("").to_string(),
        file: e.file.clone(),
        line: e.line,
        global,
    });
    Ok(())
}

fn buffered(e: &Entry) -> JobFileError {
    JobFileError::at(
        &e.file,
        e.line,
        format!(
            "{} asks for buffered I/O, which irqlab does not model (no page cache)",
            shown(e)
        ),
        "direct=1 (or no direct/buffered option: the model's I/O is always direct)",
    )
}

/// What rate, rate_iops, bsrange and bssplit say when given more than three parts.
const PER_DIR: &str = "VALUE or READ,WRITE";

fn set_dirs(dst: &mut [u64; 2], r: Option<u64>, w: Option<u64>) {
    if let Some(r) = r {
        dst[0] = r;
    }
    if let Some(w) = w {
        dst[1] = w;
    }
}

/// Where option `name` was last written for the job, else its section header.
fn where_set<'a>(b: &'a Builder, section: &'a Section, name: &str) -> (&'a std::path::Path, usize) {
    b.options
        .iter()
        .rev()
        .find(|o| o.name == name)
        .map_or((section.file.as_path(), section.line), |o| {
            (o.file.as_path(), o.line)
        })
}

/// The most file names fio makes up for one job (numjobs clones x nrfiles).
const MAX_MADE_UP_NAMES: u64 = 65_536;

/// fio's filesetup.c add_file and init.c make_filename: the files of clone `k`.
/// `filename=` names them (under `directory=`, clone k taking directory k mod the
/// count); otherwise `filename_format` (by default `$jobname.$jobnum.$filenum`) makes up
/// `nrfiles` of them.
fn clone_files(b: &Builder, k: u32) -> Vec<String> {
    let under = |name: &str| match b.directory.len() {
        0 => name.to_string(),
        n => format!(
            "{}/{name}",
            b.directory[k as usize % n].trim_end_matches('/')
        ),
    };
    if !b.filenames.is_empty() {
        return b.filenames.iter().map(|f| under(f)).collect();
    }
    if let Some(p) = &b.libblkio_path {
        return vec![p.clone()];
    }
    let format = b
        .filename_format
        .as_deref()
        .unwrap_or("$jobname.$jobnum.$filenum");
    (0..b.nrfiles)
        .map(|i| {
            under(
                &format
                    .replace("$jobname", &b.name)
                    .replace("$jobnum", &k.to_string())
                    .replace("$filenum", &i.to_string())
                    .replace("$clientuid", "0"),
            )
        })
        .collect()
}

fn finish(b: Builder, section: &Section) -> Result<JobSpec, JobFileError> {
    let made_up = if b.filenames.is_empty() {
        u64::from(b.nrfiles)
    } else {
        0
    };
    if made_up * u64::from(b.numjobs) > MAX_MADE_UP_NAMES {
        let (file, line) = where_set(&b, section, "nrfiles");
        return Err(JobFileError::at(
            file,
            line,
            format!(
                "job '{}' makes up {} file names ({} clones x {} files)",
                section.name,
                made_up * u64::from(b.numjobs),
                b.numjobs,
                b.nrfiles
            ),
            "at most 65536 file names for a job",
        ));
    }
    if b.engine_name == "libblkio" && !b.options.iter().any(|o| o.name == "libblkio_driver") {
        let (file, line) = where_set(&b, section, "ioengine");
        return Err(JobFileError::at(
            file,
            line,
            format!("job '{}': libblkio without libblkio_driver", section.name),
            "libblkio_driver=io_uring (the driver irqlab models)",
        ));
    }
    if let Some((file, line)) = &b.hipri
        && !matches!(b.ioengine, IoEngine::IoUring | IoEngine::Pvsync2)
    {
        return Err(JobFileError::at(
            file,
            *line,
            format!("hipri is not an option of ioengine={}", b.ioengine.name()),
            "hipri only with ioengine=io_uring or ioengine=pvsync2",
        ));
    }
    let read_pct = b.rwmixread;
    let rw = match b.rw {
        Pattern::Read => RwMode::Read,
        Pattern::Write => RwMode::Write,
        Pattern::RandRead => RwMode::RandRead,
        Pattern::RandWrite => RwMode::RandWrite,
        Pattern::ReadWrite => RwMode::ReadWrite { read_pct },
        Pattern::RandRw => RwMode::RandRw { read_pct },
        Pattern::Trim => RwMode::Trim,
        Pattern::RandTrim => RwMode::RandTrim,
        Pattern::TrimWrite => RwMode::TrimWrite,
        Pattern::RandTrimWrite => RwMode::RandTrimWrite,
    };
    if let Some((file, line)) = &b.trim_rate
        && rw.trims()
    {
        return Err(JobFileError::at(
            file,
            *line,
            format!(
                "job '{}' limits the rate of its trims: the rate clock of trims is not modelled",
                section.name
            ),
            "a rate for reads and writes only (RATE or READ,WRITE)",
        ));
    }
    // bssplit wins over bsrange, which wins over bs (init.c fixup_options fills
    // min_bs/max_bs from bs only when they are unset).
    let sizes_of = |d: usize| {
        if let Some(split) = &b.bs_split[d] {
            BlockSizes::Split(split.clone())
        } else if let Some((min, max)) = b.bs_range[d] {
            if min == max {
                BlockSizes::Fixed(min)
            } else {
                BlockSizes::Range { min, max }
            }
        } else {
            BlockSizes::Fixed([b.bs_read, b.bs_write, b.bs_trim][d])
        }
    };
    let block_sizes = [0, 1].map(sizes_of);
    let trim_sizes = sizes_of(2);
    // The smallest size of the direction the job does most: writes for a write-only
    // job, reads otherwise.
    let bs = if rw.read_pct() == 0 {
        block_sizes[1].min()
    } else {
        block_sizes[0].min()
    };
    if b.think_spin_ns > b.think_ns && b.think_ns > 0 {
        let (file, line) = where_set(&b, section, "thinktime_spin");
        return Err(JobFileError::at(
            file,
            line,
            format!(
                "job '{}' spins longer in thinktime_spin than its whole thinktime",
                section.name
            ),
            "thinktime_spin <= thinktime",
        ));
    }
    let thinktime = (b.think_ns > 0).then_some(ThinkTime {
        ns: b.think_ns,
        spin_ns: b.think_spin_ns,
        blocks: b.think_blocks,
        on_issue: b.think_on_issue,
    });
    // init.c: with a bandwidth or IOPS log and no bwavgtime/iopsavgtime of its own,
    // the sample interval is log_avg_msec (0: one sample per I/O).
    let bw_avg_ms = match (b.bw_avg_ms, &b.logs.bw) {
        (Some(ms), _) => ms,
        (None, Some(_)) => b.logs.avg_msec,
        (None, None) => 500,
    };
    let iops_avg_ms = match (b.iops_avg_ms, &b.logs.iops) {
        (Some(ms), _) => ms,
        (None, Some(_)) => b.logs.avg_msec,
        (None, None) => 500,
    };
    // The bytes of one pass: io_size, else size, else filesize for each file (init.c
    // fixup_options: size = filesize x nrfiles); none when the job fills a share of
    // the device. fio repeats the job `loops` times.
    let files = if b.filenames.is_empty() {
        u64::from(b.nrfiles)
    } else {
        b.filenames.len() as u64
    };
    let pass = if b.no_budget {
        None
    } else {
        b.io_size
            .or(b.size)
            .or_else(|| b.filesize.map(|f| f.saturating_mul(files)))
    };
    let ctl = control(&b, section, pass, files, rw)?;
    // The HOWTO: iodepth has no effect on synchronous engines; JobSpec pins it to 1.
    // With io_submit_mode=offload each of iodepth threads makes its own call.
    let iodepth = if b.ioengine.is_sync() && ctl.submit_mode == SubmitMode::Inline {
        1
    } else {
        b.iodepth
    };
    // init.c fixup_options: iodepth_batch 0 or above iodepth becomes iodepth.
    let batch_submit = if b.batch_submit == 0 || b.batch_submit > iodepth {
        iodepth
    } else {
        b.batch_submit
    };
    // backend.c: min_evts = min(iodepth_batch_complete_min, cur_depth).
    let complete_min = b.complete_min.min(iodepth);
    // init.c: max defaults to min (raised to min when below); backend.c reaps at least one
    // event when the queue is full; ioengines.c td_io_getevents caps max at the depth.
    let complete_max = b
        .complete_max
        .unwrap_or(0)
        .max(complete_min)
        .max(1)
        .min(iodepth);
    let size = match pass.map(|s| s.checked_mul(b.loops)) {
        None => None,
        Some(Some(total)) => Some(total),
        Some(None) => {
            let (file, line) = where_set(&b, section, "loops");
            return Err(JobFileError::at(
                file,
                line,
                format!(
                    "job '{}': size x loops = {} x {} is above 16 EiB",
                    section.name,
                    pass.unwrap_or(0),
                    b.loops
                ),
                "a smaller size or fewer loops",
            ));
        }
    };
    let filenames = clone_files(&b, 0);
    let clone_filenames: Vec<Vec<String>> =
        if (1..b.numjobs).any(|k| clone_files(&b, k) != filenames) {
            (0..b.numjobs).map(|k| clone_files(&b, k)).collect()
        } else {
            Vec::new()
        };
    Ok(JobSpec {
        name: b.name,
        file: section.file.clone(),
        line: section.line,
        ioengine: b.ioengine,
        rw,
        bs,
        block_sizes,
        bs_unaligned: b.bs_unaligned,
        iodepth,
        iodepth_batch_submit: batch_submit,
        iodepth_batch_complete_min: complete_min,
        iodepth_batch_complete_max: complete_max,
        numjobs: b.numjobs,
        cpus_allowed: b.cpus_allowed,
        cpus_allowed_policy: b.cpus_policy,
        filenames,
        clone_filenames,
        uses_ncpus: b.uses_ncpus,
        numa_cpu_nodes: b.numa_nodes,
        runtime_ns: b.runtime_ns,
        ramp_time_ns: b.ramp_time_ns,
        time_based: b.time_based,
        size,
        number_ios: b.number_ios,
        hipri: b.hipri.is_some(),
        direct: b.direct,
        group_reporting: b.group_reporting,
        rate: b.rate,
        thinktime,
        randseed: b.randseed,
        // init.c: "If randseed is set, that overrides randrepeat".
        randrepeat: b.randrepeat && b.randseed.is_none(),
        startdelay_ns: b.startdelay,
        stonewall: b.stonewall,
        new_group: b.new_group,
        description: b.description,
        logs: b.logs,
        bw_avg_ms,
        iops_avg_ms,
        bw_avg_set: b.bw_avg_ms.is_some(),
        iops_avg_set: b.iops_avg_ms.is_some(),
        clat_percentiles: b.clat_percentiles,
        trim_sizes,
        controls: ctl,
        options: b.options,
    })
}

/// The job's controls (control_opts::resolve), refused at the line of the option that
/// cannot run, with fio's checks of trims over several ranges (init.c).
fn control(
    b: &Builder,
    section: &Section,
    pass: Option<u64>,
    files: u64,
    rw: RwMode,
) -> Result<Controls, JobFileError> {
    let at = |option: &str, what: String, expected: String| {
        let (file, line) = where_set(b, section, option);
        JobFileError::at(
            file,
            line,
            format!("job '{}': {what}", section.name),
            expected,
        )
    };
    let ctl = crate::control_opts::resolve(&b.ctl, &b.engine_name, pass, b.size_zones, files)
        .map_err(|r| at(r.option, r.what, r.expected))?;
    // init.c fixup_options: a minimum is in bytes or in IOPS, and not above the rate.
    let m = &ctl.rate_min;
    if m.bytes_per_sec.iter().any(|&v| v > 0) && m.iops.iter().any(|&v| v > 0) {
        return Err(at(
            "rate_iops_min",
            "rate_min and rate_iops_min are mutually exclusive (fio refuses both)".into(),
            "one of rate_min and rate_iops_min".into(),
        ));
    }
    for d in 0..2 {
        let over_bytes =
            b.rate.bytes_per_sec[d] > 0 && b.rate.bytes_per_sec[d] < m.bytes_per_sec[d];
        let over_iops = b.rate.iops[d] > 0 && b.rate.iops[d] < m.iops[d];
        if over_bytes || over_iops {
            return Err(at(
                if over_bytes {
                    "rate_min"
                } else {
                    "rate_iops_min"
                },
                format!(
                    "minimum rate exceeds rate, ddir {d} (fio refuses a minimum above the {})",
                    if d == 0 { "read rate" } else { "write rate" }
                ),
                "a minimum at most the rate".into(),
            ));
        }
    }
    if rw.trims() && ctl.num_range > 1 {
        if matches!(rw, RwMode::TrimWrite | RwMode::RandTrimWrite) {
            return Err(at(
                "num_range",
                "trimwrite cannot be used with multiple ranges (fio refuses it)".into(),
                "num_range=1 with trimwrite".into(),
            ));
        }
        if b.engine_name != "io_uring_cmd" {
            return Err(at(
                "num_range",
                format!(
                    "can't use multiple ranges with IO engine {} (fio refuses it: only io_uring_cmd sends a trim of several ranges)",
                    b.engine_name
                ),
                "num_range=1, or ioengine=io_uring_cmd".into(),
            ));
        }
    }
    Ok(ctl)
}

/// The engine `text` names, as [`engines::ENGINES`] takes it.
fn ioengine(e: &Entry, text: &str) -> Result<IoEngine, JobFileError> {
    match engines::rule(text) {
        Some(EngineRule::Runs(engine, _)) => Ok(*engine),
        Some(EngineRule::Refused(why)) => Err(JobFileError::at(
            &e.file,
            e.line,
            format!("ioengine={text} cannot run in irqlab: {why}"),
            format!("one of {}", engines::runnable()),
        )),
        None => Err(bad_value(
            e,
            "an ioengine fio has",
            &format!("one of {}", engines::runnable()),
        )),
    }
}

/// `rw=randread:8`, `rw=read:-8k`, `rw=write:4k`: the offset modifier (a count for
/// random patterns, a size to skip for sequential ones, parse.c str_rw_cb) is accepted
/// and ignored, since offsets are not modelled.
fn rw(e: &Entry, text: &str) -> Result<Pattern, JobFileError> {
    const EXPECTED: &str = "read, write, randread, randwrite, rw (readwrite), randrw, trim, randtrim, \
                            trimwrite or randtrimwrite, optionally with an offset modifier :N or :SIZE (e.g. randread:8, write:4k, read:-8k)";
    let mode = match text.split_once(':') {
        Some((mode, n)) if values::size(n.strip_prefix(['-', '+']).unwrap_or(n), 1024).is_ok() => {
            mode
        }
        Some(_) => return Err(bad_value(e, "an I/O pattern", EXPECTED)),
        None => text,
    };
    Ok(match mode {
        "read" => Pattern::Read,
        "write" => Pattern::Write,
        "randread" => Pattern::RandRead,
        "randwrite" => Pattern::RandWrite,
        "rw" | "readwrite" => Pattern::ReadWrite,
        "randrw" => Pattern::RandRw,
        "trim" => Pattern::Trim,
        "randtrim" => Pattern::RandTrim,
        "trimwrite" => Pattern::TrimWrite,
        "randtrimwrite" => Pattern::RandTrimWrite,
        _ => return Err(bad_value(e, "an I/O pattern", EXPECTED)),
    })
}

/// `bs=4k` or `bs=4k,8k` (read, write[, trim]); an empty part keeps that side as it was.
fn block_sizes(
    e: &Entry,
    text: &str,
    kb_base: u64,
    (read, _, _): (u64, u64, u64),
) -> Result<(u64, u64, u64), JobFileError> {
    let parts: Vec<&str> = text.split(',').map(str::trim).collect();
    if parts.len() > 3 {
        return Err(bad_value(e, "a block size", "bs=SIZE or bs=READ,WRITE"));
    }
    let parse = |s: &str| -> Result<Option<u64>, JobFileError> {
        if s.is_empty() {
            return Ok(None);
        }
        match values::size(s, kb_base) {
            Ok(0) => Err(out_of_range(e, "a block size above 0")),
            Ok(n) => Ok(Some(n)),
            Err(x) => Err(bad_value(e, "a size", x)),
        }
    };
    let r = parse(parts[0])?;
    // options.c: a single value applies to reads, writes and trims; two values give
    // trims the writes' size.
    let w = match parts.get(1) {
        Some(p) => parse(p)?,
        None => r,
    };
    let t = match parts.get(2) {
        Some(p) => parse(p)?,
        None => w,
    };
    if r.is_none() && w.is_none() && t.is_none() {
        return Err(bad_value(e, "a block size", "bs=SIZE or bs=READ,WRITE"));
    }
    Ok((r.unwrap_or(read), w.unwrap_or(4096), t.unwrap_or(4096)))
}

fn count(e: &Entry, text: &str, kb_base: u64, min: u32) -> Result<u32, JobFileError> {
    let n = int(e, text, kb_base)?;
    match u32::try_from(n) {
        Ok(n) if n >= min => Ok(n),
        Ok(_) => Err(out_of_range(e, &format!("at least {min}"))),
        Err(_) => Err(out_of_range(e, "a number below 4294967296")),
    }
}

fn percent(e: &Entry, text: &str, kb_base: u64) -> Result<u8, JobFileError> {
    let n = int(e, text, kb_base)?;
    u8::try_from(n)
        .ok()
        .filter(|&p| p <= 100)
        .ok_or_else(|| out_of_range(e, "a percentage from 0 to 100"))
}

fn ignored(e: &Entry, v: Option<&str>, kind: Ignored, kb_base: u64) -> Result<(), JobFileError> {
    match kind {
        Ignored::Flag => flag(e, v).map(drop),
        Ignored::Bool => bool01(e, v.unwrap_or("")).map(drop),
        Ignored::Int => int(e, v.unwrap_or(""), kb_base).map(drop),
        Ignored::Choice(words) => {
            if words.contains(&v.unwrap_or("")) {
                Ok(())
            } else {
                Err(bad_value(
                    e,
                    "a valid value",
                    &format!("one of {}", words.join(", ")),
                ))
            }
        }
        Ignored::Text => Ok(()),
        Ignored::Size => {
            let t = v.unwrap_or("");
            let pct = t
                .strip_suffix('%')
                .is_some_and(|p| p.trim().parse::<u8>().is_ok_and(|p| p <= 100));
            let zones = t
                .strip_suffix('z')
                .is_some_and(|n| !n.is_empty() && n.bytes().all(|c| c.is_ascii_digit()));
            if pct || zones || values::size(t, kb_base).is_ok() {
                Ok(())
            } else {
                Err(bad_value(
                    e,
                    "a size",
                    "a size with an optional k/m/g/t suffix, a percentage (30%) or zones (8z)",
                ))
            }
        }
        Ignored::Float => {
            let t = v.unwrap_or("");
            let t = t.strip_suffix('%').unwrap_or(t);
            match t.trim().parse::<f64>() {
                Ok(x) if x.is_finite() => Ok(()),
                _ => Err(bad_value(e, "a number", "a decimal number (e.g. 0.5)")),
            }
        }
        Ignored::Only(words, why) => {
            let t = v.unwrap_or("");
            if words.contains(&t) {
                Ok(())
            } else {
                Err(JobFileError::at(
                    &e.file,
                    e.line,
                    format!("{} is not modelled: {why}", shown(e)),
                    format!("{}={}", e.key, words.join(" or ")),
                ))
            }
        }
    }
}

/// What crates/irqlab-fio/README.md is, for messages about options.
const OPTION_LIST: &str =
    "crates/irqlab-fio/README.md lists every fio option and what irqlab does with it";

fn unknown(e: &Entry) -> JobFileError {
    if let Some(why) = crate::refused::reason(&e.key) {
        return JobFileError::at(
            &e.file,
            e.line,
            format!("unsupported option '{}' ({why})", e.key),
            format!("a job without it ({OPTION_LIST})"),
        );
    }
    let hint = options::suggestion(&e.key)
        .map(|s| format!(" (did you mean '{s}'?)"))
        .unwrap_or_default();
    JobFileError::at(
        &e.file,
        e.line,
        format!("unknown option '{}', not one of fio's", e.key),
        format!("a fio option; {OPTION_LIST}{hint}"),
    )
}

fn out_of_range(e: &Entry, expected: &str) -> JobFileError {
    JobFileError::at(
        &e.file,
        e.line,
        format!("{} is out of range", shown(e)),
        expected,
    )
}
