//! fio's own examples/ folder (107 job files, fio 3.42; GPL-2.0, see
//! tests/fixtures/fio-examples/NOTICE.md) run unmodified with
//! `irqlab run FILE --platform example --max-runtime 5ms`, their files mapped onto the
//! platform's devices by the default rule; every other one is refused for the reason
//! listed here and in crates/irqlab-fio/README.md ("fio's own examples").

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The files that run.
const RUNS: &[&str] = &[
    "1mbs_clients.fio",
    "aio-read.fio",
    "atomic-verify.fio",
    "backwards-read.fio",
    "basic-verify.fio",
    "butterfly.fio",
    "cmdprio-bssplit.fio",
    "cmdprio-percentage.fio",
    "cpp_null.fio",
    "cpuio.fio",
    "cross-stripe-verify.fio",
    "dedupe-global.fio",
    "disk-zone-profile.fio",
    "enospc-pressure.fio",
    "example_latency_steadystate.fio",
    "exitwhat.fio",
    "fio-seq-read.fio",
    "fixed-rate-submission.fio",
    "flow.fio",
    "fsx.fio",
    "iometer-file-access-server.fio",
    "jesd219.fio",
    "latency-profile.fio",
    "libblkio-io_uring.fio",
    "null.fio",
    "poisson-rate-submission.fio",
    "rand-zones.fio",
    "sequence-distribution.fio",
    "ssd-steadystate.fio",
    "ssd-test.fio",
    "surface-scan.fio",
    "tiobench-example.fio",
    "uring-cmd-fdp.fio",
    "uring-cmd-ng.fio",
    "uring-cmd-pi-ext.fio",
    "uring-cmd-pi-sb.fio",
    "uring-cmd-trim-multi-range.fio",
    "uring-cmd-write-mode.fio",
    "xnvme-pi.fio",
    "zbd-rand-write-trim-gc.fio",
    "zbd-rand-write.fio",
    "zbd-seq-read.fio",
    "zipf.fio",
];

/// The files irqlab refuses, each with what its message says.
const REFUSED: &[(&str, &str)] = &[
    ("dev-dax.fio", "ioengine=dev-dax cannot run"),
    ("dfs.fio", "ioengine=dfs cannot run"),
    ("dircreate-ioengine.fio", "ioengine=dircreate cannot run"),
    ("dirdelete-ioengine.fio", "ioengine=dirdelete cannot run"),
    ("dirstat-ioengine.fio", "ioengine=dirstat cannot run"),
    ("e4defrag.fio", "ioengine=e4defrag cannot run"),
    ("e4defrag2.fio", "ioengine=e4defrag cannot run"),
    ("exec.fio", "ioengine=exec cannot run"),
    ("falloc.fio", "ioengine=falloc cannot run"),
    ("filecreate-ioengine.fio", "ioengine=filecreate cannot run"),
    ("filedelete-ioengine.fio", "ioengine=filedelete cannot run"),
    ("filestat-ioengine.fio", "ioengine=filestat cannot run"),
    ("fio-rand-RW.fio", "direct=0 asks for buffered I/O"),
    ("fio-rand-read.fio", "direct=0 asks for buffered I/O"),
    ("fio-rand-write.fio", "direct=0 asks for buffered I/O"),
    ("fio-seq-RW.fio", "direct=0 asks for buffered I/O"),
    ("fio-seq-write.fio", "direct=0 asks for buffered I/O"),
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
    (
        "uring-cmd-zoned-append.fio",
        "Zone Append is a command of zoned namespaces",
    ),
    ("uring-cmd-zoned.fio", "zonemode=zbd without zonesize"),
    ("waitfor.fio", "unsupported option 'threads'"),
    ("xnvme-compare.fio", "rw has an empty value"),
    ("xnvme-fdp.fio", "rw has an empty value"),
    ("xnvme-zoned.fio", "zonemode=zbd without zonesize"),
    ("zbd-rand-write-zone-reset-gc.fio", "bs is over 16 MiB"),
];

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/fio-examples")
}

/// A copy of the job files to run in: jobs that write fio logs write them there, not
/// into the repository.
fn workdir() -> PathBuf {
    let w = std::env::temp_dir().join(format!("irqlab-fio-examples-{}", std::process::id()));
    std::fs::create_dir_all(&w).unwrap();
    for e in std::fs::read_dir(dir()).unwrap() {
        let p = e.unwrap().path();
        if p.extension().is_some_and(|x| x == "fio") {
            std::fs::copy(&p, w.join(p.file_name().unwrap())).unwrap();
        }
    }
    w
}

fn run(file: &str, work: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_irqlab"))
        .args(["run", file, "--platform", "example", "--max-runtime", "5ms"])
        .current_dir(work)
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
    let work = workdir();
    let work = work.as_path();
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
                            let o = run(&f, work);
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
    let _ = std::fs::remove_dir_all(work);
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
}

const BEGIN: &str = "<!-- examples: made by crates/irqlab/tests/fio_examples.rs; IRQLAB_WRITE_README=1 cargo test -p irqlab --test fio_examples rewrites it -->\n";
const END: &str = "<!-- end of examples -->\n";

/// The README's list of the examples, from the tables above: those that run, then those
/// refused grouped by their reason.
fn examples_markdown() -> String {
    let quoted = |files: &mut dyn Iterator<Item = &str>| {
        files
            .map(|f| format!("`{f}`"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let mut out = format!(
        "**{} run**: {}.\n\n**{} are refused**, each for what the model cannot represent (or fio itself\nrefuses), grouped by the message's reason:\n\n",
        RUNS.len(),
        quoted(&mut RUNS.iter().copied()),
        REFUSED.len()
    );
    let mut reasons: Vec<&str> = Vec::new();
    for (_, why) in REFUSED {
        if !reasons.contains(why) {
            reasons.push(why);
        }
    }
    for why in reasons {
        let files = quoted(&mut REFUSED.iter().filter(|r| r.1 == why).map(|r| r.0));
        out.push_str(&format!("- {why}: {files}.\n"));
    }
    out
}

#[test]
fn the_readme_lists_the_examples_as_the_tables_have_them() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../irqlab-fio/README.md");
    let readme = std::fs::read_to_string(path).unwrap();
    let (head, rest) = readme
        .split_once(BEGIN)
        .expect("the README has the examples' start marker");
    let (_, tail) = rest
        .split_once(END)
        .expect("the README has the examples' end marker");
    let want = format!("{head}{BEGIN}{}{END}{tail}", examples_markdown());
    if std::env::var_os("IRQLAB_WRITE_README").is_some() {
        std::fs::write(path, &want).unwrap();
        return;
    }
    assert!(
        readme == want,
        "the fio crate's README lists other examples than the tables; rerun with IRQLAB_WRITE_README=1 to rewrite it"
    );
}
