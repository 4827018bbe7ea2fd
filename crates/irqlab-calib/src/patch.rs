//! Writing fitted values into a platform file's text, keeping its comments, layout and
//! provenance: a bare value is replaced, an inline table's `value` (or `cycles`, which
//! becomes a `value` in ns) is, and a key the file leaves to a shared table is added
//! under its section.

/// Where a key is written: its section header, and for an array entry the array's name,
/// the entry's index and the sub-table under it. "devices.0.read_ns" → header "devices",
/// entry ("devices", 0, ""); "devices.0.host.service_ns" → header "devices.host", entry
/// ("devices", 0, "host"); "engine.libaio.submit_io_ns" → header "engine.libaio", no entry.
struct Section<'a> {
    header: String,
    entry: Option<(String, usize, String)>,
    leaf: &'a str,
}

fn section(key: &str) -> Option<Section<'_>> {
    let parts: Vec<&str> = key.split('.').collect();
    let (leaf, path) = parts.split_last()?;
    let at = path.iter().position(|p| p.parse::<usize>().is_ok());
    let named: Vec<&str> = path
        .iter()
        .copied()
        .filter(|p| p.parse::<usize>().is_err())
        .collect();
    let entry = match at {
        Some(a) => Some((
            path[..a].join("."),
            path[a].parse().ok()?,
            path[a + 1..].join("."),
        )),
        None => None,
    };
    Some(Section {
        header: named.join("."),
        entry,
        leaf,
    })
}

/// `rest` (what follows `key =`) with its value replaced: a bare value keeps its comment
/// in its column; an inline table gets `value = V` in place of its value or cycles.
fn replaced(k: &str, rest: &str, value: &str) -> Option<String> {
    let leaf = k.trim();
    let indent = &k[..k.len() - k.trim_start().len()];
    let body = rest.trim_start();
    if body.starts_with('{') {
        let close = body.rfind('}')?;
        let inner = &body[1..close];
        // The one field that is `value = NUMBER` or `cycles = NUMBER`, found outside
        // quoted text; everything else is kept byte for byte.
        let (a, b) = top_level_fields(inner).into_iter().find(|&(a, b)| {
            inner[a..b].split_once('=').is_some_and(|(name, v)| {
                matches!(name.trim(), "value" | "cycles") && v.trim().parse::<f64>().is_ok()
            })
        })?;
        let lead = &inner[a..b][..inner[a..b].len() - inner[a..b].trim_start().len()];
        let trail = &inner[a..b][inner[a..b].trim_end().len()..];
        return Some(format!(
            "{indent}{leaf} = {{{}{lead}value = {value}{trail}{}}}{}",
            &inner[..a],
            &inner[b..],
            &body[close + 1..]
        ));
    }
    let mut new = format!("{indent}{leaf} = {value}");
    if let Some(i) = rest.find('#') {
        // Keep the comment in its column when the new value fits before it.
        let col = (k.len() + 1 + i).max(new.len() + 1);
        new = format!("{new:<col$}{}", &rest[i..]);
    }
    Some(new)
}

/// The byte ranges of an inline table's fields: split at commas outside quotes and
/// brackets.
fn top_level_fields(inner: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let (mut start, mut depth, mut quote, mut escaped) = (0, 0i32, None, false);
    for (i, c) in inner.char_indices() {
        match quote {
            Some(q) => {
                if escaped {
                    escaped = false;
                } else if c == '\\' && q == '"' {
                    escaped = true;
                } else if c == q {
                    quote = None;
                }
            }
            None => match c {
                '"' | '\'' => quote = Some(c),
                '[' | '{' => depth += 1,
                ']' | '}' => depth -= 1,
                ',' if depth == 0 => {
                    out.push((start, i));
                    start = i + 1;
                }
                _ => {}
            },
        }
    }
    out.push((start, inner.len()));
    out
}

/// Replaces the values of fitted keys in the platform file's text, keeping its comments
/// and layout. A key the file does not write (a shared table's) is added under its
/// section, or in a new one at the end; None when that cannot be done (an array entry
/// the file does not have).
pub fn patch_text(text: &str, fitted: &[(String, String)]) -> Option<String> {
    let mut lines: Vec<String> = text.lines().map(String::from).collect();
    for (key, value) in fitted {
        let Section {
            header,
            entry,
            leaf,
        } = section(key)?;
        let index = entry.as_ref().map(|e| e.1);
        // The array entry the last `[[array]]` header opened.
        let mut seen = 0usize;
        let mut current = None;
        let mut in_target = header.is_empty();
        let mut header_line = None;
        let mut done = false;
        for (n, line) in lines.iter_mut().enumerate() {
            let t = line.trim();
            if t.starts_with('[') {
                let name = t.trim_matches(|c| c == '[' || c == ']').trim();
                in_target = false;
                match &entry {
                    Some((array, i, sub)) => {
                        if t.starts_with("[[") && name == array {
                            current = Some(seen);
                            seen += 1;
                            in_target = sub.is_empty() && current == Some(*i);
                        } else if !t.starts_with("[[") && !sub.is_empty() && name == header {
                            // A sub-table belongs to the entry opened last.
                            in_target = current == Some(*i);
                        }
                    }
                    None => in_target = name == header && !t.starts_with("[["),
                }
                if in_target {
                    header_line = Some(n);
                }
                continue;
            }
            if !in_target {
                continue;
            }
            let Some((k, rest)) = line.split_once('=') else {
                continue;
            };
            if k.trim() != leaf {
                continue;
            }
            *line = replaced(k, rest, value)?;
            done = true;
            break;
        }
        if done {
            continue;
        }
        let added = format!("{leaf} = {value}  # irqlab calibrate (over its shared table's)");
        match (header_line, index) {
            (Some(n), _) => lines.insert(n + 1, added),
            (None, None) if !header.is_empty() => {
                lines.push(String::new());
                lines.push(format!("[{header}]"));
                lines.push(added);
            }
            _ => return None,
        }
    }
    let mut out = lines.join("\n");
    out.push('\n');
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use irqlab_sim::Platform;

    const EXAMPLE: &str = include_str!("../../../platforms/example.toml");

    #[test]
    fn patch_keeps_provenance_and_finds_array_entries() {
        let fitted = vec![
            ("uncore.stack_rtt_ns".to_string(), "222".to_string()),
            ("devices.0.read_ns".to_string(), "9000".to_string()),
            ("engine.libaio.submit_io_ns".to_string(), "777".to_string()),
        ];
        let out = patch_text(EXAMPLE, &fitted).unwrap();
        assert!(
            out.lines().any(|l| l
                .starts_with("stack_rtt_ns = { value = 222, source = \"estimate\"")
                && l.contains("the drain of the stack's earlier writes")),
            "{out}"
        );
        assert!(out.contains("read_ns = { value = 9000,"));
        assert!(out.contains("submit_io_ns = { value = 777,"));
        // The io_uring entry of the same name is untouched.
        assert!(out.contains("submit_io_ns = { value = 700,"));
        let p = Platform::from_toml(&out, "patched", &[]).unwrap();
        assert_eq!(p.uncore.stack_rtt_ns, 222);
        assert_eq!(p.engine.libaio.submit_io_ns, 777);
        assert_eq!(p.devices[0].read_ns, 9000);
        assert!(patch_text(EXAMPLE, &[("devices.3.count".into(), "1".into())]).is_none());
    }

    #[test]
    fn sub_tables_of_array_entries_are_found() {
        let text = "[[devices]]\ncount = 1\n[devices.host]\nwake_ns = 5 # a\n\n[[devices]]\ncount = 2\n[devices.host]\nwake_ns = 6\n";
        let out = patch_text(text, &[("devices.1.host.wake_ns".into(), "9".into())]).unwrap();
        assert_eq!(
            out,
            "[[devices]]\ncount = 1\n[devices.host]\nwake_ns = 5 # a\n\n[[devices]]\ncount = 2\n[devices.host]\nwake_ns = 9\n"
        );
        let out = patch_text(text, &[("devices.0.count".into(), "3".into())]).unwrap();
        assert!(
            out.starts_with("[[devices]]\ncount = 3\n[devices.host]"),
            "{out}"
        );
    }

    #[test]
    fn bare_values_keep_their_comment_and_absent_keys_are_added() {
        let text = "name = \"x\"\n[cpu]\nmodel = \"m\"\n[kernel]\ncqe_ns = 50     # why\n\n[[devices]]\ncount = 1\n";
        let out = patch_text(
            text,
            &[
                ("kernel.cqe_ns".into(), "60".into()),
                ("cpu.irq_entry_ns".into(), "80".into()),
                ("engine.libaio.submit_call_ns".into(), "300".into()),
            ],
        )
        .unwrap();
        assert!(out.contains("cqe_ns = 60     # why"), "{out}");
        assert!(
            out.contains("[cpu]\nirq_entry_ns = 80  # irqlab calibrate"),
            "{out}"
        );
        assert!(
            out.ends_with("[engine.libaio]\nsubmit_call_ns = 300  # irqlab calibrate (over its shared table's)\n"),
            "{out}"
        );
        // A cycles entry becomes a value in ns.
        let t =
            "[cpu]\nirq_entry_ns = { cycles = 285, source = \"estimate\", note = \"a, b\" } # c\n";
        let out = patch_text(t, &[("cpu.irq_entry_ns".into(), "80".into())]).unwrap();
        assert_eq!(
            out,
            "[cpu]\nirq_entry_ns = { value = 80, source = \"estimate\", note = \"a, b\" } # c\n"
        );
    }
}
