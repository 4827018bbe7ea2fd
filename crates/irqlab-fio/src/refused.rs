//! Real fio options that irqlab refuses, each with the reason: what they ask for is
//! something the model cannot represent (or fio itself refuses in a job).

const FLUSH: &str = "flush commands (fsync, fdatasync, sync_file_range, barriers) are not modelled";
const TRIM: &str = "trims are not modelled: the platform gives no service time for a deallocate";
const REPLAY: &str = "replaying an I/O trace needs offsets and timings the model does not take";
const HIST: &str = "histogram logs are not written";
const LOG_FORMAT: &str = "logs are written uncompressed, in fio's default format";
const PROFILE: &str =
    "an option of fio's predefined profiles, not of a job (fio itself refuses it in a job file)";

/// Option names (with aliases) and why irqlab refuses them.
pub const REFUSED: &[(&[&str], &str)] = &[
    (
        &["ramp_size"],
        "a ramp measured in bytes is not modelled; use ramp_time",
    ),
    (
        &["opendir"],
        "it takes its files from a real directory tree; name them with filename= or directory=",
    ),
    (
        &["create_only"],
        "the job would only lay out its files, with no I/O for the model",
    ),
    (
        &[
            "fsync",
            "fdatasync",
            "write_barrier",
            "sync_file_range",
            "end_fsync",
            "end_syncfs",
            "fsync_on_close",
        ],
        FLUSH,
    ),
    (
        &["bs_is_seq_rand"],
        "choosing block sizes by sequential or random offsets needs offsets, which are not modelled",
    ),
    (
        &["hipri_percentage"],
        "a mix of polled and interrupt-driven I/O in one job is not modelled",
    ),
    (
        &["force_async"],
        "punting I/O to io_uring's io-wq worker threads is not modelled",
    ),
    (
        &["cdb_len"],
        "SCSI commands: the platform's devices are NVMe",
    ),
    (&["readfua", "writefua"], "FUA commands are not modelled"),
    (
        &["verify_bytchk", "verify_mode"],
        "NVMe Verify and Compare commands are not modelled",
    ),
    (
        &["verify_only"],
        "it verifies without doing the job's writes: run a read job instead",
    ),
    (
        &[
            "trim_percentage",
            "trim_verify_zero",
            "trim_backlog",
            "trim_backlog_batch",
        ],
        TRIM,
    ),
    (
        &["iodepth_low"],
        "irqlab refills the queue to iodepth at once",
    ),
    (&["thinkcycles"], "use thinktime_spin"),
    (
        &["thinktime_iotime"],
        "think time comes from thinktime_blocks only",
    ),
    (
        &["rate_ignore_thinktime"],
        "the rate clock always counts think time",
    ),
    (
        &["write_iolog"],
        "an I/O log needs offsets, which are not modelled",
    ),
    (
        &[
            "read_iolog",
            "read_iolog_chunked",
            "merge_blktrace_file",
            "merge_blktrace_scalars",
            "merge_blktrace_iters",
            "replay_no_stall",
            "replay_time_scale",
            "replay_redirect",
            "replay_align",
            "replay_scale",
            "replay_skip",
        ],
        REPLAY,
    ),
    (
        &["nice"],
        "task weights are not modelled: every job runs at nice 0",
    ),
    (
        &["cgroup_weight"],
        "blk-cgroup I/O weights are not modelled",
    ),
    (&["exec_prerun", "exec_postrun"], "irqlab runs no commands"),
    (
        &["write_hist_log", "log_hist_msec", "log_hist_coarseness"],
        HIST,
    ),
    (
        &["log_window_value", "log_max_value"],
        "logs hold window averages",
    ),
    (
        &[
            "log_compression",
            "log_compression_cpus",
            "log_store_compressed",
        ],
        LOG_FORMAT,
    ),
    (
        &[
            "log_unix_epoch",
            "log_alternate_epoch",
            "log_alternate_epoch_clock_id",
        ],
        "simulated time has no epoch: logs count ms from the start of the job",
    ),
    (
        &["profile"],
        "fio's predefined profiles (act, tiobench) are not modelled; write their jobs out",
    ),
    (
        &[
            "device-names",
            "load",
            "test-duration",
            "threads-per-queue",
            "read-req-num-512-blocks",
            "large-block-op-kbytes",
            "prep",
            "block",
            "numruns",
            "dir",
            "threads",
        ],
        PROFILE,
    ),
    (&["cpumask"], "use cpus_allowed"),
    (&["gpu_dev_id"], "GPU memory for RDMA is not modelled"),
];

/// Options that only an engine irqlab refuses takes (HOWTO "I/O engine specific
/// parameters"), by engine.
pub const ENGINE_ONLY: &[(&str, &[&str])] = &[
    ("libhdfs", &["namenode", "hdfsdirectory"]),
    (
        "net",
        &[
            "hostname",
            "port",
            "interface",
            "ttl",
            "nodelay",
            "protocol",
            "proto",
            "listen",
            "pingpong",
            "window_size",
            "mss",
        ],
    ),
    ("e4defrag", &["donorname", "inplace"]),
    (
        "rbd",
        &[
            "clustername",
            "rbdname",
            "clientname",
            "busy_poll",
            "rbd_encryption_format",
            "rbd_encryption_passphrase",
            "pool",
        ],
    ),
    ("rados", &["conf", "touch_objects"]),
    ("dfs", &["cont", "chunk_size", "object_class"]),
    ("mtd", &["skip_bad"]),
    ("rdma", &["verb", "bindname"]),
    ("filestat", &["stat_type"]),
    ("sg", &["sg_write_mode", "stream_id"]),
    (
        "http",
        &[
            "http_host",
            "http_user",
            "http_pass",
            "https",
            "http_mode",
            "http_s3_region",
            "http_s3_key",
            "http_s3_keyid",
            "http_s3_security_token",
            "http_s3_sse_customer_key",
            "http_s3_sse_customer_algorithm",
            "http_s3_storage_class",
            "http_swift_auth_token",
            "http_verbose",
            "http_object_mode",
        ],
    ),
    ("nbd", &["uri"]),
    ("libcufile", &["gpu_dev_ids", "cuda_io"]),
    ("libhipfile", &["rocm_io"]),
    ("nfs", &["nfs_url"]),
    (
        "exec",
        &["program", "arguments", "grace_time", "std_redirect"],
    ),
    (
        "xnvme",
        &[
            "xnvme_async",
            "xnvme_sync",
            "xnvme_admin",
            "xnvme_dev_nsid",
            "xnvme_dev_subnqn",
            "xnvme_mem",
            "xnvme_iovec",
        ],
    ),
    (
        "libblkio",
        &[
            "libblkio_pre_connect_props",
            "libblkio_num_entries",
            "libblkio_queue_size",
            "libblkio_pre_start_props",
            "libblkio_vectored",
            "libblkio_write_zeroes_on_trim",
            "libblkio_wait_mode",
            "libblkio_force_enable_completion_eventfd",
        ],
    ),
    ("windowsaio", &["no_completion_thread"]),
];

/// Why a known fio option is refused, None when irqlab takes it or fio has no such option.
pub fn reason(key: &str) -> Option<String> {
    if let Some((_, why)) = REFUSED.iter().find(|(names, _)| names.contains(&key)) {
        return Some((*why).to_string());
    }
    ENGINE_ONLY
        .iter()
        .find(|(_, names)| names.contains(&key))
        .map(|(engine, _)| match crate::engines::rule(engine) {
            Some(crate::engines::EngineRule::Refused(why)) => {
                format!("an option of ioengine={engine}, which irqlab refuses: {why}")
            }
            _ => format!("an option of ioengine={engine} that irqlab does not model"),
        })
}

/// Every refused name, for the README and tests.
pub fn names() -> impl Iterator<Item = &'static str> {
    REFUSED
        .iter()
        .flat_map(|(n, _)| n.iter().copied())
        .chain(ENGINE_ONLY.iter().flat_map(|(_, n)| n.iter().copied()))
}
