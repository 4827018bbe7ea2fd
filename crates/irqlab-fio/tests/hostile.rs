//! Hostile job files (issue 12): every list and repeat count is capped where it is
//! parsed, with FILE:LINE, and nothing the parser does grows past its input.

use irqlab_fio::{parse_file, parse_str};
use std::path::{Path, PathBuf};

fn err(text: &str) -> String {
    parse_str(text, Path::new("h.fio")).unwrap_err().to_string()
}

fn scratch(name: &str) -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("irqlab-fio-hostile-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn numjobs_is_capped_at_fios_job_limit() {
    let e = err("[j]\nfilename=f\nruntime=1ms\nnumjobs=100000000\n");
    assert!(
        e.starts_with("h.fio:4: numjobs=100000000 is out of range"),
        "{e}"
    );
    assert!(e.contains("4096"), "{e}");
    // The whole file counts too: two jobs of 3000 clones are 6000 jobs.
    let e = err("[global]\nfilename=f\nruntime=1ms\n[a]\nnumjobs=3000\n[b]\nnumjobs=3000\n");
    assert!(
        e.starts_with("h.fio:7: job 'b' brings the file to 6000 jobs"),
        "{e}"
    );
    let ok = parse_str(
        "[a]\nfilename=f\nruntime=1ms\nnumjobs=4096\n",
        Path::new("h.fio"),
    );
    assert_eq!(ok.unwrap()[0].numjobs, 4096);
}

#[test]
fn a_megabyte_cpu_list_parses_as_a_set() {
    let list = vec!["0-4095"; 150_000].join(",");
    let text = format!("[j]\nfilename=f\nruntime=1ms\ncpus_allowed={list}\n");
    assert!(text.len() > 1 << 20);
    let jobs = parse_str(&text, Path::new("h.fio")).unwrap();
    assert_eq!(jobs[0].cpus_allowed.as_ref().map(Vec::len), Some(4096));
}

#[test]
fn long_lists_name_their_line() {
    let names = vec!["a"; 5000].join(":");
    let e = err(&format!("[j]\nruntime=1ms\nfilename={names}\n"));
    assert!(e.starts_with("h.fio:3: filename= lists 5000 files"), "{e}");
    let split = vec!["4k/1"; 65].join(":");
    let e = err(&format!("[j]\nfilename=f\nruntime=1ms\nbssplit={split}\n"));
    assert!(
        e.starts_with("h.fio:4: bssplit=") && e.contains("BSSPLIT_MAX"),
        "{e}"
    );
}

#[test]
fn sizes_and_times_never_wrap() {
    let e = err("[j]\nfilename=f\nsize=1p\nloops=65536\n");
    assert!(
        e.starts_with("h.fio:4: job 'j': size x loops") && e.contains("16 EiB"),
        "{e}"
    );
    let jobs = parse_str(
        "[j]\nfilename=f\nruntime=18446744073s\nramp_time=1s\n",
        Path::new("h.fio"),
    )
    .unwrap();
    // runtime + ramp_time does not fit in 64 bits of ns: it saturates, it never wraps
    // to a short run.
    assert_eq!(jobs[0].total_time_ns(), Some(u64::MAX));
}

#[test]
fn a_byte_order_mark_and_bad_utf8_are_handled_in_the_users_terms() {
    let dir = scratch("text");
    std::fs::write(
        dir.join("bom.fio"),
        b"\xef\xbb\xbf[j]\nfilename=f\nruntime=1ms\n",
    )
    .unwrap();
    assert_eq!(parse_file(&dir.join("bom.fio")).unwrap()[0].name, "j");
    std::fs::write(
        dir.join("bad.fio"),
        b"[j]\nfilename=f\nruntime=1ms\ndescription=caf\xe9\n",
    )
    .unwrap();
    let e = parse_file(&dir.join("bad.fio")).unwrap_err().to_string();
    assert!(
        e.ends_with("bad.fio: line 4 is not valid UTF-8 text"),
        "{e}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn devices_and_fifos_are_not_read() {
    let e = parse_file(Path::new("/dev/zero")).unwrap_err().to_string();
    assert_eq!(
        e,
        "/dev/zero: not a regular file (it is a character device); expected a text file"
    );
    let dir = scratch("fifo");
    let fifo = dir.join("jobs.fio");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status();
    if made.is_ok_and(|s| s.success()) {
        // Opening a FIFO with no writer would block forever: the type is checked first.
        let e = parse_file(&fifo).unwrap_err().to_string();
        assert!(e.contains("not a regular file (it is a FIFO)"), "{e}");
        std::fs::write(dir.join("inc.fio"), "[j]\nfilename=f\ninclude jobs.fio\n").unwrap();
        let e = parse_file(&dir.join("inc.fio")).unwrap_err().to_string();
        assert!(
            e.contains("inc.fio:3: included") && e.contains("FIFO"),
            "{e}"
        );
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn includes_repeated_without_a_cycle_are_bounded() {
    let dir = scratch("repeat");
    // 1 MiB of comments included 40 times is 40 MiB of reading: refused past 16 MiB.
    std::fs::write(dir.join("big.fio"), "#".repeat(1 << 20)).unwrap();
    let text = format!(
        "[j]\nfilename=f\nruntime=1ms\n{}",
        "include big.fio\n".repeat(40)
    );
    std::fs::write(dir.join("top.fio"), text).unwrap();
    let e = parse_file(&dir.join("top.fio")).unwrap_err().to_string();
    assert!(e.contains("top.fio:") && e.contains("past 16 MiB"), "{e}");
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn global_options_times_jobs_are_bounded() {
    let globals = "thread=1\n".repeat(100);
    let jobs = "[j]\nnumjobs=1\n".repeat(2600);
    let e = err(&format!(
        "[global]\nfilename=f\nruntime=1ms\n{globals}{jobs}"
    ));
    assert!(
        e.contains("options applied over the file past 250000"),
        "{e}"
    );
}

#[test]
fn millions_of_lines_given_as_text_are_refused_not_held() {
    let text = format!(
        "[j]\nfilename=f\nruntime=1ms\n{}",
        "thread\n".repeat(1_100_000)
    );
    let e = err(&text);
    assert!(
        e.starts_with("h.fio:1000001: more than 1000000 sections and options"),
        "{e}"
    );
}
