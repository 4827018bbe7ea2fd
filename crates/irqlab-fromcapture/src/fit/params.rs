//! Which costs the runs can pin, and where each starts (read off what the runs measured
//! against what the platform gives at the tables' values):
//! - the device's service time from the QD1 runs' latency;
//! - the interrupt and wake-up path from QD1 interrupt-driven against QD1 polled, or,
//!   without a polled run, the CPU path per I/O from the QD1 run's CPU time;
//! - the device's ceiling from the deep runs' IOPS;
//! - the IIO stack's part of a remapped MSI (its drain, IRTE lookup and trip to the
//!   socket's router, which the uncores/ table gives, fitted across machines), on a
//!   bare-metal host with interrupt remapping, from runs at millions of interrupts per
//!   second;
//! - the device's aggregation time from the deep runs' I/Os per interrupt (rule.rs).

use super::problem::{Param, Q};
use crate::doc::Doc;
use crate::runs::FitRun;
use irqlab_calib::Metric;

fn number_at(doc: &Doc, key: &str) -> Option<(f64, bool)> {
    match &doc.get(key)?.value {
        toml::Value::Integer(x) => Some((*x as f64, true)),
        toml::Value::Float(x) => Some((*x, false)),
        _ => None,
    }
}

fn param(doc: &Doc, keys: Vec<String>, lo: f64, hi: f64, what: &'static str) -> Option<Param> {
    let (v, integer) = number_at(doc, &keys[0])?;
    Some(Param {
        keys,
        lo,
        hi,
        integer,
        start: v.clamp(lo, hi),
        before: v,
        what,
        primary: Vec::new(),
        for_figures: Vec::new(),
        floor: None,
    })
}

/// `leaf` of each of the device groups `groups`.
fn devices(groups: &[usize], leaf: &str) -> Vec<String> {
    groups
        .iter()
        .map(|g| format!("devices.{g}.{leaf}"))
        .collect()
}

/// The measured figures among `metrics` of `runs`, as quantities.
fn qs(runs: &[&FitRun], metrics: &[Metric]) -> Vec<Q> {
    figs(runs, metrics)
        .into_iter()
        .map(|(r, m)| Q::M(r, m))
        .collect()
}

/// The measured figures among `metrics` of `runs`.
fn figs(runs: &[&FitRun], metrics: &[Metric]) -> Vec<(String, Metric)> {
    runs.iter()
        .flat_map(|r| {
            metrics
                .iter()
                .filter(|m| r.value(**m).is_some())
                .map(|m| (r.name.clone(), *m))
        })
        .collect()
}

/// The engine costs a QD1 run's CPU time pins: its engine's per-I/O submission work.
fn engine_key(r: &FitRun) -> String {
    let e = match r.engine {
        irqlab_fio::IoEngine::Libaio => "libaio",
        irqlab_fio::IoEngine::IoUring => "io_uring",
        // psync, POSIX aio's helper threads and the null engine take pvsync2's costs, as
        // does cpuio (it makes no I/O: no engine cost of its own to pin).
        irqlab_fio::IoEngine::Pvsync2
        | irqlab_fio::IoEngine::Psync
        | irqlab_fio::IoEngine::PosixAio
        | irqlab_fio::IoEngine::Null
        | irqlab_fio::IoEngine::CpuIo => "pvsync2",
    };
    format!("engine.{e}.submit_io_ns")
}

/// What the choice needs to know.
pub struct Inputs<'a> {
    pub doc: &'a Doc,
    /// The NVMe device groups, and the virtio-blk ones.
    pub nvme: &'a [usize],
    pub virtio: &'a [usize],
    /// Devices in all groups.
    pub disks: usize,
    pub runs: &'a [&'a FitRun],
    /// A run's figure at the tables' values.
    pub base: &'a dyn Fn(&FitRun, Metric) -> f64,
    /// A bare-metal host with interrupt remapping in use.
    pub remapping: bool,
    /// The device's aggregation time's start, when it aggregates.
    pub aggregation: Option<f64>,
}

/// The costs to fit, in the order they are solved; whether the CPU time is a target; and
/// the derived quantities their primaries need, with their measured values and scales.
pub fn choose(i: &Inputs<'_>) -> (Vec<Param>, bool, Vec<(Q, f64, f64)>) {
    let mut derived = Vec::new();
    let runs = i.runs;
    let irq_qd1 = runs
        .iter()
        .find(|r| r.outstanding() == 1 && !r.polled)
        .copied();
    let polled_qd1 = runs
        .iter()
        .find(|r| r.outstanding() == 1 && r.polled)
        .copied();
    let deep: Vec<&FitRun> = runs
        .iter()
        .filter(|r| r.outstanding() >= 8)
        .copied()
        .collect();
    let mut out = Vec::new();
    let mut cpu = false;
    if let Some(t0) = i.aggregation
        && let Some(mut p) = param(
            i.doc,
            devices(i.nvme, "coalesce_time_ns"),
            1000.0,
            2_000_000.0,
            "the device's own aggregation time (I/Os per interrupt)",
        )
    {
        let with_irq: Vec<&FitRun> = deep
            .iter()
            .filter(|r| r.value(Metric::IosPerInterrupt).is_some())
            .copied()
            .collect();
        p.start = t0;
        p.primary = qs(&with_irq, &[Metric::IosPerInterrupt]);
        p.for_figures = figs(&with_irq, &[Metric::IosPerInterrupt, Metric::ClatMeanUs]);
        out.push(p);
    }
    if let Some(r) = polled_qd1.or(irq_qd1)
        && !i.nvme.is_empty()
        && let Some(meas) = r.value(Metric::ClatMeanUs)
        && let Some(mut p) = param(
            i.doc,
            devices(i.nvme, "read_ns"),
            500.0,
            5_000_000.0,
            "the device's service time (QD1)",
        )
    {
        // An interrupt-driven QD1 completion also waits out the aggregation time.
        let waits = if r.polled {
            0.0
        } else {
            i.aggregation.unwrap_or(0.0)
        };
        p.start = (p.before + (meas - (i.base)(r, Metric::ClatMeanUs)) * 1000.0 - waits)
            .clamp(p.lo, p.hi);
        p.primary = qs(&[r], &[Metric::ClatMeanUs]);
        let qd1: Vec<&FitRun> = [irq_qd1, polled_qd1].into_iter().flatten().collect();
        p.for_figures = figs(&qd1, &[Metric::Iops, Metric::ClatMeanUs]);
        out.push(p);
    }
    match (irq_qd1, polled_qd1) {
        (Some(a), Some(b)) if !i.nvme.is_empty() => {
            if let (Some(ma), Some(mb)) = (a.value(Metric::ClatMeanUs), b.value(Metric::ClatMeanUs))
                && let Some(mut p) = param(
                    i.doc,
                    vec!["cpu.idle_exit_ns".into()],
                    10.0,
                    200_000.0,
                    "the interrupt and wake-up path (QD1 interrupt against polled)",
                )
            {
                let sim_gap = (i.base)(a, Metric::ClatMeanUs) - (i.base)(b, Metric::ClatMeanUs);
                p.start = (p.before + ((ma - mb) - sim_gap) * 1000.0).clamp(p.lo, p.hi);
                // The interrupt path is what the interrupt-driven run waits beyond the
                // polled one.
                if ma > mb {
                    p.primary = vec![Q::Gap(a.name.clone(), b.name.clone())];
                    derived.push((
                        Q::Gap(a.name.clone(), b.name.clone()),
                        ma - mb,
                        (ma - mb).max(0.1 * ma),
                    ));
                } else {
                    p.primary = qs(&[a], &[Metric::ClatMeanUs]);
                }
                p.for_figures = figs(&[a], &[Metric::Iops, Metric::ClatMeanUs]);
                out.push(p);
            }
        }
        (Some(r), _) | (None, Some(r)) => {
            if let Some(clat) = r.value(Metric::ClatMeanUs)
                && let Some(mut p) = param(
                    i.doc,
                    vec![engine_key(r)],
                    50.0,
                    200_000.0,
                    "the submission path per I/O (QD1: the time per I/O outside the completion latency)",
                )
            {
                // 1 / IOPS - clat at QD1: what the job spends per I/O outside its
                // completion latency (fio's clat is the whole call for sync engines).
                let outside = |iops: f64, clat_us: f64| 1e9 / iops.max(1.0) - clat_us * 1000.0;
                let meas = outside(r.value(Metric::Iops).unwrap_or(1.0), clat);
                let sim = outside((i.base)(r, Metric::Iops), (i.base)(r, Metric::ClatMeanUs));
                p.start = (p.before + meas - sim).clamp(p.lo, p.hi);
                if meas > 0.0 {
                    p.primary = vec![Q::Outside(r.name.clone())];
                    let per_io_us = 1e6 / r.value(Metric::Iops).unwrap_or(1.0).max(1.0);
                    derived.push((
                        Q::Outside(r.name.clone()),
                        meas / 1000.0,
                        (meas / 1000.0).max(0.1 * per_io_us),
                    ));
                } else {
                    p.primary = qs(&[r], &[Metric::Iops]);
                }
                p.for_figures = figs(&[r], &[Metric::Iops, Metric::ClatMeanUs]);
                out.push(p);
                cpu = true;
            }
        }
        (None, None) => {}
    }
    // A virtio-blk disk's VMM: its time per request from the deep runs (a serial host
    // completes one per service time), its wake-up from the QD1 round.
    if !i.virtio.is_empty() {
        let deepest: Vec<&FitRun> = deep
            .iter()
            .max_by_key(|r| r.outstanding())
            .copied()
            .into_iter()
            .collect();
        if let Some(r) = deepest.first()
            && let Some(iops) = r.value(Metric::Iops)
            && let Some(mut p) = param(
                i.doc,
                devices(i.virtio, "host.service_ns"),
                200.0,
                1_000_000.0,
                "the VMM's time per request (deep queues)",
            )
        {
            p.start = (1e9 / iops * i.virtio.len() as f64).clamp(p.lo, p.hi);
            p.primary = qs(&deepest, &[Metric::Iops]);
            p.for_figures = figs(&deep, &[Metric::Iops, Metric::ClatMeanUs]);
            out.push(p);
        }
        if let Some(r) = irq_qd1
            && let Some(meas) = r.value(Metric::ClatMeanUs)
            && let Some(mut p) = param(
                i.doc,
                devices(i.virtio, "host.wake_ns"),
                100.0,
                1_000_000.0,
                "the VMM thread's wake-up on a kick (the QD1 round)",
            )
        {
            p.start =
                (p.before + (meas - (i.base)(r, Metric::ClatMeanUs)) * 1000.0).clamp(p.lo, p.hi);
            p.primary = qs(&[r], &[Metric::ClatMeanUs]);
            p.for_figures = figs(&[r], &[Metric::Iops, Metric::ClatMeanUs]);
            out.push(p);
        }
    }
    if !deep.is_empty()
        && !i.nvme.is_empty()
        && let Some(mut p) = param(
            i.doc,
            devices(i.nvme, "max_iops"),
            1000.0,
            100_000_000.0,
            "the device's ceiling (deep queues)",
        )
    {
        // The deepest run reaches nearest the ceiling.
        let deepest = deep
            .iter()
            .max_by_key(|r| r.outstanding())
            .copied()
            .into_iter()
            .collect::<Vec<_>>();
        let most = deep
            .iter()
            .map(|r| r.value(Metric::Iops).unwrap_or(0.0))
            .fold(0.0, f64::max);
        p.start = (1.1 * most / i.disks.max(1) as f64).clamp(p.lo, p.hi);
        if let Some(r) = deep.iter().max_by(|a, b| {
            a.value(Metric::Iops)
                .unwrap_or(0.0)
                .total_cmp(&b.value(Metric::Iops).unwrap_or(0.0))
        }) {
            p.floor = Some((
                (most / i.disks.max(1) as f64).round(),
                format!(
                    "{} reached {most:.0} IOPS from {} disk(s)",
                    r.name,
                    i.disks.max(1)
                ),
            ));
        }
        p.primary = qs(&deepest, &[Metric::Iops]);
        p.for_figures = figs(&deep, &[Metric::Iops, Metric::ClatMeanUs]);
        out.push(p);
    }
    let busy: Vec<&FitRun> = runs
        .iter()
        .filter(|r| r.interrupts_per_s >= 1e6)
        .copied()
        .collect();
    if i.remapping
        && !busy.is_empty()
        && let Some(mut p) = param(
            i.doc,
            vec!["uncore.stack_rtt_ns".into()],
            1.0,
            1000.0,
            "the IIO stack's part of a remapped MSI (millions of interrupts per second)",
        )
    {
        p.primary = qs(&busy, &[Metric::Iops]);
        p.for_figures = figs(
            &busy,
            &[Metric::Iops, Metric::IosPerInterrupt, Metric::ClatMeanUs],
        );
        out.push(p);
    }
    (out, cpu, derived)
}
