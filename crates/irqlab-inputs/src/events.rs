//! `--event TIME:migrate=QUEUE:cpuN` and `--event TIME:offline=cpuN`: changes to where
//! interrupts go at given times of a run (irqlab-core delivery/events.rs). TIME takes a
//! unit: ns, us, ms or s (`5ms`, `250us`, `0.5s`).

use crate::ValueError;
use clap::Args;
use irqlab_core::delivery::{AffinityChange, AffinityEvent};

/// The `--event` options.
#[derive(Clone, Debug, Default, PartialEq, Eq, Args)]
pub struct EventArgs {
    /// At TIME, move a queue's vector to a CPU ("5ms:migrate=nvme0q3:cpu1") or take a CPU
    /// offline ("8ms:offline=cpu1"); TIME in ns, us, ms or s. May be repeated.
    #[arg(long = "event", value_name = "TIME:CHANGE", value_parser = parse_event)]
    pub events: Vec<AffinityEvent>,
}

/// One `--event` value.
pub fn parse_event(s: &str) -> Result<AffinityEvent, ValueError> {
    event(s).map_err(|why| ValueError::new(s, why))
}

/// One `--event` value, or why it is not one.
fn event(s: &str) -> Result<AffinityEvent, String> {
    let expected = "expected TIME:migrate=QUEUE:cpuN or TIME:offline=cpuN, e.g. 5ms:migrate=nvme0q3:cpu1 or 8ms:offline=cpu1";
    let (time, change) = s.split_once(':').ok_or_else(|| expected.to_string())?;
    let at_ns = parse_time(time).map_err(|e| format!("{e}; {expected}"))?;
    let (what, arg) = change.split_once('=').ok_or_else(|| expected.to_string())?;
    let cpu = |t: &str| -> Result<usize, String> {
        t.strip_prefix("cpu")
            .and_then(|n| n.parse::<usize>().ok())
            .ok_or_else(|| format!("'{t}' is not a CPU such as cpu3; {expected}"))
    };
    let change = match what {
        "migrate" => {
            let (queue, to) = arg
                .rsplit_once(':')
                .ok_or_else(|| format!("migrate needs QUEUE:cpuN; {expected}"))?;
            if !is_queue_name(queue) {
                return Err(format!(
                    "'{s}': '{queue}' is not a queue such as nvme0q3; {expected}"
                ));
            }
            AffinityChange::Migrate {
                queue: queue.to_string(),
                cpu: cpu(to)?,
            }
        }
        "offline" => AffinityChange::Offline { cpu: cpu(arg)? },
        _ => return Err(format!("unknown change '{what}'; {expected}")),
    };
    Ok(AffinityEvent { at_ns, change })
}

/// A queue's vector name as /proc/interrupts shows it: DEVICEqN ("nvme0q3").
fn is_queue_name(q: &str) -> bool {
    q.rsplit_once('q').is_some_and(|(dev, n)| {
        !dev.is_empty() && !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit())
    })
}

/// A time with its unit: ns, us, ms or s; fractions allowed ("0.5ms").
fn parse_time(t: &str) -> Result<u64, String> {
    let t = t.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .ok_or_else(|| format!("the time '{t}' has no unit (ns, us, ms or s)"))?;
    let (num, unit) = t.split_at(split);
    let scale = match unit {
        "ns" => 1.0,
        "us" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        _ => return Err(format!("the time '{t}' has an unknown unit '{unit}'")),
    };
    let v: f64 = num
        .parse()
        .map_err(|_| format!("the time '{t}' is not a number with a unit"))?;
    let ns = (v * scale).round();
    if !ns.is_finite() || ns > u64::MAX as f64 {
        return Err(format!("the time '{t}' is too large"));
    }
    Ok(ns as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_parse_with_their_time_units() {
        assert_eq!(
            parse_event("5ms:migrate=nvme0q3:cpu7"),
            Ok(AffinityEvent {
                at_ns: 5_000_000,
                change: AffinityChange::Migrate {
                    queue: "nvme0q3".into(),
                    cpu: 7
                }
            })
        );
        assert_eq!(
            parse_event("0.5us:offline=cpu3"),
            Ok(AffinityEvent {
                at_ns: 500,
                change: AffinityChange::Offline { cpu: 3 }
            })
        );
        for bad in [
            "5:offline=cpu1",
            "5ms",
            "5ms:offline=3",
            "5ms:migrate=nvme0q3",
            "5ms:migrate=disk:cpu1",
            "5ms:reboot=cpu1",
            "5parsecs:offline=cpu1",
        ] {
            let e = parse_event(bad).unwrap_err().to_string();
            assert!(e.contains(bad) && e.contains("expected"), "{bad}: {e}");
        }
    }
}
