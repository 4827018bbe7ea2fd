//! The corpus of inputs that once broke irqlab (issue 12), as regression tests: each file
//! says what irqlab must answer (`# expect: TEXT` in its refusal, or `# expect: ok`),
//! within seconds and under the process's memory cap. The fuzz targets start from these
//! files too.

use irqlab_core::Policy;
use irqlab_fuzz::{cap_memory, check_message, seeds};
use irqlab_sim::{Platform, SimOptions};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// The `# KEY: value` header line of a corpus file.
fn header(text: &str, key: &str) -> Option<String> {
    let tag = format!("# {key}: ");
    text.lines()
        .map(|l| l.trim_start_matches('\u{feff}'))
        .find_map(|l| l.strip_prefix(&tag).map(str::to_string))
}

fn corpus(kind: &str) -> Vec<PathBuf> {
    let dir = seeds::repo().join("crates/irqlab-fuzz/corpus").join(kind);
    let files = seeds::files(&dir, if kind == "fio" { ".fio" } else { ".toml" });
    assert!(!files.is_empty(), "no corpus in {}", dir.display());
    files
}

/// What irqlab answers for a job file on a platform (with --set overrides).
fn answer(job: &Path, platform: &Path, sets: &[String]) -> Result<(), String> {
    let jobs = irqlab_fio::parse_file(job).map_err(|e| e.to_string())?;
    let p = Platform::load(platform, sets).map_err(|e| e.to_string())?;
    irqlab_sim::simulate(&jobs, &p, &Policy::default(), &SimOptions::default())
        .map(drop)
        .map_err(|e| e.to_string())
}

fn check(file: &Path, got: Result<(), String>, text: &str, started: Instant) {
    let want =
        header(text, "expect").unwrap_or_else(|| panic!("{}: no '# expect:'", file.display()));
    match (&got, want.as_str()) {
        (Ok(()), "ok") => {}
        (Ok(()), w) => panic!(
            "{}: accepted; expected a refusal with '{w}'",
            file.display()
        ),
        (Err(e), "ok") => panic!("{}: refused: {e}", file.display()),
        (Err(e), w) => {
            assert!(
                e.contains(w),
                "{}: '{e}' does not say '{w}'",
                file.display()
            );
            check_message(e).unwrap_or_else(|m| panic!("{}: {m}", file.display()));
        }
    }
    assert!(
        started.elapsed().as_secs() < 20,
        "{}: took {:?}",
        file.display(),
        started.elapsed()
    );
}

#[test]
fn job_files_that_broke_irqlab() {
    cap_memory(4 << 30);
    let example = seeds::repo().join("platforms/example.toml");
    for file in corpus("fio") {
        let bytes = std::fs::read(&file).unwrap();
        let text = String::from_utf8_lossy(&bytes).into_owned();
        let sets: Vec<String> = header(&text, "platform")
            .map(|s| {
                s.split_whitespace()
                    .filter(|w| *w != "--set")
                    .map(String::from)
                    .collect()
            })
            .unwrap_or_default();
        let t0 = Instant::now();
        let got = answer(&file, &example, &sets);
        check(&file, got, &text, t0);
    }
}

#[test]
fn platform_files_that_broke_irqlab() {
    cap_memory(4 << 30);
    let dir = std::env::temp_dir().join(format!("irqlab-corpus-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for file in corpus("platform") {
        let text = std::fs::read_to_string(&file).unwrap();
        // A job on as many disks as the file says (the default: one).
        let disks: usize = header(&text, "jobs").map_or(1, |n| n.parse().unwrap());
        let names: Vec<String> = (0..disks).map(|d| format!("nvme{d}n1")).collect();
        let job = dir.join("job.fio");
        std::fs::write(
            &job,
            format!(
                "[j]\nioengine=libaio\niodepth=8\nfilename={}\nruntime=1ms\n",
                names.join(":")
            ),
        )
        .unwrap();
        let t0 = Instant::now();
        let got = answer(&job, &file, &[]);
        check(&file, got, &text, t0);
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_megabyte_cpu_list_and_devices_as_inputs() {
    cap_memory(4 << 30);
    let dir = std::env::temp_dir().join(format!("irqlab-corpus-gen-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let example = seeds::repo().join("platforms/example.toml");
    // cpus_allowed with a 1 MB list once allocated 8 GiB.
    let list = vec!["0-15"; 200_000].join(",");
    let job = dir.join("cpus.fio");
    std::fs::write(
        &job,
        format!("[j]\nioengine=libaio\nfilename=/dev/nvme0n1\nruntime=1ms\ncpus_allowed={list}\n"),
    )
    .unwrap();
    let t0 = Instant::now();
    answer(&job, &example, &[]).unwrap();
    assert!(t0.elapsed().as_secs() < 20);
    for dev in ["/dev/zero", "/dev/null"] {
        let e = answer(Path::new(dev), &example, &[]).unwrap_err();
        assert!(e.contains("not a regular file"), "{e}");
        let e = answer(&job, Path::new(dev), &[]).unwrap_err();
        assert!(e.contains("not a regular file"), "{e}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}
