//! Seed inputs: the repository's own job, platform and scenario files, which the
//! mutations start from, and the corpus of inputs that once broke irqlab.

use std::path::{Path, PathBuf};

/// The repository root (this crate lives in crates/irqlab-fuzz).
pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Files under `dir` (recursively) whose name ends in `ext`, sorted.
pub fn files(dir: &Path, ext: &str) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if p.to_string_lossy().ends_with(ext) {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

fn texts(paths: &[PathBuf]) -> Vec<String> {
    paths
        .iter()
        .filter_map(|p| std::fs::read_to_string(p).ok())
        .collect()
}

/// Job files: examples/, the scenarios' jobs and the fio corpus.
pub fn jobs() -> Vec<String> {
    let r = repo();
    let mut paths = files(&r.join("examples"), ".fio");
    paths.extend(files(&r.join("scenarios"), ".fio"));
    paths.extend(files(&r.join("crates/irqlab-fuzz/corpus/fio"), ".fio"));
    texts(&paths)
}

/// Platform files: platforms/ and the platform corpus.
pub fn platforms() -> Vec<String> {
    let r = repo();
    let mut paths = files(&r.join("platforms"), ".toml");
    paths.extend(files(
        &r.join("crates/irqlab-fuzz/corpus/platform"),
        ".toml",
    ));
    texts(&paths)
}

/// Scenario files (scenarios/), with their paths.
pub fn scenarios() -> Vec<PathBuf> {
    files(&repo().join("scenarios"), ".toml")
}

/// The example platform's text, the base of whole-run cases.
pub fn example_platform() -> String {
    std::fs::read_to_string(repo().join("platforms/example.toml")).unwrap_or_default()
}
