//! Scratch directories for the tests: a fixture copied where a test may break it.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

pub fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// A fresh empty directory under the system's temporary directory, removed on drop.
pub struct Scratch(pub PathBuf);

impl Scratch {
    pub fn new(tag: &str) -> Scratch {
        static N: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "irqlab-capture-test-{}-{tag}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }

    /// A copy of fixture `name`.
    pub fn copy_of(name: &str) -> Scratch {
        let s = Scratch::new(name);
        for e in std::fs::read_dir(fixture(name)).unwrap() {
            let e = e.unwrap();
            std::fs::copy(e.path(), s.0.join(e.file_name())).unwrap();
        }
        s
    }

    pub fn path(&self, f: &str) -> PathBuf {
        self.0.join(f)
    }

    pub fn write(&self, f: &str, text: &str) {
        std::fs::write(self.path(f), text).unwrap();
    }

    pub fn read(&self, f: &str) -> String {
        std::fs::read_to_string(self.path(f)).unwrap()
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}
