//! Standard output as the place a report goes: a closed or failing one is an error
//! (exit 2, with a message), and a reader that went away (`irqlab run ... | head`) ends
//! irqlab quietly, as other Unix tools end on SIGPIPE.

use std::io::{self, Write};
use std::sync::atomic::{AtomicBool, Ordering};

/// Set when a write to standard output found its reader gone (EPIPE): main then exits
/// 141 (128 + SIGPIPE) without a message.
static BROKEN_PIPE: AtomicBool = AtomicBool::new(false);

/// Whether a write to standard output met a closed pipe.
pub(crate) fn broken_pipe() -> bool {
    BROKEN_PIPE.load(Ordering::SeqCst)
}

/// Whether irqlab was started with standard output closed (`>&-`). Rust's runtime
/// reopens a closed fd 1 as /dev/null for reading and writing (a shell's `>/dev/null`
/// opens it write-only), where the report would vanish without a word.
pub(crate) fn closed() -> bool {
    use std::os::fd::AsFd;
    let out = io::stdout();
    let fd = out.as_fd();
    let (Ok(st), Ok(flags)) = (rustix::fs::fstat(fd), rustix::fs::fcntl_getfl(fd)) else {
        return false;
    };
    let is_char =
        rustix::fs::FileType::from_raw_mode(st.st_mode) == rustix::fs::FileType::CharacterDevice;
    let dev_null =
        is_char && rustix::fs::major(st.st_rdev) == 1 && rustix::fs::minor(st.st_rdev) == 3;
    dev_null && flags.contains(rustix::fs::OFlags::RDWR)
}

/// The error for a standard output that is closed, before a run that would write to it.
pub(crate) fn check_open(what: &str) -> Result<(), String> {
    if closed() {
        return Err(format!(
            "standard output is closed, so the {what} would be lost; expected an open standard output (or --output FILE)"
        ));
    }
    Ok(())
}

/// Writes `text` to standard output and flushes it: an error in words when it fails,
/// marked as a broken pipe when the reader is gone.
pub(crate) fn write(text: &str) -> Result<(), String> {
    if closed() {
        return Err("standard output is closed: nothing was written".into());
    }
    let mut out = io::stdout().lock();
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .map_err(|e| failed(&e))
}

/// The message for a failed write to standard output (and the broken-pipe mark).
fn failed(e: &io::Error) -> String {
    if e.kind() == io::ErrorKind::BrokenPipe {
        BROKEN_PIPE.store(true, Ordering::SeqCst);
    }
    format!(
        "cannot write to standard output: {}",
        irqlab_fio::input::io_reason(e)
    )
}

/// Standard output as a writer for lines printed while a run goes (irqtop): a failure
/// is marked as [`write`]'s are.
pub(crate) struct Stdout;

impl Write for Stdout {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        io::stdout().write(buf).inspect_err(|e| {
            let _ = failed(e);
        })
    }

    fn flush(&mut self) -> io::Result<()> {
        io::stdout().flush().inspect_err(|e| {
            let _ = failed(e);
        })
    }
}
