//! Where a bare platform name or a relative scenario directory is: the current directory
//! first, then the directories above the executable (the repository of a cargo build).

use crate::InputError;
use std::path::{Path, PathBuf};

/// A path that exists is used as is; a bare name is platforms/NAME.toml in the current
/// directory or in a directory above the executable.
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
    let mut tried = vec![rel.clone()];
    if rel.is_file() {
        return Ok(rel);
    }
    for dir in exe_ancestors() {
        let cand = dir.join(&rel);
        if cand.is_file() {
            return Ok(cand);
        }
        tried.push(cand);
    }
    Err(InputError::PlatformNotFound {
        name: arg.to_string(),
        tried,
    })
}

/// A relative directory in the current directory, else in a directory above the
/// executable.
pub fn find_dir(p: &Path) -> Result<PathBuf, InputError> {
    if p.is_dir() || p.is_absolute() {
        return Ok(p.to_path_buf());
    }
    exe_ancestors()
        .into_iter()
        .map(|dir| dir.join(p))
        .find(|cand| cand.is_dir())
        .ok_or_else(|| InputError::NoDirectory(p.to_path_buf()))
}

/// The directories above the running executable (for the Python package: above the
/// interpreter, which finds nothing unless a venv sits inside the repository).
fn exe_ancestors() -> Vec<PathBuf> {
    std::env::current_exe()
        .map(|exe| exe.ancestors().skip(1).map(Path::to_path_buf).collect())
        .unwrap_or_default()
}
