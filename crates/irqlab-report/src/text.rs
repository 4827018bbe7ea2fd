//! fio's normal output (stat.c show_thread_status_normal, show_group_stats), followed by
//! what fio cannot show: where the interrupts went and what they cost.

use crate::fio_stats::{self, GroupDir, LAT_LABELS_M, LAT_LABELS_NU};
use crate::model::pct;
use crate::num2str::{Unit, num2str};
use crate::{DirReport, Engine, JobReport, Latency, RunReport};
use std::fmt::Write;

/// The note that names the signal that stopped a run (Ctrl-C when there is none).
pub const NOTE_STOPPED_BY: &str = "stopped_by";

/// fio's default `significant_figures`.
const SIG_FIGS: usize = 4;

/// The whole report. Deterministic for [`Engine::Simulated`]: no wall-clock time.
pub fn render(r: &RunReport) -> String {
    let mut out = String::new();
    header(&mut out, r);
    for job in &r.jobs {
        job_status(&mut out, r, job);
    }
    for gid in fio_stats::group_ids(&r.jobs) {
        group_status(&mut out, r, gid);
    }
    disk_stats(&mut out, r);
    irqlab_section(&mut out, r);
    out
}

/// diskutil.c show_disk_util and print_disk_util.
fn disk_stats(out: &mut String, r: &RunReport) {
    if r.disks.is_empty() {
        return;
    }
    let _ = writeln!(out, "Disk stats (read/write):");
    for d in &r.disks {
        let _ = writeln!(
            out,
            "  {}: ios={}/{}, sectors={}/{}, merge=0/0, ticks={}/{}, in_queue={}, util={:3.2}%",
            d.name,
            d.ios[0],
            d.ios[1],
            d.sectors[0],
            d.sectors[1],
            d.ticks_ms[0],
            d.ticks_ms[1],
            d.in_queue_ms,
            d.util_pct()
        );
    }
    out.push('\n');
}

fn engine_line(e: Engine) -> &'static str {
    match e {
        Engine::Simulated => "simulated",
        Engine::RealThreads => "real threads",
    }
}

fn header(out: &mut String, r: &RunReport) {
    let _ = writeln!(
        out,
        "irqlab-{}: engine={}, platform={}, seed={}",
        env!("CARGO_PKG_VERSION"),
        engine_line(r.engine),
        r.platform,
        r.seed
    );
    let policy: Vec<String> = r.policy.iter().map(|(k, v)| format!("{k}={v}")).collect();
    let _ = writeln!(out, "policy: {}", policy.join(", "));
    for (kind, text) in r.notes.iter().filter(|(k, _)| k != NOTE_STOPPED_BY) {
        let _ = writeln!(out, "{kind}: {text}");
    }
    // fio prints its statistics so far after SIGINT; so does irqlab, marked, whichever
    // signal stopped it.
    if r.flag(crate::EXTRA_INTERRUPTED) {
        let by = r
            .notes
            .iter()
            .find(|(k, _)| k == NOTE_STOPPED_BY)
            .map_or("Ctrl-C", |(_, t)| t.as_str());
        let _ = writeln!(
            out,
            "interrupted: the run was stopped ({by}); the figures cover the run up to then"
        );
    }
    if r.flag(crate::EXTRA_CUT_SHORT) {
        let _ = writeln!(
            out,
            "cut short: the run reached its time limit with work still going; the figures cover the run up to then"
        );
    }
    for w in crate::sanity::warnings(r) {
        let _ = writeln!(out, "warning: {w}");
    }
}

fn job_status(out: &mut String, r: &RunReport, job: &JobReport) {
    // stat.c: "%s: (groupid=%d, jobs=%d): err=%2d: pid=%d: <ctime>"; the engine stands in
    // for the time so simulated output is the same on every run.
    match &job.error {
        None => {
            let _ = writeln!(
                out,
                "{}: (groupid={}, jobs={}): err= 0: pid=0: {}",
                job.name,
                job.groupid,
                job.members.max(1),
                engine_line(r.engine)
            );
        }
        Some(e) => {
            let _ = writeln!(
                out,
                "{}: (groupid={}, jobs={}): err={:2} ({}): pid=0: {}",
                job.name,
                job.groupid,
                job.members.max(1),
                e.code,
                e.verror(),
                engine_line(r.engine)
            );
            let _ = writeln!(out, "  {}", e.msg);
        }
    }
    if let Some(desc) = &job.description {
        let _ = writeln!(out, "  Description  : [{desc}]");
    }
    let agg = group_agg(r, job.groupid);
    for (name, d, agg) in [("read", &job.read, agg.0), ("write", &job.write, agg.1)] {
        if d.io_bytes > 0 {
            ddir_status(out, name, d, job.clat_percentiles, agg);
        }
    }
    if job.trim.total_ios > 0 {
        ddir_status(out, "trim", &job.trim, job.clat_percentiles, 0);
    }
    lat_distribution(out, job);
    let _ = writeln!(
        out,
        "  cpu          : usr={:3.2}%, sys={:3.2}%, ctx={}, majf=0, minf=0",
        job.usr_cpu_pct(),
        job.sys_cpu_pct(),
        job.ctx
    );
    let d = fio_stats::depth_dist(&job.iodepth_level, job.iodepth_level.iter().sum());
    let _ = writeln!(
        out,
        "  IO depths    : 1={:3.1}%, 2={:3.1}%, 4={:3.1}%, 8={:3.1}%, 16={:3.1}%, 32={:3.1}%, >=64={:3.1}%",
        d[0], d[1], d[2], d[3], d[4], d[5], d[6]
    );
    for (label, map, total) in [
        ("submit", &job.iodepth_submit, job.submit_calls),
        ("complete", &job.iodepth_complete, job.complete_calls),
    ] {
        let d = fio_stats::depth_dist(map, total);
        let _ = writeln!(
            out,
            "     {label:<9} : 0={:3.1}%, 4={:3.1}%, 8={:3.1}%, 16={:3.1}%, 32={:3.1}%, 64={:3.1}%, >=64={:3.1}%",
            d[0], d[1], d[2], d[3], d[4], d[5], d[6]
        );
    }
    let _ = writeln!(
        out,
        "     issued rwts: total={},{},{},0 short=0,0,0,0 dropped=0,0,0,0",
        job.read.total_ios, job.write.total_ios, job.trim.total_ios
    );
    if job.latency_depth > 0 {
        // stat.c: with no latency_target, target and window print as 0.00ns.
        let (target, window, pct) = job.latency_target.as_ref().map_or((0, 0, 100.0), |t| {
            (t.target_ns, t.window_us * 1_000, t.percentile)
        });
        let _ = writeln!(
            out,
            "     latency   : target={}, window={}, percentile={pct:.2}%, depth={}",
            scaled_ns(target),
            scaled_ns(window),
            job.latency_depth
        );
    }
    if let Some(ss) = &job.steadystate {
        steadystate_line(out, ss);
    }
    out.push('\n');
}

/// stat.c scale_down_ns with "%.2f%s": ns, usec or msec.
fn scaled_ns(ns: u64) -> String {
    if ns < 1_000 {
        format!("{:.2}ns", ns as f64)
    } else if ns < 1_000_000 {
        format!("{:.2}usec", ns as f64 / 1e3)
    } else {
        format!("{:.2}msec", ns as f64 / 1e6)
    }
}

/// stat.c show_ss_normal: the steady-state line.
fn steadystate_line(out: &mut String, ss: &crate::SteadyStateReport) {
    let lat = if ss.lat_ns.is_some() {
        let ns = ss.lat_mean;
        let shown = if ns >= 1_000_000 {
            format!("{}msec", ns / 1_000_000)
        } else if ns >= 1_000 {
            format!("{}usec", ns / 1_000)
        } else {
            format!("{ns}nsec")
        };
        format!(", lat={shown}")
    } else {
        String::new()
    };
    let _ = writeln!(
        out,
        "  steadystate  : attained={}, bw={} ({}), iops={}{lat}, {}{}={:.3}{}",
        if ss.attained { "yes" } else { "no" },
        num2str(ss.bw_mean, SIG_FIGS, true, Unit::BytePerSec),
        num2str(ss.bw_mean, SIG_FIGS, false, Unit::BytePerSec),
        num2str(ss.iops_mean, SIG_FIGS, false, Unit::None),
        ss.metric,
        if ss.slope_criterion {
            " slope"
        } else {
            " mean dev"
        },
        ss.criterion,
        if ss.pct { "%" } else { "" }
    );
}

/// The aggregate bandwidth (bytes/s) of group `gid`, reads and writes.
fn group_agg(r: &RunReport, gid: u32) -> (u64, u64) {
    let jobs = || r.jobs.iter().filter(move |j| j.groupid == gid);
    (
        fio_stats::group_dir(jobs(), |j| &j.read).map_or(0, |g| g.agg_bw),
        fio_stats::group_dir(jobs(), |j| &j.write).map_or(0, |g| g.agg_bw),
    )
}

/// stat.c show_ddir_status: IOPS and bandwidth over the runtime in whole ms.
fn ddir_status(out: &mut String, name: &str, d: &DirReport, percentiles: bool, agg: u64) {
    if d.runtime_ms() == 0 {
        return;
    }
    let bw = d.fio_bw_bytes();
    let iops = d.fio_iops() as u64;
    let _ = writeln!(
        out,
        "  {name}: IOPS={}, BW={} ({})({}/{}msec)",
        num2str(iops, SIG_FIGS, false, Unit::None),
        num2str(bw, SIG_FIGS, true, Unit::BytePerSec),
        num2str(bw, SIG_FIGS, false, Unit::BytePerSec),
        num2str(d.io_bytes, SIG_FIGS, true, Unit::Byte),
        d.runtime_ms()
    );
    for (label, lat) in [("slat", &d.slat), ("clat", &d.clat), (" lat", &d.lat)] {
        if lat.count() > 0 {
            display_lat(out, label, lat);
        }
    }
    if percentiles && d.clat.count() > 0 {
        clat_percentiles(out, &d.clat);
    }
    if let Some((min, max, mean, dev)) = d.bw_samples.calc() {
        let per = crate::fio_json::agg_percent(agg, mean);
        // stat.c: KiB unless the mean is above 1 GiB/s in KiB, then MiB.
        let (unit, div) = if mean > 1024.0 * 1024.0 {
            ("MiB", 1024.0)
        } else {
            ("KiB", 1.0)
        };
        let _ = writeln!(
            out,
            "   bw ({unit:>5}/s): min={:5}, max={:5}, per={per:3.2}%, avg={:5.02}, stdev={:5.02}, samples={}",
            (min as f64 / div) as u64,
            (max as f64 / div) as u64,
            mean / div,
            dev / div,
            d.bw_samples.samples
        );
    }
    if let Some((min, max, mean, dev)) = d.iops_samples.calc() {
        let _ = writeln!(
            out,
            "   iops        : min={min:5}, max={max:5}, avg={mean:5.02}, stdev={dev:5.02}, samples={}",
            d.iops_samples.samples
        );
    }
}

/// stat.c display_lat with stat.h nsec_to_msec / nsec_to_usec scaling.
fn display_lat(out: &mut String, name: &str, lat: &Latency) {
    let (mut min, mut max, mut mean, mut dev) = (lat.min(), lat.max(), lat.mean(), lat.stddev());
    let base = if min > 2_000_000 && max > 99_999_999 && dev > 1_000_000.0 {
        (min, max, mean, dev) = (min / 1_000_000, max / 1_000_000, mean / 1e6, dev / 1e6);
        "(msec)"
    } else if min > 2_000 && max > 99_999 && dev > 1_000.0 {
        (min, max, mean, dev) = (min / 1_000, max / 1_000, mean / 1e3, dev / 1e3);
        "(usec)"
    } else {
        "(nsec)"
    };
    let _ = writeln!(
        out,
        "    {name} {base}: min={}, max={}, avg={mean:5.2}, stdev={dev:5.2}",
        num2str(min, 6, false, Unit::None),
        num2str(max, 6, false, Unit::None)
    );
}

/// stat.c show_clat_percentiles with fio's default precision of 2.
fn clat_percentiles(out: &mut String, lat: &Latency) {
    let vals = fio_stats::percentiles(lat);
    let minv = vals.iter().map(|v| v.1).min().unwrap_or(0);
    let maxv = vals.iter().map(|v| v.1).max().unwrap_or(0);
    let (scale_down, divisor, unit) = if minv > 2_000_000 && maxv > 99_999_999 {
        (2, 1_000_000, "msec")
    } else if minv > 2_000 && maxv > 99_999 {
        (1, 1_000, "usec")
    } else {
        (0, 1, "nsec")
    };
    let _ = write!(out, "    clat percentiles ({unit}):\n     |");
    let time_width = (maxv / divisor)
        .checked_ilog10()
        .map_or(5, |d| (d as usize + 1).max(5));
    let per_line = (80 - 7) / (2 + 10 + time_width);
    for (j, &(p, v)) in vals.iter().enumerate() {
        if j != 0 && j % per_line == 0 {
            out.push_str("     |");
        }
        let is_last = j == vals.len() - 1;
        let mut v = v;
        for _ in 0..scale_down {
            v = v.div_ceil(1000);
        }
        let end = if is_last { '\n' } else { ',' };
        let _ = write!(out, " {p:5.2}th=[{v:>time_width$}]{end}");
        if !is_last && j % per_line == per_line - 1 {
            out.push('\n');
        }
    }
}

/// stat.c show_latencies: non-empty buckets, five to a line.
fn lat_distribution(out: &mut String, job: &JobReport) {
    let d = fio_stats::lat_dist(job);
    let n: Vec<(&str, f64)> = LAT_LABELS_NU.iter().copied().zip(d.ns).collect();
    let u: Vec<(&str, f64)> = LAT_LABELS_NU.iter().copied().zip(d.us).collect();
    let m: Vec<(&str, f64)> = LAT_LABELS_M.iter().copied().zip(d.ms).collect();
    for (unit, buckets) in [("nsec", n), ("usec", u), ("msec", m)] {
        let shown: Vec<String> = buckets
            .iter()
            .filter(|(_, p)| *p > 0.0)
            .map(|(label, p)| format!("{label}={p:3.2}%"))
            .collect();
        for line in shown.chunks(5) {
            let _ = writeln!(out, "  lat ({unit})   : {}", line.join(", "));
        }
    }
}

/// stat.c show_group_stats.
fn group_status(out: &mut String, r: &RunReport, gid: u32) {
    let _ = writeln!(out, "Run status group {gid} (all jobs):");
    let jobs = || r.jobs.iter().filter(move |j| j.groupid == gid);
    let dirs: [(&str, Option<GroupDir>); 3] = [
        ("   READ", fio_stats::group_dir(jobs(), |j| &j.read)),
        ("  WRITE", fio_stats::group_dir(jobs(), |j| &j.write)),
        ("   TRIM", fio_stats::group_dir(jobs(), |j| &j.trim)),
    ];
    for (label, g) in dirs {
        let Some(g) = g else { continue };
        let bw = |v: u64, pow2: bool| num2str(v, SIG_FIGS, pow2, Unit::BytePerSec);
        let _ = writeln!(
            out,
            "{label}: bw={} ({}), {}-{} ({}-{}), io={} ({}), run={}-{}msec",
            bw(g.agg_bw, true),
            bw(g.agg_bw, false),
            bw(g.min_bw, true),
            bw(g.max_bw, true),
            bw(g.min_bw, false),
            bw(g.max_bw, false),
            num2str(g.io_bytes, SIG_FIGS, true, Unit::Byte),
            num2str(g.io_bytes, SIG_FIGS, false, Unit::Byte),
            g.min_run_ms,
            g.max_run_ms
        );
    }
    out.push('\n');
}

/// ns as a short human time: 850ns, 12.35us, 1.20ms, 2.500s.
pub(crate) fn human_ns(ns: u64) -> String {
    match ns {
        0..1_000 => format!("{ns}ns"),
        1_000..1_000_000 => format!("{:.2}us", ns as f64 / 1e3),
        1_000_000..1_000_000_000 => format!("{:.2}ms", ns as f64 / 1e6),
        _ => format!("{:.3}s", ns as f64 / 1e9),
    }
}

fn per_sec(count: u64, window_ns: u64) -> f64 {
    if window_ns == 0 {
        0.0
    } else {
        count as f64 * 1e9 / window_ns as f64
    }
}

/// Each moderated vector's final level, programs and time per level (levels at 0.0%
/// after the last one used and the final one are left out).
fn moderation_section(out: &mut String, r: &RunReport) {
    // Vectors that raised nothing are left out, as in the interrupts table.
    let moderated: Vec<_> = r
        .vectors
        .iter()
        .filter(|v| v.messages > 0 || v.handled() > 0)
        .filter_map(|v| v.moderation.as_ref().map(|m| (v, m)))
        .collect();
    if moderated.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "Moderation (whole run): final level, programs, time at each level"
    );
    for (v, m) in moderated {
        let used = m.level_ns.iter().rposition(|&t| t > 0).map_or(0, |i| i + 1);
        let levels: Vec<String> = (0..used.max(m.final_level + 1))
            .map(|l| format!("L{l} {:.1}%", m.level_pct(l)))
            .collect();
        let _ = writeln!(
            out,
            "  {:<12} {:<9} final=L{} programs={}  {}",
            v.name,
            m.moderator,
            m.final_level,
            m.programs,
            levels.join(" ")
        );
    }
    out.push('\n');
}

/// Interrupt counts, rates, CPU shares and tick lateness: the part fio has no words for.
fn irqlab_section(out: &mut String, r: &RunReport) {
    let w = r.duration_ns;
    let _ = writeln!(out, "Interrupts (measured window {}):", human_ns(w));
    let _ = writeln!(
        out,
        "  {:<12} {:<14} {:>12} {:>12} {:>12} {:>12} {:>12}",
        "vector", "chip", "handled", "per sec", "messages", "coalesced", "completions"
    );
    let quiet_vectors = r
        .vectors
        .iter()
        .filter(|v| v.messages == 0 && v.handled() == 0)
        .count();
    for v in r
        .vectors
        .iter()
        .filter(|v| v.messages > 0 || v.handled() > 0)
    {
        let _ = writeln!(
            out,
            "  {:<12} {:<14} {:>12} {:>12.1} {:>12} {:>12} {:>12}",
            v.name,
            v.chip,
            v.handled(),
            per_sec(v.handled(), w),
            v.messages,
            v.device_coalesced,
            v.completions
        );
    }
    if quiet_vectors > 0 {
        let _ = writeln!(
            out,
            "  ({quiet_vectors} vectors raised nothing and are not shown)"
        );
    }
    let pmn: u64 = r.cpus.iter().map(|c| c.pmn).sum();
    let notifications = r.notifications();
    let _ = writeln!(
        out,
        "  PMN (posted MSI notifications): {pmn} ({:.1}/s)",
        per_sec(pmn, w)
    );
    let _ = writeln!(
        out,
        "  notifications={notifications} ({:.1}/s), vector interrupts={}, coalescing ratio={:.2}, I/Os per notification={:.2}",
        per_sec(notifications, w),
        r.vector_interrupts(),
        r.coalescing_ratio(),
        r.ios_per_notification()
    );
    out.push('\n');
    moderation_section(out, r);
    crate::moderation_course::course_section(out, r);

    let _ = writeln!(
        out,
        "CPU time (% of the measured window) and tick lateness:"
    );
    // The real-thread runtime also says how much of the window the host took away.
    let stolen = r.measured.as_ref().map(|m| &m.cpu_stolen_ns);
    let _ = write!(
        out,
        "  {:>4} {:>7} {:>7} {:>8} {:>8} {:>10} {:>10} {:>7}",
        "CPU", "usr", "sys", "hardirq", "softirq", "ksoftirqd", "irqthread", "idle",
    );
    if stolen.is_some() {
        let _ = write!(out, " {:>7}", "stolen");
    }
    let _ = writeln!(
        out,
        " {:>10} {:>10} {:>8} {:>8} {:>14}  tick late p50/p99/max",
        "ctx", "hardirqs", "PMN", "LOC", "ksoftirqd-wake"
    );
    // A CPU that only idled and took ticks says nothing about interrupt delivery.
    let is_quiet = |c: &crate::CpuReport| c.idle_ns >= w && c.hardirqs == c.timer_ticks;
    let quiet_cpus = r.cpus.iter().filter(|c| is_quiet(c)).count();
    for c in r.cpus.iter().filter(|c| !is_quiet(c)) {
        let t = &c.tick_lateness;
        let _ = write!(
            out,
            "  {:>4} {:>6.2}% {:>6.2}% {:>7.2}% {:>7.2}% {:>9.2}% {:>9.2}% {:>6.2}%",
            c.cpu,
            pct(c.usr_ns, w),
            pct(c.sys_ns, w),
            pct(c.hardirq_ns, w),
            pct(c.softirq_ns, w),
            pct(c.ksoftirqd_ns, w),
            pct(c.irq_thread_ns, w),
            pct(c.idle_ns, w),
        );
        if let Some(s) = stolen {
            let ns = s.get(c.cpu).copied().unwrap_or(0);
            let _ = write!(out, " {:>6.2}%", pct(ns, w));
        }
        let _ = writeln!(
            out,
            " {:>10} {:>10} {:>8} {:>8} {:>14}  {}/{}/{}",
            c.ctx_switches,
            c.hardirqs,
            c.pmn,
            c.timer_ticks,
            c.ksoftirqd_wakeups,
            // Bucket middles can pass the exact maximum: not for this column.
            human_ns(t.percentile(50.0).min(t.max())),
            human_ns(t.percentile(99.0).min(t.max())),
            human_ns(t.max())
        );
    }

    if quiet_cpus > 0 {
        let _ = writeln!(out, "  ({quiet_cpus} idle CPUs not shown)");
    }

    if let Some(m) = &r.measured {
        out.push('\n');
        let ios = r.total_ios();
        let cpu_per_io = (m.usr_ns + m.sys_ns).checked_div(ios).unwrap_or(0);
        let _ = writeln!(out, "Measured on this host:");
        let _ = writeln!(
            out,
            "  wall={}, wake-ups={} ({:.1}/s), ctx switches: voluntary={}, involuntary={}",
            human_ns(m.wall_ns),
            m.wakeups,
            per_sec(m.wakeups, m.wall_ns),
            m.voluntary_ctx,
            m.involuntary_ctx
        );
        let _ = writeln!(
            out,
            "  CPU: usr={}, sys={}, per I/O={}",
            human_ns(m.usr_ns),
            human_ns(m.sys_ns),
            human_ns(cpu_per_io)
        );
    }
    if !r.extra.is_empty() {
        out.push('\n');
        let _ = writeln!(out, "Engine counters:");
        for (k, v) in &r.extra {
            let _ = writeln!(out, "  {k}={v}");
        }
    }
}
