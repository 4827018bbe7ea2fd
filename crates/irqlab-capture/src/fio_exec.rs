//! The user's fio: found on PATH or named with --fio, and run as a child in the capture
//! directory, watched so Ctrl-C stops it.

use crate::error::CaptureError;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

const INSTALL: &str = "install it (Debian/Ubuntu: apt-get install fio; Fedora/RHEL: dnf install fio), give --fio PATH, or record the machine without runs with --no-fio";

/// A fio that answered `--version`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Fio {
    pub path: PathBuf,
    pub version: String,
}

fn executable(p: &Path) -> bool {
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// `given`, or the first `fio` on PATH, checked by running `fio --version`.
pub fn find(given: Option<&Path>) -> Result<Fio, CaptureError> {
    let path = match given {
        Some(p) if executable(p) => p.to_path_buf(),
        Some(p) => {
            return Err(CaptureError::NoFio(format!(
                "--fio {}: not an executable file; {INSTALL}",
                p.display()
            )));
        }
        None => std::env::var_os("PATH")
            .and_then(|paths| {
                std::env::split_paths(&paths)
                    .map(|d| d.join("fio"))
                    .find(|p| executable(p))
            })
            .ok_or_else(|| CaptureError::NoFio(format!("fio is not on PATH; {INSTALL}")))?,
    };
    let out = Command::new(&path)
        .arg("--version")
        .stdin(Stdio::null())
        .output()
        .map_err(|e| {
            CaptureError::NoFio(format!(
                "{} does not run ({}); {INSTALL}",
                path.display(),
                irqlab_fio::input::io_reason(&e)
            ))
        })?;
    let version = String::from_utf8_lossy(&out.stdout).trim().to_string();
    if out.status.success() && !version.starts_with("fio") {
        let said = version.lines().next().unwrap_or("");
        return Err(CaptureError::NoFio(format!(
            "{} is not fio (--version says '{said}'); {INSTALL}",
            path.display()
        )));
    }
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        return Err(CaptureError::NoFio(format!(
            "{} --version failed ({}): {}; {INSTALL}",
            path.display(),
            out.status,
            err.lines().last().unwrap_or("no output").trim()
        )));
    }
    Ok(Fio { path, version })
}

/// How a fio run ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Ended {
    Ok,
    /// Non-zero exit: its status and the last lines of its stderr.
    Failed(String),
    /// The stop flag was set (Ctrl-C); fio was sent SIGINT and waited for.
    Stopped,
}

/// Runs fio with `args` in `dir`, its stderr into `stderr_file`.
pub fn run(
    fio: &Fio,
    dir: &Path,
    args: &[String],
    stderr_file: &Path,
    stop: &AtomicBool,
) -> Result<Ended, CaptureError> {
    let err =
        std::fs::File::create(stderr_file).map_err(|e| CaptureError::write(stderr_file, &e))?;
    let mut child = Command::new(&fio.path)
        .args(args)
        .current_dir(dir)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(err)
        .spawn()
        .map_err(|e| {
            CaptureError::NoFio(format!(
                "{} does not start: {}",
                fio.path.display(),
                irqlab_fio::input::io_reason(&e)
            ))
        })?;
    let mut signalled = false;
    let status = loop {
        if let Some(s) = child.try_wait().map_err(|e| CaptureError::Fio {
            run: args.join(" "),
            why: e.to_string(),
        })? {
            break s;
        }
        if stop.load(Ordering::Relaxed) && !signalled {
            // The terminal's Ctrl-C reached fio too; a SIGTERM to irqlab alone did not.
            if let Some(pid) = rustix::process::Pid::from_raw(child.id() as i32) {
                let _ = rustix::process::kill_process(pid, rustix::process::Signal::INT);
            }
            signalled = true;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    if signalled || stop.load(Ordering::Relaxed) {
        return Ok(Ended::Stopped);
    }
    if status.success() {
        return Ok(Ended::Ok);
    }
    let text = std::fs::read_to_string(stderr_file).unwrap_or_default();
    let tail: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let tail = tail[tail.len().saturating_sub(3)..].join(" | ");
    Ok(Ended::Failed(format!(
        "fio exited with {status}: {}",
        if tail.is_empty() { "no message" } else { &tail }
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_or_broken_fio_says_how_to_get_one() {
        let e = find(Some(Path::new("/nonexistent/fio"))).unwrap_err();
        assert!(
            e.to_string()
                .contains("--fio /nonexistent/fio: not an executable file"),
            "{e}"
        );
        assert!(e.to_string().contains("--no-fio"));
        // A program that is not fio.
        let e = find(Some(Path::new("/bin/true"))).unwrap_err();
        assert!(e.to_string().contains("/bin/true is not fio"), "{e}");
    }
}
