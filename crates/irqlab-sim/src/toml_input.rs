//! TOML errors in the user's terms: `FILE:LINE: KEY: what is wrong`, with serde's Rust
//! type names (`usize`, `f64`) turned into words. Platform files here, scenario and
//! targets files in the command, all report through [`describe`].

use std::collections::HashMap;

/// `origin:LINE: key: message` for a TOML error in `text` (the contents of `origin`).
pub fn describe(text: &str, origin: &str, e: &toml::de::Error) -> String {
    let msg = in_users_terms(e.message());
    match e.span() {
        Some(span) => {
            let (line, key) = key_at(text, span.start);
            match key {
                Some(k) if !msg.contains(&format!("'{k}'")) => {
                    format!("{origin}:{line}: {k}: {msg}")
                }
                _ => format!("{origin}:{line}: {msg}"),
            }
        }
        None => format!("{origin}: {msg}"),
    }
}

/// A serde/toml message without Rust type names: "invalid value: integer `-1`,
/// expected usize" becomes "-1 is not a whole number (0 or more)".
pub fn in_users_terms(msg: &str) -> String {
    let msg = msg.trim();
    if msg == "u64 value was too large" {
        return format!(
            "the value is above {}, the largest whole number a TOML file holds",
            i64::MAX
        );
    }
    for prefix in ["invalid value: ", "invalid type: "] {
        if let Some(rest) = msg.strip_prefix(prefix)
            && let Some((found, expected)) = rest.rsplit_once(", expected ")
        {
            let big = found.ends_with(" as i128");
            let found = found.trim_end_matches(" as i128");
            let shown = match (found.split_once(' '), found.split('`').nth(1)) {
                (Some(("string", s)), _) => format!("{s} (text)"),
                // "floating point `250.5`": the value is between the backticks.
                (_, Some(v)) => v.to_string(),
                (Some((_, v)), None) => v.to_string(),
                (None, None) => found.to_string(),
            };
            return if big {
                // serde's `expected` names the key's Rust type, or "any valid TOML value"
                // when the number was too large to parse at all: TOML's limit is the one that
                // tells the user what to write.
                format!("{shown} is too large; {}", integer_limit())
            } else {
                format!("{shown} is not {}", type_words(expected))
            };
        }
    }
    if let Some(rest) = msg.strip_prefix("missing field ") {
        return format!("missing key {}", quoted(rest));
    }
    if let Some(rest) = msg.strip_prefix("unknown field ") {
        return match rest.split_once(", expected ") {
            Some((k, known)) => format!("unknown key {}; expected {}", quoted(k), quoted(known)),
            None => format!("unknown key {}", quoted(rest)),
        };
    }
    if let Some(rest) = msg.strip_prefix("unknown variant ") {
        return match rest.split_once(", expected ") {
            Some((v, known)) => format!("unknown value {}; expected {}", quoted(v), quoted(known)),
            None => format!("unknown value {}", quoted(rest)),
        };
    }
    quoted(msg)
}

/// Why a whole number is too large for a TOML file (and so for `--set`).
pub fn integer_limit() -> String {
    format!("a TOML file holds whole numbers up to {}", i64::MAX)
}

/// serde's `expected` phrase in words.
fn type_words(expected: &str) -> String {
    let e = expected.trim();
    match e {
        "usize" | "u64" | "u128" => "a whole number (0 or more)".into(),
        "u32" => "a whole number from 0 to 4294967295".into(),
        "u16" => "a whole number from 0 to 65535".into(),
        "u8" => "a whole number from 0 to 255".into(),
        "i64" | "i32" | "isize" | "i128" => "a whole number".into(),
        "f64" | "f32" => "a number".into(),
        "a boolean" => "true or false".into(),
        "a string" => "text in quotes".into(),
        "a sequence" => "a list".into(),
        _ if e.starts_with("struct ") || e.starts_with("a map") => "a table".into(),
        _ => quoted(e),
    }
}

/// serde's `backticks` as 'quotes'.
fn quoted(s: &str) -> String {
    s.replace('`', "'")
}

/// The table a line of a TOML file is in, followed line by line: `[name]` headers,
/// `[[name]]` array entries (numbered from 0) and `[name.sub]` under the last entry.
#[derive(Default)]
struct Tables {
    table: String,
    arrays: Vec<(String, usize)>,
}

impl Tables {
    /// Follows line `t` (trimmed): a header changes the table.
    fn enter(&mut self, t: &str) {
        if let Some(name) = t.strip_prefix("[[").and_then(|r| r.split("]]").next()) {
            let name = name.trim().to_string();
            let n = match self.arrays.iter_mut().find(|(a, _)| *a == name) {
                Some((_, n)) => {
                    *n += 1;
                    *n
                }
                None => {
                    self.arrays.push((name.clone(), 0));
                    0
                }
            };
            self.table = format!("{name}.{n}");
        } else if let Some(name) = t.strip_prefix('[').and_then(|r| r.split(']').next()) {
            let name = name.trim();
            // [devices.submitter] after a [[devices]] belongs to that entry.
            self.table = match name.split_once('.') {
                Some((root, rest)) => match self.arrays.iter().find(|(a, _)| a == root) {
                    Some((_, n)) => format!("{root}.{n}.{rest}"),
                    None => name.to_string(),
                },
                None => name.to_string(),
            };
        }
    }

    /// The dotted key line `t` (trimmed, already entered) writes: a header's table, or
    /// the table's `key` of `key = value`.
    fn key(&self, t: &str) -> Option<String> {
        if t.starts_with('[') {
            return (!self.table.is_empty()).then(|| self.table.clone());
        }
        let key = t.split_once('=').map(|(k, _)| k.trim().trim_matches('"'));
        match key {
            Some(k) if !k.is_empty() && !k.starts_with('#') => Some(if self.table.is_empty() {
                k.to_string()
            } else {
                format!("{}.{k}", self.table)
            }),
            _ => None,
        }
    }
}

/// The 1-based line of byte `offset` in `text`, and the dotted key written there
/// (`devices.0.queues`), found from the table headers above it. None when the line holds
/// no `key = value` (a header, an inline table spanning lines).
pub fn key_at(text: &str, offset: usize) -> (usize, Option<String>) {
    let offset = offset.min(text.len());
    let line_no = 1 + text.as_bytes()[..offset]
        .iter()
        .filter(|&&b| b == b'\n')
        .count();
    let mut tables = Tables::default();
    for (i, line) in text.lines().enumerate() {
        let t = line.trim();
        tables.enter(t);
        if i + 1 == line_no {
            return (line_no, tables.key(t));
        }
    }
    (line_no, None)
}

/// Every dotted key written as `key = value` in a text, with its line (the first where it
/// is written twice): `line_of_key` for many keys in one pass over the text (a platform
/// file's provenance has an entry per key, and a search per key made loading quadratic).
pub struct KeyLines(HashMap<String, usize>);

impl KeyLines {
    pub fn new(text: &str) -> KeyLines {
        let mut tables = Tables::default();
        let mut lines = HashMap::new();
        for (i, line) in text.lines().enumerate() {
            let t = line.trim();
            tables.enter(t);
            if line.contains('=')
                && let Some(k) = tables.key(t)
            {
                lines.entry(k).or_insert(i + 1);
            }
        }
        KeyLines(lines)
    }

    /// The line where dotted `key` is written, if it is.
    pub fn get(&self, key: &str) -> Option<usize> {
        self.0.get(key).copied()
    }
}

/// The line where dotted `key` (`devices.1.read_ns`) is written in `text`, if it is.
pub fn line_of_key(text: &str, key: &str) -> Option<usize> {
    KeyLines::new(text).get(key)
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "name = \"x\"\n[cpu]\ncount = -1\n[[devices]]\nqueues = 1\n[[devices]]\nqueues = \"s\"\n[devices.submitter]\nreap_io_ns = 1\n";

    #[test]
    fn keys_are_found_under_their_tables_and_array_entries() {
        assert_eq!(key_at(TEXT, 0), (1, Some("name".into())));
        let at = TEXT.find("-1").unwrap();
        assert_eq!(key_at(TEXT, at), (3, Some("cpu.count".into())));
        let at = TEXT.find("\"s\"").unwrap();
        assert_eq!(key_at(TEXT, at), (7, Some("devices.1.queues".into())));
        assert_eq!(line_of_key(TEXT, "devices.0.queues"), Some(5));
        assert_eq!(line_of_key(TEXT, "devices.2.queues"), None);
        assert_eq!(line_of_key(TEXT, "devices.1.submitter.reap_io_ns"), Some(9));
    }

    /// The one-pass index finds, for every key, the line a search line by line with
    /// `key_at` finds first, on every platform and table file of the repository.
    #[test]
    fn the_key_index_agrees_with_a_search_line_by_line() {
        let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../../platforms");
        let mut dirs = vec![std::path::PathBuf::from(root)];
        let mut files = 0;
        while let Some(dir) = dirs.pop() {
            for e in std::fs::read_dir(&dir).unwrap() {
                let path = e.unwrap().path();
                if path.is_dir() {
                    dirs.push(path);
                    continue;
                }
                if path.extension().is_none_or(|x| x != "toml") {
                    continue;
                }
                let text = std::fs::read_to_string(&path).unwrap();
                let index = KeyLines::new(&text);
                let mut seen = std::collections::HashSet::new();
                let mut offset = 0;
                for line in text.split_inclusive('\n') {
                    let start = offset + line.len() - line.trim_start().len();
                    offset += line.len();
                    if !line.contains('=') {
                        continue;
                    }
                    if let (n, Some(k)) = key_at(&text, start)
                        && seen.insert(k.clone())
                    {
                        assert_eq!(index.get(&k), Some(n), "{}: {k}", path.display());
                    }
                }
                assert_eq!(index.0.len(), seen.len(), "{}", path.display());
                files += 1;
            }
        }
        assert!(files > 5, "the platform files were found");
    }

    #[test]
    fn rust_types_become_words() {
        assert_eq!(
            in_users_terms("invalid type: floating point `250.5`, expected u64"),
            "250.5 is not a whole number (0 or more)"
        );
        assert_eq!(
            in_users_terms("invalid value: integer `-1`, expected usize"),
            "-1 is not a whole number (0 or more)"
        );
        assert_eq!(
            in_users_terms("invalid type: string \"s\", expected f64"),
            "\"s\" (text) is not a number"
        );
        assert_eq!(
            in_users_terms("invalid type: integer `99999999999999999999` as i128, expected u64"),
            "99999999999999999999 is too large; a TOML file holds whole numbers up to 9223372036854775807"
        );
        assert_eq!(
            in_users_terms(
                "invalid type: integer `99999999999999999999` as i128, expected any valid TOML value"
            ),
            "99999999999999999999 is too large; a TOML file holds whole numbers up to 9223372036854775807"
        );
        assert_eq!(
            in_users_terms("unknown field `y`, expected `x`"),
            "unknown key 'y'; expected 'x'"
        );
        assert!(in_users_terms("u64 value was too large").contains("9223372036854775807"));
        let e = toml::from_str::<toml::Table>("a = 1\n[cpu]\ncount = 18446744073709551615\n")
            .unwrap_err();
        let d = describe("a = 1\n[cpu]\ncount = 18446744073709551615\n", "p.toml", &e);
        assert!(
            d.starts_with("p.toml:3: cpu.count: the value is above"),
            "{d}"
        );
    }
}
