//! fio's `ioengine=` values (HOWTO "ioengine"): the ones whose syscall shape the model
//! can represent, each with the engine it runs as, and the rest with the reason they
//! are refused.

use crate::spec::IoEngine;

/// How one fio engine is taken.
pub enum EngineRule {
    /// Runs as this model engine; the note says what is approximated, if anything.
    Runs(IoEngine, &'static str),
    /// Refused, with the reason.
    Refused(&'static str),
}

const NETWORK: &str = "network I/O: no storage device of the platform completes it";
const FILESYSTEM: &str =
    "filesystem metadata calls: no read or write reaches a device the model completes";
const GPU: &str = "GPU direct storage: the GPU's path to the device is not modelled";

/// Every engine of fio's HOWTO (and cpp_null, the null engine built as C++), in its order.
pub const ENGINES: &[(&str, EngineRule)] = &[
    (
        "sync",
        EngineRule::Runs(
            IoEngine::Psync,
            "read/write, one blocking syscall per I/O: psync's shape (no lseek: offsets are not modelled)",
        ),
    ),
    ("psync", EngineRule::Runs(IoEngine::Psync, "")),
    (
        "vsync",
        EngineRule::Runs(
            IoEngine::Psync,
            "readv/writev of one I/O, one blocking syscall per I/O: psync's shape",
        ),
    ),
    (
        "pvsync",
        EngineRule::Runs(
            IoEngine::Psync,
            "preadv/pwritev of one I/O, one blocking syscall per I/O: psync's shape",
        ),
    ),
    ("pvsync2", EngineRule::Runs(IoEngine::Pvsync2, "")),
    ("io_uring", EngineRule::Runs(IoEngine::IoUring, "")),
    (
        "io_uring_cmd",
        EngineRule::Runs(
            IoEngine::IoUring,
            "NVMe passthrough through the same io_uring rings and NVMe queues (cmd_type=nvme); the platform's engine.io_uring costs apply",
        ),
    ),
    ("libaio", EngineRule::Runs(IoEngine::Libaio, "")),
    (
        "posixaio",
        EngineRule::Runs(
            IoEngine::PosixAio,
            "glibc's helper threads each issue one pread/pwrite: iodepth psync calls in flight, each costing a psync call and a wake-up of the job's thread, charged to the job's thread",
        ),
    ),
    (
        "solarisaio",
        EngineRule::Refused("Solaris's asynchronous I/O"),
    ),
    (
        "windowsaio",
        EngineRule::Refused("Windows's overlapped I/O"),
    ),
    (
        "mmap",
        EngineRule::Refused(
            "memory-mapped I/O goes through page faults and the page cache, which the model does not have",
        ),
    ),
    (
        "splice",
        EngineRule::Refused("splice moves data through a pipe and the page cache"),
    ),
    (
        "sg",
        EngineRule::Refused("SCSI commands through the sg driver: the platform's devices are NVMe"),
    ),
    (
        "libzbc",
        EngineRule::Refused(
            "SCSI and ATA zoned disks through libzbc: the platform's devices are NVMe",
        ),
    ),
    (
        "null",
        EngineRule::Runs(
            IoEngine::Null,
            "no device: every I/O completes when it is submitted, with no syscall and no interrupt",
        ),
    ),
    (
        "cpp_null",
        EngineRule::Runs(
            IoEngine::Null,
            "fio's null engine written in C++ (engines/cpp_null.cpp)",
        ),
    ),
    ("net", EngineRule::Refused(NETWORK)),
    ("netsplice", EngineRule::Refused(NETWORK)),
    (
        "cpuio",
        EngineRule::Runs(
            IoEngine::CpuIo,
            "no I/O: the job burns cpuload percent of its CPU in user mode, in cycles of cpuchunks µs (cpumode=qsort: of engine.cpuio_qsort_ns, the platform's time for fio's sort), each followed by a sleep that keeps the load",
        ),
    ),
    ("rdma", EngineRule::Refused(NETWORK)),
    ("falloc", EngineRule::Refused(FILESYSTEM)),
    ("ftruncate", EngineRule::Refused(FILESYSTEM)),
    (
        "e4defrag",
        EngineRule::Refused("ext4 defragmentation ioctls: no filesystem is modelled"),
    ),
    ("rados", EngineRule::Refused(NETWORK)),
    ("rbd", EngineRule::Refused(NETWORK)),
    ("http", EngineRule::Refused(NETWORK)),
    ("gfapi", EngineRule::Refused(NETWORK)),
    ("gfapi_async", EngineRule::Refused(NETWORK)),
    ("libhdfs", EngineRule::Refused(NETWORK)),
    (
        "mtd",
        EngineRule::Refused("raw flash through the MTD layer: the platform's devices are NVMe"),
    ),
    (
        "dev-dax",
        EngineRule::Refused("persistent memory: loads and stores, with no completion to deliver"),
    ),
    (
        "external",
        EngineRule::Refused("an engine loaded from a shared object: its syscalls are unknown"),
    ),
    (
        "libpmem",
        EngineRule::Refused("persistent memory: loads and stores, with no completion to deliver"),
    ),
    (
        "ime_psync",
        EngineRule::Refused("DDN IME's client library over the network"),
    ),
    (
        "ime_psyncv",
        EngineRule::Refused("DDN IME's client library over the network"),
    ),
    (
        "ime_aio",
        EngineRule::Refused("DDN IME's client library over the network"),
    ),
    ("libiscsi", EngineRule::Refused(NETWORK)),
    ("nbd", EngineRule::Refused(NETWORK)),
    ("libcufile", EngineRule::Refused(GPU)),
    ("libhipfile", EngineRule::Refused(GPU)),
    ("dfs", EngineRule::Refused(NETWORK)),
    ("nfs", EngineRule::Refused(NETWORK)),
    (
        "exec",
        EngineRule::Refused("it runs a program instead of doing I/O"),
    ),
    (
        "xnvme",
        EngineRule::Refused(
            "xNVMe picks a user-space or kernel backend at run time; name the kernel path it would take (io_uring, libaio or pvsync2)",
        ),
    ),
    (
        "libblkio",
        EngineRule::Runs(
            IoEngine::IoUring,
            "libblkio's io_uring driver submits through io_uring_enter as fio's io_uring engine does (libblkio_driver=io_uring; libblkio_path names the device)",
        ),
    ),
    (
        "page_fault",
        EngineRule::Refused("page faults on mapped memory: no device I/O the model completes"),
    ),
    ("filecreate", EngineRule::Refused(FILESYSTEM)),
    ("filestat", EngineRule::Refused(FILESYSTEM)),
    ("filedelete", EngineRule::Refused(FILESYSTEM)),
    ("dircreate", EngineRule::Refused(FILESYSTEM)),
    ("dirstat", EngineRule::Refused(FILESYSTEM)),
    ("dirdelete", EngineRule::Refused(FILESYSTEM)),
];

/// The rule for engine `name`, None when fio has no such engine.
pub fn rule(name: &str) -> Option<&'static EngineRule> {
    ENGINES.iter().find(|(n, _)| *n == name).map(|(_, r)| r)
}

/// The engines that run, for "expected ...".
pub fn runnable() -> String {
    let names: Vec<&str> = ENGINES
        .iter()
        .filter(|(_, r)| matches!(r, EngineRule::Runs(..)))
        .map(|(n, _)| *n)
        .collect();
    names.join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_engine_once() {
        let mut names: Vec<&str> = ENGINES.iter().map(|e| e.0).collect();
        let n = names.len();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), n);
        assert!(matches!(
            rule("sync"),
            Some(EngineRule::Runs(IoEngine::Psync, _))
        ));
        assert!(matches!(rule("net"), Some(EngineRule::Refused(_))));
        assert!(rule("spdk").is_none());
        assert!(runnable().contains("posixaio"));
    }
}
