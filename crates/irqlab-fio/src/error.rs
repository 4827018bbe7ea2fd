//! Errors that name the file and line, and say what was expected there.

use std::fmt;
use std::path::{Path, PathBuf};

/// Why a job file was rejected: `FILE:LINE: what is wrong; expected WHAT`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobFileError {
    file: PathBuf,
    line: Option<usize>,
    what: String,
    expected: Option<String>,
}

impl JobFileError {
    /// An error at `file:line`.
    pub fn at(
        file: &Path,
        line: usize,
        what: impl Into<String>,
        expected: impl Into<String>,
    ) -> Self {
        JobFileError {
            file: file.to_path_buf(),
            line: Some(line),
            what: what.into(),
            expected: Some(expected.into()),
        }
    }

    /// An error about the file as a whole (it cannot be read, it has no jobs).
    pub fn whole_file(file: &Path, what: impl Into<String>) -> Self {
        JobFileError {
            file: file.to_path_buf(),
            line: None,
            what: what.into(),
            expected: None,
        }
    }

    /// The same error with `note` added to what is wrong.
    pub fn noting(mut self, note: &str) -> Self {
        self.what.push_str(note);
        self
    }

    pub fn file(&self) -> &Path {
        &self.file
    }

    /// The 1-based line, when the error is about one line.
    pub fn line(&self) -> Option<usize> {
        self.line
    }

    /// What is wrong, without the location.
    pub fn what(&self) -> &str {
        &self.what
    }
}

impl fmt::Display for JobFileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file.display())?;
        if let Some(line) = self.line {
            write!(f, ":{line}")?;
        }
        write!(f, ": {}", escape_controls(&self.what))?;
        if let Some(expected) = &self.expected {
            write!(f, "; expected {}", escape_controls(expected))?;
        }
        Ok(())
    }
}

impl std::error::Error for JobFileError {}

/// Control characters of user text shown escaped (`\0`, `\u{1b}`), so a message never
/// carries a raw NUL or terminal escape from a file into the terminal.
pub fn escape_controls(s: &str) -> std::borrow::Cow<'_, str> {
    if !s.chars().any(char::is_control) {
        return std::borrow::Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    std::borrow::Cow::Owned(out)
}
