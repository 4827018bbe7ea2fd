//! fio's own examples/ folder (107 job files, fio 3.42; GPL-2.0, see
//! tests/fixtures/fio-examples/NOTICE.md) run unmodified with
//! `irqlab run FILE --platform example --max-runtime 5ms`, their files mapped onto the
//! platform's devices by the default rule; every other one is refused for the reason
//! listed here and in crates/irqlab-fio/README.md ("fio's own examples").

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The files that run.
const RUNS: &[&str] = &[
    "aio-read.fio",
    "atomic-verify.fio",
    "backwards-read.fio",
    "basic-verify.fio",
    "cmdprio-bssplit.fio",
    "cmdprio-percentage.fio",
    "cpp_null.fio",
    "cross-stripe-verify.fio",
    "dedupe-global.fio",
    "disk-zone-profile.fio",
    "fio-seq-read.fio",
    "fsx.fio",
    "iometer-file-access-server.fio",
    "jesd219.fio",
    "libblkio-io_uring.fio",
    "null.fio",
    "rand-zones.fio",
    "sequence-distribution.fio",
    "ssd-steadystate.fio",
    "ssd-test.fio",
    "surface-scan.fio",
    "tiobench-example.fio",
    "uring-cmd-fdp.fio",
    "uring-cmd-pi-ext.fio",
    "uring-cmd-pi-sb.fio",
    "xnvme-pi.fio",
    "zbd-seq-read.fio",
    "zipf.fio",
];

/// The files irqlab refuses, each with what its message says.
const REFUSED: &[(&str, &str)] = &[
    ("1mbs_clients.fio", "unsupported option 'ratemin'"),
    ("butterfly.fio", "unsupported option 'flow'"),
    ("cpuio.fio", "ioengine=cpuio cannot run"),
    ("dev-dax.fio", "ioengine=dev-dax cannot run"),
    ("dfs.fio", "ioengine=dfs cannot run"),
    ("dircreate-ioengine.fio", "ioengine=dircreate cannot run"),
    ("dirdelete-ioengine.fio", "ioengine=dirdelete cannot run"),
    ("dirstat-ioengine.fio", "ioengine=dirstat cannot run"),
    ("e4defrag.fio", "ioengine=e4defrag cannot run"),
    ("e4defrag2.fio", "ioengine=e4defrag cannot run"),
    ("enospc-pressure.fio", "unsupported option 'exitall'"),
    (
        "example_latency_steadystate.fio",
        "unsupported option 'steadystate'",
    ),
    ("exec.fio", "ioengine=exec cannot run"),
    ("exitwhat.fio", "unsupported option 'exitall'"),
    ("falloc.fio", "ioengine=falloc cannot run"),
    ("filecreate-ioengine.fio", "ioengine=filecreate cannot run"),
    ("filedelete-ioengine.fio", "ioengine=filedelete cannot run"),
    ("filestat-ioengine.fio", "ioengine=filestat cannot run"),
    ("fio-rand-RW.fio", "direct=0 asks for buffered I/O"),
    ("fio-rand-read.fio", "direct=0 asks for buffered I/O"),
    ("fio-rand-write.fio", "direct=0 asks for buffered I/O"),
    ("fio-seq-RW.fio", "direct=0 asks for buffered I/O"),
    ("fio-seq-write.fio", "direct=0 asks for buffered I/O"),
    (
        "fixed-rate-submission.fio",
        "io_submit_mode=offload is not modelled",
    ),
    ("flow.fio", "unsupported option 'flow_sleep'"),
    ("ftruncate.fio", "ioengine=ftruncate cannot run"),
    ("gfapi.fio", "ioengine=gfapi cannot run"),
    ("gpudirect-rdmaio-client.fio", "ioengine=rdma cannot run"),
    ("gpudirect-rdmaio-server.fio", "ioengine=rdma cannot run"),
    ("http-s3-crypto.fio", "ioengine=http cannot run"),
    ("http-s3-storage-class.fio", "ioengine=http cannot run"),
    ("http-s3.fio", "ioengine=http cannot run"),
    ("http-swift.fio", "ioengine=http cannot run"),
    ("http-webdav.fio", "ioengine=http cannot run"),
    ("ime.fio", "ioengine=ime_psync cannot run"),
    ("latency-profile.fio", "unsupported option 'latency_target'"),
    (
        "libblkio-virtio-blk-vfio-pci.fio",
        "libblkio_driver=virtio-blk-vfio-pci is not modelled",
    ),
    ("libcufile-cufile.fio", "ioengine=libcufile cannot run"),
    ("libcufile-posix.fio", "ioengine=libcufile cannot run"),
    ("libhdfs.fio", "ioengine=libhdfs cannot run"),
    ("libhipfile-hipfile.fio", "ioengine=libhipfile cannot run"),
    ("libhipfile-posix.fio", "ioengine=libhipfile cannot run"),
    ("libiscsi.fio", "ioengine=libiscsi cannot run"),
    ("libpmem.fio", "ioengine=libpmem cannot run"),
    ("libzbc-rand-write.fio", "ioengine=libzbc cannot run"),
    ("libzbc-seq-read.fio", "ioengine=libzbc cannot run"),
    ("mtd.fio", "ioengine=mtd cannot run"),
    ("nbd.fio", "ioengine=nbd cannot run"),
    ("netio.fio", "ioengine=net cannot run"),
    ("netio_multicast.fio", "ioengine=net cannot run"),
    ("netio_vsock.fio", "ioengine=net cannot run"),
    ("netio_vsock_receiver.fio", "ioengine=net cannot run"),
    ("netio_vsock_sender.fio", "ioengine=net cannot run"),
    ("nfs.fio", "ioengine=nfs cannot run"),
    ("numa.fio", "numa_cpu_nodes names node 1"),
    ("page_fault.fio", "ioengine=page_fault cannot run"),
    (
        "poisson-rate-submission.fio",
        "io_submit_mode=offload is not modelled",
    ),
    ("rados.fio", "ioengine=rados cannot run"),
    ("rbd.fio", "ioengine=rbd cannot run"),
    ("rdmaio-client.fio", "ioengine=rdma cannot run"),
    ("rdmaio-server.fio", "ioengine=rdma cannot run"),
    ("sg_verify-fail.fio", "ioengine=sg cannot run"),
    ("sg_verify.fio", "ioengine=sg cannot run"),
    ("sg_write_same_ndob.fio", "ioengine=sg cannot run"),
    ("sprandom.fio", "bs has an empty value"),
    ("steadystate.fio", "unsupported option 'threads'"),
    ("uring-cmd-bsg.fio", "cmd_type=bsg is not modelled"),
    ("uring-cmd-ng.fio", "unsupported option 'sqthread_poll'"),
    (
        "uring-cmd-trim-multi-range.fio",
        "rw=randtrim is not supported",
    ),
    (
        "uring-cmd-write-mode.fio",
        "write_mode=write/40:zeroes/30:uncor/20:verify/10 is not modelled",
    ),
    (
        "uring-cmd-zoned-append.fio",
        "write_mode=zone_append is not modelled",
    ),
    ("uring-cmd-zoned.fio", "writes with zonemode=zbd"),
    ("waitfor.fio", "unsupported option 'threads'"),
    ("xnvme-compare.fio", "rw has an empty value"),
    ("xnvme-fdp.fio", "rw has an empty value"),
    ("xnvme-zoned.fio", "writes with zonemode=zbd"),
    ("zbd-rand-write-trim-gc.fio", "writes with zonemode=zbd"),
    (
        "zbd-rand-write-zone-reset-gc.fio",
        "writes with zonemode=zbd",
    ),
    ("zbd-rand-write.fio", "writes with zonemode=zbd"),
];

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/fio-examples")
}

fn run(file: &str) -> Output {
    Command::new(env!("CARGO_BIN_EXE_irqlab"))
        .args(["run", file, "--platform", "example", "--max-runtime", "5ms"])
        .current_dir(dir())
        // ${VAR}s stay unset, as for a user who did not read the file's comments.
        .env_remove("FIO_BS")
        .env_remove("FIO_RW")
        .env_remove("FIO_IODEPTH")
        .output()
        .unwrap()
}

#[test]
fn fios_examples_run_or_are_refused_for_a_listed_reason() {
    let mut files: Vec<String> = std::fs::read_dir(dir())
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.ends_with(".fio"))
        .collect();
    files.sort();
    assert_eq!(files.len(), 107, "fio's examples/ folder has 107 job files");
    assert_eq!(RUNS.len() + REFUSED.len(), 107, "every file is listed once");
    // Two runners at a time: each run is a short simulation.
    let results: Vec<(String, Output)> = std::thread::scope(|s| {
        let halves: Vec<Vec<String>> = vec![
            files.iter().step_by(2).cloned().collect(),
            files.iter().skip(1).step_by(2).cloned().collect(),
        ];
        let handles: Vec<_> = halves
            .into_iter()
            .map(|h| {
                s.spawn(move || {
                    h.into_iter()
                        .map(|f| {
                            let o = run(&f);
                            (f, o)
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect()
    });
    for (file, out) in &results {
        let stderr = String::from_utf8_lossy(&out.stderr);
        let stdout = String::from_utf8_lossy(&out.stdout);
        if RUNS.contains(&file.as_str()) {
            assert_eq!(out.status.code(), Some(0), "{file} should run: {stderr}");
            assert!(stdout.starts_with("irqlab-"), "{file}: {stdout}");
            continue;
        }
        let (_, why) = REFUSED
            .iter()
            .find(|(f, _)| f == file)
            .unwrap_or_else(|| panic!("{file} is in neither list"));
        assert_eq!(
            out.status.code(),
            Some(2),
            "{file} should be refused: {stdout}"
        );
        assert!(
            stderr.starts_with(&format!("irqlab: {file}:")) && stderr.contains(why),
            "{file}: '{stderr}' lacks '{why}'"
        );
        irqlab_fuzz::check_message(&stderr).unwrap_or_else(|e| panic!("{file}: {e}"));
    }
    let readme = include_str!("../../irqlab-fio/README.md");
    for f in RUNS.iter().copied().chain(REFUSED.iter().map(|r| r.0)) {
        assert!(
            readme.contains(&format!("`{f}`")),
            "the README does not list {f}"
        );
    }
}
