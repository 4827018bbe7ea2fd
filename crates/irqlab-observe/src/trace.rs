//! `--trace FILE.json`: a Perfetto timeline of a simulated run, written as the simulator
//! runs through the report crate's Chrome trace-event writer.
//!
//! Layout: process "host" has one thread track per CPU ("CPU N") holding its slices
//! (hardirq, softirq, ksoftirqd, irq_thread, usr, sys; idle is left blank) and an instant
//! per CPU notification ("PMN" for a posted MSI notification, "notification" for a
//! remapped vector's own). Process "devices" has one track per device vector with an
//! instant per MSI the device raised and one per handler run. Counters on the host:
//! per-CPU notifications and handler runs per second, and whatever the simulator reports
//! through `Observer::counter` (e.g. a moderator's coalescing level).

use crate::ObserveError;
use irqlab_report::RunReport;
use irqlab_report::trace::{Arg, Scope, TraceWriter};
use irqlab_sim::{Observer, SliceKind};
use std::io::{self, Write};
use std::ops::Range;

/// pid of the host process track (CPUs, counters), plus the pid base.
pub const HOST_PID: u32 = 1;
/// pid of the devices process track (one thread per vector), plus the pid base.
pub const DEVICES_PID: u32 = 2;
/// Default bucket of the per-CPU rate counters: 100 µs, fine enough to see a burst and
/// coarse enough to keep two counter events per CPU per bucket.
pub const DEFAULT_RATE_WINDOW_NS: u64 = 100_000;

/// Parses `--trace-window START..END`: ns by default, or with an `ns`, `us`, `ms` or `s`
/// suffix on each side (`0..2ms`, `100us..300us`); a side left out is the start or end of
/// the run.
pub fn parse_window(s: &str) -> Result<(u64, u64), ObserveError> {
    irqlab_report::trace::parse_window(s)
        .map(|r| (r.start, r.end))
        .map_err(|e| ObserveError::Option(e.to_string()))
}

/// What one CPU is doing since when.
#[derive(Clone, Copy, Debug)]
struct CpuTrack {
    kind: SliceKind,
    since: u64,
}

/// Counts of one CPU in the current rate bucket.
#[derive(Clone, Copy, Debug, Default)]
struct RateBucket {
    notifications: u64,
    handlers: u64,
}

/// An [`Observer`] that writes a Chrome trace-event timeline.
///
/// Write errors do not stop the simulation: the first one is kept and returned by
/// [`TraceObserver::finish`], and nothing more is written after it.
pub struct TraceObserver<W: Write> {
    w: Option<TraceWriter<W>>,
    error: Option<io::Error>,
    cpus: Vec<CpuTrack>,
    /// Vectors that had an event: only they get a named track.
    vectors_seen: Vec<bool>,
    host: u32,
    devices: u32,
    rate_window_ns: u64,
    /// Start of the current rate bucket; every CPU shares it.
    bucket_start: u64,
    buckets: Vec<RateBucket>,
    /// Whether a CPU's rate counter last showed a non-zero value.
    rate_shown: Vec<bool>,
    last_now: u64,
}

impl<W: Write> TraceObserver<W> {
    /// A trace of the whole run, or only of `window` (ns) when given: slices crossing
    /// its edges are clipped, other events outside it are dropped.
    pub fn new(out: W, window: Option<Range<u64>>) -> io::Result<Self> {
        let w = match window {
            Some(win) => TraceWriter::with_window(out, win)?,
            None => TraceWriter::new(out)?,
        };
        Ok(TraceObserver {
            w: Some(w),
            error: None,
            cpus: Vec::new(),
            vectors_seen: Vec::new(),
            host: HOST_PID,
            devices: DEVICES_PID,
            rate_window_ns: DEFAULT_RATE_WINDOW_NS,
            bucket_start: 0,
            buckets: Vec::new(),
            rate_shown: Vec::new(),
            last_now: 0,
        })
    }

    /// Sets the bucket of the per-CPU rate counters (at least 1 µs).
    #[cfg(test)]
    pub fn with_rate_window(mut self, ns: u64) -> Self {
        self.rate_window_ns = ns.max(1_000);
        self
    }

    /// Adds `base` to both pids, so traces of two runs (say remapped and posted) can be
    /// opened together in Perfetto (a zip of both files) without their tracks merging.
    #[cfg(test)]
    pub fn with_pid_base(mut self, base: u32) -> Self {
        self.host = HOST_PID.saturating_add(base);
        self.devices = DEVICES_PID.saturating_add(base);
        self
    }

    /// Leaves out events past `max_bytes` of file (see `TraceWriter::with_max_bytes`).
    pub fn with_max_bytes(mut self, max_bytes: u64) -> Self {
        self.w = self.w.take().map(|w| w.with_max_bytes(max_bytes));
        self
    }

    /// Events the size cap left out, and when the first of them happened (ns).
    pub fn dropped(&self) -> (u64, Option<u64>) {
        self.w.as_ref().map_or((0, None), TraceWriter::dropped)
    }

    /// Events written so far.
    #[cfg(test)]
    pub fn events_written(&self) -> u64 {
        self.w.as_ref().map_or(0, TraceWriter::events_written)
    }

    /// Closes the open slices at the last event, writes the track names (vector names
    /// come from `report`), ends the JSON and hands back the writer.
    pub fn finish(mut self, report: &RunReport) -> io::Result<W> {
        let end = self.last_now;
        self.flush_rates(end.saturating_add(self.rate_window_ns));
        for cpu in 0..self.cpus.len() {
            self.close_slice(cpu, end);
        }
        let ncpus = self.cpus.len();
        let seen = std::mem::take(&mut self.vectors_seen);
        let (host_pid, devices_pid) = (self.host, self.devices);
        let policy: Vec<String> = report
            .policy
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        let host = if policy.is_empty() {
            format!("host {}", report.platform)
        } else {
            format!("host {} ({})", report.platform, policy.join(" "))
        };
        self.write(|w| {
            w.process_name(host_pid, &host)?;
            w.process_name(devices_pid, "devices")?;
            for cpu in 0..ncpus {
                w.thread_name(host_pid, cpu_tid(cpu), &format!("CPU {cpu}"))?;
            }
            for v in (0..seen.len()).filter(|&v| seen[v]) {
                let name = report
                    .vectors
                    .get(v)
                    .map_or_else(|| format!("vector {v}"), |r| r.name.clone());
                w.thread_name(devices_pid, vector_tid(v), &name)?;
            }
            Ok(())
        });
        if let Some(e) = self.error.take() {
            return Err(e);
        }
        match self.w.take() {
            Some(w) => w.finish(),
            None => Err(io::Error::other("the trace writer is gone")),
        }
    }

    fn see_vector(&mut self, v: usize) {
        if self.vectors_seen.len() <= v {
            self.vectors_seen.resize(v + 1, false);
        }
        self.vectors_seen[v] = true;
    }

    /// Runs `f` on the writer unless an earlier write failed.
    fn write(&mut self, f: impl FnOnce(&mut TraceWriter<W>) -> io::Result<()>) {
        if self.error.is_some() {
            return;
        }
        if let Some(w) = self.w.as_mut()
            && let Err(e) = f(w)
        {
            self.error = Some(e);
        }
    }

    fn track(&mut self, cpu: usize) -> &mut CpuTrack {
        if cpu >= self.cpus.len() {
            // A CPU the simulator has not mentioned yet has been idle since time 0.
            self.cpus.resize(
                cpu + 1,
                CpuTrack {
                    kind: SliceKind::Idle,
                    since: 0,
                },
            );
            self.buckets.resize(cpu + 1, RateBucket::default());
        }
        &mut self.cpus[cpu]
    }

    /// Writes the slice `cpu` has been in up to `now` (idle and empty slices are skipped).
    fn close_slice(&mut self, cpu: usize, now: u64) {
        let CpuTrack { kind, since } = *self.track(cpu);
        if kind == SliceKind::Idle || now <= since {
            return;
        }
        let pid = self.host;
        self.write(|w| {
            w.complete(
                pid,
                cpu_tid(cpu),
                kind.name(),
                "cpu",
                since,
                now - since,
                &[],
            )
        });
    }

    /// Time moves to `now`: emit the rate buckets that are over.
    fn advance(&mut self, now: u64) {
        self.last_now = self.last_now.max(now);
        if now >= self.bucket_start + self.rate_window_ns {
            self.flush_rates(now);
        }
    }

    /// Writes the current bucket's rates at its start, and a zero at the next bucket
    /// when the counters go quiet, so Perfetto's step lines drop back to 0. CPUs with
    /// nothing to say (zero now and before) write nothing, which keeps long runs small.
    fn flush_rates(&mut self, now: u64) {
        let win = self.rate_window_ns;
        let start = self.bucket_start;
        let per_sec = 1e9 / win as f64;
        let buckets = std::mem::take(&mut self.buckets);
        let mut shown = std::mem::take(&mut self.rate_shown);
        shown.resize(buckets.len(), false);
        let next = start + win;
        let quiet_after = now >= next + win;
        let pid = self.host;
        self.write(|w| {
            for (cpu, b) in buckets.iter().enumerate() {
                let busy = b.notifications > 0 || b.handlers > 0;
                if !busy && !shown[cpu] {
                    continue;
                }
                let name = format!("CPU {cpu} per second");
                let values = [
                    ("notifications", b.notifications as f64 * per_sec),
                    ("handlers", b.handlers as f64 * per_sec),
                ];
                w.counter(pid, &name, start, &values)?;
                shown[cpu] = busy;
                if busy && quiet_after {
                    let zero = [("notifications", 0.0), ("handlers", 0.0)];
                    w.counter(pid, &name, next, &zero)?;
                    shown[cpu] = false;
                }
            }
            Ok(())
        });
        self.buckets = vec![RateBucket::default(); buckets.len()];
        self.rate_shown = shown;
        // The new bucket starts on a multiple of the window at or before `now`.
        self.bucket_start = now - now % win;
    }
}

/// Thread ids start at 1: some trace readers treat tid 0 as the idle task.
fn cpu_tid(cpu: usize) -> u32 {
    u32::try_from(cpu).map_or(u32::MAX, |c| c.saturating_add(1))
}

fn vector_tid(v: usize) -> u32 {
    u32::try_from(v).map_or(u32::MAX, |c| c.saturating_add(1))
}

impl<W: Write> Observer for TraceObserver<W> {
    fn wants_counters(&self) -> bool {
        true
    }

    fn slice(&mut self, now: u64, cpu: usize, kind: SliceKind) {
        self.advance(now);
        self.close_slice(cpu, now);
        *self.track(cpu) = CpuTrack { kind, since: now };
    }

    fn message(&mut self, now: u64, vector: usize) {
        self.advance(now);
        self.see_vector(vector);
        let pid = self.devices;
        self.write(|w| {
            w.instant(
                pid,
                vector_tid(vector),
                "MSI",
                "msi",
                now,
                Scope::Thread,
                &[],
            )
        });
    }

    fn notification(&mut self, now: u64, cpu: usize, pmn: bool) {
        self.advance(now);
        self.track(cpu);
        self.buckets[cpu].notifications += 1;
        // arch/x86/kernel/irq.c: the PMN row counts posted MSI notifications.
        let name = if pmn { "PMN" } else { "notification" };
        let pid = self.host;
        self.write(|w| {
            w.instant(
                pid,
                cpu_tid(cpu),
                name,
                "notification",
                now,
                Scope::Thread,
                &[("posted", Arg::Bool(pmn))],
            )
        });
    }

    fn handler(&mut self, now: u64, cpu: usize, vector: usize, cqes: u32) {
        self.advance(now);
        self.track(cpu);
        self.buckets[cpu].handlers += 1;
        self.see_vector(vector);
        let cpu_arg = u64::try_from(cpu).unwrap_or(u64::MAX);
        let pid = self.devices;
        self.write(|w| {
            w.instant(
                pid,
                vector_tid(vector),
                "handler",
                "handler",
                now,
                Scope::Thread,
                &[("cpu", Arg::U64(cpu_arg)), ("cqes", Arg::U64(cqes.into()))],
            )
        });
    }

    fn counter(&mut self, now: u64, name: &str, index: usize, value: f64) {
        self.advance(now);
        let key = index.to_string();
        let pid = self.host;
        self.write(|w| w.counter(pid, name, now, &[(key.as_str(), value)]));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use irqlab_report::{Engine, VectorReport};
    use serde_json::Value;

    fn report() -> RunReport {
        RunReport {
            engine: Engine::Simulated,
            platform: "test".into(),
            policy: vec![("delivery".into(), "posted".into())],
            seed: 1,
            duration_ns: 0,
            end_ns: 0,
            global_options: vec![],
            jobs: vec![],
            disks: vec![],
            cpus: vec![],
            vectors: vec![VectorReport {
                name: "nvme0q1".into(),
                ..VectorReport::default()
            }],
            measured: None,
            extra: vec![],
            notes: vec![],
        }
    }

    fn events(obs: TraceObserver<Vec<u8>>) -> Vec<Value> {
        let bytes = obs.finish(&report()).unwrap();
        let v: Value = serde_json::from_slice(&bytes).expect("trace is JSON");
        v["traceEvents"].as_array().expect("traceEvents").clone()
    }

    fn feed(obs: &mut TraceObserver<Vec<u8>>) {
        obs.slice(1_000, 0, SliceKind::Usr);
        obs.message(1_500, 0);
        obs.notification(2_000, 0, true);
        obs.slice(2_100, 0, SliceKind::HardIrq);
        obs.handler(2_600, 0, 0, 4);
        obs.slice(2_900, 0, SliceKind::SoftIrq);
        obs.slice(3_200, 0, SliceKind::Usr);
        obs.counter(3_300, "coalesce_usec", 0, 8.0);
        obs.slice(250_000, 1, SliceKind::Sys);
        obs.slice(260_000, 1, SliceKind::Idle);
    }

    #[test]
    fn every_event_has_what_perfetto_needs() {
        let mut obs = TraceObserver::new(Vec::new(), None).unwrap();
        feed(&mut obs);
        assert!(obs.events_written() > 5);
        let evs = events(obs);
        assert!(!evs.is_empty());
        for e in &evs {
            let ph = e["ph"].as_str().expect("ph");
            assert!(e["pid"].is_u64(), "{e}");
            match ph {
                "M" => assert!(e["args"]["name"].is_string(), "{e}"),
                "X" => {
                    assert!(e["ts"].is_number() && e["dur"].is_number(), "{e}");
                    assert!(e["tid"].is_u64(), "{e}");
                }
                "i" => assert!(e["ts"].is_number() && e["tid"].is_u64(), "{e}"),
                "C" => assert!(e["ts"].is_number() && e["args"].is_object(), "{e}"),
                other => panic!("unexpected phase {other}: {e}"),
            }
        }
    }

    #[test]
    fn slices_follow_cpu_state_and_do_not_overlap() {
        let mut obs = TraceObserver::new(Vec::new(), None).unwrap();
        feed(&mut obs);
        let evs = events(obs);
        let xs: Vec<(&str, f64, f64, u64)> = evs
            .iter()
            .filter(|e| e["ph"] == "X")
            .map(|e| {
                (
                    e["name"].as_str().unwrap(),
                    e["ts"].as_f64().unwrap(),
                    e["dur"].as_f64().unwrap(),
                    e["tid"].as_u64().unwrap(),
                )
            })
            .collect();
        let cpu0: Vec<_> = xs.iter().filter(|x| x.3 == 1).collect();
        let names: Vec<&str> = cpu0.iter().map(|x| x.0).collect();
        // The last usr slice is closed at the last event seen (260 µs).
        assert_eq!(names, ["usr", "hardirq", "softirq", "usr"]);
        assert_eq!((cpu0[1].1, cpu0[1].2), (2.1, 0.8));
        for pair in cpu0.windows(2) {
            assert!(
                pair[0].1 + pair[0].2 <= pair[1].1 + 1e-9,
                "overlap {pair:?}"
            );
        }
        let cpu1: Vec<_> = xs.iter().filter(|x| x.3 == 2).collect();
        assert_eq!(cpu1.len(), 1, "idle is not drawn");
        assert_eq!((cpu1[0].0, cpu1[0].2), ("sys", 10.0));
    }

    #[test]
    fn tracks_are_named_and_notifications_marked() {
        let mut obs = TraceObserver::new(Vec::new(), None).unwrap();
        feed(&mut obs);
        let evs = events(obs);
        let names: Vec<String> = evs
            .iter()
            .filter(|e| e["ph"] == "M")
            .map(|e| e["args"]["name"].as_str().unwrap().to_string())
            .collect();
        for want in ["CPU 0", "CPU 1", "nvme0q1", "devices"] {
            assert!(
                names.iter().any(|n| n == want),
                "no track {want}: {names:?}"
            );
        }
        assert!(names.iter().any(|n| n.contains("delivery=posted")));
        let pmn = evs.iter().filter(|e| e["name"] == "PMN").count();
        assert_eq!(pmn, 1);
        let msi = evs.iter().filter(|e| e["name"] == "MSI").count();
        assert_eq!(msi, 1);
        let coalesce = evs
            .iter()
            .find(|e| e["ph"] == "C" && e["name"] == "coalesce_usec")
            .expect("counter passed through");
        assert_eq!(coalesce["args"]["0"], 8.0);
    }

    #[test]
    fn rate_counters_count_per_bucket() {
        let mut obs = TraceObserver::new(Vec::new(), None)
            .unwrap()
            .with_rate_window(100_000);
        for i in 0..5 {
            obs.notification(10_000 + i * 1_000, 0, false);
        }
        obs.slice(350_000, 0, SliceKind::Usr);
        let evs = events(obs);
        let rates: Vec<(f64, f64)> = evs
            .iter()
            .filter(|e| e["ph"] == "C" && e["name"] == "CPU 0 per second")
            .map(|e| {
                (
                    e["ts"].as_f64().unwrap(),
                    e["args"]["notifications"].as_f64().unwrap(),
                )
            })
            .collect();
        // 5 in the first 100 µs bucket = 50k/s, then back to 0 at 100 µs.
        assert_eq!(rates[0], (0.0, 50_000.0));
        assert_eq!(rates[1], (100.0, 0.0));
    }

    #[test]
    fn window_keeps_only_events_inside_it() {
        let mut obs = TraceObserver::new(Vec::new(), Some(2_000..3_000)).unwrap();
        feed(&mut obs);
        let evs = events(obs);
        for e in evs.iter().filter(|e| e["ph"] != "M") {
            let ts = e["ts"].as_f64().unwrap();
            let end = ts + e["dur"].as_f64().unwrap_or(0.0);
            assert!(
                (2.0..=3.0).contains(&ts) && end <= 3.0,
                "outside window: {e}"
            );
        }
        assert!(evs.iter().any(|e| e["name"] == "hardirq"));
        assert!(
            !evs.iter().any(|e| e["name"] == "MSI"),
            "the MSI at 1.5 µs is out"
        );
    }

    #[test]
    fn pid_base_moves_both_processes() {
        let mut obs = TraceObserver::new(Vec::new(), None)
            .unwrap()
            .with_pid_base(10);
        feed(&mut obs);
        let evs = events(obs);
        let pids: std::collections::BTreeSet<u64> =
            evs.iter().map(|e| e["pid"].as_u64().unwrap()).collect();
        assert_eq!(pids.into_iter().collect::<Vec<_>>(), [11, 12]);
    }

    #[test]
    fn only_tracks_with_events_are_named() {
        let mut obs = TraceObserver::new(Vec::new(), None).unwrap();
        obs.message(10, 3);
        let mut r = report();
        r.vectors = (0..5)
            .map(|i| VectorReport {
                name: format!("nvme0q{}", i + 1),
                ..VectorReport::default()
            })
            .collect();
        let bytes = obs.finish(&r).unwrap();
        let text = String::from_utf8(bytes).unwrap();
        assert!(text.contains("nvme0q4"), "{text}");
        assert!(!text.contains("nvme0q1"), "{text}");
    }

    #[test]
    fn the_size_cap_ends_a_valid_trace() {
        let mut obs = TraceObserver::new(Vec::new(), None)
            .unwrap()
            .with_max_bytes(2_000);
        feed(&mut obs);
        for i in 0..200 {
            obs.message(10_000 + i, 0);
        }
        let (dropped, at) = obs.dropped();
        assert!(dropped > 0 && at.is_some(), "{dropped}");
        let bytes = obs.finish(&report()).unwrap();
        let v: Value = serde_json::from_slice(&bytes).expect("the capped trace is valid JSON");
        assert!(bytes.len() < 4_000, "{}", bytes.len());
        assert!(!v["traceEvents"].as_array().unwrap().is_empty());
    }

    #[test]
    fn window_parses_units() {
        assert_eq!(parse_window("0..2ms"), Ok((0, 2_000_000)));
        assert_eq!(parse_window("100us..300us"), Ok((100_000, 300_000)));
        assert!(parse_window("5ms..1ms").is_err());
        assert!(parse_window("abc").is_err());
    }
}
