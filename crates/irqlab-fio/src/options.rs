//! The fio options irqlab understands, the ones it accepts because they have no
//! meaning in the model (each with the reason, listed in the README), and the ones it
//! refuses with a reason.

/// What an option sets.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Opt {
    Name,
    IoEngine,
    Rw,
    RwMixRead,
    RwMixWrite,
    Bs,
    IoDepth,
    BatchSubmit,
    BatchCompleteMin,
    BatchCompleteMax,
    NumJobs,
    CpusAllowed,
    CpusPolicy,
    Filename,
    Runtime,
    RampTime,
    TimeBased,
    Size,
    NumberIos,
    Loops,
    Hipri,
    Direct,
    Buffered,
    GroupReporting,
    KbBase,
    Rate,
    RateIops,
    RateProcess,
    ThinkTime,
    ThinkTimeSpin,
    ThinkTimeBlocks,
    ThinkTimeBlocksType,
    BsRange,
    BsSplit,
    BsUnaligned,
    RandSeed,
    RandRepeat,
    StartDelay,
    Stonewall,
    NewGroup,
    Description,
    WriteLatLog,
    WriteBwLog,
    WriteIopsLog,
    LogAvgMsec,
    PerJobLogs,
    BwAvgTime,
    IopsAvgTime,
    ClatPercentiles,
    /// Accepted and checked for a well-formed value; it changes nothing the model has
    /// (the reason is in [`OptDef::no_meaning`] and the README).
    Ignored(Ignored),
}

/// The value an option without meaning in the model must still have, so typos in
/// values are caught.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ignored {
    /// FIO_OPT_STR_SET: bare, 0 or 1.
    Flag,
    /// FIO_OPT_BOOL: 0 or 1.
    Bool,
    /// A whole number (size suffixes allowed, as fio's FIO_OPT_INT).
    Int,
    /// One of these words.
    Choice(&'static [&'static str]),
}

pub struct OptDef {
    /// fio's o->name: the key written to JSON "job options".
    pub name: &'static str,
    pub aliases: &'static [&'static str],
    pub opt: Opt,
    /// For [`Opt::Ignored`]: why the option has no meaning in the model.
    pub no_meaning: &'static str,
}

const fn def(name: &'static str, aliases: &'static [&'static str], opt: Opt) -> OptDef {
    OptDef {
        name,
        aliases,
        opt,
        no_meaning: "",
    }
}

/// An option accepted because it has no meaning in the model, with the reason.
const fn inert(
    name: &'static str,
    aliases: &'static [&'static str],
    kind: Ignored,
    why: &'static str,
) -> OptDef {
    OptDef {
        name,
        aliases,
        opt: Opt::Ignored(kind),
        no_meaning: why,
    }
}

/// Names and aliases as in fio's options.c.
pub const OPTIONS: &[OptDef] = &[
    def("name", &[], Opt::Name),
    def("ioengine", &[], Opt::IoEngine),
    def("rw", &["readwrite"], Opt::Rw),
    def("rwmixread", &[], Opt::RwMixRead),
    def("rwmixwrite", &[], Opt::RwMixWrite),
    def("bs", &["blocksize"], Opt::Bs),
    def("iodepth", &[], Opt::IoDepth),
    def("iodepth_batch", &["iodepth_batch_submit"], Opt::BatchSubmit),
    def(
        "iodepth_batch_complete_min",
        &["iodepth_batch_complete"],
        Opt::BatchCompleteMin,
    ),
    def("iodepth_batch_complete_max", &[], Opt::BatchCompleteMax),
    def("numjobs", &[], Opt::NumJobs),
    def("cpus_allowed", &[], Opt::CpusAllowed),
    def("cpus_allowed_policy", &[], Opt::CpusPolicy),
    def("filename", &[], Opt::Filename),
    def("runtime", &["timeout"], Opt::Runtime),
    def("ramp_time", &[], Opt::RampTime),
    def("time_based", &[], Opt::TimeBased),
    def("size", &[], Opt::Size),
    def("number_ios", &[], Opt::NumberIos),
    def("loops", &[], Opt::Loops),
    def("hipri", &[], Opt::Hipri),
    def("direct", &[], Opt::Direct),
    def("buffered", &[], Opt::Buffered),
    def("group_reporting", &[], Opt::GroupReporting),
    def("kb_base", &[], Opt::KbBase),
    def("rate", &[], Opt::Rate),
    def("rate_iops", &[], Opt::RateIops),
    def("rate_process", &[], Opt::RateProcess),
    def("thinktime", &[], Opt::ThinkTime),
    def("thinktime_spin", &[], Opt::ThinkTimeSpin),
    def("thinktime_blocks", &[], Opt::ThinkTimeBlocks),
    def("thinktime_blocks_type", &[], Opt::ThinkTimeBlocksType),
    def("bsrange", &["blocksize_range"], Opt::BsRange),
    def("bssplit", &[], Opt::BsSplit),
    def("bs_unaligned", &["blocksize_unaligned"], Opt::BsUnaligned),
    def("randseed", &[], Opt::RandSeed),
    def("randrepeat", &["allrandrepeat"], Opt::RandRepeat),
    def("startdelay", &[], Opt::StartDelay),
    def("stonewall", &["wait_for_previous"], Opt::Stonewall),
    def("new_group", &[], Opt::NewGroup),
    def("description", &[], Opt::Description),
    def("write_lat_log", &[], Opt::WriteLatLog),
    def("write_bw_log", &[], Opt::WriteBwLog),
    def("write_iops_log", &[], Opt::WriteIopsLog),
    def("log_avg_msec", &[], Opt::LogAvgMsec),
    def("per_job_logs", &[], Opt::PerJobLogs),
    def("bwavgtime", &[], Opt::BwAvgTime),
    def("iopsavgtime", &[], Opt::IopsAvgTime),
    def("clat_percentiles", &[], Opt::ClatPercentiles),
    // No meaning in the model: they change data contents, file handling or the
    // addresses of I/Os, none of which the completion path depends on here.
    inert(
        "thread",
        &[],
        Ignored::Flag,
        "threads and processes are the same kind of task to the model's scheduler",
    ),
    inert(
        "norandommap",
        &[],
        Ignored::Flag,
        "offsets are not modelled: service times do not depend on the LBA",
    ),
    inert(
        "random_generator",
        &[],
        Ignored::Choice(&["tausworthe", "lfsr", "tausworthe64"]),
        "the model draws from its own seeded generator (randseed still seeds it)",
    ),
    inert(
        "refill_buffers",
        &[],
        Ignored::Flag,
        "buffer contents are not modelled",
    ),
    inert(
        "scramble_buffers",
        &[],
        Ignored::Bool,
        "buffer contents are not modelled",
    ),
    inert(
        "invalidate",
        &[],
        Ignored::Bool,
        "there is no page cache in the model (every I/O is direct)",
    ),
    inert(
        "fixedbufs",
        &[],
        Ignored::Flag,
        "the engine's per-I/O costs come from the platform file (engine.io_uring.*): set them for the buffer setup you measured",
    ),
    inert(
        "registerfiles",
        &[],
        Ignored::Flag,
        "the engine's per-I/O costs come from the platform file (engine.io_uring.*): set them for the file setup you measured",
    ),
    inert(
        "nonvectored",
        &[],
        Ignored::Int,
        "the engine's per-I/O costs come from the platform file (engine.io_uring.*)",
    ),
    inert(
        "offset",
        &[],
        Ignored::Int,
        "offsets are not modelled: service times do not depend on the LBA",
    ),
];

/// Real fio options that irqlab refuses, with the reason.
const UNSUPPORTED: &[(&str, &str)] = &[
    (
        "sqthread_poll",
        "the io_uring SQPOLL thread is not modelled",
    ),
    (
        "sqthread_poll_cpu",
        "the io_uring SQPOLL thread is not modelled",
    ),
    ("cpumask", "use cpus_allowed"),
    (
        "rate_min",
        "minimum-rate checks that end a job are not modelled",
    ),
    (
        "ratemin",
        "minimum-rate checks that end a job are not modelled",
    ),
    (
        "rate_iops_min",
        "minimum-rate checks that end a job are not modelled",
    ),
    ("rate_cycle", "minimum-rate checks are not modelled"),
    ("ratecycle", "minimum-rate checks are not modelled"),
    (
        "rate_ignore_thinktime",
        "the rate clock always counts think time",
    ),
    (
        "thinktime_iotime",
        "think time comes from thinktime_blocks only",
    ),
    ("thinkcycles", "use thinktime_spin"),
    ("log_offset", "offsets are not modelled"),
    ("log_prio", "I/O priorities are not modelled"),
    ("log_max_value", "logs hold window averages"),
    ("log_issue_time", "logs hold completion times"),
    ("write_hist_log", "histogram logs are not written"),
    ("log_hist_msec", "histogram logs are not written"),
    ("log_compression", "logs are written uncompressed"),
    ("log_store_compressed", "logs are written uncompressed"),
    ("slat_percentiles", "reports give clat percentiles"),
    ("disable_lat", "latencies are always recorded"),
    ("disable_clat", "latencies are always recorded"),
    ("disable_slat", "latencies are always recorded"),
    ("disable_bw_measurement", "bandwidth is always recorded"),
    ("iodepth_low", "irqlab refills the queue to iodepth at once"),
    ("verify", "data verification is not modelled"),
    (
        "unified_rw_reporting",
        "reads and writes are always reported apart",
    ),
    ("nrfiles", "use filename=a:b to name the files"),
    ("directory", "use filename= with full paths"),
    (
        "percentile_list",
        "reports use fio's default percentile list",
    ),
    ("lat_percentiles", "reports give clat percentiles"),
    ("cmdprio_percentage", "I/O priorities are not modelled"),
];

/// An option by name or alias (fio matches names exactly).
pub fn find(key: &str) -> Option<&'static OptDef> {
    OPTIONS
        .iter()
        .find(|d| d.name == key || d.aliases.contains(&key))
}

/// Why a known-but-unsupported fio option is refused.
pub fn unsupported_reason(key: &str) -> Option<&'static str> {
    UNSUPPORTED
        .iter()
        .find(|(name, _)| *name == key)
        .map(|(_, why)| *why)
}

/// The options accepted because they have no meaning in the model, with the reason.
pub fn no_meaning() -> impl Iterator<Item = (&'static str, &'static str)> {
    OPTIONS
        .iter()
        .filter(|d| matches!(d.opt, Opt::Ignored(_)))
        .map(|d| (d.name, d.no_meaning))
}

/// Every option irqlab accepts, by fio's name.
pub fn accepted() -> impl Iterator<Item = &'static str> {
    OPTIONS.iter().map(|d| d.name)
}

/// Every accepted option name, for "expected one of ...".
pub fn all_names() -> String {
    let names: Vec<&str> = OPTIONS.iter().map(|d| d.name).collect();
    names.join(", ")
}

/// The closest accepted name or alias, if close enough to be a typo.
pub fn suggestion(key: &str) -> Option<&'static str> {
    let candidates = OPTIONS
        .iter()
        .flat_map(|d| std::iter::once(&d.name).chain(d.aliases.iter()));
    let (best, dist) = candidates
        .map(|c| (*c, edit_distance(key, c)))
        .min_by_key(|&(_, d)| d)?;
    let limit = (key.chars().count() / 3).max(2);
    (dist <= limit).then_some(best)
}

/// Levenshtein distance over chars.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur = vec![0; b.len() + 1];
    for (i, ca) in a.chars().enumerate() {
        cur[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != *cb);
            cur[j + 1] = sub.min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aliases_resolve_to_fio_names() {
        assert_eq!(find("readwrite").map(|d| d.name), Some("rw"));
        assert_eq!(find("blocksize").map(|d| d.name), Some("bs"));
        assert_eq!(
            find("iodepth_batch_submit").map(|d| d.name),
            Some("iodepth_batch")
        );
        assert_eq!(
            find("iodepth_batch_complete").map(|d| d.name),
            Some("iodepth_batch_complete_min")
        );
        assert!(find("IODEPTH").is_none());
    }

    #[test]
    fn typos_get_suggestions() {
        assert_eq!(suggestion("iodepht"), Some("iodepth"));
        assert_eq!(suggestion("runtim"), Some("runtime"));
        assert_eq!(suggestion("filenme"), Some("filename"));
        assert_eq!(suggestion("zzzzzzzzzz"), None);
    }

    #[test]
    fn names_are_unique() {
        let mut all: Vec<&str> = OPTIONS
            .iter()
            .flat_map(|d| std::iter::once(d.name).chain(d.aliases.iter().copied()))
            .collect();
        let n = all.len();
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), n);
        for (name, _) in UNSUPPORTED {
            assert!(find(name).is_none(), "{name} is both supported and not");
        }
    }
}
