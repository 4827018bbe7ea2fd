//! `--irqtop SECONDS`: per-vector interrupt rates and PMN at an interval, the way
//! util-linux irqtop shows /proc/interrupts deltas, then the /proc/interrupts table of
//! the run. The rendering works on two [`IrqSnapshot`]s, so either engine can feed it:
//! [`IrqTop`] snapshots at simulated-time intervals; the runtime can snapshot its own
//! counters at wall-time intervals and call [`render_interval`] (see `rt_watch.rs`).

use irqlab_report::RunReport;
use irqlab_report::proc_interrupts::FIRST_IRQ;
use irqlab_sim::{Observer, SliceKind};
use std::fmt::Write as _;
use std::io::{self, Write};

/// Interrupt counts since the start of a run, at `at_ns`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct IrqSnapshot {
    pub at_ns: u64,
    /// Handler runs per device vector per CPU: `vectors[v][cpu]`.
    pub vectors: Vec<Vec<u64>>,
    /// Posted MSI notifications per CPU (the PMN row).
    pub pmn: Vec<u64>,
}

impl IrqSnapshot {
    /// The counts of a finished run's report, as /proc/interrupts shows them.
    #[cfg(test)]
    pub fn from_report(r: &RunReport) -> IrqSnapshot {
        let ncpus = r.cpus.iter().map(|c| c.cpu + 1).max().unwrap_or(0);
        let mut pmn = vec![0; ncpus];
        for c in &r.cpus {
            pmn[c.cpu] += c.pmn;
        }
        IrqSnapshot {
            at_ns: r.duration_ns,
            vectors: r.vectors.iter().map(|v| v.per_cpu.clone()).collect(),
            pmn,
        }
    }

    fn vector(&self, v: usize, cpu: usize) -> u64 {
        self.vectors
            .get(v)
            .and_then(|row| row.get(cpu))
            .copied()
            .unwrap_or(0)
    }

    fn pmn(&self, cpu: usize) -> u64 {
        self.pmn.get(cpu).copied().unwrap_or(0)
    }

    fn ncpus(&self) -> usize {
        self.vectors
            .iter()
            .map(Vec::len)
            .chain(std::iter::once(self.pmn.len()))
            .max()
            .unwrap_or(0)
    }

    fn add_vector(&mut self, v: usize, cpu: usize) {
        if self.vectors.len() <= v {
            self.vectors.resize(v + 1, Vec::new());
        }
        let row = &mut self.vectors[v];
        if row.len() <= cpu {
            row.resize(cpu + 1, 0);
        }
        row[cpu] += 1;
    }

    fn add_pmn(&mut self, cpu: usize) {
        if self.pmn.len() <= cpu {
            self.pmn.resize(cpu + 1, 0);
        }
        self.pmn[cpu] += 1;
    }
}

/// The name of vector `v`: its kernel name when known, else its IRQ number's stand-in.
fn vector_name(names: &[String], v: usize) -> String {
    names
        .get(v)
        .cloned()
        .unwrap_or_else(|| format!("irq{}", FIRST_IRQ + v))
}

/// ns as ms: three decimals, six when the time is not a whole µs (so rates can be
/// checked against the printed interval).
fn ms(ns: u64) -> String {
    if ns.is_multiple_of(1_000) {
        format!("{}.{:03}", ns / 1_000_000, ns / 1_000 % 1_000)
    } else {
        format!("{}.{:06}", ns / 1_000_000, ns % 1_000_000)
    }
}

/// irqtop-style lines for the interval `prev.at_ns..cur.at_ns`: a header with the total
/// rate, then one row per vector that fired (busiest first), with its cumulative TOTAL,
/// its DELTA in the interval, its rate and its rate on each CPU that took interrupts,
/// then the PMN row. Rates are per second of the interval's own time base.
pub fn render_interval(names: &[String], prev: &IrqSnapshot, cur: &IrqSnapshot) -> String {
    let span = cur.at_ns.saturating_sub(prev.at_ns);
    let rate = |d: u64| {
        if span == 0 {
            0.0
        } else {
            d as f64 * 1e9 / span as f64
        }
    };
    let ncpus = cur.ncpus();
    let nvec = cur.vectors.len();
    let dv = |v: usize, c: usize| cur.vector(v, c).saturating_sub(prev.vector(v, c));
    let dp = |c: usize| cur.pmn(c).saturating_sub(prev.pmn(c));
    let cpus: Vec<usize> = (0..ncpus)
        .filter(|&c| dp(c) > 0 || (0..nvec).any(|v| dv(v, c) > 0))
        .collect();
    let mut rows: Vec<(usize, u64)> = (0..nvec)
        .map(|v| (v, (0..ncpus).map(|c| dv(v, c)).sum::<u64>()))
        .filter(|&(_, d)| d > 0)
        .collect();
    // irqtop sorts by DELTA, busiest first; the vector index breaks ties.
    rows.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    let total: u64 = rows.iter().map(|r| r.1).sum();
    let pmn_total: u64 = (0..ncpus).map(dp).sum();

    let mut out = String::new();
    let _ = writeln!(
        out,
        "irqtop | {} ms .. {} ms | vectors: {:.0}/s | PMN: {:.0}/s",
        ms(prev.at_ns),
        ms(cur.at_ns),
        rate(total),
        rate(pmn_total)
    );
    let _ = write!(
        out,
        "{:>6} {:>12} {:>10} {:>12}",
        "IRQ", "TOTAL", "DELTA", "RATE/s"
    );
    for &c in &cpus {
        let _ = write!(out, " {:>11}", format!("CPU{c}/s"));
    }
    let _ = writeln!(out, "  NAME");
    for &(v, d) in &rows {
        let cum: u64 = (0..ncpus).map(|c| cur.vector(v, c)).sum();
        let _ = write!(
            out,
            "{:>6} {cum:>12} {d:>10} {:>12.0}",
            FIRST_IRQ + v,
            rate(d)
        );
        for &c in &cpus {
            let _ = write!(out, " {:>11.0}", rate(dv(v, c)));
        }
        let _ = writeln!(out, "  {}", vector_name(names, v));
    }
    let pmn_cum: u64 = (0..ncpus).map(|c| cur.pmn(c)).sum();
    let _ = write!(
        out,
        "{:>6} {pmn_cum:>12} {pmn_total:>10} {:>12.0}",
        "PMN",
        rate(pmn_total)
    );
    for &c in &cpus {
        let _ = write!(out, " {:>11.0}", rate(dp(c)));
    }
    let _ = writeln!(out, "  Posted MSI notification event");
    out
}

/// An [`Observer`] that counts handler runs per vector and CPU and PMN per CPU, and
/// prints [`render_interval`] every `interval_ns` of simulated time. It counts the
/// measured window only (after ramp_time, until the last job ends), the window the final
/// /proc/interrupts table covers, so the printed deltas add up to that table.
pub struct IrqTop<W: Write> {
    interval_ns: u64,
    out: W,
    names: Vec<String>,
    counts: IrqSnapshot,
    prev: IrqSnapshot,
    last_now: u64,
    /// Inside the measured window.
    active: bool,
    /// The window closed: later events are not counted.
    closed: bool,
    error: Option<io::Error>,
}

impl<W: Write> IrqTop<W> {
    /// Prints to `out` every `interval_ns` (at least 1 µs) of simulated time.
    pub fn new(interval_ns: u64, out: W) -> IrqTop<W> {
        IrqTop {
            interval_ns: interval_ns.max(1_000),
            out,
            names: Vec::new(),
            counts: IrqSnapshot::default(),
            prev: IrqSnapshot::default(),
            last_now: 0,
            active: false,
            closed: false,
            error: None,
        }
    }

    /// Counts from the start without waiting for a window (tests that drive the
    /// observer by hand).
    #[cfg(test)]
    fn counting(mut self) -> Self {
        self.active = true;
        self
    }

    /// Vector names, when known before the run (otherwise rows show irqN).
    #[cfg(test)]
    pub fn with_names(mut self, names: Vec<String>) -> Self {
        self.names = names;
        self
    }

    /// The counts so far.
    #[cfg(test)]
    pub fn counts(&self) -> &IrqSnapshot {
        &self.counts
    }

    /// Prints the intervals that ended at or before `now` (events at `now` belong to the
    /// next one). False outside the measured window: the event is not counted.
    fn advance(&mut self, now: u64) -> bool {
        if !self.active {
            return false;
        }
        self.last_now = self.last_now.max(now);
        while now >= self.prev.at_ns + self.interval_ns {
            let at = self.prev.at_ns + self.interval_ns;
            self.print_until(at);
        }
        true
    }

    fn print_until(&mut self, at_ns: u64) {
        self.counts.at_ns = at_ns;
        let text = render_interval(&self.names, &self.prev, &self.counts);
        if self.error.is_none()
            && let Err(e) = self.out.write_all(text.as_bytes())
        {
            self.error = Some(e);
        }
        self.prev = self.counts.clone();
    }

    /// Prints the last, partial interval (up to the last event), then the run's
    /// /proc/interrupts table from `report`, and hands back the writer.
    pub fn finish(mut self, report: &RunReport) -> io::Result<W> {
        if self.names.is_empty() {
            self.names = report.vectors.iter().map(|v| v.name.clone()).collect();
        }
        if self.active && self.last_now > self.prev.at_ns {
            self.print_until(self.last_now);
        }
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        writeln!(
            self.out,
            "/proc/interrupts delta over the measured window ({} ms, the same window as the intervals above):",
            ms(report.duration_ns),
        )?;
        self.out
            .write_all(irqlab_report::proc_interrupts::render(report).as_bytes())?;
        self.out.flush()?;
        Ok(self.out)
    }
}

impl<W: Write> Observer for IrqTop<W> {
    fn start(&mut self, vector_names: &[String], _ncpus: usize) {
        if self.names.is_empty() {
            self.names = vector_names.to_vec();
        }
    }

    fn slice(&mut self, now: u64, _cpu: usize, _kind: SliceKind) {
        self.advance(now);
    }

    fn message(&mut self, now: u64, _vector: usize) {
        self.advance(now);
    }

    fn notification(&mut self, now: u64, _cpu: usize, _pmn: bool) {
        self.advance(now);
    }

    fn handler(&mut self, now: u64, _cpu: usize, _vector: usize, _cqes: u32) {
        self.advance(now);
    }

    /// Counted where the report counts: a handler when it starts, PMN when the CPU
    /// takes it.
    fn irq_counted(&mut self, now: u64, cpu: usize, vector: Option<usize>) {
        if self.advance(now) {
            match vector {
                Some(v) => self.counts.add_vector(v, cpu),
                None => self.counts.add_pmn(cpu),
            }
        }
    }

    fn counter(&mut self, now: u64, _name: &str, _index: usize, _value: f64) {
        self.advance(now);
    }

    /// The intervals start when the window opens (counts from zero) and the last one
    /// ends when it closes.
    fn window(&mut self, now: u64, open: bool) {
        if open && !self.closed {
            self.active = true;
            self.counts = IrqSnapshot {
                at_ns: now,
                ..IrqSnapshot::default()
            };
            self.prev = self.counts.clone();
            self.last_now = now;
        } else if !open && self.active {
            self.advance(now);
            if now > self.prev.at_ns {
                self.print_until(now);
            }
            self.active = false;
            self.closed = true;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::observers::{ObserveArgs, parse_seconds, simulate_with_observers};
    use irqlab_core::Policy;
    use irqlab_fio::JobSpec;
    use irqlab_sim::{Platform, SimOptions};

    fn parse_interval(s: &str) -> Result<u64, crate::ObserveError> {
        parse_seconds(s, 1e-6)
    }

    fn snap(at_ns: u64, vectors: Vec<Vec<u64>>, pmn: Vec<u64>) -> IrqSnapshot {
        IrqSnapshot {
            at_ns,
            vectors,
            pmn,
        }
    }

    #[test]
    fn interval_rates_are_deltas_over_time() {
        let prev = snap(1_000_000, vec![vec![10, 0], vec![0, 5]], vec![2, 0]);
        let cur = snap(2_000_000, vec![vec![30, 0], vec![0, 6]], vec![12, 0]);
        let names = vec!["nvme0q1".to_string(), "nvme0q2".to_string()];
        let text = render_interval(&names, &prev, &cur);
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[0].contains("1.000 ms .. 2.000 ms"), "{text}");
        assert!(lines[0].contains("vectors: 21000/s"), "{text}");
        assert!(lines[0].contains("PMN: 10000/s"), "{text}");
        // Busiest first: nvme0q1 (20 in 1 ms = 20000/s), then nvme0q2.
        assert!(
            lines[2].ends_with("nvme0q1") && lines[2].contains("20000"),
            "{text}"
        );
        assert!(lines[3].ends_with("nvme0q2"), "{text}");
        let cols: Vec<&str> = lines[2].split_whitespace().collect();
        assert_eq!(cols[..4], ["128", "30", "20", "20000"]);
        assert!(lines[4].starts_with("   PMN"), "{text}");
    }

    #[test]
    fn quiet_vectors_are_left_out() {
        let prev = snap(0, vec![vec![3]], vec![0]);
        let cur = snap(1_000, vec![vec![3]], vec![0]);
        let text = render_interval(&[], &prev, &cur);
        assert_eq!(text.lines().count(), 3, "{text}");
    }

    #[test]
    fn irqtop_prints_each_interval_and_counts_everything() {
        let mut out = Vec::new();
        let mut top = IrqTop::new(1_000, &mut out).counting();
        top.irq_counted(100, 0, Some(0));
        top.irq_counted(200, 1, None);
        top.irq_counted(1_500, 1, Some(0));
        top.slice(3_200, 0, SliceKind::Usr);
        assert_eq!(top.counts().vectors, vec![vec![1, 1]]);
        assert_eq!(top.counts().pmn, vec![0, 1]);
        drop(top);
        let text = String::from_utf8(out).unwrap();
        // Intervals 0..1, 1..2, 2..3 µs are over at 3.2 µs.
        assert_eq!(text.matches("irqtop |").count(), 3, "{text}");
    }

    const JOB: &str = "[global]\nioengine=libaio\ndirect=1\nrw=randread\nbs=4k\niodepth=16\n\
        time_based\nruntime=2ms\n[a]\nfilename=/dev/nvme0n1\ncpus_allowed=0\n\
        [b]\nfilename=/dev/nvme1n1\ncpus_allowed=1\n";

    fn sim_inputs(delivery: irqlab_core::Delivery) -> (Vec<JobSpec>, Platform, Policy) {
        sim_inputs_of(JOB, delivery)
    }

    fn sim_inputs_of(
        text: &str,
        delivery: irqlab_core::Delivery,
    ) -> (Vec<JobSpec>, Platform, Policy) {
        let jobs = irqlab_fio::parse_str(text, "t.fio".as_ref()).unwrap();
        let path =
            std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../platforms/example.toml");
        let platform = Platform::load(&path, &[]).unwrap();
        let policy = Policy {
            delivery,
            ..Policy::default()
        };
        (jobs, platform, policy)
    }

    /// Per row (IRQ number or PMN), the DELTAs summed over every printed interval; checks
    /// on the way that each printed RATE/s times its interval's length gives its DELTA.
    fn sum_printed(text: &str) -> std::collections::BTreeMap<String, u64> {
        let mut sums = std::collections::BTreeMap::new();
        let mut span_s = 0.0;
        for line in text.lines() {
            if line.starts_with("/proc/interrupts") {
                break;
            }
            let cols: Vec<&str> = line.split_whitespace().collect();
            if cols.first() == Some(&"irqtop") {
                let a: f64 = cols[2].parse().unwrap();
                let b: f64 = cols[5].parse().unwrap();
                span_s = (b - a) / 1e3;
                continue;
            }
            if cols.first() == Some(&"IRQ") {
                continue;
            }
            let delta: u64 = cols[2].parse().unwrap();
            let rate: f64 = cols[3].parse().unwrap();
            assert!(
                (rate * span_s - delta as f64).abs() <= 0.5 * span_s + 1e-6,
                "rate {rate}/s over {span_s} s is not {delta}: {line}"
            );
            *sums.entry(cols[0].to_string()).or_insert(0) += delta;
        }
        sums
    }

    #[test]
    fn printed_rates_add_up_to_the_final_counts() {
        // With ramp_time the intervals start where the final table's window does.
        let ramped = JOB.replace("runtime=2ms", "runtime=2ms\nramp_time=500us");
        for (text, delivery) in [
            (JOB, irqlab_core::Delivery::Remapped),
            (JOB, irqlab_core::Delivery::Posted { max_loop: 3 }),
            (ramped.as_str(), irqlab_core::Delivery::Remapped),
            (
                ramped.as_str(),
                irqlab_core::Delivery::Posted { max_loop: 3 },
            ),
        ] {
            let (jobs, platform, policy) = sim_inputs_of(text, delivery);
            let observe = ObserveArgs {
                irqtop: Some(250_000),
                ..ObserveArgs::default()
            };
            let mut out = Vec::new();
            let report = simulate_with_observers(
                &jobs,
                &platform,
                &policy,
                &SimOptions::default(),
                &observe,
                &mut out,
            )
            .unwrap();
            let text = String::from_utf8(out).unwrap();
            assert!(text.matches("irqtop |").count() >= 8, "{text}");
            let sums = sum_printed(&text);
            let mut fired = 0;
            for (v, vr) in report.vectors.iter().enumerate() {
                let printed = sums.get(&(FIRST_IRQ + v).to_string()).copied().unwrap_or(0);
                assert_eq!(printed, vr.handled(), "{} under {delivery:?}", vr.name);
                fired += u64::from(printed > 0);
            }
            assert!(fired >= 2, "two queues took interrupts: {text}");
            let pmn: u64 = report.cpus.iter().map(|c| c.pmn).sum();
            assert_eq!(sums.get("PMN").copied().unwrap_or(0), pmn);
            if matches!(delivery, irqlab_core::Delivery::Posted { .. }) {
                assert!(pmn > 0, "posted delivery sends PMN");
            }
            assert!(text.contains("/proc/interrupts delta"), "{text}");
        }
    }

    #[test]
    fn observed_counts_match_the_report() {
        let (jobs, platform, policy) = sim_inputs(irqlab_core::Delivery::Posted { max_loop: 3 });
        let names: Vec<String> = (0..4).map(|i| format!("v{i}")).collect();
        let mut top = IrqTop::new(1_000_000, Vec::new()).with_names(names);
        let report = irqlab_sim::simulate_observed(
            &jobs,
            &platform,
            &policy,
            &SimOptions::default(),
            &mut top,
        )
        .unwrap();
        let want = IrqSnapshot::from_report(&report);
        for (v, row) in want.vectors.iter().enumerate() {
            for (c, &n) in row.iter().enumerate() {
                assert_eq!(top.counts().vector(v, c), n, "vector {v} cpu {c}");
            }
        }
        for (c, &n) in want.pmn.iter().enumerate() {
            assert_eq!(top.counts().pmn(c), n, "PMN cpu {c}");
        }
        let text = String::from_utf8(top.finish(&report).unwrap()).unwrap();
        assert!(
            text.contains("  v0") || text.contains("  v1"),
            "given names are used: {text}"
        );
    }

    #[test]
    fn trace_of_a_simulation_is_perfetto_json() {
        let (jobs, platform, policy) = sim_inputs(irqlab_core::Delivery::Posted { max_loop: 3 });
        let path = std::env::temp_dir().join(format!("irqlab-trace-{}.json", std::process::id()));
        let observe = ObserveArgs {
            trace: Some(path.clone()),
            trace_window: Some((0, 1_000_000)),
            ..ObserveArgs::default()
        };
        let report = simulate_with_observers(
            &jobs,
            &platform,
            &policy,
            &SimOptions::default(),
            &observe,
            &mut io::sink(),
        )
        .unwrap();
        assert!(report.total_ios() > 0);
        let bytes = std::fs::read(&path).unwrap();
        let _ = std::fs::remove_file(&path);
        let v: serde_json::Value = serde_json::from_slice(&bytes).expect("valid JSON");
        let evs = v["traceEvents"].as_array().unwrap();
        let mut last_end: std::collections::BTreeMap<u64, f64> = Default::default();
        let (mut xs, mut pmn, mut msi) = (0, 0, 0);
        for e in evs {
            let ph = e["ph"].as_str().expect("ph");
            assert!(e["pid"].is_u64(), "{e}");
            if ph == "M" {
                continue;
            }
            let ts = e["ts"].as_f64().expect("ts");
            assert!((0.0..=1000.0).contains(&ts), "outside the window: {e}");
            match ph {
                "X" => {
                    xs += 1;
                    let dur = e["dur"].as_f64().expect("dur");
                    let tid = e["tid"].as_u64().expect("tid");
                    // Slices of one CPU follow each other: nesting is trivially proper.
                    let prev = last_end.insert(tid, ts + dur).unwrap_or(0.0);
                    assert!(ts + 1e-9 >= prev, "overlapping slices on tid {tid}: {e}");
                }
                "i" => {
                    assert!(e["tid"].is_u64(), "{e}");
                    pmn += usize::from(e["name"] == "PMN");
                    msi += usize::from(e["name"] == "MSI");
                }
                "C" => assert!(e["args"].is_object(), "{e}"),
                other => panic!("unexpected phase {other}"),
            }
        }
        assert!(
            xs > 100 && msi > 10 && pmn > 0,
            "xs {xs} msi {msi} pmn {pmn}"
        );
        assert!(
            pmn <= msi,
            "posted delivery sends at most one PMN per message"
        );
    }

    #[test]
    fn interval_parses_seconds() {
        assert_eq!(parse_interval("0.001"), Ok(1_000_000));
        assert_eq!(parse_interval("1"), Ok(1_000_000_000));
        assert!(parse_interval("0").is_err());
        assert!(parse_interval("fast").is_err());
    }
}
