//! The fio options irqlab models; the ones it accepts because they have no meaning in
//! the model are in `inert`, the ones it refuses in `refused` (each with the reason,
//! listed in the README).

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
    /// `directory=a:b`: where the job's files are.
    Directory,
    /// `filename_format`: how fio names files it makes up.
    FilenameFormat,
    /// `nrfiles` (`nr_files`): how many files fio makes up for the job.
    NrFiles,
    /// `io_size` (`io_limit`): bytes of I/O (within `size`).
    IoSize,
    /// `filesize`: the size of each file (the byte budget when `size` is unset).
    FileSize,
    /// `fill_device` (`fill_fs`): write until the device is full (no byte budget).
    FillDevice,
    /// `libblkio_path`: the device libblkio's io_uring driver opens.
    LibblkioPath,
    /// `numa_cpu_nodes`: the NUMA nodes whose CPUs the job runs on.
    NumaCpuNodes,
    /// What a job does besides its I/O pattern (control_opts: submission, exitall, flow,
    /// minimum rates, latency targets, steady state, cpuio, trims, zones, write commands).
    Control(crate::control_opts::Ctl),
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
    /// Any value but an empty one.
    Text,
    /// A size (with fio's suffixes), a percentage (`30%`) or a count of zones (`8z`).
    Size,
    /// A decimal number.
    Float,
    /// One of these words, which ask for what the model does; any other value is
    /// refused for the reason given.
    Only(&'static [&'static str], &'static str),
}

pub struct OptDef {
    /// fio's o->name: the key written to JSON "job options".
    pub name: &'static str,
    pub aliases: &'static [&'static str],
    pub opt: Opt,
    /// For [`Opt::Ignored`]: why the option has no meaning in the model.
    pub no_meaning: &'static str,
}

pub(crate) const fn def(name: &'static str, aliases: &'static [&'static str], opt: Opt) -> OptDef {
    OptDef {
        name,
        aliases,
        opt,
        no_meaning: "",
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
    def("directory", &[], Opt::Directory),
    def("filename_format", &[], Opt::FilenameFormat),
    def("nrfiles", &["nr_files"], Opt::NrFiles),
    def("io_size", &["io_limit"], Opt::IoSize),
    def("filesize", &[], Opt::FileSize),
    def("fill_device", &["fill_fs"], Opt::FillDevice),
    def("libblkio_path", &[], Opt::LibblkioPath),
    def("numa_cpu_nodes", &[], Opt::NumaCpuNodes),
];

/// Every option irqlab takes: the ones it models, then the ones without meaning in it.
fn all() -> impl Iterator<Item = &'static OptDef> {
    OPTIONS
        .iter()
        .chain(crate::control_opts::CONTROL)
        .chain(crate::inert::INERT)
}

/// An option by name or alias (fio matches names exactly).
pub fn find(key: &str) -> Option<&'static OptDef> {
    all().find(|d| d.name == key || d.aliases.contains(&key))
}

/// The options accepted because they have no meaning in the model, with the reason.
pub fn no_meaning() -> impl Iterator<Item = (&'static str, &'static str)> {
    all()
        .filter(|d| matches!(d.opt, Opt::Ignored(_)))
        .map(|d| (d.name, d.no_meaning))
}

/// Every option irqlab accepts, by fio's name.
pub fn accepted() -> impl Iterator<Item = &'static str> {
    all().map(|d| d.name)
}

/// The closest accepted name or alias, if close enough to be a typo.
pub fn suggestion(key: &str) -> Option<&'static str> {
    let candidates = all().flat_map(|d| std::iter::once(&d.name).chain(d.aliases.iter()));
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
        let mut all: Vec<&str> = all()
            .flat_map(|d| std::iter::once(d.name).chain(d.aliases.iter().copied()))
            .collect();
        let n = all.len();
        all.sort_unstable();
        all.dedup();
        assert_eq!(all.len(), n);
        for name in crate::refused::names() {
            assert!(find(name).is_none(), "{name} is both accepted and refused");
        }
    }
}
