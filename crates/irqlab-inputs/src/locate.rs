//! Where a bare platform name or a relative scenario directory is: the current directory
//! first, then the data directories a caller added (the Python wheel adds the one it
//! carries), then the directories above the executable (the repository of a cargo
//! build), then the checkout it was built from (for `make install`). A name found
//! nowhere is an error that lists every path tried, as tried.

use crate::InputError;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// Data directories added by [`add_search_dir`], in order.
static SEARCH_DIRS: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// Adds `dir` (holding `platforms/` and `scenarios/`) to where bare names are looked up,
/// after the current directory.
pub fn add_search_dir(dir: PathBuf) {
    let mut dirs = SEARCH_DIRS.lock().unwrap_or_else(|p| p.into_inner());
    if !dirs.contains(&dir) {
        dirs.push(dir);
    }
}

/// A path that exists is used as is; a bare name is platforms/NAME.toml in the current
/// directory, a data directory or a directory above the executable.
pub fn resolve_platform(arg: &str) -> Result<PathBuf, InputError> {
    let direct = PathBuf::from(arg);
    let is_bare = !arg.contains('/') && !arg.contains('\\') && !arg.ends_with(".toml");
    // A path that exists is the user's choice, whatever it is: the loader says if it is
    // not a regular file.
    if direct.is_file() || (!is_bare && direct.exists()) {
        return Ok(direct);
    }
    if !is_bare {
        return Err(InputError::NoPlatformFile(arg.to_string()));
    }
    let rel = Path::new("platforms").join(format!("{arg}.toml"));
    let mut tried = Vec::new();
    for dir in search_dirs() {
        let cand = dir.join(&rel);
        if cand.is_file() {
            // Relative to the current directory stays relative, as the user would write it.
            return Ok(if dir == Path::new(".") { rel } else { cand });
        }
        tried.push(shown(&cand));
    }
    Err(InputError::PlatformNotFound {
        name: arg.to_string(),
        tried,
    })
}

/// A relative directory in the current directory, else in a data directory or a
/// directory above the executable.
pub fn find_dir(p: &Path) -> Result<PathBuf, InputError> {
    if p.is_dir() || p.is_absolute() {
        return Ok(p.to_path_buf());
    }
    search_dirs()
        .into_iter()
        .skip(1)
        .map(|dir| dir.join(p))
        .find(|cand| cand.is_dir())
        .ok_or_else(|| InputError::NoDirectory(p.to_path_buf()))
}

/// Every directory a bare name is looked up in, in order: `.`, the data directories,
/// then the ones above the executable (for the Python package: above the interpreter,
/// which finds the repository when a venv sits inside it).
fn search_dirs() -> Vec<PathBuf> {
    let mut dirs = vec![PathBuf::from(".")];
    dirs.extend(
        SEARCH_DIRS
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .cloned(),
    );
    if let Ok(exe) = std::env::current_exe() {
        dirs.extend(exe.ancestors().skip(1).map(Path::to_path_buf));
    }
    // The checkout irqlab was built from: an `irqlab` installed with `make install`
    // (cargo install --path) finds its platforms and scenarios there.
    let checkout = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    if let Ok(checkout) = checkout.canonicalize()
        && !dirs.contains(&checkout)
    {
        dirs.push(checkout);
    }
    dirs
}

/// A tried path as an absolute one, so the message says where it looked.
fn shown(p: &Path) -> PathBuf {
    std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_name_lists_every_absolute_path_tried() {
        let e = resolve_platform("no-such-platform-irqlab").unwrap_err();
        let InputError::PlatformNotFound { tried, .. } = &e else {
            panic!("{e}");
        };
        assert!(tried.iter().all(|p| p.is_absolute()), "{tried:?}");
        let cwd = std::env::current_dir().unwrap();
        assert_eq!(tried[0], cwd.join("platforms/no-such-platform-irqlab.toml"));
        // A data directory is searched after the current one.
        let dir = std::env::temp_dir().join(format!("irqlab-locate-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("platforms")).unwrap();
        std::fs::write(dir.join("platforms/only-here.toml"), "x").unwrap();
        add_search_dir(dir.clone());
        assert_eq!(
            resolve_platform("only-here").unwrap(),
            dir.join("platforms/only-here.toml")
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
