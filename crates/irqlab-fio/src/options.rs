//! The fio options irqlab understands, the ones it accepts and ignores, and the
//! ones it refuses with a reason.

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
    /// Accepted, checked for a well-formed value, and otherwise ignored.
    Ignored(Ignored),
}

/// The value an ignored option must still have, so typos in values are caught.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ignored {
    /// FIO_OPT_STR_SET: bare, 0 or 1.
    Flag,
    /// FIO_OPT_BOOL: 0 or 1.
    Bool,
    /// Any non-empty text.
    Text,
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
}

const fn def(name: &'static str, aliases: &'static [&'static str], opt: Opt) -> OptDef {
    OptDef { name, aliases, opt }
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
    // Accepted and ignored: they change data patterns, file handling or reporting
    // layout, not the completion path irqlab models.
    def("description", &[], Opt::Ignored(Ignored::Text)),
    def("thread", &[], Opt::Ignored(Ignored::Flag)),
    def("norandommap", &[], Opt::Ignored(Ignored::Flag)),
    def(
        "randrepeat",
        &["allrandrepeat"],
        Opt::Ignored(Ignored::Bool),
    ),
    def("randseed", &[], Opt::Ignored(Ignored::Int)),
    def(
        "random_generator",
        &[],
        Opt::Ignored(Ignored::Choice(&["tausworthe", "lfsr", "tausworthe64"])),
    ),
    def("refill_buffers", &[], Opt::Ignored(Ignored::Flag)),
    def("scramble_buffers", &[], Opt::Ignored(Ignored::Bool)),
    def("invalidate", &[], Opt::Ignored(Ignored::Bool)),
    def(
        "stonewall",
        &["wait_for_previous"],
        Opt::Ignored(Ignored::Flag),
    ),
    def("new_group", &[], Opt::Ignored(Ignored::Flag)),
    def("fixedbufs", &[], Opt::Ignored(Ignored::Flag)),
    def("registerfiles", &[], Opt::Ignored(Ignored::Flag)),
    def("nonvectored", &[], Opt::Ignored(Ignored::Int)),
    def("offset", &[], Opt::Ignored(Ignored::Int)),
    def("clat_percentiles", &[], Opt::Ignored(Ignored::Bool)),
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
    ("bsrange", "irqlab models one block size per job"),
    ("bssplit", "irqlab models one block size per job"),
    ("rate", "rate limits are not modelled"),
    ("rate_iops", "rate limits are not modelled"),
    ("thinktime", "think time is not modelled"),
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
