//! `--max-memory` and `--max-events`: the simulator's resource budget on the command
//! line (`irqlab run`, `sweep`, `reproduce` and `calibrate`). A model past the budget is
//! refused before it is built, with what to shrink.

use clap::Args;
use irqlab_sim::Budget;

#[derive(Clone, Debug, Default, Args)]
pub struct BudgetArgs {
    /// Memory a simulation may use, with fio's suffixes (e.g. 8g); a model estimated
    /// above it is refused before it is built. Default 2g.
    #[arg(long, value_name = "SIZE", value_parser = parse_memory)]
    pub max_memory: Option<u64>,
    /// Events a simulation may process (e.g. 1e10; a few million take a second of wall
    /// time); a run estimated above it is refused before it starts. Default 1e10.
    #[arg(long, value_name = "N", value_parser = parse_events)]
    pub max_events: Option<u64>,
}

impl BudgetArgs {
    pub fn budget(&self) -> Budget {
        Budget {
            max_memory_bytes: self.max_memory.unwrap_or(Budget::DEFAULT.max_memory_bytes),
            max_events: self.max_events.unwrap_or(Budget::DEFAULT.max_events),
        }
    }
}

fn parse_memory(s: &str) -> Result<u64, String> {
    irqlab_fio::parse_size(s)
        .ok()
        .filter(|&b| b >= 1 << 20)
        .ok_or_else(|| format!("'{s}': expected a size of at least 1m, such as 512m or 8g"))
}

fn parse_events(s: &str) -> Result<u64, String> {
    let n: f64 = s
        .trim()
        .parse()
        .map_err(|_| format!("'{s}': expected a number of events, such as 5e9"))?;
    if !(n.is_finite() && (1.0..=1.8e19).contains(&n)) {
        return Err(format!(
            "'{s}': expected a number of events from 1 to 1.8e19"
        ));
    }
    Ok(n as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_counts_parse() {
        assert_eq!(parse_memory("8g"), Ok(8 << 30));
        assert!(parse_memory("1k").is_err());
        assert!(parse_memory("lots").is_err());
        assert_eq!(parse_events("5e9"), Ok(5_000_000_000));
        assert_eq!(parse_events("1000"), Ok(1000));
        assert!(parse_events("NaN").is_err());
        assert!(parse_events("0").is_err());
        assert_eq!(BudgetArgs::default().budget(), Budget::DEFAULT);
    }
}
