//! Turns one job's options (the globals above it, then its own) into a [`JobSpec`],
//! applying fio's defaults and fix-ups.

use crate::error::JobFileError;
use crate::ini::{Entry, Section};
use crate::options::{self, Ignored, Opt};
use crate::spec::{CpusPolicy, IoEngine, JobSpec, RwMode};
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
    options: Vec<(String, String)>,
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
            options: Vec::new(),
        }
    }
}

/// Checks every option of a `[global]` section on its own, so mistakes in a global
/// with no job below it are still reported.
pub fn check_global(section: &Section) -> Result<(), JobFileError> {
    let kb_base = kb_base(section.entries.iter())?;
    let mut b = Builder::new(&section.name);
    section
        .entries
        .iter()
        .try_for_each(|e| apply(&mut b, e, kb_base))
}

/// Builds the job of `section` with `globals` (the [global] sections above it, in order).
pub fn build(globals: &[&Section], section: &Section) -> Result<JobSpec, JobFileError> {
    let entries: Vec<&Entry> = globals
        .iter()
        .flat_map(|g| g.entries.iter())
        .chain(section.entries.iter())
        .collect();
    let kb_base = kb_base(entries.iter().copied())?;
    let mut b = Builder::new(&section.name);
    for e in &entries {
        apply(&mut b, e, kb_base)?;
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

fn apply(b: &mut Builder, e: &Entry, kb_base: u64) -> Result<(), JobFileError> {
    let Some(def) = options::find(&e.key) else {
        return Err(unknown(e));
    };
    let v = e.value.as_deref();
    // Everything but flags needs a value (parse.c: "Option %s requires an argument").
    let takes_bare = matches!(
        def.opt,
        Opt::TimeBased
            | Opt::Hipri
            | Opt::Direct
            | Opt::Buffered
            | Opt::GroupReporting
            | Opt::Ignored(Ignored::Flag)
    );
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
        Opt::IoEngine => b.ioengine = ioengine(e, text)?,
        Opt::Rw => b.rw = rw(e, text)?,
        // options.c str_rwmix_read_cb / str_rwmix_write_cb: each sets the other.
        Opt::RwMixRead => b.rwmixread = percent(e, text, kb_base)?,
        Opt::RwMixWrite => b.rwmixread = 100 - percent(e, text, kb_base)?,
        Opt::Bs => (b.bs_read, b.bs_write) = block_sizes(e, text, kb_base, b.bs_read)?,
        Opt::IoDepth => b.iodepth = count(e, text, kb_base, 1)?,
        Opt::BatchSubmit => b.batch_submit = count(e, text, kb_base, 0)?,
        Opt::BatchCompleteMin => b.complete_min = count(e, text, kb_base, 0)?,
        Opt::BatchCompleteMax => b.complete_max = Some(count(e, text, kb_base, 0)?),
        Opt::NumJobs => b.numjobs = count(e, text, kb_base, 1)?,
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
        }
        // parse.c: runtime=0 means no time limit.
        Opt::Runtime => b.runtime_ns = Some(time(e, text)?).filter(|&t| t > 0),
        Opt::RampTime => b.ramp_time_ns = time(e, text)?,
        Opt::TimeBased => b.time_based = flag(e, v)?,
        Opt::Size => {
            let s = values::size(text, kb_base).map_err(|x| bad_value(e, "a size", x))?;
            if s == 0 {
                return Err(out_of_range(e, "a size above 0"));
            }
            b.size = Some(s);
        }
        // options.c number_ios default 0: no limit.
        Opt::NumberIos => {
            let n = values::int(text, kb_base).map_err(|x| bad_value(e, "a number", x))?;
            b.number_ios = Some(n).filter(|&n| n > 0);
        }
        Opt::Loops => b.loops = u64::from(count(e, text, kb_base, 1)?),
        Opt::Hipri => {
            b.hipri = flag(e, v)?.then(|| (e.file.clone(), e.line));
        }
        // fio itself wants direct=1; a bare `direct` is taken as 1 here.
        Opt::Direct => b.direct = flag(e, v)?,
        // options.c: buffered is `direct` negated.
        Opt::Buffered => b.direct = !flag(e, v)?,
        Opt::GroupReporting => b.group_reporting = flag(e, v)?,
        Opt::KbBase => {}
        Opt::Ignored(kind) => ignored(e, v, kind, kb_base)?,
    }
    b.options
        .push((def.name.to_string(), v.unwrap_or("").to_string()));
    Ok(())
}

fn finish(b: Builder, section: &Section) -> Result<JobSpec, JobFileError> {
    let at = |what: String, expected: &str| {
        JobFileError::at(&section.file, section.line, what, expected)
    };
    if b.filenames.is_empty() {
        return Err(at(
            format!("job '{}' has no filename", section.name),
            "filename=PATH in the job or in a [global] section above it",
        ));
    }
    if b.time_based && b.runtime_ns.is_none() {
        return Err(at(
            format!("job '{}' is time_based but has no runtime", section.name),
            "runtime=DURATION (e.g. runtime=30s) with time_based",
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
    };
    // One block size per job: a write-only job uses the write size, any other the read
    // size (the first of `bs=READ,WRITE`).
    let bs = if rw.read_pct() == 0 {
        b.bs_write
    } else {
        b.bs_read
    };
    // The HOWTO: iodepth has no effect on synchronous engines; JobSpec pins it to 1.
    let iodepth = if b.ioengine.is_sync() { 1 } else { b.iodepth };
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
    // fio repeats the job `loops` times; with a byte budget that is loops * size.
    let size = b.size.map(|s| s.saturating_mul(b.loops));
    Ok(JobSpec {
        name: b.name,
        file: section.file.clone(),
        line: section.line,
        ioengine: b.ioengine,
        rw,
        bs,
        iodepth,
        iodepth_batch_submit: batch_submit,
        iodepth_batch_complete_min: complete_min,
        iodepth_batch_complete_max: complete_max,
        numjobs: b.numjobs,
        cpus_allowed: b.cpus_allowed,
        cpus_allowed_policy: b.cpus_policy,
        filenames: b.filenames,
        runtime_ns: b.runtime_ns,
        ramp_time_ns: b.ramp_time_ns,
        time_based: b.time_based,
        size,
        number_ios: b.number_ios,
        hipri: b.hipri.is_some(),
        direct: b.direct,
        group_reporting: b.group_reporting,
        options: b.options,
    })
}

fn ioengine(e: &Entry, text: &str) -> Result<IoEngine, JobFileError> {
    Ok(match text {
        "libaio" => IoEngine::Libaio,
        "io_uring" => IoEngine::IoUring,
        "pvsync2" => IoEngine::Pvsync2,
        // One blocking syscall per I/O, whatever the flavour: the model is psync's.
        "psync" | "sync" | "vsync" | "pvsync" => IoEngine::Psync,
        _ => {
            return Err(bad_value(
                e,
                "a supported ioengine",
                "libaio, io_uring, pvsync2 or psync (sync, vsync and pvsync run as psync)",
            ));
        }
    })
}

/// `rw=randread:8`: the `:N` offset modifier is accepted and ignored.
fn rw(e: &Entry, text: &str) -> Result<Pattern, JobFileError> {
    const EXPECTED: &str = "read, write, randread, randwrite, rw (readwrite) or randrw, \
                            optionally with :N";
    let mode = match text.split_once(':') {
        Some((mode, n)) if n.bytes().all(|c| c.is_ascii_digit()) => mode,
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
        "trim" | "randtrim" | "trimwrite" | "randtrimwrite" => {
            return Err(JobFileError::at(
                &e.file,
                e.line,
                format!(
                    "{}={text} is not supported (irqlab models reads and writes)",
                    e.key
                ),
                EXPECTED,
            ));
        }
        _ => return Err(bad_value(e, "an I/O pattern", EXPECTED)),
    })
}

/// `bs=4k` or `bs=4k,8k` (read, write[, trim]); an empty part keeps that side as it was.
fn block_sizes(e: &Entry, text: &str, kb_base: u64, read: u64) -> Result<(u64, u64), JobFileError> {
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
    // options.c: a single value applies to reads, writes and trims.
    let w = match parts.get(1) {
        Some(p) => parse(p)?,
        None => r,
    };
    if let Some(t) = parts.get(2) {
        parse(t)?;
    }
    if r.is_none() && w.is_none() {
        return Err(bad_value(e, "a block size", "bs=SIZE or bs=READ,WRITE"));
    }
    Ok((r.unwrap_or(read), w.unwrap_or(4096)))
}

fn count(e: &Entry, text: &str, kb_base: u64, min: u32) -> Result<u32, JobFileError> {
    let n = values::int(text, kb_base).map_err(|x| bad_value(e, "a number", x))?;
    match u32::try_from(n) {
        Ok(n) if n >= min => Ok(n),
        Ok(_) => Err(out_of_range(e, &format!("at least {min}"))),
        Err(_) => Err(out_of_range(e, "a number below 4294967296")),
    }
}

fn percent(e: &Entry, text: &str, kb_base: u64) -> Result<u8, JobFileError> {
    let n = values::int(text, kb_base).map_err(|x| bad_value(e, "a number", x))?;
    u8::try_from(n)
        .ok()
        .filter(|&p| p <= 100)
        .ok_or_else(|| out_of_range(e, "a percentage from 0 to 100"))
}

fn time(e: &Entry, text: &str) -> Result<u64, JobFileError> {
    values::time_ns(text).map_err(|x| bad_value(e, "a time", x))
}

fn flag(e: &Entry, v: Option<&str>) -> Result<bool, JobFileError> {
    values::flag(v).map_err(|x| bad_value(e, "a boolean", x))
}

fn ignored(e: &Entry, v: Option<&str>, kind: Ignored, kb_base: u64) -> Result<(), JobFileError> {
    match kind {
        Ignored::Flag => flag(e, v).map(drop),
        Ignored::Bool => values::bool01(v.unwrap_or(""))
            .map(drop)
            .map_err(|x| bad_value(e, "a boolean", x)),
        Ignored::Text => Ok(()),
        Ignored::Int => values::int(v.unwrap_or(""), kb_base)
            .map(drop)
            .map_err(|x| bad_value(e, "a number", x)),
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
    }
}

fn unknown(e: &Entry) -> JobFileError {
    if let Some(why) = options::unsupported_reason(&e.key) {
        return JobFileError::at(
            &e.file,
            e.line,
            format!("unsupported option '{}' ({why})", e.key),
            format!("one of {}", options::all_names()),
        );
    }
    let hint = options::suggestion(&e.key)
        .map(|s| format!(" (did you mean '{s}'?)"))
        .unwrap_or_default();
    JobFileError::at(
        &e.file,
        e.line,
        format!("unknown or unsupported option '{}'", e.key),
        format!("one of {}{hint}", options::all_names()),
    )
}

fn shown(e: &Entry) -> String {
    match &e.value {
        Some(v) => format!("{}={v}", e.key),
        None => e.key.clone(),
    }
}

fn bad_value(e: &Entry, noun: &str, expected: &str) -> JobFileError {
    JobFileError::at(
        &e.file,
        e.line,
        format!("{} is not {noun}", shown(e)),
        expected,
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
