//! A seeded burst of completion messages from several NVMe queues (one vector each) into
//! CPU 0, replayed in virtual time through remapped delivery (every message is an
//! interrupt) and posted delivery (irqlab_core::posted: PIR bit, one notification while
//! ON is clear, the demux loop). On the remapped side the local APIC's IRR merges a
//! message for a vector that is already pending. `irqlab demo` prints it; the Python
//! package returns it.

use irqlab_core::posted::{Demux, FIRST_EXTERNAL_VECTOR, FIRST_SYSTEM_VECTOR, PiDesc};
use irqlab_core::posted::{MAX_POSTED_MSI_COALESCING_LOOP, POSTED_MSI_NOTIFICATION_VECTOR};
use irqlab_report::pci_address;
use irqlab_report::proc_interrupts::{self, FIRST_IRQ};
use std::collections::VecDeque;
use std::fmt::{self, Write};

/// The burst and the costs it is replayed with.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Burst {
    /// Device vectors (one NVMe queue each) targeting CPU 0.
    pub vectors: u32,
    /// Completion messages to replay.
    pub messages: u64,
    /// MAX_POSTED_MSI_COALESCING_LOOP for the posted run (the extra round included).
    pub max_loop: u32,
    /// Seed of the arrival process.
    pub seed: u64,
    /// Mean time between messages, ns (exponential gaps).
    pub gap_ns: u64,
    /// Cost of one device handler call (nvme_irq), ns.
    pub handler_ns: u64,
    /// Cost of one CPU notification (entry, EOI, exit), ns.
    pub notify_ns: u64,
    /// Cost of one PIR harvest round, ns.
    pub round_ns: u64,
}

impl Default for Burst {
    fn default() -> Self {
        Burst {
            vectors: 8,
            messages: 20_000,
            max_loop: MAX_POSTED_MSI_COALESCING_LOOP,
            seed: 1,
            gap_ns: 800,
            handler_ns: 500,
            notify_ns: 600,
            round_ns: 40,
        }
    }
}

/// A burst the replay cannot take (too many vectors, too many messages, absurd costs).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BurstError(pub String);

impl fmt::Display for BurstError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for BurstError {}

/// What one delivery did with the burst.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Outcome {
    /// CPU notifications (remapped: one per interrupt; posted: PMN).
    pub notifications: u64,
    /// Handler calls per vector.
    pub handled: Vec<u64>,
    /// CPU time spent, ns.
    pub busy_ns: u64,
    /// Sum and maximum of message-to-handler latency, ns.
    pub latency_sum: u64,
    pub latency_max: u64,
}

impl Outcome {
    /// A handler call for vector index `v` at `now` serves every message of v waiting.
    fn dispatch(&mut self, waiting: &mut [VecDeque<u64>], v: usize, now: u64) {
        self.handled[v] += 1;
        for t in waiting[v].drain(..) {
            self.latency_sum += now - t;
            self.latency_max = self.latency_max.max(now - t);
        }
    }
}

/// splitmix64: a seeded, portable stream for the arrival process.
fn splitmix(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

fn arrivals(a: &Burst) -> Vec<(u64, usize)> {
    let mut s = a.seed;
    let mut t = 0u64;
    (0..a.messages)
        .map(|_| {
            let u = ((splitmix(&mut s) >> 11) as f64 + 1.0) / (1u64 << 53) as f64;
            t += (-u.ln() * a.gap_ns as f64).round() as u64;
            (t, (splitmix(&mut s) % u64::from(a.vectors)) as usize)
        })
        .collect()
}

fn vector_of(v: usize) -> u8 {
    FIRST_EXTERNAL_VECTOR + 1 + v as u8
}

fn remapped(a: &Burst, msgs: &[(u64, usize)]) -> Outcome {
    let mut o = Outcome {
        handled: vec![0; a.vectors as usize],
        ..Outcome::default()
    };
    let mut waiting = vec![VecDeque::new(); a.vectors as usize];
    // The local APIC's IRR: one pending bit per vector, so a message for a vector that is
    // already pending merges into it (a message during its handler pends once more).
    let mut irr = vec![false; a.vectors as usize];
    let (mut next, mut now) = (0usize, 0u64);
    loop {
        while next < msgs.len() && msgs[next].0 <= now {
            let (t, v) = msgs[next];
            waiting[v].push_back(t);
            irr[v] = true;
            next += 1;
        }
        // The highest pending vector is taken first (its priority class is higher).
        let Some(v) = irr.iter().rposition(|&pending| pending) else {
            match msgs.get(next) {
                Some(&(t, _)) => {
                    now = t;
                    continue;
                }
                None => break,
            }
        };
        // IRTE lookup: the interrupt enters with the device's own vector.
        irr[v] = false;
        now += a.notify_ns;
        o.notifications += 1;
        o.dispatch(&mut waiting, v, now);
        now += a.handler_ns;
        o.busy_ns += a.notify_ns + a.handler_ns;
    }
    o
}

fn posted(a: &Burst, msgs: &[(u64, usize)]) -> Outcome {
    let mut o = Outcome {
        handled: vec![0; a.vectors as usize],
        ..Outcome::default()
    };
    let mut waiting = vec![VecDeque::new(); a.vectors as usize];
    let desc = PiDesc::new(POSTED_MSI_NOTIFICATION_VECTOR, 0);
    let (mut next, mut now, mut notified_at) = (0usize, 0u64, None::<u64>);
    // Posts every message that has arrived by `until`; a post that takes ON notifies.
    let post_until =
        |until: u64, next: &mut usize, w: &mut [VecDeque<u64>], n: &mut Option<u64>| {
            while *next < msgs.len() && msgs[*next].0 <= until {
                let (t, v) = msgs[*next];
                w[v].push_back(t);
                if desc.post(vector_of(v)) {
                    *n = Some(t);
                }
                *next += 1;
            }
        };
    while next < msgs.len() || notified_at.is_some() {
        let Some(sent) = notified_at.take() else {
            post_until(msgs[next].0, &mut next, &mut waiting, &mut notified_at);
            continue;
        };
        // sysvec_posted_msi_notification: entry, then rounds until the demux is done.
        now = now.max(sent) + a.notify_ns;
        o.notifications += 1;
        o.busy_ns += a.notify_ns;
        let mut demux = Demux::new(a.max_loop);
        loop {
            post_until(now, &mut next, &mut waiting, &mut notified_at);
            let Some(snap) = demux.next_round(&desc) else {
                break;
            };
            now += a.round_ns;
            o.busy_ns += a.round_ns;
            for vec in snap.vectors() {
                o.dispatch(&mut waiting, usize::from(vec - vector_of(0)), now);
                now += a.handler_ns;
                o.busy_ns += a.handler_ns;
            }
        }
    }
    o
}

impl Burst {
    /// Refuses bursts the replay cannot take.
    pub fn check(&self) -> Result<(), BurstError> {
        let a = self;
        let max_vectors = u32::from(FIRST_SYSTEM_VECTOR - FIRST_EXTERNAL_VECTOR - 1);
        if a.vectors == 0 || a.vectors > max_vectors {
            return Err(BurstError(format!(
                "--vectors must be 1..={max_vectors}, got {}",
                a.vectors
            )));
        }
        if a.messages == 0 || a.messages > 10_000_000 {
            return Err(BurstError(format!(
                "--messages must be 1..=10000000, got {}",
                a.messages
            )));
        }
        if [a.gap_ns, a.handler_ns, a.notify_ns, a.round_ns]
            .iter()
            .any(|&ns| ns > 1_000_000_000)
        {
            return Err(BurstError(
                "--gap-ns, --handler-ns, --notify-ns and --round-ns must be at most 1 s".into(),
            ));
        }
        Ok(())
    }
}

/// Both deliveries of one burst.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Replay {
    pub remapped: Outcome,
    pub posted: Outcome,
}

/// Replays `a` through remapped and posted delivery.
pub fn replay(a: &Burst) -> Result<Replay, BurstError> {
    a.check()?;
    let msgs = arrivals(a);
    Ok(Replay {
        remapped: remapped(a, &msgs),
        posted: posted(a, &msgs),
    })
}

/// The comparison table and both /proc/interrupts tables, as `irqlab demo` prints them.
pub fn render(a: &Burst, r: &Replay) -> String {
    let runs = [("remapped", &r.remapped), ("posted", &r.posted)];
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{} messages from {} NVMe queues into CPU 0, mean gap {} ns, seed {}",
        a.messages, a.vectors, a.gap_ns, a.seed
    );
    let _ = writeln!(
        s,
        "costs: notification {} ns, handler {} ns, PIR round {} ns; posted max_loop {}\n",
        a.notify_ns, a.handler_ns, a.round_ns, a.max_loop
    );
    let _ = writeln!(
        s,
        "{:<9} {:>9} {:>13} {:>8} {:>10} {:>10} {:>12} {:>12}",
        "delivery",
        "messages",
        "notifications",
        "handled",
        "msgs/notif",
        "cpu_us",
        "mean_lat_ns",
        "max_lat_ns"
    );
    for (name, o) in runs {
        let handled: u64 = o.handled.iter().sum();
        let ratio = a.messages as f64 / o.notifications.max(1) as f64;
        let mean = o.latency_sum as f64 / a.messages as f64;
        let _ = writeln!(
            s,
            "{name:<9} {:>9} {:>13} {handled:>8} {ratio:>10.2} {:>10.1} {mean:>12.0} {:>12}",
            a.messages,
            o.notifications,
            o.busy_ns as f64 / 1e3,
            o.latency_max
        );
    }
    for (name, o) in runs {
        // Per-device counts are handler calls in both modes (the demux calls them); the
        // layout is the one `irqlab run` and `irqlab rt` print.
        let table = proc_interrupts::Table {
            ncpus: 1,
            nr_irqs: FIRST_IRQ + o.handled.len(),
            rows: o
                .handled
                .iter()
                .enumerate()
                .map(|(v, &n)| proc_interrupts::IrqRow {
                    irq: FIRST_IRQ + v,
                    counts: vec![n],
                    chip: format!("IR-PCI-MSIX-{}", pci_address(v)),
                    hwirq: 1,
                    action: format!("nvme{v}q1"),
                })
                .collect(),
            arch: vec![proc_interrupts::ArchRow {
                symbol: proc_interrupts::PMN.0,
                counts: vec![if name == "posted" { o.notifications } else { 0 }],
                text: proc_interrupts::PMN.1,
            }],
        };
        let _ = write!(s, "\n/proc/interrupts ({name}):\n{}", table.format());
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn posted_delivery_notifies_less_and_handles_every_message() {
        let b = Burst::default();
        let r = replay(&b).unwrap();
        assert!(r.posted.notifications < r.remapped.notifications, "{r:?}");
        assert!(r.remapped.notifications <= b.messages);
        // Every message is served by some handler call in both modes.
        for o in [&r.remapped, &r.posted] {
            assert!(o.handled.iter().sum::<u64>() <= b.messages);
            assert!(o.handled.iter().all(|&n| n > 0));
        }
        assert_eq!(replay(&b).unwrap(), r, "seeded: the same burst twice");
        let text = render(&b, &r);
        assert!(text.contains("PMN:") && text.contains("nvme7q1"), "{text}");
    }

    #[test]
    fn impossible_bursts_are_refused() {
        let bad = Burst {
            vectors: 0,
            ..Burst::default()
        };
        assert!(replay(&bad).unwrap_err().to_string().contains("--vectors"));
    }
}
