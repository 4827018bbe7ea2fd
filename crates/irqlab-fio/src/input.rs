//! Reading an input file: every file irqlab takes as input (job files and their includes,
//! platform files, scenarios, targets) is read here, so each gets the same checks: a
//! regular file (a device or FIFO named by mistake would never end), a size limit, a
//! UTF-8 byte-order mark dropped, and invalid UTF-8 reported with its line.

use std::fmt;
use std::io::Read;
use std::path::Path;

/// The largest input file accepted: job, platform and scenario files are a few KiB.
pub const MAX_INPUT_BYTES: u64 = 4 << 20;

/// Why an input file could not be read, in the user's terms.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum InputError {
    /// It names a directory, a device, a FIFO or a socket.
    NotRegular { kind: &'static str },
    /// It is larger than the limit.
    TooLarge { bytes: u64, limit: u64 },
    /// Its bytes are not UTF-8 text; `line` is where the first bad byte is (1-based).
    NotUtf8 { line: usize },
    /// The OS refused (no such file, permission denied, ...): the OS's own words.
    Io(String),
}

impl fmt::Display for InputError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            InputError::NotRegular { kind } => {
                write!(f, "not a regular file (it is {kind}); expected a text file")
            }
            InputError::TooLarge { bytes, limit } => write!(
                f,
                "the file is larger than {} MiB ({bytes} bytes or more); expected a text file of at most {limit} bytes",
                limit >> 20
            ),
            InputError::NotUtf8 { line } => {
                write!(f, "line {line} is not valid UTF-8 text")
            }
            InputError::Io(why) => write!(f, "cannot read: {why}"),
        }
    }
}

impl std::error::Error for InputError {}

/// The OS error text without Rust's " (os error N)" tail, as fio/perror print it.
pub fn io_reason(e: &std::io::Error) -> String {
    let s = e.to_string();
    match s.find(" (os error") {
        Some(i) => s[..i].to_string(),
        None => s,
    }
}

/// What a non-regular file is, for the message.
fn kind_of(ft: &std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if ft.is_dir() {
        "a directory"
    } else if ft.is_block_device() {
        "a block device"
    } else if ft.is_char_device() {
        "a character device"
    } else if ft.is_fifo() {
        "a FIFO"
    } else if ft.is_socket() {
        "a socket"
    } else {
        "not a regular file"
    }
}

/// Reads `path` as text: a regular file of at most `limit` bytes, UTF-8, with a leading
/// byte-order mark dropped. The type is checked before the file is opened, so a FIFO
/// never blocks the open.
pub fn read_text(path: &Path, limit: u64) -> Result<String, InputError> {
    let meta = std::fs::metadata(path).map_err(|e| InputError::Io(io_reason(&e)))?;
    if !meta.is_file() {
        return Err(InputError::NotRegular {
            kind: kind_of(&meta.file_type()),
        });
    }
    let file = std::fs::File::open(path).map_err(|e| InputError::Io(io_reason(&e)))?;
    let mut bytes = Vec::new();
    // Read one byte past the limit to tell a file of exactly `limit` bytes from a larger one
    // (the file may grow after the metadata was read).
    file.take(limit.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|e| InputError::Io(io_reason(&e)))?;
    if bytes.len() as u64 > limit {
        return Err(InputError::TooLarge {
            bytes: meta.len().max(bytes.len() as u64),
            limit,
        });
    }
    text(bytes)
}

/// UTF-8 text from `bytes`, without a leading byte-order mark.
pub fn text(bytes: Vec<u8>) -> Result<String, InputError> {
    let mut s = String::from_utf8(bytes).map_err(|e| {
        let valid = e.utf8_error().valid_up_to();
        let line = 1 + e.as_bytes()[..valid]
            .iter()
            .filter(|&&b| b == b'\n')
            .count();
        InputError::NotUtf8 { line }
    })?;
    if s.starts_with('\u{feff}') {
        s.drain(..'\u{feff}'.len_utf8());
    }
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn byte_order_marks_are_dropped_and_bad_bytes_have_a_line() {
        assert_eq!(text(b"\xef\xbb\xbf[j]\n".to_vec()).unwrap(), "[j]\n");
        assert_eq!(
            text(b"[j]\nfilename=a\ndescription=\xff\n".to_vec()),
            Err(InputError::NotUtf8 { line: 3 })
        );
        assert_eq!(text(b"\xc3".to_vec()), Err(InputError::NotUtf8 { line: 1 }));
    }

    #[test]
    fn devices_directories_and_large_files_are_refused() {
        let e = read_text(Path::new("/dev/zero"), MAX_INPUT_BYTES).unwrap_err();
        assert_eq!(
            e,
            InputError::NotRegular {
                kind: "a character device"
            }
        );
        assert!(e.to_string().starts_with("not a regular file"), "{e}");
        let e = read_text(Path::new("/"), MAX_INPUT_BYTES).unwrap_err();
        assert!(e.to_string().contains("a directory"), "{e}");
        let dir = std::env::temp_dir().join(format!("irqlab-input-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let big = dir.join("big.fio");
        std::fs::write(&big, vec![b'#'; 101]).unwrap();
        assert!(matches!(
            read_text(&big, 100),
            Err(InputError::TooLarge { bytes: 101, .. })
        ));
        assert_eq!(read_text(&big, 101).unwrap().len(), 101);
        let e = read_text(&dir.join("missing"), 100).unwrap_err();
        assert_eq!(e.to_string(), "cannot read: No such file or directory");
        let _ = std::fs::remove_dir_all(&dir);
    }
}
