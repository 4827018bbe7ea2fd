//! Job files as users write them, and the errors they get for mistakes.

use irqlab_fio::{BlockSizes, CpusPolicy, IoEngine, JobSpec, RwMode, parse_file, parse_str};
use std::path::{Path, PathBuf};

/// The shape of ecosystem.md §1.5: two globals, a repeated section name, bare flags,
/// `filename=a:b`, trailing comments.
const REALISTIC: &str = "\
; irqlab example
[global]
ioengine=io_uring
direct=1
bs=4k
time_based
runtime=30
ramp_time=2s
group_reporting
filename=/dev/nvme0n1:/dev/nvme1n1   ; two disks

[randread]
rw=randread
iodepth=32
numjobs=4
cpus_allowed=0-3
cpus_allowed_policy=split
hipri

[randread]
rw=randread:8
iodepth=1

[global]
ioengine=libaio
iodepth_batch_submit=8
iodepth_batch_complete_min=0
iodepth_batch_complete_max=16

# the last job sees both globals
[mixed]
readwrite=randrw
rwmixwrite=30
bs=8k,16k
iodepth=64
";

fn parse(text: &str) -> Vec<JobSpec> {
    parse_str(text, Path::new("jobs/a.fio")).unwrap_or_else(|e| panic!("{e}"))
}

fn err(text: &str) -> String {
    parse_str(text, Path::new("jobs/a.fio"))
        .expect_err("the job file should be rejected")
        .to_string()
}

#[test]
fn realistic_file() {
    let jobs = parse(REALISTIC);
    assert_eq!(jobs.len(), 3);

    let a = &jobs[0];
    assert_eq!(a.name, "randread");
    assert_eq!((a.file.as_path(), a.line), (Path::new("jobs/a.fio"), 12));
    assert_eq!(a.ioengine, IoEngine::IoUring);
    assert_eq!(a.rw, RwMode::RandRead);
    assert_eq!(a.bs, 4096);
    assert_eq!(a.iodepth, 32);
    // fio defaults: iodepth_batch=1, iodepth_batch_complete_min=1, max = min (init.c).
    assert_eq!(a.iodepth_batch_submit, 1);
    assert_eq!(a.iodepth_batch_complete_min, 1);
    assert_eq!(a.iodepth_batch_complete_max, 1);
    assert_eq!(a.numjobs, 4);
    assert_eq!(a.cpus_allowed, Some(vec![0, 1, 2, 3]));
    assert_eq!(a.cpus_allowed_policy, CpusPolicy::Split);
    assert_eq!(a.clone_cpus(5), Some(vec![1]));
    assert_eq!(a.filenames, vec!["/dev/nvme0n1", "/dev/nvme1n1"]);
    assert_eq!(a.runtime_ns, Some(30_000_000_000));
    assert_eq!(a.ramp_time_ns, 2_000_000_000);
    assert!(a.time_based && a.hipri && a.direct && a.group_reporting);
    assert_eq!(a.size, None);
    assert_eq!(a.number_ios, None);
    // Globals first, then the job's own, fio's option names, bare flags empty.
    let globals = a.global_options();
    assert_eq!(globals[0], ("ioengine".into(), "io_uring".into()));
    assert!(globals.contains(&("time_based".into(), String::new())));
    let own = a.job_options();
    assert_eq!(own.first(), Some(&("rw".into(), "randread".into())));
    assert_eq!(own.last(), Some(&("hipri".into(), String::new())));
    let hipri = a.option("hipri").unwrap();
    assert_eq!((hipri.line, hipri.global), (18, false));

    let b = &jobs[1];
    assert_eq!(b.name, "randread");
    assert_eq!(b.line, 20);
    assert_eq!(b.rw, RwMode::RandRead);
    assert_eq!(b.iodepth, 1);
    assert!(!b.hipri);
    assert_eq!(
        b.ioengine,
        IoEngine::IoUring,
        "the second [global] is below it"
    );

    let c = &jobs[2];
    assert_eq!(c.ioengine, IoEngine::Libaio);
    assert_eq!(c.rw, RwMode::RandRw { read_pct: 70 });
    assert_eq!(c.bs, 8192, "mixed jobs take the read size of bs=READ,WRITE");
    assert_eq!(c.iodepth, 64);
    assert_eq!(c.iodepth_batch_submit, 8);
    assert_eq!(c.iodepth_batch_complete_min, 0);
    assert_eq!(c.iodepth_batch_complete_max, 16);
    assert!(c.direct && c.time_based, "first [global] still applies");
    assert!(c.job_options().contains(&("rw".into(), "randrw".into())));
    assert!(
        c.global_options()
            .contains(&("iodepth_batch".into(), "8".into())),
        "both globals above it"
    );
}

#[test]
fn defaults_and_fixups() {
    let j = &parse("[j]\nfilename=f\n")[0];
    assert_eq!(j.ioengine, IoEngine::Psync);
    assert_eq!(j.rw, RwMode::Read);
    assert_eq!((j.bs, j.iodepth, j.numjobs), (4096, 1, 1));
    assert!(!j.direct && !j.time_based && j.cpus_allowed.is_none());

    // Sync engines keep one I/O in flight whatever iodepth says.
    let j = &parse("[j]\nfilename=f\nioengine=sync\niodepth=16\n")[0];
    assert_eq!((j.ioengine, j.iodepth), (IoEngine::Psync, 1));

    // init.c: iodepth_batch 0 or above iodepth becomes iodepth; max below min is raised.
    let j = &parse(
        "[j]\nfilename=f\nioengine=libaio\niodepth=8\niodepth_batch=0\n\
         iodepth_batch_complete_min=4\niodepth_batch_complete_max=2\n",
    )[0];
    assert_eq!(j.iodepth_batch_submit, 8);
    assert_eq!(j.iodepth_batch_complete_min, 4);
    assert_eq!(j.iodepth_batch_complete_max, 4);
    let j = &parse("[j]\nfilename=f\nioengine=libaio\niodepth=8\niodepth_batch=64\n")[0];
    assert_eq!(j.iodepth_batch_submit, 8);

    // Write-only jobs use the write size; buffered=0 is direct; loops multiply size.
    let j = &parse("[j]\nfilename=f\nrw=write\nbs=4k,64k\nbuffered=0\nsize=1m\nloops=3\n")[0];
    assert_eq!(j.bs, 65536);
    assert!(j.direct);
    assert_eq!(j.size, Some(3 << 20));

    // Bare `direct` means 1, `hipri=0` turns it off, rwmixread applies to rw.
    let j = &parse("[j]\nfilename=f\ndirect\nioengine=pvsync2\nhipri=0\nrw=rw\nrwmixread=80\n")[0];
    assert!(j.direct && !j.hipri);
    assert_eq!(j.rw, RwMode::ReadWrite { read_pct: 80 });

    // runtime=0 and number_ios=0 mean no limit; time suffixes; kb_base=1000.
    let j = &parse("[j]\nfilename=f\nruntime=0\nnumber_ios=0\nramp_time=500ms\n")[0];
    assert_eq!(
        (j.runtime_ns, j.number_ios, j.ramp_time_ns),
        (None, None, 500_000_000)
    );
    let j = &parse("[j]\nkb_base=1000\nfilename=f\nbs=4k\nsize=4KiB\n")[0];
    assert_eq!((j.bs, j.size), (4000, Some(4096)));

    // name= renames the job; `filename=a\:b` keeps the colon; [global2] is a global.
    let j = &parse("[global2]\nfilename=a\\:b\n[j]\nname=renamed\n")[0];
    assert_eq!(j.name, "renamed");
    assert_eq!(j.filenames, vec!["a:b"]);
}

#[test]
fn options_without_meaning_are_accepted_and_checked() {
    let j = &parse(
        "[j]\nfilename=f\nthread\nnorandommap\nrandom_generator=lfsr\n\
         refill_buffers\ninvalidate=1\nfixedbufs\nregisterfiles\nnonvectored=1\noffset=4k\n",
    )[0];
    assert_eq!(j.options.len(), 10);
    assert!(err("[j]\nfilename=f\nrandom_generator=mt\n").starts_with("jobs/a.fio:3: "));
    assert!(err("[j]\nfilename=f\noffset=zz\n").starts_with("jobs/a.fio:3: offset=zz"));
}

#[test]
fn options_without_meaning_are_listed_in_the_readme() {
    let readme = include_str!("../README.md");
    for (name, why) in irqlab_fio::no_meaning() {
        assert!(!why.is_empty(), "{name} has no reason");
        assert!(
            readme.contains(&format!("`{name}`")),
            "{name} is accepted without meaning but the README does not list it"
        );
    }
}

#[test]
fn rate_think_and_block_size_options() {
    use irqlab_fio::{BlockSizes, RateProcess};
    let j = &parse(
        "[j]\nfilename=f\nrw=randrw\nrate_iops=1k,500\nrate=,1m\nrate_process=poisson\n\
         thinktime=50\nthinktime_spin=10us\nthinktime_blocks=4\nthinktime_blocks_type=issue\n\
         bsrange=4k-16k\nbssplit=,8k/30:64k/70\nbs_unaligned\n",
    )[0];
    assert_eq!(j.rate.iops, [1024, 500]);
    assert_eq!(j.rate.bytes_per_sec, [0, 1 << 20]);
    assert_eq!(j.rate.process, RateProcess::Poisson);
    let t = j.thinktime.unwrap();
    assert_eq!(
        (t.ns, t.spin_ns, t.blocks, t.on_issue),
        (50_000, 10_000, 4, true)
    );
    assert_eq!(
        j.block_sizes[0],
        BlockSizes::Range {
            min: 4096,
            max: 16384
        }
    );
    assert_eq!(
        j.block_sizes[1],
        BlockSizes::Split(vec![(8192, 30), (65536, 70)])
    );
    assert!(j.bs_unaligned && j.variable_bs());
    assert_eq!(j.bs, 4096);
}

#[test]
fn seeds_groups_logs_and_reporting_options() {
    let j = &parse(
        "[j]\nfilename=f\nrandseed=42\nstartdelay=1s-2s\nstonewall\nnew_group\n\
         description=a test\nwrite_lat_log\nwrite_bw_log=bw\nlog_avg_msec=10\n\
         per_job_logs=0\nclat_percentiles=0\niopsavgtime=20\n",
    )[0];
    assert_eq!(j.randseed, Some(42));
    assert!(!j.randrepeat, "randseed overrides randrepeat (init.c)");
    assert_eq!(j.startdelay_ns, (1_000_000_000, 2_000_000_000));
    assert!(j.stonewall && j.new_group);
    assert_eq!(j.description.as_deref(), Some("a test"));
    assert_eq!(
        j.logs.lat.as_deref(),
        Some(""),
        "bare: the job name is the prefix"
    );
    assert_eq!(j.logs.bw.as_deref(), Some("bw"));
    assert_eq!((j.logs.avg_msec, j.logs.per_job), (10, false));
    assert!(!j.clat_percentiles);
    // init.c: a bandwidth log without bwavgtime samples every log_avg_msec.
    assert_eq!((j.bw_avg_ms, j.iops_avg_ms), (10, 20));
    let d = &parse("[j]\nfilename=f\nrandrepeat=0\n")[0];
    assert!(!d.randrepeat && d.randseed.is_none());
    assert_eq!((d.bw_avg_ms, d.iops_avg_ms), (500, 500));
}

#[test]
fn errors_name_file_and_line() {
    let cases: &[(&str, &str)] = &[
        (
            "[j]\nfilename=f\n\n\n\n\niodepht=4\n",
            "jobs/a.fio:7: unknown option 'iodepht', not one of fio's; expected a fio option; crates/irqlab-fio/README.md lists",
        ),
        (
            "[j]\nfilename=f\nbs=4q\n",
            "jobs/a.fio:3: bs=4q is not a size; expected a number with an optional k/m/g/t suffix (e.g. 4k)",
        ),
        (
            "[j]\nfilename=f\niodepth=0\n",
            "jobs/a.fio:3: iodepth=0 is out of range; expected at least 1",
        ),
        (
            "[j]\nfilename=f\nnumjobs=0\n",
            "jobs/a.fio:3: numjobs=0 is out of range",
        ),
        (
            "[j]\nfilename=f\nbs=0\n",
            "jobs/a.fio:3: bs=0 is out of range",
        ),
        (
            "[j]\nfilename=f\nrwmixread=101\n",
            "jobs/a.fio:3: rwmixread=101 is out of range",
        ),
        (
            "[j]\nfilename=f\nioengine=spdk\n",
            "jobs/a.fio:3: ioengine=spdk is not an ioengine fio has; expected one of sync, psync",
        ),
        (
            "[j]\nfilename=f\nrw=trim\nrate=1m,1m,1m\n",
            "jobs/a.fio:4: job 'j' limits the rate of its trims",
        ),
        (
            "[j]\nfilename=f\nrw=sideways\n",
            "jobs/a.fio:3: rw=sideways is not an I/O pattern",
        ),
        (
            "[j]\nfilename=f\nruntime=1.5s\n",
            "jobs/a.fio:3: runtime=1.5s is not a time",
        ),
        (
            "[j]\nfilename=f\ndirect=true\n",
            "jobs/a.fio:3: direct=true is not a boolean; expected 0 or 1",
        ),
        (
            "[j]\nfilename=f\niodepth\n",
            "jobs/a.fio:3: option 'iodepth' needs a value",
        ),
        (
            "[j]\nfilename=f\ncpus_allowed=3-1\n",
            "jobs/a.fio:3: cpus_allowed=3-1 is not a CPU list",
        ),
        (
            "[j]\nfilename=f\ncpus_allowed_policy=both\n",
            "jobs/a.fio:3: cpus_allowed_policy=both",
        ),
        (
            "[j]\nfilename=f\nsqthread_poll=1\n",
            "jobs/a.fio:3: job 'j': sqthread_poll is an option of the io_uring engines, not of ioengine=psync",
        ),
        (
            "[j]\nfilename=f\nioengine=io_uring\nio_submit_mode=offload\n",
            "jobs/a.fio:4: job 'j': io_uring: can't be used with offloaded submit",
        ),
        (
            "[j]\nfilename=f\nflow=1001\n",
            "jobs/a.fio:3: flow=1001 is not a flow weight",
        ),
        (
            "[j]\nfilename=f\nss_dur=2s\nss_interval=500ms\n",
            "jobs/a.fio:4: job 'j': ss_check_interval must be at least 1s",
        ),
        (
            "[j]\nfilename=f\nss_dur=3s\nss_interval=2s\n",
            "jobs/a.fio:3: job 'j': ss_duration 3000000us must be multiple of ss_check_interval 2000000us",
        ),
        (
            "[a]\nfilename=f\nss_dur=4s\nss_interval=2s\n[b]\nfilename=f\n",
            "jobs/a.fio:4: conflicting ss_check_interval",
        ),
        (
            "[j]\nfilename=f\nioengine=cpuio\n",
            "jobs/a.fio:3: job 'j': ioengine=cpuio without cpuload",
        ),
        (
            "[j]\nfilename=f\ncpuload=50\n",
            "jobs/a.fio:3: job 'j': cpuload, cpuchunks and cpumode are options of ioengine=cpuio",
        ),
        (
            "[j]\nfilename=f\nioengine=io_uring_cmd\nwrite_mode=write/60:zeroes/30\n",
            "jobs/a.fio:4: write_mode=write/60:zeroes/30 is not a write_mode mix",
        ),
        (
            "[j]\nfilename=f\nioengine=io_uring_cmd\nwrite_mode=zone_append\n",
            "jobs/a.fio:4: job 'j': write_mode=zone_append: Zone Append is a command of zoned namespaces",
        ),
        (
            "[j]\nfilename=f\nrw=randtrim\nnum_range=4\n",
            "jobs/a.fio:4: job 'j': can't use multiple ranges with IO engine psync",
        ),
        (
            "[j]\nfilename=f\nsteadystate=iops\n",
            "jobs/a.fio:3: steadystate=iops is not a steady-state criterion",
        ),
        (
            "[j]\nfilename=f\n=3\n",
            "jobs/a.fio:3: '=3' has no option name",
        ),
        (
            "rw=read\n[j]\n",
            "jobs/a.fio:1: 'rw=read' is outside of any [section]",
        ),
        ("[j\n", "jobs/a.fio:1: '[j' is not a section header"),
        ("[ ]\n", "jobs/a.fio:1: empty section name"),
        (
            "[j]\nfilename=f\nrw=write:4q\n",
            "jobs/a.fio:3: rw=write:4q is not an I/O pattern; expected read, write, randread, randwrite, rw (readwrite), randrw, trim, randtrim, trimwrite or randtrimwrite, optionally with an offset modifier :N or :SIZE",
        ),
        (
            "[j]\nioengine=sync\nnrfiles=2\nnumjobs=4096\nnrfiles=17\n",
            "jobs/a.fio:5: job 'j' makes up 69632 file names",
        ),
        (
            "[j]\nfilename=f\nzonemode=zbd\nrw=randwrite\n",
            "jobs/a.fio:3: job 'j': zonemode=zbd without zonesize",
        ),
        (
            "[j]\nfilename=f\nhipri\nioengine=libaio\n",
            "jobs/a.fio:3: hipri is not an option of ioengine=libaio",
        ),
        // A bad option in a trailing [global] with no job below is still reported.
        (
            "[j]\nfilename=f\n[global]\nbs=zz\n",
            "jobs/a.fio:4: bs=zz is not a size",
        ),
        ("[global]\nfilename=f\n", "jobs/a.fio: no jobs"),
        (
            "[j]\nfilename=f\nkb_base=512\n",
            "jobs/a.fio:3: kb_base=512 is not a unit base",
        ),
        (
            "[j]\nfilename=f\ndirect=0\n",
            "jobs/a.fio:3: direct=0 asks for buffered I/O",
        ),
        (
            "[j]\nfilename=f\nbuffered\n",
            "jobs/a.fio:3: buffered asks for buffered I/O",
        ),
        (
            "[j]\nfilename=f\nioengine=net\n",
            "jobs/a.fio:3: ioengine=net cannot run in irqlab: network I/O",
        ),
        // The engine is why a job cannot run, even below an option irqlab refuses.
        (
            "[j]\nfilename=f\nhostname=x\nioengine=net\n",
            "jobs/a.fio:4: ioengine=net cannot run in irqlab",
        ),
        (
            "[j]\nfilename=f\nbs=4k-64k\n",
            "jobs/a.fio:3: bs=4k-64k is a range",
        ),
        (
            "[j]\nfilename=f\nbssplit=4k/60:8k:16k/60:1k\n",
            "jobs/a.fio:3: bssplit=4k/60:8k:16k/60:1k is not a block size split",
        ),
        (
            "[j]\nfilename=f\nrate_process=bursty\n",
            "jobs/a.fio:3: rate_process=bursty is not a rate process",
        ),
        (
            "[j]\nfilename=f\nrate_cycle=0\n",
            "jobs/a.fio:3: rate_cycle=0 is not a rate cycle",
        ),
        (
            "[j]\nfilename=f\nthinktime=10\nthinktime_spin=20\n",
            "jobs/a.fio:4: job 'j' spins longer",
        ),
    ];
    for (text, want) in cases {
        let got = err(text);
        assert!(
            got.starts_with(want),
            "for {text:?}\n got: {got}\nwant: {want}..."
        );
    }
    assert!(err("[j]\nfilename=f\niodepht=4\n").ends_with("(did you mean 'iodepth'?)"));
}

#[test]
fn missing_file() {
    let e = parse_file(Path::new("jobs/does-not-exist.fio")).unwrap_err();
    assert_eq!(
        e.to_string(),
        "jobs/does-not-exist.fio: cannot read: No such file or directory"
    );
    assert_eq!(e.line(), None);
}

/// A fresh directory under the system temp dir for one test.
fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("irqlab-fio-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(dir.join("inc")).unwrap();
    dir
}

#[test]
fn includes_nest_and_resolve_relative_to_the_including_file() {
    let dir = scratch("include");
    std::fs::write(
        dir.join("inc/common.fio"),
        "ioengine=libaio\ninclude deeper.fio\n",
    )
    .unwrap();
    std::fs::write(dir.join("inc/deeper.fio"), "; nested\niodepth=16\n").unwrap();
    std::fs::write(
        dir.join("main.fio"),
        "[global]\nfilename=/dev/x\ninclude inc/common.fio\n[j]\nrw=randread\n",
    )
    .unwrap();
    let jobs = parse_file(&dir.join("main.fio")).unwrap();
    assert_eq!(jobs[0].ioengine, IoEngine::Libaio);
    assert_eq!(jobs[0].iodepth, 16);

    // Errors inside an included file name that file and its line.
    std::fs::write(dir.join("inc/bad.fio"), "\nbs=4q\n").unwrap();
    std::fs::write(
        dir.join("bad.fio"),
        "[j]\nfilename=f\ninclude inc/bad.fio\n",
    )
    .unwrap();
    let e = parse_file(&dir.join("bad.fio")).unwrap_err();
    assert_eq!(e.file(), dir.join("inc/bad.fio"));
    assert_eq!(e.line(), Some(2));

    // Included files may not contain sections.
    std::fs::write(dir.join("inc/sect.fio"), "bs=4k\n[oops]\n").unwrap();
    std::fs::write(
        dir.join("sect.fio"),
        "[j]\nfilename=f\ninclude inc/sect.fio\n",
    )
    .unwrap();
    let e = parse_file(&dir.join("sect.fio")).unwrap_err();
    assert_eq!(
        (e.file(), e.line()),
        (dir.join("inc/sect.fio").as_path(), Some(2))
    );

    // A missing include names the including line.
    std::fs::write(dir.join("miss.fio"), "[j]\nfilename=f\ninclude nope.fio\n").unwrap();
    let e = parse_file(&dir.join("miss.fio")).unwrap_err().to_string();
    assert!(e.contains("miss.fio:3: cannot read included file"), "{e}");

    // A directory (or device) is refused rather than read.
    std::fs::write(dir.join("dir.fio"), "[j]\nfilename=f\ninclude inc\n").unwrap();
    let e = parse_file(&dir.join("dir.fio")).unwrap_err().to_string();
    assert!(
        e.contains("dir.fio:3: included ") && e.contains("is not a regular file"),
        "{e}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn include_cycles_are_caught() {
    let dir = scratch("cycle");
    std::fs::write(dir.join("a.fio"), "[j]\nfilename=f\ninclude inc/b.fio\n").unwrap();
    std::fs::write(dir.join("inc/b.fio"), "bs=4k\ninclude c.fio\n").unwrap();
    std::fs::write(dir.join("inc/c.fio"), "include ../a.fio\n").unwrap();
    let e = parse_file(&dir.join("a.fio")).unwrap_err();
    assert!(e.what().starts_with("include cycle: "), "{e}");
    assert_eq!(
        (e.file(), e.line()),
        (dir.join("inc/c.fio").as_path(), Some(1))
    );

    std::fs::write(dir.join("self.fio"), "[j]\nfilename=f\ninclude self.fio\n").unwrap();
    let e = parse_file(&dir.join("self.fio")).unwrap_err();
    assert!(e.what().starts_with("include cycle: "), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}

mod never_panics {
    use super::*;
    use proptest::prelude::*;

    const TOKENS: &[&str] = &[
        "[global]",
        "[job]",
        "[job]",
        "[",
        "]",
        "[]",
        "rw=randrw",
        "rw=",
        "bs=4k",
        "bs=4k,8k",
        "bs=,",
        "iodepth=0",
        "iodepth=99999999999",
        "iodepth=1k",
        "numjobs=2",
        "filename=a:b",
        "filename=\\:",
        "filename=:",
        "cpus_allowed=0-3",
        "cpus_allowed=4-",
        "cpus_allowed=,",
        "runtime=10s",
        "runtime=1d",
        "ramp_time=99999999999999d",
        "size=1p",
        "loops=99999",
        "time_based",
        "hipri",
        "direct",
        "direct=2",
        "ioengine=io_uring",
        "ioengine=pvsync2",
        "include",
        "include ",
        "include nope.fio",
        "${HOME}",
        "${",
        "$ncpus",
        "=",
        "==",
        ";",
        "#",
        "rwmixread=50",
        "rwmixwrite=101",
        "kb_base=1000",
        "iodepth_batch_complete_max=0",
        "number_ios=1",
        "name=",
        "  ",
        "\t",
        "é",
        "\u{0}",
    ];

    fn line_soup() -> impl Strategy<Value = String> {
        prop::collection::vec(
            (
                prop::sample::select(TOKENS),
                prop::sample::select(TOKENS),
                prop::bool::ANY,
            ),
            0..24,
        )
        .prop_map(|lines| {
            lines
                .into_iter()
                .map(|(a, b, glue)| {
                    if glue {
                        format!("{a}{b}")
                    } else {
                        a.to_string()
                    }
                })
                .collect::<Vec<_>>()
                .join("\n")
        })
    }

    proptest! {
        #[test]
        fn arbitrary_text(text in any::<String>()) {
            let _ = parse_str(&text, Path::new("fuzz.fio"));
        }

        #[test]
        fn plausible_token_soup(text in line_soup()) {
            match parse_str(&text, Path::new("fuzz.fio")) {
                Ok(jobs) => {
                    for j in jobs {
                        prop_assert!(j.iodepth >= 1 && j.numjobs >= 1 && j.bs > 0);
                        prop_assert!(!j.filenames.is_empty());
                        prop_assert!(j.iodepth_batch_submit >= 1);
                        prop_assert!(j.iodepth_batch_submit <= j.iodepth);
                        prop_assert!(j.iodepth_batch_complete_max <= j.iodepth);
                        prop_assert!(j.iodepth_batch_complete_min <= j.iodepth_batch_complete_max);
                    }
                }
                Err(e) => prop_assert!(e.to_string().starts_with("fuzz.fio")),
            }
        }
    }
}

#[test]
fn files_are_named_as_fio_names_them() {
    // No filename: fio makes up $jobname.$jobnum.$filenum, one set per clone.
    let j = &parse("[w]\nnumjobs=2\nnrfiles=2\n")[0];
    assert_eq!(j.filenames, vec!["w.0.0", "w.0.1"]);
    assert_eq!(j.files_of_clone(1), ["w.1.0", "w.1.1"]);
    // directory= goes in front; clone k takes directory k mod the count.
    let j = &parse("[a]\ndirectory=/d1:/d2/\nfilename=f\nnumjobs=3\n")[0];
    assert_eq!(j.files_of_clone(0), ["/d1/f"]);
    assert_eq!(j.files_of_clone(1), ["/d2/f"]);
    assert_eq!(j.files_of_clone(2), ["/d1/f"]);
    let j = &parse("[a]\ndirectory=tmp\nfilename_format=x.$filenum.$jobname\n")[0];
    assert_eq!(
        (j.filenames.clone(), j.clone_filenames.len()),
        (vec!["tmp/x.0.a".to_string()], 0)
    );
    // Clones of one filename share it.
    let j = &parse("[a]\nfilename=/dev/sdb\nnumjobs=4\n")[0];
    assert!(j.clone_filenames.is_empty());
    assert_eq!(j.files_of_clone(3), ["/dev/sdb"]);
    // libblkio names its device with libblkio_path.
    let j =
        &parse("[a]\nioengine=libblkio\nlibblkio_driver=io_uring\nlibblkio_path=/dev/nvme0n1\n")[0];
    assert_eq!(
        (j.ioengine, j.filenames.clone()),
        (IoEngine::IoUring, vec!["/dev/nvme0n1".to_string()])
    );
}

#[test]
fn byte_budgets_follow_fio() {
    // io_size is the I/O within size; loops repeat it; filesize x nrfiles without size.
    assert_eq!(
        parse("[a]\nsize=1g\nio_size=4m\nloops=2\n")[0].size,
        Some(8 << 20)
    );
    assert_eq!(
        parse("[a]\nfilesize=1m\nnrfiles=3\n")[0].size,
        Some(3 << 20)
    );
    // A share of the device, or filling it, has no budget the platform can give.
    assert_eq!(parse("[a]\nsize=30%\n")[0].size, None);
    assert_eq!(parse("[a]\nsize=1g\nfill_device=1\n")[0].size, None);
    // time_based with no runtime parses: the engine (or --max-runtime) bounds it.
    let j = &parse("[a]\ntime_based\n")[0];
    assert!(j.time_based && j.runtime_ns.is_none());
}

#[test]
fn engines_and_offset_modifiers_follow_fio() {
    for (engine, want) in [
        ("sync", IoEngine::Psync),
        ("vsync", IoEngine::Psync),
        ("pvsync", IoEngine::Psync),
        ("posixaio", IoEngine::PosixAio),
        ("null", IoEngine::Null),
        ("cpp_null", IoEngine::Null),
        ("io_uring_cmd", IoEngine::IoUring),
    ] {
        let j = &parse(&format!("[a]\nfilename=f\nioengine={engine}\niodepth=8\n"))[0];
        assert_eq!(j.ioengine, want, "{engine}");
    }
    assert_eq!(
        parse("[a]\nfilename=f\nioengine=posixaio\niodepth=8\n")[0].iodepth,
        8
    );
    for rw in ["write:4k", "read:-8k", "randread:8", "write:112k"] {
        parse(&format!("[a]\nfilename=f\nrw={rw}\n"));
    }
}

#[test]
fn control_options_are_read_as_fio_reads_them() {
    use irqlab_fio::{CpuMode, ExitWhat, SqPoll, SsMetric, SubmitMode, WriteCmd};
    let j = &parse(
        "[j]\nfilename=f\nioengine=io_uring\nsqthread_poll\nsqthread_poll_cpu=3\nflow_id=2\nflow=5\nflow_sleep=100\nrate_iops_min=10,20\nratecycle=500\nlatency_target=2ms\nlatency_window=1s\nlatency_percentile=99.9\nsteadystate=bw_slope:1%\nss_dur=30s\nss_ramp=5\nss_interval=2s\nexit_what=stonewall\nmax_latency=300\n",
    )[0];
    assert_eq!(j.controls.sqpoll, Some(SqPoll { cpu: Some(3) }));
    let f = j.controls.flow.unwrap();
    assert_eq!(
        (f.id, f.weight, f.sleep_ns),
        (2, 5, 100_000),
        "flow_sleep is µs"
    );
    // Two values: reads, then writes and trims.
    assert_eq!(
        (j.controls.rate_min.iops, j.controls.rate_min.cycle_ms),
        ([10, 20, 20], 500)
    );
    let t = j.controls.latency_target.unwrap();
    assert_eq!(
        (t.target_ns, t.window_ns, t.percentile),
        (2_000_000, 1_000_000_000, 99.9)
    );
    assert_eq!(
        j.controls.max_latency_ns,
        Some(300_000),
        "a bare max_latency is µs"
    );
    let ss = j.controls.steadystate.unwrap();
    assert_eq!(
        (ss.metric, ss.slope, ss.pct, ss.limit),
        (SsMetric::Bw, true, true, 1.0)
    );
    assert_eq!(
        (ss.duration_s, ss.ramp_ns, ss.interval_ms),
        (30, 5_000_000_000, 2000)
    );
    assert_eq!(ss.intervals(), 15);
    assert_eq!(ss.describe(), "bw_slope:1.000000%");
    assert_eq!(j.controls.exit.what, ExitWhat::Stonewall);
    assert!(!j.controls.exit.exitall);
    // exitall is process-wide: a [global] after every job still sets it for all.
    let all = parse("[a]\nfilename=f\n[b]\nfilename=f\n[global]\nexitall\n");
    assert!(all.iter().all(|j| j.controls.exit.exitall));
    // Trims take the third block size; two values give them the writes'.
    let tr = &parse("[j]\nfilename=f\nrw=randtrim\nbs=4k,8k,16k\n")[0];
    assert_eq!(tr.trim_sizes, BlockSizes::Fixed(16384));
    assert!(tr.rw.trims() && !tr.rw.writes());
    let tw = &parse("[j]\nfilename=f\nrw=trimwrite\nbs=4k,8k\n")[0];
    assert_eq!(tw.trim_sizes, BlockSizes::Fixed(8192));
    assert!(tw.rw.trims() && tw.rw.writes());
    // Blank shares of a write_mode mix split the rest (str_write_mode_cb).
    let wm =
        &parse("[j]\nfilename=f\nioengine=io_uring_cmd\nwrite_mode=write/50:zeroes/:uncor/\n")[0];
    assert_eq!(
        wm.controls.write_mix,
        vec![
            (WriteCmd::Write, 50),
            (WriteCmd::Zeroes, 25),
            (WriteCmd::Uncor, 25)
        ]
    );
    let z = parse(
        "[j]\nfilename=f\nrw=randwrite\nzonemode=zbd\nzonesize=1m\nsize=8z\nmax_open_zones=4\n",
    )[0]
    .controls
    .zbd
    .unwrap();
    assert_eq!((z.zones, z.capacity, z.max_open), (Some(8), 1 << 20, 4));
    let c = parse("[j]\nioengine=cpuio\ncpuload=130\n")[0]
        .controls
        .cpuio
        .unwrap();
    assert_eq!(
        (c.load_pct, c.chunk_ns, c.mode),
        (100, 50_000_000, CpuMode::Noop)
    );
    // Offloaded, a sync engine keeps iodepth calls in flight.
    let off = &parse("[j]\nfilename=f\nioengine=psync\niodepth=8\nio_submit_mode=offload\n")[0];
    assert_eq!(
        (off.controls.submit_mode, off.effective_iodepth()),
        (SubmitMode::Offload, 8)
    );
    assert_eq!(
        parse("[j]\nfilename=f\nioengine=psync\niodepth=8\n")[0].effective_iodepth(),
        1
    );
}

#[test]
fn control_options_fio_refuses_are_refused_at_their_line() {
    for (text, want) in [
        (
            "[a]\nfilename=f\n[b]\nfilename=f\nwait_for=b\n",
            "jobs/a.fio:5: job 'b': a job cannot wait for itself",
        ),
        (
            "[a]\nfilename=f\nrate_iops=100\nrate_iops_min=200\n",
            "jobs/a.fio:4: job 'a': minimum rate exceeds rate, ddir 0",
        ),
        (
            "[a]\nfilename=f\nrate_min=1m\nrate_iops_min=200\n",
            "jobs/a.fio:4: job 'a': rate_min and rate_iops_min are mutually exclusive",
        ),
        (
            "[a]\nioengine=cpuio\ncpuload=50\nflow=1\n",
            "jobs/a.fio:4: job 'a': flow with ioengine=cpuio",
        ),
        (
            "[a]\nfilename=f\nrw=trimwrite\nioengine=io_uring_cmd\nnum_range=2\n",
            "jobs/a.fio:5: job 'a': trimwrite cannot be used with multiple ranges",
        ),
    ] {
        let got = err(text);
        assert!(
            got.starts_with(want),
            "for {text:?}\n got: {got}\nwant: {want}..."
        );
    }
}

#[test]
fn batch_sizes_are_resolved_as_init_c_does() {
    // Both engines read these fields as they are: 1 to iodepth, 0 meaning iodepth.
    let batches = |text: &str| {
        let j = &parse(text)[0];
        (
            j.iodepth,
            j.iodepth_batch_submit,
            j.iodepth_batch_complete_min,
            j.iodepth_batch_complete_max,
        )
    };
    let job = "[j]\nfilename=f\nioengine=libaio\niodepth=4\n";
    assert_eq!(
        batches(&format!("{job}iodepth_batch_submit=0\n")),
        (4, 4, 1, 1)
    );
    assert_eq!(
        batches(&format!(
            "{job}iodepth_batch_submit=9\niodepth_batch_complete_min=9\niodepth_batch_complete_max=9\n"
        )),
        (4, 4, 4, 4)
    );
    assert_eq!(
        batches(&format!(
            "{job}iodepth_batch_complete_min=0\niodepth_batch_complete_max=0\n"
        )),
        (4, 1, 0, 1)
    );
    assert_eq!(
        batches("[j]\nfilename=f\nioengine=psync\niodepth=8\niodepth_batch_submit=8\n"),
        (1, 1, 1, 1),
        "a synchronous engine's depth is 1"
    );
}
