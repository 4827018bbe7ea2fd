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

/// Job files: examples/, the scenarios' jobs, the fio corpus and fio's own examples.
pub fn jobs() -> Vec<String> {
    let mut out = texts(&files(
        &repo().join("crates/irqlab-fuzz/corpus/fio"),
        ".fio",
    ));
    out.extend(good_jobs());
    out
}

/// Job files a user would write (no crasher of the corpus): the start of grammar-aware
/// edits. examples/, the scenarios' jobs, and fio's own examples that irqlab reads.
pub fn good_jobs() -> Vec<String> {
    let r = repo();
    let mut paths = files(&r.join("examples"), ".fio");
    paths.extend(files(&r.join("scenarios"), ".fio"));
    let mut out = texts(&paths);
    // fio's own examples (GPL-2.0, see their NOTICE.md), jobs as users write them: the
    // ones irqlab reads (most of the rest name an engine it refuses, which the hostile
    // mutations reach often enough).
    let examples = files(&r.join("crates/irqlab/tests/fixtures/fio-examples"), ".fio");
    out.extend(
        texts(&examples)
            .into_iter()
            .filter(|t| irqlab_fio::parse_str(t, Path::new("example.fio")).is_ok()),
    );
    out
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

/// The repository's platform files (no crasher of the corpus): those that load, not the
/// shared tables under platforms/cpus, kernels, uncores and kinds, which are not platforms.
pub fn good_platforms() -> Vec<String> {
    let tables = repo().join("platforms");
    texts(&files(&tables, ".toml"))
        .into_iter()
        .filter(|t| irqlab_sim::ledger::from_text(t, "seed.toml", Some(&tables), &[]).is_ok())
        .collect()
}

/// Scenario files (scenarios/), with their paths.
pub fn scenarios() -> Vec<PathBuf> {
    files(&repo().join("scenarios"), ".toml")
}

/// The example platform's text, the base of whole-run cases.
pub fn example_platform() -> String {
    std::fs::read_to_string(repo().join("platforms/example.toml")).unwrap_or_default()
}
