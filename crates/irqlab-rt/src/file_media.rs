//! `--media file:PATH`: the controller serves each command with a real read or write
//! through its own io_uring on a file or block device, O_DIRECT where the filesystem
//! allows it, into 4096-aligned buffers.

use std::alloc::{Layout, alloc_zeroed, dealloc};
use std::collections::VecDeque;
use std::fs::{File, OpenOptions};
use std::io::{Seek, SeekFrom, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::error::RtError;
use io_uring::{IoUring, opcode, types};
use irqlab_core::StopFlag;
use irqlab_core::nvme::Sqe;

/// Buffer alignment: O_DIRECT needs the logical block size; 4096 covers every device.
pub const BUF_ALIGN: usize = 4096;
/// Size of a file the run creates when PATH does not exist (`--media-size`).
pub const DEFAULT_CREATE_BYTES: u64 = 64 << 20;
/// Most commands one controller keeps on its ring; more wait in its backlog.
const MAX_RING: u32 = 4096;
/// NVMe status "Unrecovered Read Error" (media errors, SCT 2h SC 81h) for a failed I/O.
const NVME_SC_READ_ERROR: u16 = 0x281;

/// The opened target shared by every controller of a run.
#[derive(Debug)]
pub struct FileTarget {
    pub path: PathBuf,
    file: File,
    /// Bytes the offsets may range over.
    pub size: u64,
    pub direct: bool,
    /// Why O_DIRECT is off, or that the run created the file.
    pub notes: Vec<String>,
}

impl FileTarget {
    /// Opens `path` for I/O of blocks up to `max_bs` bytes (writing when `write`),
    /// creating and filling a `create_bytes` file when it does not exist (until `stop` is
    /// set: a large fill takes minutes); `aligned` says every block size is a multiple of
    /// 512, as O_DIRECT needs.
    pub fn open(
        path: &Path,
        create_bytes: u64,
        max_bs: u64,
        aligned: bool,
        write: bool,
        stop: &StopFlag,
    ) -> Result<FileTarget, String> {
        let shown = path.display();
        let mut notes = Vec::new();
        if !path.exists() {
            create_filled(path, create_bytes, stop).inspect_err(|_| {
                // A fill that failed or was stopped leaves no partial file behind.
                let _ = std::fs::remove_file(path);
            })?;
            notes.push(format!("created {} MiB", create_bytes >> 20));
        }
        let meta = std::fs::metadata(path).map_err(|e| format!("--media file:{shown}: {e}"))?;
        if !meta.is_file() && !meta.file_type().is_block_device() {
            return Err(format!(
                "--media file:{shown} is not a regular file or a block device; expected a file (created if missing) or a block device"
            ));
        }
        if write && meta.file_type().is_block_device() {
            return Err(format!(
                "--media file:{shown} is a block device and the job writes: refusing to \
                 overwrite it; use a read-only job or a regular file"
            ));
        }
        let open = |direct: bool| {
            let mut o = OpenOptions::new();
            o.read(true).write(write);
            if direct {
                o.custom_flags(libc::O_DIRECT);
            }
            o.open(path)
        };
        // O_DIRECT needs sector-aligned lengths and offsets (offsets are multiples of bs).
        let (file, direct) = if !aligned {
            notes.push("buffered: bs is not a multiple of 512".into());
            (open(false), false)
        } else {
            match open(true) {
                Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
                    // tmpfs and some FUSE filesystems refuse O_DIRECT at open.
                    notes.push("buffered: the filesystem refuses O_DIRECT".into());
                    (open(false), false)
                }
                r => (r, true),
            }
        };
        let mut file = file.map_err(|e| format!("--media file:{shown}: cannot open: {e}"))?;
        // A block device's metadata length is 0; seeking to the end gives its size.
        let size = file
            .seek(SeekFrom::End(0))
            .map_err(|e| format!("--media file:{shown}: cannot find its size: {e}"))?;
        if size < max_bs {
            return Err(format!(
                "--media file:{shown} holds {size} bytes, less than one block of bs={max_bs}"
            ));
        }
        Ok(FileTarget {
            path: path.to_path_buf(),
            file,
            size,
            direct,
            notes,
        })
    }

    /// "O_DIRECT" or "buffered (why)", plus notes, for the report's platform line.
    pub fn describe(&self) -> String {
        let mut s = format!(
            "file {} ({} bytes, {})",
            self.path.display(),
            self.size,
            if self.direct { "O_DIRECT" } else { "buffered" }
        );
        for n in &self.notes {
            s.push_str("; ");
            s.push_str(n);
        }
        s
    }
}

/// Creates `path` with `bytes` of non-zero data, so reads hit allocated blocks, not holes.
fn create_filled(path: &Path, bytes: u64, stop: &StopFlag) -> Result<(), String> {
    let shown = path.display();
    if bytes == 0 {
        return Err(format!(
            "--media file:{shown} does not exist and --media-size is 0"
        ));
    }
    let mut f = OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .map_err(|e| format!("--media file:{shown}: cannot create: {e}"))?;
    let chunk: Vec<u8> = (0..1 << 20).map(|i: u32| (i % 251) as u8 + 1).collect();
    let mut left = bytes;
    while left > 0 {
        if stop.is_set() {
            return Err(format!(
                "--media file:{shown}: stopped (Ctrl-C) while creating it, after {} of {} MiB; the partial file was removed",
                (bytes - left) >> 20,
                bytes >> 20
            ));
        }
        let n = left.min(chunk.len() as u64) as usize;
        f.write_all(&chunk[..n])
            .map_err(|e| format!("--media file:{shown}: cannot fill: {e}"))?;
        left -= n as u64;
    }
    f.sync_all()
        .map_err(|e| format!("--media file:{shown}: cannot sync: {e}"))
}

/// A zeroed heap buffer aligned to [`BUF_ALIGN`].
struct AlignedBuf {
    ptr: *mut u8,
    layout: Layout,
}

// SAFETY: the buffer is plain memory owned by one controller; only the kernel touches it
// while an I/O is in flight, and the controller does not while it is.
unsafe impl Send for AlignedBuf {}

impl AlignedBuf {
    fn new(len: usize) -> Result<AlignedBuf, String> {
        let size = len.max(1).div_ceil(BUF_ALIGN) * BUF_ALIGN;
        let layout = Layout::from_size_align(size, BUF_ALIGN)
            .map_err(|e| format!("cannot lay out a {len}-byte buffer: {e}"))?;
        // SAFETY: the layout has a non-zero size.
        let ptr = unsafe { alloc_zeroed(layout) };
        if ptr.is_null() {
            return Err(format!("cannot allocate a {len}-byte I/O buffer"));
        }
        Ok(AlignedBuf { ptr, layout })
    }

    fn capacity(&self) -> usize {
        self.layout.size()
    }
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        // SAFETY: allocated in `new` with this layout.
        unsafe { dealloc(self.ptr, self.layout) }
    }
}

/// One command as the controller hands it to the media.
#[derive(Clone, Copy, Debug)]
pub struct MediaCmd {
    /// The controller's queue index.
    pub qi: usize,
    pub sqe: Sqe,
    pub offset: u64,
    pub len: u32,
    pub is_read: bool,
}

/// One controller's ring: commands wait in a backlog until a ring slot is free, run on
/// the kernel, and come back in completion order.
pub struct UringMedia {
    target: Arc<FileTarget>,
    ring: IoUring,
    /// Ring slot -> its buffer and the command it carries.
    bufs: Vec<Option<AlignedBuf>>,
    cmds: Vec<Option<MediaCmd>>,
    free: Vec<usize>,
    backlog: VecDeque<MediaCmd>,
    /// Done, waiting for room in their NVMe CQ: (command, NVMe status).
    done: VecDeque<(MediaCmd, u16)>,
    inflight: usize,
    /// The first failed I/O, for the run's error.
    pub error: Option<String>,
}

impl UringMedia {
    /// A ring for at most `depth` commands in flight (capped at 4096).
    pub fn new(target: Arc<FileTarget>, depth: u32) -> Result<UringMedia, RtError> {
        let entries = depth.clamp(1, MAX_RING).next_power_of_two();
        let ring = IoUring::new(entries).map_err(|e| {
            let refused = matches!(
                e.raw_os_error(),
                Some(libc::ENOSYS) | Some(libc::EPERM) | Some(libc::EACCES)
            );
            if refused {
                RtError::Media(format!(
                    "--media file:{}: io_uring_setup failed ({e}): this kernel or its seccomp \
                     policy refuses io_uring (see /proc/sys/kernel/io_uring_disabled); use \
                     --media model",
                    target.path.display()
                ))
            } else {
                RtError::Media(format!(
                    "--media file:{}: cannot set up an io_uring of {entries} entries: {e}",
                    target.path.display()
                ))
            }
        })?;
        let n = entries as usize;
        Ok(UringMedia {
            target,
            ring,
            bufs: (0..n).map(|_| None).collect(),
            cmds: vec![None; n],
            free: (0..n).rev().collect(),
            backlog: VecDeque::new(),
            done: VecDeque::new(),
            inflight: 0,
            error: None,
        })
    }

    /// Queues a fetched command.
    pub fn queue(&mut self, cmd: MediaCmd) {
        self.backlog.push_back(cmd);
    }

    /// Puts backlog commands on the ring and submits them with one io_uring_enter.
    /// Returns how many started.
    pub fn start(&mut self) -> usize {
        let fd = types::Fd(self.target.file.as_raw_fd());
        let mut started = 0;
        while let Some(&cmd) = self.backlog.front() {
            let Some(&slot) = self.free.last() else {
                break;
            };
            let len = cmd.len as usize;
            if self.bufs[slot].as_ref().is_none_or(|b| b.capacity() < len) {
                match AlignedBuf::new(len) {
                    Ok(b) => self.bufs[slot] = Some(b),
                    Err(e) => {
                        self.fail(cmd, e);
                        self.backlog.pop_front();
                        continue;
                    }
                }
            }
            let Some(buf) = self.bufs[slot].as_ref() else {
                break;
            };
            let entry = if cmd.is_read {
                opcode::Read::new(fd, buf.ptr, cmd.len)
                    .offset(cmd.offset)
                    .build()
            } else {
                opcode::Write::new(fd, buf.ptr, cmd.len)
                    .offset(cmd.offset)
                    .build()
            }
            .user_data(slot as u64);
            // SAFETY: the buffer lives in `bufs[slot]` until its completion is reaped (or
            // `drop` drains the ring), and the fd lives in `target`, held by `self`.
            if unsafe { self.ring.submission().push(&entry) }.is_err() {
                break;
            }
            self.free.pop();
            self.cmds[slot] = Some(cmd);
            self.backlog.pop_front();
            self.inflight += 1;
            started += 1;
        }
        if started > 0
            && let Err(e) = self.ring.submit()
        {
            self.error.get_or_insert_with(|| {
                format!(
                    "--media file:{}: io_uring_enter failed: {e}",
                    self.target.path.display()
                )
            });
        }
        started
    }

    fn fail(&mut self, cmd: MediaCmd, why: String) {
        self.error.get_or_insert(why);
        self.done.push_back((cmd, NVME_SC_READ_ERROR));
    }

    /// Moves finished I/Os from the ring's CQ to the done queue. Returns how many.
    pub fn reap(&mut self) -> usize {
        if self.inflight == 0 {
            return 0;
        }
        let mut n = 0;
        let finished: Vec<(usize, i32)> = self
            .ring
            .completion()
            .map(|c| (c.user_data() as usize, c.result()))
            .collect();
        for (slot, res) in finished {
            let Some(cmd) = self.cmds.get_mut(slot).and_then(Option::take) else {
                continue;
            };
            self.free.push(slot);
            self.inflight -= 1;
            n += 1;
            if res == cmd.len as i32 {
                self.done.push_back((cmd, 0));
            } else {
                let what = if res < 0 {
                    std::io::Error::from_raw_os_error(-res).to_string()
                } else {
                    format!("{res} of {} bytes", cmd.len)
                };
                let why = format!(
                    "--media file:{}: {} of {} bytes at offset {} failed: {what}",
                    self.target.path.display(),
                    if cmd.is_read { "read" } else { "write" },
                    cmd.len,
                    cmd.offset
                );
                self.fail(cmd, why);
            }
        }
        n
    }

    /// The oldest finished command and its NVMe status.
    pub fn peek_done(&self) -> Option<(MediaCmd, u16)> {
        self.done.front().copied()
    }

    pub fn pop_done(&mut self) {
        self.done.pop_front();
    }
}

impl Drop for UringMedia {
    fn drop(&mut self) {
        // The kernel may still write into our buffers: wait for every I/O first.
        while self.inflight > 0 {
            if self.ring.submit_and_wait(1).is_err() {
                break;
            }
            self.reap();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn temp(name: &str) -> PathBuf {
        std::env::temp_dir().join(format!("irqlab-rt-{}-{name}", std::process::id()))
    }

    #[test]
    fn a_missing_file_is_created_filled_and_too_small_files_are_refused() {
        let p = temp("create");
        let _ = std::fs::remove_file(&p);
        let no_stop = StopFlag::default();
        let t = FileTarget::open(&p, 1 << 20, 4096, true, false, &no_stop).unwrap();
        assert_eq!(t.size, 1 << 20);
        assert!(t.describe().contains("created 1 MiB"), "{}", t.describe());
        let bytes = std::fs::read(&p).unwrap();
        assert!(bytes.iter().all(|&b| b != 0), "no holes");
        let err = FileTarget::open(&p, 0, 2 << 20, true, false, &no_stop).unwrap_err();
        assert!(err.contains("less than one block"), "{err}");
        let _ = std::fs::remove_file(&p);
        assert!(FileTarget::open(&p, 0, 4096, true, false, &no_stop).is_err());
    }

    fn cmd(offset: u64, is_read: bool) -> MediaCmd {
        MediaCmd {
            qi: 0,
            sqe: Sqe {
                command_id: 7,
                opcode: 2,
                hints: 0,
                data: 0,
            },
            offset,
            len: 4096,
            is_read,
        }
    }

    /// Runs `c` on the ring to its completion and returns its NVMe status and slot.
    fn serve(u: &mut UringMedia, c: MediaCmd) -> (u16, usize) {
        let slot = *u.free.last().unwrap();
        u.queue(c);
        assert_eq!(u.start(), 1);
        let t0 = std::time::Instant::now();
        while u.peek_done().is_none() {
            u.reap();
            assert!(t0.elapsed().as_secs() < 10, "the I/O never completed");
        }
        let (done, status) = u.peek_done().unwrap();
        u.pop_done();
        assert_eq!(done.offset, c.offset);
        (status, slot)
    }

    #[test]
    fn a_stopped_fill_leaves_no_file() {
        let p = temp("stopped");
        let _ = std::fs::remove_file(&p);
        let flag = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
        let stop = StopFlag::new(flag);
        let err = FileTarget::open(&p, 64 << 20, 4096, true, false, &stop).unwrap_err();
        assert!(err.contains("stopped (Ctrl-C) while creating it"), "{err}");
        assert!(!p.exists(), "the partial file is removed");
    }

    #[test]
    fn reads_and_writes_reach_the_file() {
        let p = temp("ring");
        let _ = std::fs::remove_file(&p);
        let t = Arc::new(
            FileTarget::open(&p, 1 << 20, 4096, true, true, &StopFlag::default()).unwrap(),
        );
        let mut u = match UringMedia::new(t, 4) {
            Ok(u) => u,
            Err(e) => {
                eprintln!("skipped: {e}");
                let _ = std::fs::remove_file(&p);
                return;
            }
        };
        // The fill pattern: byte i of the file is i % 251 + 1 within each MiB.
        let (status, slot) = serve(&mut u, cmd(8192, true));
        assert_eq!(status, 0);
        let buf = u.bufs[slot].as_ref().unwrap();
        // SAFETY: the read completed; the buffer holds 4096 initialised bytes.
        let got = unsafe { std::slice::from_raw_parts(buf.ptr, 4096) };
        assert!(
            got.iter()
                .enumerate()
                .all(|(i, &b)| b == ((8192 + i) % 251) as u8 + 1)
        );
        // The LIFO free list hands the same slot back: write its block to offset 0.
        let (status, _) = serve(&mut u, cmd(0, false));
        assert_eq!(status, 0);
        drop(u);
        let bytes = std::fs::read(&p).unwrap();
        assert_eq!(bytes[..4096], bytes[8192..12288]);
        let _ = std::fs::remove_file(&p);
    }

    #[test]
    fn aligned_buffers_are_aligned_and_rounded_up() {
        let b = AlignedBuf::new(5000).unwrap();
        assert_eq!(b.ptr as usize % BUF_ALIGN, 0);
        assert_eq!(b.capacity(), 8192);
    }
}
