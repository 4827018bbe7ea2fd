//! fio's value syntaxes: sizes, times, booleans, CPU lists and file lists.
//!
//! Each parser returns `Err(expected)`, a phrase for the "expected ..." half of the
//! error; the caller adds the file, line and option.

/// The highest CPU number accepted in `cpus_allowed` (fio's FIO_MAX_CPUS is 4096).
pub const MAX_CPU: usize = 4095;
/// options.c split_parse_ddir: fio keeps at most BSSPLIT_MAX entries of a bssplit.
pub const BSSPLIT_MAX: usize = 64;
/// Names in one `filename=` list: more than the 4096 devices a platform may have
/// cannot all name one.
pub const MAX_FILENAMES: usize = 4096;

pub const SIZE_EXPECTED: &str = "a number with an optional k/m/g/t suffix (e.g. 4k)";
pub const TIME_EXPECTED: &str =
    "a whole number with an optional d/h/m/s/ms/us suffix (e.g. 30s; bare numbers are seconds)";
pub const BOOL_EXPECTED: &str = "0 or 1";

/// A size in bytes. parse.c __get_mult_bytes: with kb_base=1024 (fio's default)
/// k/m/g/t/p (and kb/mb/...) are powers of 1024 and KiB/MiB/... powers of 1000
/// ("compatibility mode"); kb_base=1000 swaps them. Suffixes are case-insensitive.
pub fn size(s: &str, kb_base: u64) -> Result<u64, &'static str> {
    let (n, suffix) = split_number(s).ok_or(SIZE_EXPECTED)?;
    let lower = suffix.to_ascii_lowercase();
    let other = if kb_base == 1000 { 1024 } else { 1000 };
    let (mult, pow) = match lower.as_str() {
        "" => (1, 0),
        "k" | "kb" => (kb_base, 1),
        "m" | "mb" => (kb_base, 2),
        "g" | "gb" => (kb_base, 3),
        "t" | "tb" => (kb_base, 4),
        "p" | "pb" => (kb_base, 5),
        "kib" => (other, 1),
        "mib" => (other, 2),
        "gib" => (other, 3),
        "tib" => (other, 4),
        "pib" => (other, 5),
        _ => return Err(SIZE_EXPECTED),
    };
    let factor = (0..pow).try_fold(1u64, |acc, _| acc.checked_mul(mult));
    factor
        .and_then(|f| n.checked_mul(f))
        .ok_or("a size below 16 EiB")
}

/// A duration in ns. parse.c get_mult_time: us/usec, ms/msec, s, m, h, d; a bare
/// number is seconds for options with is_seconds (runtime, ramp_time).
pub fn time_ns(s: &str) -> Result<u64, &'static str> {
    let (n, suffix) = split_number(s).ok_or(TIME_EXPECTED)?;
    let mult: u64 = match suffix.to_ascii_lowercase().as_str() {
        "" | "s" => 1_000_000_000,
        "us" | "usec" => 1_000,
        "ms" | "msec" => 1_000_000,
        "m" => 60 * 1_000_000_000,
        "h" => 3_600 * 1_000_000_000,
        "d" => 86_400 * 1_000_000_000,
        _ => return Err(TIME_EXPECTED),
    };
    n.checked_mul(mult).ok_or("a duration below 584 years")
}

/// A duration in ns for options whose bare numbers are µs (parse.c check_str_time with
/// is_seconds unset: thinktime, thinktime_spin).
pub fn time_us_default(s: &str) -> Result<u64, &'static str> {
    let (n, suffix) = split_number(s).ok_or(TIME_US_EXPECTED)?;
    if suffix.is_empty() {
        return n.checked_mul(1_000).ok_or("a duration below 584 years");
    }
    time_ns(s).map_err(|_| TIME_US_EXPECTED)
}

pub const TIME_US_EXPECTED: &str =
    "a whole number with an optional d/h/m/s/ms/us suffix (e.g. 100us; bare numbers are µs)";

/// parse.c FIO_OPT_RANGE: `LOW-HIGH` or `LOW:HIGH`, swapped when given high first.
pub fn range<T: PartialOrd>(
    s: &str,
    one: impl Fn(&str) -> Result<T, &'static str>,
) -> Result<(T, T), &'static str> {
    let (a, b) = s
        .split_once(['-', ':'])
        .ok_or("a range LOW-HIGH (e.g. 4k-64k)")?;
    let (a, b) = (one(a.trim())?, one(b.trim())?);
    Ok(if a > b { (b, a) } else { (a, b) })
}

/// options.c split_parse_ddir for bssplit: `SIZE/PERCENT:SIZE/PERCENT...`; entries
/// without a percent share what is left (bssplit_ddir), and the list is sorted by
/// percent (bs_cmp).
pub fn bssplit(s: &str, kb_base: u64) -> Result<Vec<(u64, u32)>, &'static str> {
    const EXPECTED: &str = "SIZE/PERCENT entries joined by ':' (e.g. 4k/10:64k/90)";
    let mut entries: Vec<(u64, Option<u32>)> = Vec::new();
    for part in s.split(':') {
        if part.is_empty() {
            break;
        }
        if entries.len() == BSSPLIT_MAX {
            return Err("at most 64 SIZE/PERCENT entries per direction (fio's BSSPLIT_MAX)");
        }
        let (bs, perc) = match part.split_once('/') {
            Some((b, p)) => {
                let p: u32 = p.trim().parse().map_err(|_| EXPECTED)?;
                // atoi: above 100 is 100; 0 counts as missing.
                (b, (p > 0).then_some(p.min(100)))
            }
            None => (part, None),
        };
        let bs = size(bs.trim(), kb_base).map_err(|_| EXPECTED)?;
        if bs == 0 {
            return Err("block sizes above 0");
        }
        entries.push((bs, perc));
    }
    if entries.is_empty() {
        return Err(EXPECTED);
    }
    let given: u32 = entries.iter().filter_map(|e| e.1).sum();
    let missing = entries.iter().filter(|e| e.1.is_none()).count() as u32;
    if given > 100 && missing > 1 {
        return Err("percentages that add up to at most 100");
    }
    let share = if missing == 1 && entries.len() == 1 {
        100
    } else {
        100u32
            .saturating_sub(given)
            .checked_div(missing)
            .unwrap_or(0)
    };
    let mut out: Vec<(u64, u32)> = entries
        .into_iter()
        .map(|(b, p)| (b, p.unwrap_or(share)))
        .collect();
    out.sort_by_key(|e| e.1);
    Ok(out)
}

/// parse.c check_int: fio's booleans are the integers 0 and 1 (not true/false).
pub fn bool01(s: &str) -> Result<bool, &'static str> {
    match s {
        "0" => Ok(false),
        "1" => Ok(true),
        _ => Err(BOOL_EXPECTED),
    }
}

/// A FIO_OPT_STR_SET flag: bare means set, otherwise 0 or 1.
pub fn flag(value: Option<&str>) -> Result<bool, &'static str> {
    value.map_or(Ok(true), bool01)
}

/// An integer option. fio parses FIO_OPT_INT through check_str_bytes, so size
/// suffixes work (`iodepth=1k` is 1024).
pub fn int(s: &str, kb_base: u64) -> Result<u64, &'static str> {
    size(s, kb_base).map_err(|_| "a whole number (e.g. 32)")
}

/// `cpus_allowed=0,5,8-15`: sorted and deduplicated. The set is a bitmap of the 4096
/// possible CPUs (fio's cpumask), so a long list of overlapping ranges costs no more
/// than its text.
pub fn cpu_list(s: &str) -> Result<Vec<usize>, &'static str> {
    const EXPECTED: &str = "a CPU list such as 0,5,8-15";
    let mut set = [0u64; (MAX_CPU + 1) / 64];
    for item in s.split(',') {
        let item = item.trim();
        let (lo, hi) = match item.split_once('-') {
            Some((a, b)) => (cpu(a.trim())?, cpu(b.trim())?),
            None => {
                let c = cpu(item)?;
                (c, c)
            }
        };
        if lo > hi {
            return Err(EXPECTED);
        }
        // Whole 64-bit words at a time: a range costs at most 64 steps.
        for (w, word) in set.iter_mut().enumerate().take(hi / 64 + 1).skip(lo / 64) {
            let from = lo.max(w * 64) - w * 64;
            let to = hi.min(w * 64 + 63) - w * 64;
            *word |= (u64::MAX >> (63 - to)) & (u64::MAX << from);
        }
    }
    return Ok((0..=MAX_CPU)
        .filter(|&c| set[c / 64] & (1 << (c % 64)) != 0)
        .collect());

    fn cpu(s: &str) -> Result<usize, &'static str> {
        if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
            return Err(EXPECTED);
        }
        match s.parse::<usize>() {
            Ok(c) if c <= MAX_CPU => Ok(c),
            _ => Err("CPU numbers from 0 to 4095"),
        }
    }
}

/// `filename=a:b` with `\:` for a literal colon (HOWTO "filename"); empty names between
/// colons are skipped.
pub fn file_list(s: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut cur = String::new();
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&':') => {
                cur.push(':');
                chars.next();
            }
            ':' => {
                if !cur.is_empty() {
                    names.push(std::mem::take(&mut cur));
                }
            }
            _ => cur.push(c),
        }
    }
    if !cur.is_empty() {
        names.push(cur);
    }
    names
}

/// Splits "4k" into (4, "k"); accepts a 0x hex prefix (parse.c str_to_decimal).
fn split_number(s: &str) -> Option<(u64, &str)> {
    let s = s.trim();
    if let Some(hex) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        let end = hex
            .find(|c: char| !c.is_ascii_hexdigit())
            .unwrap_or(hex.len());
        let n = u64::from_str_radix(&hex[..end], 16).ok()?;
        return Some((n, &hex[end..]));
    }
    let end = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    if end == 0 {
        return None;
    }
    let n = s[..end].parse::<u64>().ok()?;
    Some((n, &s[end..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_follow_fio_compat_mode() {
        assert_eq!(size("4k", 1024), Ok(4096));
        assert_eq!(size("4K", 1024), Ok(4096));
        assert_eq!(size("4kb", 1024), Ok(4096));
        assert_eq!(size("1m", 1024), Ok(1 << 20));
        assert_eq!(size("2g", 1024), Ok(2 << 30));
        assert_eq!(size("1t", 1024), Ok(1 << 40));
        // kb_base=1024 makes the IEC spellings powers of 1000 (HOWTO "kb_base").
        assert_eq!(size("4KiB", 1024), Ok(4000));
        assert_eq!(size("4KiB", 1000), Ok(4096));
        assert_eq!(size("4k", 1000), Ok(4000));
        assert_eq!(size("512", 1024), Ok(512));
        assert_eq!(size("0x1000", 1024), Ok(4096));
        assert!(size("4q", 1024).is_err());
        assert!(size("k", 1024).is_err());
        assert!(size("", 1024).is_err());
        assert!(size("-4k", 1024).is_err());
        assert!(size("99999999999p", 1024).is_err());
    }

    #[test]
    fn times_default_to_seconds() {
        assert_eq!(time_ns("30"), Ok(30_000_000_000));
        assert_eq!(time_ns("30s"), Ok(30_000_000_000));
        assert_eq!(time_ns("250ms"), Ok(250_000_000));
        assert_eq!(time_ns("250msec"), Ok(250_000_000));
        assert_eq!(time_ns("10us"), Ok(10_000));
        assert_eq!(time_ns("2m"), Ok(120_000_000_000));
        assert_eq!(time_ns("1h"), Ok(3_600_000_000_000));
        assert_eq!(time_ns("1d"), Ok(86_400_000_000_000));
        assert!(time_ns("1.5s").is_err());
        assert!(time_ns("5sec").is_err());
        assert!(time_ns("99999999999d").is_err());
    }

    #[test]
    fn cpu_lists_sort_and_dedup() {
        assert_eq!(cpu_list("0,5,8-11"), Ok(vec![0, 5, 8, 9, 10, 11]));
        assert_eq!(cpu_list("3,1-2,2"), Ok(vec![1, 2, 3]));
        assert!(cpu_list("4-2").is_err());
        assert!(cpu_list("a").is_err());
        assert!(cpu_list("0-99999").is_err());
        assert!(cpu_list("").is_err());
        // A megabyte of overlapping ranges is a bitmap, not billions of entries.
        let long = vec!["0-4095"; 150_000].join(",");
        assert_eq!(cpu_list(&long).map(|v| v.len()), Ok(4096));
        // The word-at-a-time fill sets exactly lo..=hi, at and across word edges.
        let edges = [0, 1, 62, 63, 64, 65, 127, 128, 129, 4031, 4032, 4095];
        for &lo in &edges {
            for &hi in edges.iter().filter(|&&h| h >= lo) {
                let want: Vec<usize> = (lo..=hi).chain([lo + 2, 4095]).collect::<Vec<_>>();
                let mut want = want;
                want.sort_unstable();
                want.dedup();
                let want: Vec<usize> = want.into_iter().filter(|&c| c <= MAX_CPU).collect();
                let text = format!("{lo}-{hi},{},4095", (lo + 2).min(MAX_CPU));
                assert_eq!(cpu_list(&text), Ok(want), "{text}");
            }
        }
    }

    #[test]
    fn file_lists_split_on_unescaped_colons() {
        assert_eq!(file_list("/dev/a:/dev/b"), vec!["/dev/a", "/dev/b"]);
        assert_eq!(file_list(r"a\:b:c"), vec!["a:b", "c"]);
        assert_eq!(file_list("a::b:"), vec!["a", "b"]);
    }

    #[test]
    fn think_times_default_to_microseconds() {
        assert_eq!(time_us_default("100"), Ok(100_000));
        assert_eq!(time_us_default("2ms"), Ok(2_000_000));
        assert!(time_us_default("x").is_err());
    }

    #[test]
    fn ranges_and_splits() {
        assert_eq!(range("64k-4k", |s| size(s, 1024)), Ok((4096, 65536)));
        assert_eq!(range("1k:2k", |s| size(s, 1024)), Ok((1024, 2048)));
        assert!(range("4k", |s| size(s, 1024)).is_err());
        assert_eq!(
            bssplit("64k/90:4k/10", 1024),
            Ok(vec![(4096, 10), (65536, 90)])
        );
        // Entries without a percent share the rest.
        assert_eq!(
            bssplit("4k/50:8k:16k", 1024),
            Ok(vec![(8192, 25), (16384, 25), (4096, 50)])
        );
        assert_eq!(bssplit("4k", 1024), Ok(vec![(4096, 100)]));
        assert!(bssplit("4k/60:8k:16k/60:1k", 1024).is_err());
        assert!(bssplit("4q/10", 1024).is_err());
        let many = vec!["4k/1"; 65].join(":");
        assert!(bssplit(&many, 1024).unwrap_err().contains("BSSPLIT_MAX"));
        let most = vec!["4k/1"; 64].join(":");
        assert_eq!(bssplit(&most, 1024).map(|v| v.len()), Ok(64));
    }

    #[test]
    fn booleans_are_zero_or_one() {
        assert_eq!(flag(None), Ok(true));
        assert_eq!(flag(Some("0")), Ok(false));
        assert!(bool01("true").is_err());
        assert!(bool01("2").is_err());
    }
}
