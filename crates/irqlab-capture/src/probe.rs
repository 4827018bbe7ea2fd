//! Reads of /proc and /sys under a root directory (`/` on a live host, a tree of files in
//! the tests), each remembered by its path pattern so the manifest can say what was read
//! from where, and what was not readable.

use std::cell::RefCell;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// What was read and what could not be, as path patterns (`/proc/irq/*/smp_affinity_list`).
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Sources {
    pub read: Vec<String>,
    pub unreadable: Vec<String>,
}

/// A reader of a host's /proc and /sys.
pub struct Probe {
    root: PathBuf,
    read: RefCell<BTreeSet<String>>,
    unreadable: RefCell<BTreeSet<String>>,
}

/// Digits become `*`, so one pattern stands for every CPU, IRQ or queue.
fn pattern(path: &str) -> String {
    let mut out = String::with_capacity(path.len());
    let mut in_digits = false;
    for c in path.chars() {
        if c.is_ascii_digit() {
            if !in_digits {
                out.push('*');
            }
            in_digits = true;
        } else {
            out.push(c);
            in_digits = false;
        }
    }
    out
}

impl Probe {
    /// This host.
    pub fn live() -> Probe {
        Probe::at("/")
    }

    /// A host whose /proc and /sys are under `root`.
    pub fn at(root: impl Into<PathBuf>) -> Probe {
        Probe {
            root: root.into(),
            read: RefCell::default(),
            unreadable: RefCell::default(),
        }
    }

    fn host_path(&self, path: &str) -> PathBuf {
        self.root.join(path.trim_start_matches('/'))
    }

    fn note(&self, path: &str, ok: bool) {
        let set = if ok { &self.read } else { &self.unreadable };
        set.borrow_mut().insert(pattern(path));
    }

    /// The file's text, or None when absent or unreadable (noted either way).
    pub fn text(&self, path: &str) -> Option<String> {
        let r = std::fs::read_to_string(self.host_path(path)).ok();
        self.note(path, r.is_some());
        r
    }

    /// The file's text trimmed, None when absent, unreadable or empty.
    pub fn value(&self, path: &str) -> Option<String> {
        self.text(path)
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
    }

    /// A number from a file.
    pub fn number<T: std::str::FromStr>(&self, path: &str) -> Option<T> {
        self.value(path)?.parse().ok()
    }

    /// Whether the path exists (the presence of an ACPI table is readable without root,
    /// its contents are not).
    pub fn exists(&self, path: &str) -> bool {
        let e = self.host_path(path).exists();
        if e {
            self.note(path, true);
        }
        e
    }

    /// A directory's entries, sorted; empty when it is absent.
    pub fn list(&self, dir: &str) -> Vec<String> {
        let Ok(rd) = std::fs::read_dir(self.host_path(dir)) else {
            return Vec::new();
        };
        self.note(dir, true);
        let mut v: Vec<String> = rd
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .collect();
        v.sort_by_key(|a| natural(a));
        v
    }

    /// Where a symbolic link leads, as a host path (`/sys/devices/...`).
    pub fn resolve(&self, path: &str) -> Option<String> {
        let real = std::fs::canonicalize(self.host_path(path)).ok();
        self.note(path, real.is_some());
        let real = real?;
        let root = std::fs::canonicalize(&self.root).ok()?;
        let rel = real.strip_prefix(&root).ok()?;
        Some(Path::new("/").join(rel).to_string_lossy().into_owned())
    }

    /// The last component of a link's target (a driver's name).
    pub fn link_name(&self, path: &str) -> Option<String> {
        let t = std::fs::read_link(self.host_path(path)).ok();
        self.note(path, t.is_some());
        let t = t?;
        t.file_name()?.to_str().map(str::to_string)
    }

    pub fn sources(&self) -> Sources {
        let read = self.read.borrow();
        Sources {
            read: read.iter().cloned().collect(),
            unreadable: self
                .unreadable
                .borrow()
                .iter()
                .filter(|p| !read.contains(*p))
                .cloned()
                .collect(),
        }
    }
}

/// Sort key putting `cpu2` before `cpu10`.
fn natural(s: &str) -> (String, u64, String) {
    let head: String = s.chars().take_while(|c| !c.is_ascii_digit()).collect();
    let rest = &s[head.len()..];
    let digits: String = rest.chars().take_while(|c| c.is_ascii_digit()).collect();
    (
        head,
        digits.parse().unwrap_or(0),
        rest[digits.len()..].to_string(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_become_patterns_and_lists_sort_naturally() {
        assert_eq!(
            pattern("/proc/irq/36/smp_affinity_list"),
            "/proc/irq/*/smp_affinity_list"
        );
        assert_eq!(
            pattern("/sys/block/nvme0n1/mq/12/cpu_list"),
            "/sys/block/nvme*n*/mq/*/cpu_list"
        );
        let mut v = vec!["cpu10", "cpu2", "cpufreq", "cpu1"];
        v.sort_by_key(|a| natural(a));
        assert_eq!(v, vec!["cpu1", "cpu2", "cpu10", "cpufreq"]);
    }
}
