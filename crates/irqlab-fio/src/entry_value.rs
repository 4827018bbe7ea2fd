//! One option's value read into a typed error that names the file, the line and the
//! option as written: the readers the job options (job.rs) and the controls
//! (control_opts.rs) share, so the two say the same thing about the same mistake.

use crate::error::JobFileError;
use crate::ini::Entry;
use crate::values;

/// The option as written: `key=value`, or the bare key.
pub(crate) fn shown(e: &Entry) -> String {
    match &e.value {
        Some(v) => format!("{}={v}", e.key),
        None => e.key.clone(),
    }
}

/// `KEY=VALUE is not NOUN; expected EXPECTED`.
pub(crate) fn bad_value(e: &Entry, noun: &str, expected: &str) -> JobFileError {
    JobFileError::at(
        &e.file,
        e.line,
        format!("{} is not {noun}", shown(e)),
        expected,
    )
}

pub(crate) fn int(e: &Entry, text: &str, kb_base: u64) -> Result<u64, JobFileError> {
    values::int(text, kb_base).map_err(|x| bad_value(e, "a number", x))
}

/// A bare flag or `=0`/`=1` (FIO_OPT_STR_SET).
pub(crate) fn flag(e: &Entry, v: Option<&str>) -> Result<bool, JobFileError> {
    values::flag(v).map_err(|x| bad_value(e, "a boolean", x))
}

/// `0` or `1` (FIO_OPT_BOOL).
pub(crate) fn bool01(e: &Entry, text: &str) -> Result<bool, JobFileError> {
    values::bool01(text).map_err(|x| bad_value(e, "a boolean", x))
}

/// A time whose bare number is µs (parse.c check_str_time without is_seconds), in ns.
pub(crate) fn time_us(e: &Entry, text: &str) -> Result<u64, JobFileError> {
    values::time_us_default(text).map_err(|x| bad_value(e, "a time", x))
}

/// A time whose bare number is seconds (is_seconds), in ns.
pub(crate) fn time_s(e: &Entry, text: &str) -> Result<u64, JobFileError> {
    values::time_ns(text).map_err(|x| bad_value(e, "a time", x))
}

/// Reads, writes and trims; None where the part was left empty.
pub(crate) type PerDir<T> = (Option<T>, Option<T>, Option<T>);

/// `OPT=READ[,WRITE[,TRIM]]` (options.c off1/off2/off3): one value sets every
/// direction, two set reads and writes (trims take the writes'); an empty part keeps
/// what was there. More than three parts is refused with `expected`.
pub(crate) fn per_dir<T: Clone>(
    e: &Entry,
    text: &str,
    expected: &str,
    parse: impl Fn(&str) -> Result<T, JobFileError>,
) -> Result<PerDir<T>, JobFileError> {
    let parts: Vec<&str> = text.split(',').map(str::trim).collect();
    if parts.len() > 3 {
        return Err(bad_value(e, "a value per direction", expected));
    }
    let one = |s: &str| -> Result<Option<T>, JobFileError> {
        if s.is_empty() {
            Ok(None)
        } else {
            parse(s).map(Some)
        }
    };
    let r = one(parts[0])?;
    let w = match parts.get(1) {
        Some(p) => one(p)?,
        None => r.clone(),
    };
    let t = match parts.get(2) {
        Some(p) => one(p)?,
        None => w.clone(),
    };
    Ok((r, w, t))
}
