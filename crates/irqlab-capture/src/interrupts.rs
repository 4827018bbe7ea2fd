//! A /proc/interrupts snapshot, read as the kernel writes it (kernel/irq/proc.c,
//! show_interrupts; arch/x86/kernel/irq.c, arch_show_interrupts): a header of the online
//! CPUs' columns, then one row per IRQ number or per architecture counter (LOC, RES,
//! CAL, PMN, ...): a count per CPU, then the chip, the hardware IRQ and type, and the
//! actions' names. The counts are `unsigned int` per CPU and wrap at 2^32.
//!
//! irqlab writes one comment line above the header, `# irqlab snapshot: btime=S
//! taken=S.NNN` (/proc/stat's boot time, and the wall-clock time of the read), so a
//! reader can tell snapshots of different boots apart and knows the window they span.

use crate::error::Malformed;

/// One row: an IRQ number (`36`) or a counter's mnemonic (`LOC`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IrqRow {
    pub label: String,
    /// One count per CPU column; fewer for system-wide rows (ERR, MIS).
    pub counts: Vec<u64>,
    /// The irq chip (`PCI-MSIX-0000:00:02.0`, `IR-PCI-MSIX-...`, `IO-APIC`); for a
    /// counter row, its description (`Local timer interrupts`).
    pub chip: String,
    /// The actions' names (`virtio1-req.0`, `nvme0q1`); empty for counter rows.
    pub actions: Vec<String>,
}

impl IrqRow {
    /// The IRQ number, for numbered rows.
    pub fn irq(&self) -> Option<u32> {
        self.label.parse().ok()
    }

    pub fn total(&self) -> u64 {
        self.counts.iter().sum()
    }
}

/// What irqlab recorded with a snapshot it took.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SnapshotMeta {
    /// /proc/stat btime: seconds since the epoch at boot.
    pub btime: Option<u64>,
    /// When the snapshot was read, seconds since the epoch.
    pub taken_s: Option<f64>,
}

/// One /proc/interrupts snapshot.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Snapshot {
    pub meta: SnapshotMeta,
    /// The CPU numbers of the columns (online CPUs at the time, ascending).
    pub cpus: Vec<u32>,
    pub rows: Vec<IrqRow>,
}

impl Snapshot {
    pub fn row(&self, label: &str) -> Option<&IrqRow> {
        self.rows.iter().find(|r| r.label == label)
    }
}

/// The comment line irqlab writes above a snapshot.
pub fn meta_line(btime: Option<u64>, taken_s: f64) -> String {
    match btime {
        Some(b) => format!("# irqlab snapshot: btime={b} taken={taken_s:.6}\n"),
        None => format!("# irqlab snapshot: taken={taken_s:.6}\n"),
    }
}

fn parse_meta(line: &str, meta: &mut SnapshotMeta) {
    for word in line.split_whitespace() {
        match word.split_once('=') {
            Some(("btime", v)) => meta.btime = v.parse().ok(),
            Some(("taken", v)) => meta.taken_s = v.parse().ok().filter(|t: &f64| t.is_finite()),
            _ => {}
        }
    }
}

const EXPECTED: &str =
    "expected a copy of Linux's /proc/interrupts (a first line of CPU columns: CPU0 CPU1 ...)";

fn header(line: &str) -> Result<Vec<u32>, Malformed> {
    line.split_whitespace()
        .map(|w| {
            w.strip_prefix("CPU")
                .and_then(|n| n.parse::<u32>().ok())
                .ok_or_else(|| Malformed(format!("the header has '{w}', not CPUn; {EXPECTED}")))
        })
        .collect()
}

/// Parses a snapshot; `# ...` lines before the header carry irqlab's metadata.
pub fn parse(text: &str) -> Result<Snapshot, Malformed> {
    let mut snap = Snapshot::default();
    let mut lines = text.lines().enumerate();
    let head = loop {
        match lines.next() {
            None => return Err(Malformed(format!("no header line; {EXPECTED}"))),
            Some((_, l)) if l.trim().is_empty() => continue,
            Some((_, l)) if l.trim_start().starts_with('#') => parse_meta(l, &mut snap.meta),
            Some((_, l)) => break l,
        }
    };
    snap.cpus = header(head)?;
    if snap.cpus.is_empty() {
        return Err(Malformed(format!(
            "the header has no CPU columns; {EXPECTED}"
        )));
    }
    let ncpu = snap.cpus.len();
    for (i, line) in lines {
        if line.trim().is_empty() {
            continue;
        }
        let bad = |what: &str| Malformed(format!("line {}: {what}; {EXPECTED}", i + 1));
        let (label, rest) = line
            .split_once(':')
            .ok_or_else(|| bad("no 'LABEL:' at the start of the row"))?;
        let label = label.trim();
        if label.is_empty() || label.contains(char::is_whitespace) {
            return Err(bad("the row's label is empty or has spaces"));
        }
        let words: Vec<&str> = rest.split_whitespace().collect();
        let counts: Vec<u64> = words
            .iter()
            .take(ncpu)
            .map_while(|w| w.parse::<u64>().ok())
            .collect();
        if counts.is_empty() {
            return Err(bad(&format!("row '{label}' has no counts")));
        }
        if counts.len() < ncpu && label.chars().all(|c| c.is_ascii_digit()) {
            return Err(bad(&format!(
                "IRQ {label} has {} counts for {ncpu} CPU columns",
                counts.len()
            )));
        }
        let desc = &words[counts.len()..];
        let numbered = label.chars().all(|c| c.is_ascii_digit());
        let (chip, actions) = if numbered && desc.len() >= 2 {
            // chip, hwirq-type (one or two words), then "name1, name2".
            let names_from =
                desc.len() - desc.iter().rev().take_while(|w| is_action_word(w)).count();
            // At least the chip stays out of the names.
            let names = desc[names_from.max(1)..].join(" ");
            let actions = names
                .split(',')
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty())
                .collect();
            (desc[0].to_string(), actions)
        } else {
            (desc.join(" "), Vec::new())
        };
        snap.rows.push(IrqRow {
            label: label.to_string(),
            counts,
            chip,
            actions,
        });
    }
    if snap.rows.is_empty() {
        return Err(Malformed(format!("a header but no rows; {EXPECTED}")));
    }
    Ok(snap)
}

/// Words of the action list: not the `N-edge` / `Edge` / `fasteoi` type words.
fn is_action_word(w: &str) -> bool {
    let t = w.trim_end_matches(',');
    let is_type = t.ends_with("-edge")
        || t.ends_with("-fasteoi")
        || t.ends_with("-level")
        || matches!(t, "Edge" | "Level" | "edge" | "level" | "fasteoi")
        || t.chars().all(|c| c.is_ascii_digit());
    !is_type
}

#[cfg(test)]
mod tests {
    use super::*;

    const VM: &str = "# irqlab snapshot: btime=1795668900 taken=1795669000.250000\n           CPU0       CPU1       \n 26:          0         14  IO-APIC   4-edge      ttyS0\n 36:          0      56566 PCI-MSIX-0000:00:02.0   1-edge      virtio1-req.0\n 45:         10          0  IR-PCI-MSIX-0000:01:00.0    1-edge      nvme0q1, nvme1q1\n NMI:          0          0   Non-maskable interrupts\n LOC:      31150      32353   Local timer interrupts\n ERR:          0\n";

    #[test]
    fn rows_chips_actions_and_the_header_comment_are_read() {
        let s = parse(VM).unwrap();
        assert_eq!(s.cpus, vec![0, 1]);
        assert_eq!(s.meta.btime, Some(1795668900));
        assert_eq!(s.meta.taken_s, Some(1795669000.25));
        let r = s.row("36").unwrap();
        assert_eq!((r.irq(), r.total()), (Some(36), 56566));
        assert_eq!(r.chip, "PCI-MSIX-0000:00:02.0");
        assert_eq!(r.actions, vec!["virtio1-req.0"]);
        assert_eq!(s.row("45").unwrap().actions, vec!["nvme0q1", "nvme1q1"]);
        assert_eq!(s.row("LOC").unwrap().chip, "Local timer interrupts");
        assert_eq!(s.row("ERR").unwrap().counts, vec![0]);
        assert_eq!(s.row("26").unwrap().actions, vec!["ttyS0"]);
    }

    #[test]
    fn gic_rows_with_a_separate_type_word_keep_the_name() {
        let t = "           CPU0       CPU1\n 11:      1000       2000     GICv3  27 Level     arch_timer\n";
        let s = parse(t).unwrap();
        assert_eq!(s.rows[0].actions, vec!["arch_timer"]);
        assert_eq!(s.rows[0].chip, "GICv3");
    }

    #[test]
    fn text_of_another_os_or_a_torn_copy_is_refused() {
        let bsd = "interrupt                          total       rate\nirq1: atkbd0                          10          0\n";
        let e = parse(bsd).unwrap_err();
        assert!(
            e.0.contains("not CPUn") && e.0.contains("/proc/interrupts"),
            "{e}"
        );
        assert!(parse("").unwrap_err().0.contains("no header"));
        assert!(parse("   CPU0\n").unwrap_err().0.contains("no rows"));
        let torn = "   CPU0   CPU1\n 36:   5\n";
        assert!(
            parse(torn)
                .unwrap_err()
                .0
                .contains("line 2: IRQ 36 has 1 counts")
        );
        let words = "   CPU0\n hello world\n";
        assert!(parse(words).unwrap_err().0.contains("line 2"));
    }
}
