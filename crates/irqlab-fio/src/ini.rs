//! The line layer of fio's job-file format (init.c __parse_jobs_ini): sections in file
//! order, `key=value` and bare-flag lines, comments, `include`, `${VAR}` expansion.
//! Nothing here knows what an option means.

use crate::error::JobFileError;
use crate::input::{self, MAX_INPUT_BYTES};
use std::path::{Path, PathBuf};

/// Include nesting deeper than this is reported as an error, cycle or not.
const MAX_INCLUDE_DEPTH: usize = 16;
/// init.c reads section names with "[%255[^\n]]".
const MAX_SECTION_NAME: usize = 255;
/// Bytes read through `include` in one job file, all includes together: a fragment
/// included over and over (no cycle) must not make a small file read gigabytes.
const MAX_INCLUDED_BYTES: u64 = 4 * MAX_INPUT_BYTES;

/// Section headers and option lines in one job file, includes spliced in: a text of
/// millions of lines (given to `parse_str`, which has no file size limit) is refused at
/// the line that crosses this, not held in memory.
const MAX_LINES: usize = 1_000_000;

/// The include chain (for cycles) and what the includes have read so far.
struct Reading {
    stack: Vec<PathBuf>,
    included_bytes: u64,
    lines: usize,
}

impl Reading {
    /// Counts one section or option line of `file`.
    fn count(&mut self, file: &Path, line: usize) -> Result<(), JobFileError> {
        self.lines += 1;
        if self.lines > MAX_LINES {
            return Err(JobFileError::at(
                file,
                line,
                format!("more than {MAX_LINES} sections and options"),
                "a job file of fewer lines",
            ));
        }
        Ok(())
    }
}

/// One option line: `key=value`, or a bare flag (`value` is None).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    pub key: String,
    pub value: Option<String>,
    pub file: PathBuf,
    pub line: usize,
    /// `${VAR}`s of the value that were not set (fio puts an empty string there).
    pub unset: Vec<String>,
    /// Whether the value used `$ncpus`.
    pub ncpus: bool,
    /// Why the value could not be expanded (what, expected): reported when the option is
    /// applied, so a refused engine above it is reported first.
    pub bad: Option<(String, &'static str)>,
}

/// One `[name]` section with its options in order, includes spliced in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Section {
    pub name: String,
    pub global: bool,
    pub file: PathBuf,
    pub line: usize,
    pub entries: Vec<Entry>,
}

/// Where `${VAR}` and `$ncpus` get their values.
pub struct Env<'a> {
    pub var: &'a dyn Fn(&str) -> Option<String>,
    pub ncpus: usize,
}

/// A value after `${VAR}` and `$ncpus` expansion, with what the expansion met.
struct Expanded {
    text: String,
    unset: Vec<String>,
    ncpus: bool,
}

/// Splits `text` (the contents of `path`) into sections.
pub fn sections(text: &str, path: &Path, env: &Env) -> Result<Vec<Section>, JobFileError> {
    let mut reading = Reading {
        stack: vec![identity(path)],
        included_bytes: 0,
        lines: 0,
    };
    let mut out: Vec<Section> = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = i + 1;
        let Some(p) = clean(raw) else { continue };
        reading.count(path, line)?;
        if p.starts_with('[') {
            let name = section_name(p)
                .map_err(|(what, expected)| JobFileError::at(path, line, what, expected))?;
            out.push(Section {
                // init.c: `global = !strncmp(name, "global", 6)`, so [global2] is global too.
                global: name.starts_with("global"),
                name: name.to_string(),
                file: path.to_path_buf(),
                line,
                entries: Vec::new(),
            });
            continue;
        }
        let Some(section) = out.last_mut() else {
            return Err(JobFileError::at(
                path,
                line,
                format!("'{p}' is outside of any [section]"),
                "a [jobname] or [global] header before the first option",
            ));
        };
        option_or_include(p, path, line, env, &mut reading, &mut section.entries)?;
    }
    Ok(out)
}

/// Handles one non-section line of `file` (the top file or an included one).
fn option_or_include(
    p: &str,
    file: &Path,
    line: usize,
    env: &Env,
    reading: &mut Reading,
    entries: &mut Vec<Entry>,
) -> Result<(), JobFileError> {
    if let Some(target) = include_target(p) {
        if target.is_empty() {
            return Err(JobFileError::at(
                file,
                line,
                "include without a file name",
                "include FILE",
            ));
        }
        return include(target, file, line, env, reading, entries);
    }
    let (key, value) = match p.split_once('=') {
        Some((k, v)) => (k.trim(), Some(expand(v.trim(), env))),
        None => (p, None),
    };
    let (value, unset, ncpus, bad) = match value {
        Some(Ok(x)) => (Some(x.text), x.unset, x.ncpus, None),
        Some(Err(bad)) => (None, Vec::new(), false, Some(bad)),
        None => (None, Vec::new(), false, None),
    };
    if key.is_empty() {
        return Err(JobFileError::at(
            file,
            line,
            format!("'{p}' has no option name"),
            "option=value or a bare flag",
        ));
    }
    entries.push(Entry {
        key: key.to_string(),
        value,
        file: file.to_path_buf(),
        line,
        unset,
        ncpus,
        bad,
    });
    Ok(())
}

/// Reads an included file's options into `entries`; included files may not hold
/// sections (init.c: "No new sections in included files").
fn include(
    target: &str,
    from: &Path,
    line: usize,
    env: &Env,
    reading: &mut Reading,
    entries: &mut Vec<Entry>,
) -> Result<(), JobFileError> {
    let target_path = Path::new(target);
    let path = if target_path.is_absolute() {
        target_path.to_path_buf()
    } else {
        from.parent().unwrap_or(Path::new("")).join(target_path)
    };
    let id = identity(&path);
    if reading.stack.contains(&id) {
        let chain: Vec<String> = reading
            .stack
            .iter()
            .chain(std::iter::once(&id))
            .map(|p| p.display().to_string())
            .collect();
        return Err(JobFileError::at(
            from,
            line,
            format!("include cycle: {}", chain.join(" -> ")),
            "included files that do not include each other",
        ));
    }
    if reading.stack.len() >= MAX_INCLUDE_DEPTH {
        return Err(JobFileError::at(
            from,
            line,
            format!("includes nested more than {MAX_INCLUDE_DEPTH} deep"),
            "fewer nested includes",
        ));
    }
    // Only regular files of bounded size: a device or FIFO named by mistake would never end.
    let left = MAX_INCLUDED_BYTES.saturating_sub(reading.included_bytes);
    let text = input::read_text(&path, left.min(MAX_INPUT_BYTES)).map_err(|e| {
        let shown = path.display();
        let (what, expected) = match e {
            input::InputError::NotRegular { kind } => (
                format!("included {shown} is not a regular file (it is {kind})"),
                "a job-file fragment to include",
            ),
            input::InputError::TooLarge { .. } if left < MAX_INPUT_BYTES => (
                format!("included {shown} brings the included text past 16 MiB"),
                "includes that add up to at most 16 MiB of text",
            ),
            input::InputError::Io(why) => (
                format!("cannot read included file {shown}: {why}"),
                "a readable file, relative to the including file",
            ),
            e => (
                format!("included {shown}: {e}"),
                "a job-file fragment of text",
            ),
        };
        JobFileError::at(from, line, what, expected)
    })?;
    reading.included_bytes += text.len() as u64;
    reading.stack.push(id);
    for (i, raw) in text.lines().enumerate() {
        let Some(p) = clean(raw) else { continue };
        reading.count(&path, i + 1)?;
        if p.starts_with('[') {
            return Err(JobFileError::at(
                &path,
                i + 1,
                format!("section {p} in an included file"),
                "only options in included files (fio allows no sections there)",
            ));
        }
        option_or_include(p, &path, i + 1, env, reading, entries)?;
    }
    reading.stack.pop();
    Ok(())
}

/// A path's identity for cycle detection: canonical when it exists.
fn identity(path: &Path) -> PathBuf {
    std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf())
}

/// init.c is_empty_or_comment + parse.c strip_blank_end: a line whose first non-blank
/// character is `;` or `#` is a comment, and any later `;` or `#` starts a trailing
/// comment (so a value cannot contain either).
fn clean(raw: &str) -> Option<&str> {
    let p = raw.trim_start_matches(|c: char| c.is_whitespace() || c.is_control());
    let end = p.find([';', '#']).unwrap_or(p.len());
    let p = p[..end].trim_end_matches(|c: char| c.is_whitespace() || c.is_control());
    (!p.is_empty()).then_some(p)
}

fn section_name(p: &str) -> Result<&str, (String, &'static str)> {
    let Some(inner) = p.strip_prefix('[').and_then(|s| s.strip_suffix(']')) else {
        return Err((format!("'{p}' is not a section header"), "[name]"));
    };
    if inner.trim().is_empty() {
        return Err(("empty section name".to_string(), "[name]"));
    }
    if inner.len() > MAX_SECTION_NAME {
        return Err((
            format!("section name of {} bytes", inner.len()),
            "a section name of at most 255 bytes",
        ));
    }
    Ok(inner)
}

/// `include FILE` (init.c checks the "include" prefix; we also require a blank after
/// it so an option named e.g. `include_foo` is not taken for one).
fn include_target(p: &str) -> Option<&str> {
    let rest = p.strip_prefix("include")?;
    if rest.is_empty() {
        return Some("");
    }
    rest.starts_with(char::is_whitespace).then(|| rest.trim())
}

/// options.c fio_option_dup_subs and fio_keyword_replace: `${VAR}` from the environment,
/// `$ncpus` as the CPU count. An unset variable becomes an empty string, as in fio
/// (getenv returns NULL and nothing is copied); the option's own check then decides, and
/// its message names the variable.
fn expand(v: &str, env: &Env) -> Result<Expanded, (String, &'static str)> {
    let mut out = String::with_capacity(v.len());
    let (mut unset, mut ncpus) = (Vec::new(), false);
    let mut rest = v;
    while let Some(i) = rest.find('$') {
        out.push_str(&rest[..i]);
        let tail = &rest[i..];
        if let Some(body) = tail.strip_prefix("${")
            && let Some(close) = body.find('}')
            && close > 0
        {
            let name = &body[..close];
            match (env.var)(name) {
                Some(value) => out.push_str(&value),
                None => unset.push(name.to_string()),
            }
            rest = &body[close + 1..];
        } else if let Some(after) = tail.strip_prefix("$ncpus") {
            out.push_str(&env.ncpus.to_string());
            ncpus = true;
            rest = after;
        } else if tail.starts_with("$pagesize") || tail.starts_with("$mb_memory") {
            return Err((
                format!(
                    "'{v}' uses $pagesize or $mb_memory: the platform gives no page size or memory size"
                ),
                "a literal value ($ncpus and ${VAR} are expanded)",
            ));
        } else {
            out.push('$');
            rest = &tail[1..];
        }
    }
    out.push_str(rest);
    if out.starts_with('(') {
        return Err((
            format!("'{out}' is an arithmetic expression"),
            "a literal value (irqlab does not evaluate fio's (...) arithmetic)",
        ));
    }
    Ok(Expanded {
        text: out,
        unset,
        ncpus,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn no_env(_: &str) -> Option<String> {
        None
    }

    #[test]
    fn comments_follow_fio() {
        assert_eq!(clean("  ; all comment"), None);
        assert_eq!(clean("# all comment"), None);
        assert_eq!(clean("bs=4k ; trailing"), Some("bs=4k"));
        assert_eq!(clean("bs=4k# trailing"), Some("bs=4k"));
        assert_eq!(clean("  \t "), None);
        assert_eq!(clean("[job] # c"), Some("[job]"));
    }

    #[test]
    fn expansion() {
        let var = |name: &str| (name == "DEV").then(|| "/dev/nvme0n1".to_string());
        let env = Env {
            var: &var,
            ncpus: 8,
        };
        let text = |v: &str| expand(v, &env).unwrap().text;
        assert_eq!(text("${DEV}:b"), "/dev/nvme0n1:b");
        assert_eq!(text("$ncpus"), "8");
        assert!(expand("$ncpus", &env).unwrap().ncpus);
        assert_eq!(text("a$b"), "a$b");
        assert_eq!(text("${}"), "${}");
        // fio_option_dup_subs: an unset variable is an empty string.
        let x = expand("a${NOPE}b", &env).unwrap();
        assert_eq!((x.text.as_str(), x.unset), ("ab", vec!["NOPE".to_string()]));
        assert!(expand("(1+2)", &env).is_err());
        let env = Env {
            var: &no_env,
            ncpus: 1,
        };
        assert!(expand("$pagesize", &env).is_err());
    }
}
