//! What irqlab does with each fio engine and option, as the README lists it: the list
//! is made from the tables the parser uses, so the README cannot drift from the code.

use crate::engines::{ENGINES, EngineRule};
use crate::options::{Ignored, OPTIONS, Opt};
use crate::refused::{ENGINE_ONLY, REFUSED};
use std::fmt::Write;

/// What irqlab does with a fio option name (or alias).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Treatment {
    /// The model carries it out.
    Honoured,
    /// Accepted without effect, for this reason.
    Inert(&'static str),
    /// Refused, for this reason.
    Refused(String),
    /// Not a fio option.
    Unknown,
}

/// How irqlab treats `name`.
pub fn treatment(name: &str) -> Treatment {
    if let Some(d) = crate::options::find(name) {
        return match d.opt {
            Opt::Ignored(_) => Treatment::Inert(d.no_meaning),
            _ => Treatment::Honoured,
        };
    }
    crate::refused::reason(name).map_or(Treatment::Unknown, Treatment::Refused)
}

/// A line setting option `name` (accepted without meaning) to a value its check takes,
/// for tests that show it changes nothing; None for the other options.
pub fn sample_line(name: &str) -> Option<String> {
    let d = crate::options::find(name)?;
    let Opt::Ignored(kind) = d.opt else {
        return None;
    };
    let value = match kind {
        Ignored::Flag => return Some(d.name.to_string()),
        Ignored::Bool | Ignored::Int => "1",
        Ignored::Choice(words) | Ignored::Only(words, _) => words[0],
        Ignored::Text => "x",
        Ignored::Size => "4k",
        Ignored::Float => "0.5",
    };
    Some(format!("{}={value}", d.name))
}

fn names(name: &str, aliases: &[&str]) -> String {
    std::iter::once(name)
        .chain(aliases.iter().copied())
        .map(|n| format!("`{n}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The README's generated part: engines, then the options without meaning in the model
/// (grouped by reason), then the refused ones.
pub fn markdown() -> String {
    let mut out = String::new();
    let _ = writeln!(out, "**Engines** (`ioengine=`):\n");
    let _ = writeln!(out, "| engine | irqlab |");
    let _ = writeln!(out, "|---|---|");
    for (name, rule) in ENGINES {
        let what = match rule {
            EngineRule::Runs(e, "") => format!("runs as {}", e.name()),
            EngineRule::Runs(e, note) => format!("runs as {}: {note}", e.name()),
            EngineRule::Refused(why) => format!("refused: {why}"),
        };
        let _ = writeln!(out, "| `{name}` | {what} |");
    }
    let honoured: Vec<String> = OPTIONS
        .iter()
        .chain(crate::control_opts::CONTROL)
        .filter(|d| !matches!(d.opt, Opt::Ignored(_)))
        .map(|d| names(d.name, d.aliases))
        .collect();
    let _ = writeln!(
        out,
        "\n**Honoured** (the table above says how): {}.\n",
        honoured.join(", ")
    );
    let _ = writeln!(
        out,
        "**Accepted without effect in the model** (their values are still checked); each is\n\
         accepted only because it is listed here with the reason, and a test checks that\n\
         these options change nothing:\n"
    );
    let inert: Vec<&crate::options::OptDef> = OPTIONS
        .iter()
        .chain(crate::inert::INERT)
        .filter(|d| matches!(d.opt, Opt::Ignored(_)))
        .collect();
    let mut reasons: Vec<&str> = Vec::new();
    for d in &inert {
        if !reasons.contains(&d.no_meaning) {
            reasons.push(d.no_meaning);
        }
    }
    for why in reasons {
        let group: Vec<String> = inert
            .iter()
            .filter(|d| d.no_meaning == why)
            .map(|d| {
                let mut n = names(d.name, d.aliases);
                if let Opt::Ignored(Ignored::Only(values, _)) = d.opt {
                    let _ = write!(n, " (={} only)", values.join(" or "));
                }
                n
            })
            .collect();
        let _ = writeln!(out, "- {}: {why}.", group.join(", "));
    }
    let only: Vec<String> = inert
        .iter()
        .filter_map(|d| match d.opt {
            Opt::Ignored(Ignored::Only(values, why)) => Some(format!(
                "`{}` other than {}: {why}",
                d.name,
                values.join(" or ")
            )),
            _ => None,
        })
        .collect();
    let _ = writeln!(out, "\n**Refused**, with the reason the message gives:\n");
    for (names_list, why) in REFUSED {
        let n: Vec<String> = names_list.iter().map(|n| format!("`{n}`")).collect();
        let _ = writeln!(out, "- {}: {why}.", n.join(", "));
    }
    for line in only {
        let _ = writeln!(out, "- {line}.");
    }
    for (engine, list) in ENGINE_ONLY {
        let n: Vec<String> = list.iter().map(|n| format!("`{n}`")).collect();
        let _ = writeln!(
            out,
            "- {}: options of `ioengine={engine}`, which irqlab refuses.",
            n.join(", ")
        );
    }
    out
}
