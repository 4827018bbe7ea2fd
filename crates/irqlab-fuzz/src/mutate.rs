//! Mutations of a text input, line by line, as a careless user or script would make
//! them: lines deleted, repeated or swapped, values replaced by hostile ones, bytes
//! flipped, the file cut short. A proptest [`Strategy`] draws them, so a failure shrinks
//! to the fewest mutations that still fail.

use proptest::prelude::*;
use proptest::sample::Index;

/// Values that broke parsers before (issue 12) or sit on a boundary.
pub const HOSTILE_VALUES: &[&str] = &[
    "0",
    "-1",
    "1",
    "2",
    "255",
    "256",
    "4095",
    "4096",
    "4097",
    "65535",
    "65536",
    "4294967295",
    "4294967296",
    "9223372036854775807",
    "9223372036854775808",
    "18446744073709551615",
    "99999999999999999999",
    "1e300",
    "-1e300",
    "NaN",
    "inf",
    "0.0",
    "1.5",
    "1p",
    "16m",
    "4g",
    "1k-1m",
    "4k/50:8k",
    "0-4095",
    "0,5,8-15",
    "600s",
    "601s",
    "18446744073s",
    "1ms",
    "1us",
    "\"\"",
    "\"nvme\"",
    "true",
    "[1, 2]",
    "{ a = 1 }",
    "/dev/zero",
    "/dev/nvme0n1",
    "nvme0n1:nvme1n1:nvme2n1",
    "${HOME}",
    "$ncpus",
    "(1+1)",
    "\u{feff}",
    "x\u{0}y",
];

/// The most text a mutation list grows an input to, a little past the 4 MiB limit of an
/// input file so the limit itself is tested.
const MAX_OUTPUT: usize = 5 << 20;

/// One change to a text.
#[derive(Clone, Debug)]
pub enum Mutation {
    DeleteLine(Index),
    DuplicateLine(Index),
    /// The line written this many more times (fio's repeated sections, TOML's arrays).
    RepeatLine(Index, u16),
    SwapLines(Index, Index),
    /// `key = value` keeps its key and gets a hostile value; other lines are replaced.
    ReplaceValue(Index, Index),
    /// A value made huge: a hostile value repeated many times.
    LongValue(Index, Index, u16),
    InsertLine(Index, String),
    FlipByte(Index, u8),
    Truncate(Index),
}

fn token_line() -> impl Strategy<Value = String> {
    let words = prop::sample::select(vec![
        "[global]",
        "[job]",
        "[[devices]]",
        "[cpu]",
        "[kernel]",
        "[topology]",
        "[[target]]",
        "numjobs",
        "iodepth",
        "size",
        "number_ios",
        "loops",
        "runtime",
        "ramp_time",
        "time_based",
        "cpus_allowed",
        "filename",
        "bs",
        "bssplit",
        "rate_iops",
        "thinktime",
        "startdelay",
        "stonewall",
        "include",
        "write_lat_log",
        "log_avg_msec",
        "count",
        "queues",
        "queue_depth",
        "max_iops",
        "read_ns",
        "cqe_bytes",
        "irq_cpu",
        "disks",
        "jobs_per_disk",
        "row",
        "job",
        "platform",
        "=",
        " = ",
        ":",
        ",",
        "#",
        ";",
    ]);
    let values = prop::sample::select(HOSTILE_VALUES.to_vec());
    prop::collection::vec(prop_oneof![words, values], 1..5).prop_map(|parts| parts.concat())
}

/// One mutation.
pub fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        any::<Index>().prop_map(Mutation::DeleteLine),
        any::<Index>().prop_map(Mutation::DuplicateLine),
        (any::<Index>(), 1u16..2000).prop_map(|(i, n)| Mutation::RepeatLine(i, n)),
        (any::<Index>(), any::<Index>()).prop_map(|(a, b)| Mutation::SwapLines(a, b)),
        (any::<Index>(), any::<Index>()).prop_map(|(a, b)| Mutation::ReplaceValue(a, b)),
        (any::<Index>(), any::<Index>(), 1u16..20000)
            .prop_map(|(a, b, n)| Mutation::LongValue(a, b, n)),
        (any::<Index>(), token_line()).prop_map(|(i, l)| Mutation::InsertLine(i, l)),
        (any::<Index>(), any::<u8>()).prop_map(|(i, b)| Mutation::FlipByte(i, b)),
        any::<Index>().prop_map(Mutation::Truncate),
    ]
}

/// Up to `max` mutations.
pub fn mutations(max: usize) -> impl Strategy<Value = Vec<Mutation>> {
    prop::collection::vec(mutation(), 1..=max)
}

/// `text` with `muts` applied in order. The result may not be UTF-8 (a flipped byte):
/// loaders get bytes, as from a file.
pub fn apply(text: &str, muts: &[Mutation]) -> Vec<u8> {
    let mut lines: Vec<Vec<u8>> = text.lines().map(|l| l.as_bytes().to_vec()).collect();
    let mut cut: Option<usize> = None;
    for m in muts {
        // Past the largest input file irqlab reads (4 MiB), more text tests nothing new.
        let size: usize = lines.iter().map(|l| l.len() + 1).sum();
        if size > MAX_OUTPUT {
            break;
        }
        let n = lines.len();
        match m {
            Mutation::DeleteLine(i) if n > 0 => {
                lines.remove(i.index(n));
            }
            Mutation::DuplicateLine(i) if n > 0 => {
                let l = lines[i.index(n)].clone();
                lines.insert(i.index(n), l);
            }
            Mutation::RepeatLine(i, k) if n > 0 => {
                let at = i.index(n);
                let l = lines[at].clone();
                let k = usize::from(*k).min(MAX_OUTPUT / (l.len() + 1));
                lines.splice(at..at, std::iter::repeat_n(l, k));
            }
            Mutation::SwapLines(a, b) if n > 0 => lines.swap(a.index(n), b.index(n)),
            Mutation::ReplaceValue(i, v) if n > 0 => {
                let value = v.get(HOSTILE_VALUES).as_bytes();
                set_value(&mut lines[i.index(n)], value);
            }
            Mutation::LongValue(i, v, k) if n > 0 => {
                let value = v.get(HOSTILE_VALUES).repeat(usize::from(*k));
                set_value(&mut lines[i.index(n)], value.as_bytes());
            }
            Mutation::InsertLine(i, l) => {
                let at = if n == 0 { 0 } else { i.index(n + 1) };
                lines.insert(at, l.as_bytes().to_vec());
            }
            Mutation::FlipByte(i, b) if n > 0 => {
                let line = &mut lines[i.index(n)];
                if !line.is_empty() {
                    let at = i.index(line.len());
                    line[at] = *b;
                }
            }
            Mutation::Truncate(i) => cut = Some(i.index(text.len().max(1) * 2)),
            _ => {}
        }
    }
    let mut out = lines.join(&b'\n');
    out.push(b'\n');
    if let Some(c) = cut
        && c < out.len()
    {
        out.truncate(c);
    }
    out
}

fn set_value(line: &mut Vec<u8>, value: &[u8]) {
    match line.iter().position(|&c| c == b'=') {
        Some(eq) => {
            line.truncate(eq + 1);
            line.extend_from_slice(value);
        }
        None => *line = value.to_vec(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_keep_their_keys() {
        let mut line = b"bs=4k".to_vec();
        set_value(&mut line, b"0");
        assert_eq!(line, b"bs=0");
        let mut header = b"[job]".to_vec();
        set_value(&mut header, b"NaN");
        assert_eq!(header, b"NaN");
        assert_eq!(apply("a=1\nb=2\n", &[]), b"a=1\nb=2\n");
    }
}
