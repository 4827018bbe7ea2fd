//! fio options that have no meaning in the model: each is accepted (its value still
//! checked, so typos are caught), changes nothing, and says why here and in the README.
//! Some are accepted only for the values that ask for what the model does
//! ([`Ignored::Only`]); other values are refused with the reason.

use crate::options::{Ignored, Opt, OptDef};

const OFFSETS: &str = "offsets are not modelled: service times do not depend on the LBA";
const DATA: &str = "buffer contents are not modelled: the model moves no data";
const VERIFY: &str = "data verification is not modelled: the model moves no data, and the read-back pass of a verifying job is not simulated (run a read job for it)";
const FILES: &str = "file setup and teardown happen outside the measured run, and the model's files are the platform's devices";
const PRIO: &str = "I/O priorities change nothing on an NVMe device with no I/O scheduler, which is what the model is (the kernel puts no priority into an NVMe command)";
const TIMING: &str = "the model's timestamps come from its own clock and cost nothing, so irqlab keeps every latency fio would skip";
const ERRORS: &str = "the model's I/Os never fail";
const OUTPUT: &str = "output formatting: irqlab prints fio's default report";
const ZONES: &str = "zone options that set offsets (zonemode=strided) or a zone's data layout: offsets are not modelled, and fio's emulated zones on the platform's conventional namespaces have no resource limits or write errors";
const PLACEMENT: &str = "data placement hints change where data lands on the media, which the model's service times do not depend on";
const PI: &str = "protection information is generated and checked within the device's service time (set devices.N.read_ns and write_ns for the format you measured)";
const ENGINE_COSTS: &str = "the engine's per-I/O costs come from the platform file (engine.*): set them for the setup you measured";
const MEMORY: &str = "where buffers live is not modelled: DMA costs the same from every buffer";
const PROCESS: &str = "process identity and accounting do not change the completion path";

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

/// The value checks of [`Ignored`], named for the table below.
const FLAG: Ignored = Ignored::Flag;
const BOOL: Ignored = Ignored::Bool;
const INT: Ignored = Ignored::Int;
const TEXT: Ignored = Ignored::Text;
const SIZE: Ignored = Ignored::Size;
const FLOAT: Ignored = Ignored::Float;

/// Options accepted without effect, with fio's names and aliases (options.c).
pub const INERT: &[OptDef] = &[
    inert(
        "thread",
        &[],
        FLAG,
        "threads and processes are the same kind of task to the model's scheduler",
    ),
    inert("norandommap", &[], FLAG, OFFSETS),
    inert("softrandommap", &[], BOOL, OFFSETS),
    inert(
        "random_generator",
        &[],
        Ignored::Choice(&["tausworthe", "lfsr", "tausworthe64"]),
        "the model draws from its own seeded generator (randseed still seeds it)",
    ),
    inert("random_distribution", &[], TEXT, OFFSETS),
    inert("random_sequence_stride", &[], BOOL, OFFSETS),
    inert("percentage_random", &[], TEXT, OFFSETS),
    inert("percentage_sequential", &[], TEXT, OFFSETS),
    inert(
        "rw_sequencer",
        &[],
        Ignored::Choice(&["sequential", "identical"]),
        OFFSETS,
    ),
    inert("offset", &["fileoffset"], SIZE, OFFSETS),
    inert("offset_align", &[], SIZE, OFFSETS),
    inert("offset_increment", &[], SIZE, OFFSETS),
    inert("blockalign", &["ba"], TEXT, OFFSETS),
    inert("file_append", &[], BOOL, OFFSETS),
    inert(
        "serialize_overlap",
        &[],
        BOOL,
        "without offsets no two I/Os overlap",
    ),
    inert("sprandom", &[], BOOL, OFFSETS),
    inert("spr_num_regions", &[], INT, OFFSETS),
    inert("spr_op", &[], FLOAT, OFFSETS),
    inert("spr_cs", &[], INT, OFFSETS),
    inert("zonerange", &[], SIZE, ZONES),
    inert("zoneskip", &[], SIZE, ZONES),
    inert("read_beyond_wp", &[], BOOL, ZONES),
    inert("ignore_zone_limits", &[], BOOL, ZONES),
    inert("recover_zbd_write_error", &[], BOOL, ZONES),
    inert(
        "write_zone_remainders",
        &["write_zone_remainder"],
        BOOL,
        ZONES,
    ),
    inert("refill_buffers", &[], FLAG, DATA),
    inert("scramble_buffers", &[], BOOL, DATA),
    inert("zero_buffers", &[], FLAG, DATA),
    inert("buffer_compress_percentage", &[], INT, DATA),
    inert("buffer_compress_chunk", &[], SIZE, DATA),
    inert("buffer_pattern", &[], TEXT, DATA),
    inert("dedupe_percentage", &[], INT, DATA),
    inert(
        "dedupe_mode",
        &[],
        Ignored::Choice(&["repeat", "working_set"]),
        DATA,
    ),
    inert("dedupe_working_set_percentage", &[], INT, DATA),
    inert("dedupe_global", &[], BOOL, DATA),
    inert(
        "invalidate",
        &[],
        BOOL,
        "there is no page cache in the model (every I/O is direct)",
    ),
    inert(
        "fadvise_hint",
        &[],
        TEXT,
        "page-cache advice: the model's I/O is direct, with no page cache",
    ),
    inert(
        "uncached",
        &[],
        INT,
        "RWF_DONTCACHE changes only buffered I/O; the model's I/O is direct",
    ),
    inert(
        "pre_read",
        &[],
        BOOL,
        "it reads files into the page cache before the run; the model has no page cache",
    ),
    inert("fixedbufs", &[], FLAG, ENGINE_COSTS),
    inert("registerfiles", &[], FLAG, ENGINE_COSTS),
    inert("nonvectored", &[], INT, ENGINE_COSTS),
    inert("libaio_vectored", &[], BOOL, ENGINE_COSTS),
    inert("userspace_reap", &[], FLAG, ENGINE_COSTS),
    inert("verify", &[], TEXT, VERIFY),
    inert("do_verify", &[], BOOL, VERIFY),
    inert("verify_offset", &[], SIZE, VERIFY),
    inert("verify_interval", &[], SIZE, VERIFY),
    inert("verify_pattern", &[], TEXT, VERIFY),
    inert("verify_pattern_interval", &[], SIZE, VERIFY),
    inert("verify_policy", &[], TEXT, VERIFY),
    inert("verify_fatal", &[], BOOL, VERIFY),
    inert("verify_dump", &[], BOOL, VERIFY),
    inert("verify_async", &[], INT, VERIFY),
    inert("verify_async_cpus", &[], TEXT, VERIFY),
    inert("verify_backlog", &[], INT, VERIFY),
    inert("verify_backlog_batch", &[], INT, VERIFY),
    inert("verify_state_save", &[], BOOL, VERIFY),
    inert("verify_state_load", &[], BOOL, VERIFY),
    inert("experimental_verify", &[], BOOL, VERIFY),
    inert("verify_write_sequence", &[], BOOL, VERIFY),
    inert("verify_header_seed", &[], BOOL, VERIFY),
    inert("verifysort", &[], BOOL, VERIFY),
    inert("verifysort_nr", &[], INT, VERIFY),
    inert("continue_on_error", &[], TEXT, ERRORS),
    inert("ignore_error", &[], TEXT, ERRORS),
    inert("error_dump", &[], BOOL, ERRORS),
    inert(
        "clocksource",
        &[],
        Ignored::Choice(&["gettimeofday", "clock_gettime", "cpu"]),
        TIMING,
    ),
    inert("gtod_reduce", &[], BOOL, TIMING),
    inert("gtod_cpu", &[], INT, TIMING),
    inert("job_start_clock_id", &[], INT, TIMING),
    inert("disable_lat", &[], BOOL, TIMING),
    inert("disable_clat", &[], BOOL, TIMING),
    inert("disable_slat", &[], BOOL, TIMING),
    inert("disable_bw_measurement", &["disable_bw"], BOOL, TIMING),
    inert("unit_base", &[], INT, OUTPUT),
    inert("slat_percentiles", &[], BOOL, OUTPUT),
    inert("lat_percentiles", &[], BOOL, OUTPUT),
    inert("percentile_list", &[], TEXT, OUTPUT),
    inert("significant_figures", &[], INT, OUTPUT),
    inert("unified_rw_reporting", &[], TEXT, OUTPUT),
    inert("stats", &[], BOOL, OUTPUT),
    inert("disk_util", &[], BOOL, OUTPUT),
    inert("block_error_percentiles", &[], BOOL, OUTPUT),
    inert("log_entries", &[], INT, "irqlab's logs grow as needed"),
    inert(
        "log_prio",
        &[],
        BOOL,
        "the logs' priority column is 0: I/O priorities are not modelled",
    ),
    inert(
        "log_offset",
        &[],
        BOOL,
        "the logs keep fio's default columns: offsets are not modelled",
    ),
    inert(
        "log_issue_time",
        &[],
        BOOL,
        "the logs keep fio's default columns",
    ),
    inert(
        "unique_filename",
        &[],
        BOOL,
        "it changes file names only in fio's client/server mode",
    ),
    inert(
        "filetype",
        &[],
        Ignored::Choice(&["none", "file", "block", "char"]),
        FILES,
    ),
    inert("create_serialize", &[], BOOL, FILES),
    inert("create_fsync", &[], BOOL, FILES),
    inert("create_on_open", &[], BOOL, FILES),
    inert("allow_file_create", &[], BOOL, FILES),
    inert("allow_mounted_write", &[], BOOL, FILES),
    inert("unlink", &[], BOOL, FILES),
    inert("unlink_each_loop", &[], BOOL, FILES),
    inert("fallocate", &[], TEXT, FILES),
    inert("overwrite", &[], BOOL, FILES),
    inert(
        "openfiles",
        &[],
        INT,
        "every file of a job is open for the whole run",
    ),
    inert(
        "file_service_type",
        &[],
        Ignored::Only(
            &["roundrobin"],
            "the model's jobs move to the next file after every I/O (fio's roundrobin); random and sequential file choice are not modelled",
        ),
        "roundrobin is what the model does",
    ),
    inert(
        "lockfile",
        &[],
        Ignored::Only(&["none"], "file locks that serialize jobs are not modelled"),
        "no locking is what the model does",
    ),
    inert(
        "ioscheduler",
        &[],
        Ignored::Only(
            &["none"],
            "the model's block layer is blk-mq with no I/O scheduler ('none'); mq-deadline, kyber and bfq are not modelled",
        ),
        "'none' is what the model is",
    ),
    inert(
        "sync",
        &[],
        Ignored::Only(
            &["0", "none"],
            "O_SYNC and O_DSYNC writes (FUA or a flush per write) are not modelled",
        ),
        "sync=0 is what the model does",
    ),
    inert(
        "cmd_type",
        &[],
        Ignored::Only(
            &["nvme"],
            "SCSI commands through bsg: the platform's devices are NVMe",
        ),
        "cmd_type=nvme is the NVMe passthrough the model runs as io_uring",
    ),
    inert(
        "read_mode",
        &[],
        Ignored::Only(
            &["read"],
            "NVMe Verify and Compare commands are not modelled",
        ),
        "read_mode=read is a plain read",
    ),
    inert(
        "libblkio_driver",
        &[],
        Ignored::Only(
            &["io_uring"],
            "libblkio's user-space drivers (virtio-blk over VFIO or vhost) bypass the kernel's completion path",
        ),
        "the io_uring driver is io_uring",
    ),
    inert("prio", &[], INT, PRIO),
    inert("prioclass", &[], INT, PRIO),
    inert("priohint", &[], INT, PRIO),
    inert("cmdprio_percentage", &[], TEXT, PRIO),
    inert("cmdprio_class", &[], TEXT, PRIO),
    inert("cmdprio_hint", &[], TEXT, PRIO),
    inert("cmdprio", &[], TEXT, PRIO),
    inert("cmdprio_bssplit", &[], TEXT, PRIO),
    inert("write_hint", &[], TEXT, PLACEMENT),
    inert("fdp", &[], BOOL, PLACEMENT),
    inert(
        "dataplacement",
        &["data_placement"],
        Ignored::Choice(&["none", "fdp", "streams"]),
        PLACEMENT,
    ),
    inert(
        "plid_select",
        &["fdp_pli_select"],
        Ignored::Choice(&["random", "roundrobin", "scheme"]),
        PLACEMENT,
    ),
    inert("plids", &["fdp_pli"], TEXT, PLACEMENT),
    inert("dp_scheme", &[], TEXT, PLACEMENT),
    inert("md_per_io_size", &[], SIZE, PI),
    inert("pi_act", &[], INT, PI),
    inert("pi_chk", &[], TEXT, PI),
    inert("apptag", &[], INT, PI),
    inert("apptag_mask", &[], INT, PI),
    inert(
        "atomic",
        &[],
        BOOL,
        "an atomic write completes as any write of its size",
    ),
    inert(
        "nowait",
        &[],
        BOOL,
        "the model's submitters never block on a tag: depths are checked against the queues before the run",
    ),
    inert("mem", &["iomem"], TEXT, MEMORY),
    inert("iomem_align", &["mem_align"], SIZE, MEMORY),
    inert("hugepage-size", &[], SIZE, MEMORY),
    inert("lockmem", &[], SIZE, MEMORY),
    inert("numa_mem_policy", &[], TEXT, MEMORY),
    inert("comm", &[], TEXT, PROCESS),
    inert("uid", &[], INT, PROCESS),
    inert("gid", &[], INT, PROCESS),
    inert(
        "cgroup",
        &[],
        TEXT,
        "a cgroup without a weight changes nothing the model has",
    ),
    inert("cgroup_nodelete", &[], BOOL, PROCESS),
    inert("rwmixcycle", &[], INT, "fio ignores it too (deprecated)"),
    inert(
        "flow_watermark",
        &[],
        INT,
        "fio ignores it too (deprecated: flow control has no watermark since fio 3.24)",
    ),
];
