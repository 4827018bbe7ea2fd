//! `irqlab hostbench`: what the CPU side of the model costs on this host, measured with
//! pinned threads: a null system call, a wake-up with a context switch on one CPU, a
//! wake-up across CPUs (hot, and of an idle CPU, with the waker's own share), and how
//! late a short timer sleep wakes. Each is reported as p10 / median / p90 over fixed
//! numbers of trials or events, so the method is the same on every run.

mod pin;
mod stats;
mod syscall;
mod timer;
mod wake;

pub use stats::Measure;

use crate::error::CaptureError;
use crate::probe::Probe;
use serde::{Deserialize, Serialize};
use std::time::Duration;

pub const SCHEMA: &str = "irqlab-hostbench/1";

/// How much to measure; fixed counts, so two runs measure the same way.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BenchOptions {
    /// Trials of the per-trial measures (syscall, ping-pong).
    pub trials: usize,
    pub syscalls_per_trial: u32,
    pub round_trips_per_trial: u32,
    /// One-way idle wake-ups and timer sleeps measured.
    pub events: usize,
    /// How long the reader's CPU is left idle before each one-way wake, us.
    pub idle_gap_us: u64,
    /// The timer sleep, us.
    pub sleep_us: u64,
}

impl BenchOptions {
    /// About two seconds on a small VM.
    pub fn standard() -> BenchOptions {
        BenchOptions {
            trials: 21,
            syscalls_per_trial: 100_000,
            round_trips_per_trial: 2_000,
            events: 500,
            idle_gap_us: 200,
            sleep_us: 50,
        }
    }

    /// A fraction of a second, noisier.
    pub fn quick() -> BenchOptions {
        BenchOptions {
            trials: 9,
            syscalls_per_trial: 20_000,
            round_trips_per_trial: 500,
            events: 100,
            ..BenchOptions::standard()
        }
    }
}

/// The machine a benchmark ran on.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct BenchHost {
    pub hostname: Option<String>,
    pub vendor: Option<String>,
    pub model_name: Option<String>,
    pub mhz: Option<f64>,
    pub max_mhz: Option<f64>,
    pub cpus: usize,
    pub kernel: Option<String>,
    pub virtualized: bool,
    pub hypervisor: Option<String>,
    /// /proc/loadavg before and after: other work on the CPUs inflates every figure.
    #[serde(default)]
    pub loadavg: Vec<String>,
}

/// bench.json.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct BenchReport {
    pub schema: String,
    pub tool: String,
    pub date: String,
    pub host: BenchHost,
    /// The CPUs the threads were pinned to: the first runs the waker, the second the
    /// woken thread (absent on a one-CPU host).
    pub cpus_used: Vec<usize>,
    pub options: BenchOptions,
    pub results: Vec<Measure>,
    #[serde(default)]
    pub notes: Vec<String>,
}

impl BenchReport {
    pub fn get(&self, key: &str) -> Option<&Measure> {
        self.results.iter().find(|m| m.key == key)
    }
}

fn host(load_before: Option<String>) -> BenchHost {
    let p = Probe::live();
    let t = crate::topology::read(&p);
    BenchHost {
        hostname: p.value("/proc/sys/kernel/hostname"),
        vendor: t.vendor,
        model_name: t.model_name,
        mhz: t.mhz,
        max_mhz: t.max_mhz,
        cpus: t.online.len(),
        kernel: p.value("/proc/sys/kernel/osrelease"),
        virtualized: t.virtualized,
        hypervisor: t.hypervisor,
        loadavg: load_before
            .into_iter()
            .chain(p.value("/proc/loadavg"))
            .collect(),
    }
}

/// The 1-minute load average of a /proc/loadavg line.
fn load1(line: &str) -> f64 {
    line.split_whitespace()
        .next()
        .and_then(|w| w.parse().ok())
        .unwrap_or(0.0)
}

fn measures(
    o: &BenchOptions,
    a: usize,
    b: Option<usize>,
    progress: &dyn Fn(&str),
) -> Result<(Vec<Measure>, Vec<String>), CaptureError> {
    let mut out = Vec::new();
    let mut notes = Vec::new();
    let mut push = |m: Option<Measure>| out.extend(m);
    pin::pin(a)?;
    progress("null system call");
    push(stats::measure(
        "syscall",
        "getppid(): kernel entry and exit, per call (per-trial mean)",
        syscall::null_syscall(o.trials, o.syscalls_per_trial),
    ));
    progress("wake-up and switch on one CPU");
    push(stats::measure(
        "switch_same_cpu",
        "eventfd ping-pong on one CPU, round trip / 2: a wake-up and a context switch (per-trial mean)",
        wake::ping_pong(a, a, o.trials, o.round_trips_per_trial)?,
    ));
    match b {
        Some(b) => {
            progress("wake-up across CPUs");
            push(stats::measure(
                "wake_cross_cpu",
                "eventfd ping-pong across two CPUs, round trip / 2: waking a thread that just blocked on the other CPU (per-trial mean)",
                wake::ping_pong(a, b, o.trials, o.round_trips_per_trial)?,
            ));
            progress("wake-up of an idle CPU");
            let (lat, waker) =
                wake::idle_wake(a, b, o.events, Duration::from_micros(o.idle_gap_us))?;
            push(stats::measure(
                "wake_idle_cpu",
                &format!(
                    "eventfd write to the woken thread running, its CPU idle for {} us before (one-way, per event)",
                    o.idle_gap_us
                ),
                lat,
            ));
            push(stats::measure(
                "waker_cost",
                "time inside that eventfd write: what the waker pays, the wake-up IPI included (per event)",
                waker,
            ));
        }
        None => notes.push("one CPU only: the cross-CPU wake-ups are not measured".into()),
    }
    progress("timer wake-up");
    pin::pin(b.unwrap_or(a))?;
    push(stats::measure(
        "timer_overshoot",
        &format!(
            "clock_nanosleep({} us) woke late by, timer slack 1 ns, on an otherwise idle CPU (per event)",
            o.sleep_us
        ),
        timer::overshoot(o.events, o.sleep_us * 1000),
    ));
    Ok((out, notes))
}

/// Runs the benchmark on threads of its own (the caller's affinity is left alone);
/// `progress` hears each step's name.
pub fn run(
    o: &BenchOptions,
    tool: &str,
    progress: &(dyn Fn(&str) + Sync),
) -> Result<BenchReport, CaptureError> {
    let (a, b) = pin::choose();
    let load_before = Probe::live().value("/proc/loadavg");
    let (results, mut notes) = std::thread::scope(|s| {
        std::thread::Builder::new()
            .name("hostbench".into())
            .spawn_scoped(s, || measures(o, a, b, progress))
            .map_err(|e| CaptureError::Bench(format!("cannot start a thread: {e}")))?
            .join()
            .map_err(|_| CaptureError::Bench("the benchmark thread panicked".into()))?
    })?;
    let host = host(load_before);
    let busiest = host.loadavg.iter().map(|l| load1(l)).fold(0.0, f64::max);
    if busiest > 0.5 * host.cpus as f64 {
        notes.push(format!(
            "the machine was busy (1-minute load up to {busiest:.2} on {} CPUs): other work shared the pinned CPUs, and the medians include it; p10 is nearer the uncontended cost",
            host.cpus
        ));
    }
    if host.virtualized {
        notes.push(format!(
            "a virtual machine ({}): wake-ups of an idle vCPU and timer interrupts go through the hypervisor",
            host.hypervisor.as_deref().unwrap_or("hypervisor unknown")
        ));
    }
    Ok(BenchReport {
        schema: SCHEMA.into(),
        tool: tool.into(),
        date: humantime::format_rfc3339_seconds(std::time::SystemTime::now()).to_string(),
        host,
        cpus_used: std::iter::once(a).chain(b).collect(),
        options: o.clone(),
        results,
        notes,
    })
}

/// The report as a table.
pub fn render(r: &BenchReport) -> String {
    let h = &r.host;
    let mut s = format!(
        "host: {} ({} CPUs, {} MHz), kernel {}, {}\n",
        h.model_name.as_deref().unwrap_or("unknown CPU"),
        h.cpus,
        h.mhz.map_or("?".into(), |m| format!("{m:.0}")),
        h.kernel.as_deref().unwrap_or("?"),
        if h.virtualized {
            format!(
                "VM ({})",
                h.hypervisor.as_deref().unwrap_or("hypervisor unknown")
            )
        } else {
            "bare metal".into()
        },
    );
    let cpus: Vec<String> = r.cpus_used.iter().map(usize::to_string).collect();
    let loads: Vec<String> = h
        .loadavg
        .iter()
        .map(|l| format!("{:.2}", load1(l)))
        .collect();
    s += &format!(
        "threads pinned to CPU {}; 1-minute load before/after: {}\n",
        cpus.join(" and "),
        if loads.is_empty() {
            "not recorded".into()
        } else {
            loads.join(" / ")
        }
    );
    s += &format!(
        "{:<18} {:>10} {:>10} {:>10} {:>8}  what\n",
        "cost", "p10 ns", "median ns", "p90 ns", "samples"
    );
    for m in &r.results {
        s += &format!(
            "{:<18} {:>10.0} {:>10.0} {:>10.0} {:>8}  {}\n",
            m.key, m.p10_ns, m.median_ns, m.p90_ns, m.samples, m.what
        );
    }
    for n in &r.notes {
        s += &format!("note: {n}\n");
    }
    s
}
