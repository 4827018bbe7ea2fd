//! What the fio runs read: a file irqlab lays out (in the current directory by default)
//! and removes afterwards, an existing file, or a whole block device that nothing uses:
//! a device that is mounted, has a mounted partition, is swap or is held by device
//! mapper or RAID is refused. The runs only read (fio --readonly).

use crate::error::CaptureError;
use crate::manifest::Target;
use crate::probe::Probe;
use std::io::Write;
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

/// The smallest existing file accepted: reads of a smaller one stay in caches.
const MIN_FILE_BYTES: u64 = 16 << 20;

/// A target ready for the runs; a file irqlab created is removed when this is dropped
/// (after the runs, on an error, or after Ctrl-C).
#[derive(Debug)]
pub struct Prepared {
    pub info: Target,
    path: PathBuf,
    remove: bool,
}

impl Drop for Prepared {
    fn drop(&mut self) {
        if self.remove {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

fn refuse(path: &Path, why: impl Into<String>) -> CaptureError {
    CaptureError::Target {
        path: path.to_path_buf(),
        why: why.into(),
    }
}

fn dev_name(dev: u64) -> String {
    format!("{}:{}", rustix::fs::major(dev), rustix::fs::minor(dev))
}

/// The whole disk (/sys/block name) a device number belongs to, through a partition
/// and a single-slave device-mapper device; None for filesystems on no block device
/// (tmpfs, overlay, network).
pub fn disk_of(p: &Probe, dev: u64) -> Option<String> {
    let mut path = p.resolve(&format!("/sys/dev/block/{}", dev_name(dev)))?;
    for _ in 0..4 {
        if p.exists(&format!("{path}/partition")) {
            path = path.rsplit_once('/')?.0.to_string();
        }
        let name = path.rsplit('/').next()?.to_string();
        let slaves = p.list(&format!("{path}/slaves"));
        match slaves.as_slice() {
            [one] if path.contains("/virtual/") => {
                path = p.resolve(&format!("/sys/block/{one}"))?
            }
            _ => return Some(name),
        }
    }
    None
}

/// The device numbers of a disk and of its partitions, and what holds any of them.
fn disk_parts(p: &Probe, disk: &str) -> (Vec<String>, Vec<String>) {
    let base = format!("/sys/block/{disk}");
    let mut devs: Vec<String> = p.value(&format!("{base}/dev")).into_iter().collect();
    let mut holders = p.list(&format!("{base}/holders"));
    for part in p.list(&base) {
        if p.exists(&format!("{base}/{part}/partition")) {
            devs.extend(p.value(&format!("{base}/{part}/dev")));
            holders.extend(p.list(&format!("{base}/{part}/holders")));
        }
    }
    (devs, holders)
}

fn rdev_of(path: &str) -> Option<String> {
    let m = std::fs::metadata(path).ok()?;
    m.file_type().is_block_device().then(|| dev_name(m.rdev()))
}

/// Refuses a block device that is in use; returns its disk's name.
fn check_device(p: &Probe, path: &Path, rdev: u64) -> Result<String, CaptureError> {
    let disk = disk_of(p, rdev).ok_or_else(|| {
        refuse(
            path,
            "a block device this kernel does not list in /sys/dev/block",
        )
    })?;
    let (devs, holders) = disk_parts(p, &disk);
    if !holders.is_empty() {
        return Err(refuse(
            path,
            format!(
                "{disk} is held by {} (device mapper, RAID or LVM); expected a disk nothing uses",
                holders.join(", ")
            ),
        ));
    }
    for line in p.text("/proc/self/mountinfo").unwrap_or_default().lines() {
        let f: Vec<&str> = line.split_whitespace().collect();
        let source = line
            .split(" - ")
            .nth(1)
            .and_then(|t| t.split_whitespace().nth(1));
        let by_number = f.get(2).is_some_and(|d| devs.iter().any(|x| x == d));
        let by_source = source
            .filter(|s| s.starts_with("/dev/"))
            .and_then(rdev_of)
            .is_some_and(|d| devs.contains(&d));
        if by_number || by_source {
            return Err(refuse(
                path,
                format!(
                    "{disk} (or a partition of it) is mounted at {}; expected an unmounted disk, or give a file on it",
                    f.get(4).unwrap_or(&"?")
                ),
            ));
        }
    }
    for line in p.text("/proc/swaps").unwrap_or_default().lines().skip(1) {
        if let Some(d) = line.split_whitespace().next().and_then(rdev_of)
            && devs.contains(&d)
        {
            return Err(refuse(
                path,
                format!("{disk} (or a partition of it) is in use as swap"),
            ));
        }
    }
    Ok(disk)
}

fn free_bytes(dir: &Path) -> Option<u64> {
    let s = rustix::fs::statvfs(dir).ok()?;
    Some(s.f_bavail.saturating_mul(s.f_frsize))
}

/// Writes `size` bytes of pseudo-random data (zeros could be stored sparsely by the
/// filesystem or the hypervisor's image and read back without touching the device).
fn lay_out(
    mut f: std::fs::File,
    path: &Path,
    size: u64,
    stop: &AtomicBool,
    progress: &dyn Fn(&str),
) -> Result<(), CaptureError> {
    progress(&format!(
        "laying out {} ({} MiB)",
        path.display(),
        size >> 20
    ));
    let mut buf = vec![0u8; 1 << 20];
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut left = size;
    while left > 0 {
        if stop.load(Ordering::Relaxed) {
            return Err(CaptureError::Interrupted);
        }
        for chunk in buf.chunks_exact_mut(8) {
            // xorshift64: cheap bytes that no layer will find a pattern in.
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            chunk.copy_from_slice(&x.to_ne_bytes());
        }
        let n = left.min(buf.len() as u64) as usize;
        f.write_all(&buf[..n])
            .map_err(|e| CaptureError::write(path, &e))?;
        left -= n as u64;
    }
    f.sync_all().map_err(|e| CaptureError::write(path, &e))
}

/// A new file at `path`, laid out; removed again if anything fails.
fn create(
    p: &Probe,
    path: &Path,
    size: u64,
    stop: &AtomicBool,
    progress: &dyn Fn(&str),
) -> Result<Prepared, CaptureError> {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let free = free_bytes(dir).unwrap_or(u64::MAX);
    if free < size + size / 4 {
        return Err(refuse(
            path,
            format!(
                "{} MiB free in {}; the file needs {} MiB and some room",
                free >> 20,
                dir.display(),
                size >> 20
            ),
        ));
    }
    // create_new: a file that appeared meanwhile is the user's, never overwritten.
    let f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .map_err(|e| CaptureError::write(path, &e))?;
    let mut prepared = Prepared {
        info: Target {
            path: String::new(),
            kind: "file".into(),
            size_bytes: size,
            device: None,
            created: true,
        },
        path: path.to_path_buf(),
        remove: true,
    };
    lay_out(f, path, size, stop, progress)?;
    let abs = std::fs::canonicalize(path).map_err(|e| CaptureError::write(path, &e))?;
    prepared.info.path = abs.to_string_lossy().into_owned();
    prepared.info.device = std::fs::metadata(&abs)
        .ok()
        .and_then(|m| disk_of(p, m.dev()));
    prepared.path = abs;
    Ok(prepared)
}

/// The target of the runs: `given` (a file or a device), or a new file of `size` bytes in
/// the current directory.
pub fn prepare(
    given: Option<&Path>,
    size: u64,
    stop: &AtomicBool,
    progress: &dyn Fn(&str),
) -> Result<Prepared, CaptureError> {
    let p = Probe::live();
    let Some(path) = given else {
        let name = PathBuf::from(format!("irqlab-capture-{}.dat", std::process::id()));
        return create(&p, &name, size, stop, progress);
    };
    let meta = match std::fs::metadata(path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return create(&p, path, size, stop, progress);
        }
        Err(e) => return Err(refuse(path, irqlab_fio::input::io_reason(&e))),
    };
    let abs =
        std::fs::canonicalize(path).map_err(|e| refuse(path, irqlab_fio::input::io_reason(&e)))?;
    let shown = abs.to_string_lossy().into_owned();
    if meta.file_type().is_block_device() {
        let disk = check_device(&p, path, meta.rdev())?;
        let name = abs
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let sectors: Option<u64> = p.number(&format!("/sys/class/block/{name}/size"));
        return Ok(Prepared {
            info: Target {
                path: shown,
                kind: "device".into(),
                size_bytes: sectors.unwrap_or(0) * 512,
                device: Some(disk),
                created: false,
            },
            path: abs,
            remove: false,
        });
    }
    if !meta.is_file() {
        return Err(refuse(path, "not a regular file or a block device"));
    }
    if meta.len() < MIN_FILE_BYTES {
        return Err(refuse(
            path,
            format!(
                "{} bytes; expected a file of at least {} MiB (smaller ones are read from caches)",
                meta.len(),
                MIN_FILE_BYTES >> 20
            ),
        ));
    }
    Ok(Prepared {
        info: Target {
            path: shown,
            kind: "file".into(),
            size_bytes: meta.len(),
            device: disk_of(&p, meta.dev()),
            created: false,
        },
        path: abs,
        remove: false,
    })
}
