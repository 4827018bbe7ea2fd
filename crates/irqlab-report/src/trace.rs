//! Chrome trace-event JSON, streamed: Perfetto and chrome://tracing open it.
//!
//! `ts` and `dur` are microseconds written with three decimals (`12.345` is 12 345 ns),
//! which Perfetto rounds back to the exact ns. Events go straight to the writer (give it
//! a `BufWriter`); nothing is held in memory. An optional window drops events outside
//! `start..end` ns and clips slices that cross its edges.

use std::io::{self, Write};
use std::ops::Range;

/// A value in an event's `args`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Arg<'a> {
    U64(u64),
    I64(i64),
    /// Non-finite values are written as 0 (JSON has no NaN).
    F64(f64),
    Str(&'a str),
    Bool(bool),
}

/// An instant event's scope (`s`): its thread, its process, or the whole trace.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Scope {
    Thread,
    Process,
    Global,
}

/// Writes `{"traceEvents":[...],"displayTimeUnit":"ns"}` one event at a time.
///
/// Each event is formatted into a reused buffer and handed to the writer in one call.
pub struct TraceWriter<W: Write> {
    out: W,
    buf: Vec<u8>,
    first: bool,
    window: Option<Range<u64>>,
    written: u64,
    /// Bytes of events written, and the most the file may hold (`--trace-max-size`):
    /// past it events are left out, counted, and the JSON still ends properly.
    bytes: u64,
    max_bytes: u64,
    dropped: u64,
    /// The timestamp of the first event left out, ns.
    full_at: Option<u64>,
    /// The timestamp of the event being written.
    ts: Option<u64>,
}

impl<W: Write> TraceWriter<W> {
    /// Starts a trace that keeps every event.
    pub fn new(out: W) -> io::Result<Self> {
        Self::start(out, None)
    }

    /// Starts a trace that keeps only what happens in `window` (ns).
    pub fn with_window(out: W, window: Range<u64>) -> io::Result<Self> {
        Self::start(out, Some(window))
    }

    fn start(mut out: W, window: Option<Range<u64>>) -> io::Result<Self> {
        out.write_all(b"{\"traceEvents\":[\n")?;
        Ok(TraceWriter {
            out,
            buf: Vec::with_capacity(256),
            first: true,
            window,
            written: 0,
            bytes: 0,
            max_bytes: u64::MAX,
            dropped: 0,
            full_at: None,
            ts: None,
        })
    }

    /// Leaves out every event that would take the file past `max_bytes` (track names
    /// at the end, a few bytes each, are always written, so the trace stays usable).
    pub fn with_max_bytes(mut self, max_bytes: u64) -> Self {
        self.max_bytes = max_bytes;
        self
    }

    /// Events left out by the size cap, and when the first of them happened (ns).
    pub fn dropped(&self) -> (u64, Option<u64>) {
        (self.dropped, self.full_at)
    }

    /// Events written so far (metadata included, filtered events not).
    pub fn events_written(&self) -> u64 {
        self.written
    }

    /// Names a process track (ph M, process_name).
    pub fn process_name(&mut self, pid: u32, name: &str) -> io::Result<()> {
        self.begin();
        self.buf
            .extend_from_slice(b"{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":");
        push_u64(&mut self.buf, pid.into());
        self.buf.extend_from_slice(b",\"args\":{\"name\":");
        push_str(&mut self.buf, name);
        self.buf.extend_from_slice(b"}}");
        self.flush_event()
    }

    /// Names a thread track (ph M, thread_name).
    pub fn thread_name(&mut self, pid: u32, tid: u32, name: &str) -> io::Result<()> {
        self.begin();
        self.buf
            .extend_from_slice(b"{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":");
        push_u64(&mut self.buf, pid.into());
        self.buf.extend_from_slice(b",\"tid\":");
        push_u64(&mut self.buf, tid.into());
        self.buf.extend_from_slice(b",\"args\":{\"name\":");
        push_str(&mut self.buf, name);
        self.buf.extend_from_slice(b"}}");
        self.flush_event()
    }

    /// A slice from `start_ns` lasting `dur_ns` (ph X); clipped to the window.
    #[allow(clippy::too_many_arguments)]
    pub fn complete(
        &mut self,
        pid: u32,
        tid: u32,
        name: &str,
        cat: &str,
        start_ns: u64,
        dur_ns: u64,
        args: &[(&str, Arg)],
    ) -> io::Result<()> {
        let end_ns = start_ns.saturating_add(dur_ns);
        let (start, end) = match &self.window {
            None => (start_ns, end_ns),
            Some(w) => {
                let inside = if dur_ns == 0 {
                    w.contains(&start_ns)
                } else {
                    start_ns < w.end && end_ns > w.start
                };
                if !inside {
                    return Ok(());
                }
                (start_ns.max(w.start), end_ns.min(w.end))
            }
        };
        self.head(name, cat, b"X", start);
        self.buf.extend_from_slice(b",\"dur\":");
        push_micros(&mut self.buf, end - start);
        self.ids(pid, tid);
        self.args(args);
        self.buf.push(b'}');
        self.flush_event()
    }

    /// A point in time (ph i) with a scope.
    #[allow(clippy::too_many_arguments)]
    pub fn instant(
        &mut self,
        pid: u32,
        tid: u32,
        name: &str,
        cat: &str,
        ts_ns: u64,
        scope: Scope,
        args: &[(&str, Arg)],
    ) -> io::Result<()> {
        if !self.keeps(ts_ns) {
            return Ok(());
        }
        self.head(name, cat, b"i", ts_ns);
        self.buf.extend_from_slice(match scope {
            Scope::Thread => b",\"s\":\"t\"",
            Scope::Process => b",\"s\":\"p\"",
            Scope::Global => b",\"s\":\"g\"",
        });
        self.ids(pid, tid);
        self.args(args);
        self.buf.push(b'}');
        self.flush_event()
    }

    /// Counter values at `ts_ns` (ph C); Perfetto makes one track per key.
    pub fn counter(
        &mut self,
        pid: u32,
        name: &str,
        ts_ns: u64,
        values: &[(&str, f64)],
    ) -> io::Result<()> {
        if !self.keeps(ts_ns) {
            return Ok(());
        }
        self.head(name, "counter", b"C", ts_ns);
        self.buf.extend_from_slice(b",\"pid\":");
        push_u64(&mut self.buf, pid.into());
        self.buf.extend_from_slice(b",\"args\":{");
        for (i, (k, v)) in values.iter().enumerate() {
            if i > 0 {
                self.buf.push(b',');
            }
            push_str(&mut self.buf, k);
            self.buf.push(b':');
            push_f64(&mut self.buf, *v);
        }
        self.buf.extend_from_slice(b"}}");
        self.flush_event()
    }

    /// Closes the JSON and hands back the writer, flushed.
    pub fn finish(mut self) -> io::Result<W> {
        self.out.write_all(b"\n],\"displayTimeUnit\":\"ns\"}\n")?;
        self.out.flush()?;
        Ok(self.out)
    }

    fn keeps(&self, ts_ns: u64) -> bool {
        self.window.as_ref().is_none_or(|w| w.contains(&ts_ns))
    }

    fn begin(&mut self) {
        self.buf.clear();
        self.ts = None;
        if !self.first {
            self.buf.extend_from_slice(b",\n");
        }
    }

    fn flush_event(&mut self) -> io::Result<()> {
        let ts = self.ts;
        // Metadata (no timestamp) always goes in: it names the tracks of what was kept.
        if ts.is_some() && self.bytes.saturating_add(self.buf.len() as u64) > self.max_bytes {
            self.dropped += 1;
            self.full_at = self.full_at.or(ts);
            return Ok(());
        }
        self.out.write_all(&self.buf)?;
        self.bytes += self.buf.len() as u64;
        self.first = false;
        self.written += 1;
        Ok(())
    }

    fn head(&mut self, name: &str, cat: &str, ph: &[u8], ts_ns: u64) {
        self.begin();
        self.ts = Some(ts_ns);
        self.buf.extend_from_slice(b"{\"name\":");
        push_str(&mut self.buf, name);
        self.buf.extend_from_slice(b",\"cat\":");
        push_str(&mut self.buf, cat);
        self.buf.extend_from_slice(b",\"ph\":\"");
        self.buf.extend_from_slice(ph);
        self.buf.extend_from_slice(b"\",\"ts\":");
        push_micros(&mut self.buf, ts_ns);
    }

    fn ids(&mut self, pid: u32, tid: u32) {
        self.buf.extend_from_slice(b",\"pid\":");
        push_u64(&mut self.buf, pid.into());
        self.buf.extend_from_slice(b",\"tid\":");
        push_u64(&mut self.buf, tid.into());
    }

    fn args(&mut self, args: &[(&str, Arg)]) {
        if args.is_empty() {
            return;
        }
        self.buf.extend_from_slice(b",\"args\":{");
        for (i, (k, v)) in args.iter().enumerate() {
            if i > 0 {
                self.buf.push(b',');
            }
            push_str(&mut self.buf, k);
            self.buf.push(b':');
            match *v {
                Arg::U64(n) => push_u64(&mut self.buf, n),
                Arg::I64(n) => {
                    if n < 0 {
                        self.buf.push(b'-');
                    }
                    push_u64(&mut self.buf, n.unsigned_abs());
                }
                Arg::F64(x) => push_f64(&mut self.buf, x),
                Arg::Str(s) => push_str(&mut self.buf, s),
                Arg::Bool(b) => self
                    .buf
                    .extend_from_slice(if b { b"true" } else { b"false" }),
            }
        }
        self.buf.push(b'}');
    }
}

/// Why a `START..END` time window was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WindowError {
    /// Not START..END with whole numbers and a unit.
    NotAWindow(String),
    /// END is not after START.
    Empty(String),
}

impl std::fmt::Display for WindowError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WindowError::NotAWindow(s) => write!(
                f,
                "'{s}' is not a time window; expected START..END with whole numbers and a unit of ns, us, ms or s (e.g. 1ms..2ms, or 500us.. for the rest of the run)"
            ),
            WindowError::Empty(s) => write!(f, "'{s}': the window's END must be after its START"),
        }
    }
}

impl std::error::Error for WindowError {}

/// Parses a window `START..END` in ns; either side may be left out, and each may carry
/// an `ns`, `us`, `ms` or `s` suffix (`1ms..2ms`).
pub fn parse_window(s: &str) -> Result<Range<u64>, WindowError> {
    let bad = || WindowError::NotAWindow(s.to_string());
    let (a, b) = s.split_once("..").ok_or_else(bad)?;
    let side = |t: &str, default: u64| -> Result<u64, WindowError> {
        let t = t.trim();
        if t.is_empty() {
            return Ok(default);
        }
        let end = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
        let n: u64 = t[..end].parse().map_err(|_| bad())?;
        let mult = match &t[end..] {
            "" | "ns" => 1,
            "us" => 1_000,
            "ms" => 1_000_000,
            "s" => 1_000_000_000,
            _ => return Err(bad()),
        };
        n.checked_mul(mult).ok_or_else(bad)
    };
    let (start, end) = (side(a, 0)?, side(b, u64::MAX)?);
    if start >= end {
        return Err(WindowError::Empty(s.to_string()));
    }
    Ok(start..end)
}

/// ns as µs with exactly three decimals: integer arithmetic, so output is deterministic.
fn push_micros(buf: &mut Vec<u8>, ns: u64) {
    push_u64(buf, ns / 1_000);
    let frac = ns % 1_000;
    buf.extend_from_slice(&[
        b'.',
        b'0' + (frac / 100) as u8,
        b'0' + (frac / 10 % 10) as u8,
        b'0' + (frac % 10) as u8,
    ]);
}

fn push_u64(buf: &mut Vec<u8>, mut n: u64) {
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    buf.extend_from_slice(&digits[i..]);
}

/// Rust's shortest round-trip float text; 0 for NaN and infinities.
fn push_f64(buf: &mut Vec<u8>, x: f64) {
    use std::io::Write as _;
    if x.is_finite() {
        let _ = write!(buf, "{x}");
    } else {
        buf.push(b'0');
    }
}

fn push_str(buf: &mut Vec<u8>, s: &str) {
    buf.push(b'"');
    let bytes = s.as_bytes();
    let mut from = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let esc: &[u8] = match b {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            b'\t' => b"\\t",
            0..=0x1f => b"",
            _ => continue,
        };
        buf.extend_from_slice(&bytes[from..i]);
        if esc.is_empty() {
            const HEX: &[u8; 16] = b"0123456789abcdef";
            buf.extend_from_slice(b"\\u00");
            buf.extend_from_slice(&[HEX[usize::from(b >> 4)], HEX[usize::from(b & 15)]]);
        } else {
            buf.extend_from_slice(esc);
        }
        from = i + 1;
    }
    buf.extend_from_slice(&bytes[from..]);
    buf.push(b'"');
}
