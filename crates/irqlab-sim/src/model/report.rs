//! The measured window (after ramp_time) and the [`RunReport`] built from the model.

use super::state::*;
use super::vector::Vector;
use crate::observer::Observer;
use irqlab_report::{
    CHIP_INJECTED, CHIP_POLLED, CHIP_POSTED, CHIP_REMAPPED, CpuReport, DiskUtil, Engine, JobReport,
    ModerationReport, RunReport, VectorReport, pci_address,
};

impl<O: Observer> Sim<'_, O> {
    /// ramp_time is over: every statistic starts from zero now.
    pub(crate) fn open_window(&mut self) {
        for c in 0..self.cpus.len() {
            self.account(c);
            self.cpus[c].acct.open_window();
        }
        let now = self.now;
        for job in &mut self.jobs {
            job.reset_window(now);
        }
        for d in self.fio.disks_mut() {
            d.open(now);
        }
        for v in &mut self.vectors {
            v.open_window();
        }
        for q in &mut self.queues {
            q.open_window();
        }
        self.fabric.open_window();
        self.measuring = true;
        self.obs.window(now, true);
    }

    /// Every job is done: charge the CPUs up to now and stop measuring.
    pub(crate) fn close_window(&mut self) {
        for c in 0..self.cpus.len() {
            self.account(c);
        }
        let now = self.now;
        for d in self.fio.disks_mut() {
            d.close(now);
        }
        self.measuring = false;
        self.obs.window(now, false);
    }

    pub(crate) fn report(&mut self) -> RunReport {
        let duration_ns = self.window_end.saturating_sub(self.window_start);
        let jobs = self.job_reports();
        let cpus = self.cpu_reports();
        let vectors = self.vector_reports();
        let disks = self.disk_utils(duration_ns);
        let extra = self.extra_counters(duration_ns);
        RunReport {
            engine: Engine::Simulated,
            platform: self.platform_name.clone(),
            policy: self.policy.describe(),
            seed: self.seed,
            duration_ns,
            end_ns: self.now,
            global_options: self.fio.global_options().to_vec(),
            jobs,
            disks,
            cpus,
            vectors,
            measured: None,
            extra,
            notes: self.irq_move_notes(),
        }
    }

    /// Each job's statistics over its part of the window (its latency histograms and
    /// logs move into the report), then group_reporting.
    fn job_reports(&mut self) -> Vec<JobReport> {
        let dir = |d: &mut DirStats, runtime_ns: u64| d.report(runtime_ns);
        let window_start = self.window_start;
        let window_end = self.window_end;
        let threads = &self.threads;
        let jobs: Vec<JobReport> = self
            .jobs
            .iter_mut()
            // Offload workers and SQPOLL threads are not jobs of the file.
            .filter(|j| j.fio().ctl().role() == super::fio_ctl::Role::Main)
            .map(|j| {
                let movable = !threads[j.thread().ix()].pinned();
                // A job still running when the run was stopped (Ctrl-C, the time limit)
                // ran until the window closed.
                let end = if j.finished_at() == 0 && j.fio().started() {
                    window_end
                } else {
                    j.finished_at()
                };
                let runtime_ns = end.saturating_sub(j.ramp_end().max(window_start));
                let (name, groupid, options) =
                    (j.name().to_owned(), j.groupid(), j.options().to_vec());
                let (usr_ns, sys_ns, ctx) = (j.usr(), j.sys(), j.ctx());
                let migrations = movable.then_some(j.migrations());
                let (iodepth_level, no_io) =
                    (j.depth_level(), j.engine() == irqlab_fio::IoEngine::CpuIo);
                let (jr, jw, f) = j.window_stats_mut();
                let rt = |d: &DirStats| if d.ios() > 0 { runtime_ns } else { 0 };
                let (read_rt, write_rt) = (rt(jr), rt(jw));
                let mut read = dir(jr, read_rt);
                let mut write = dir(jw, write_rt);
                let trim_rt = rt(f.ctl().trim_stats());
                let trim = dir(f.ctl_mut().trim_stats_mut(), trim_rt);
                (read.bw_samples, read.iops_samples) = f.rate_samples(0);
                (write.bw_samples, write.iops_samples) = f.rate_samples(1);
                let (iodepth_submit, iodepth_complete, submit_calls, complete_calls) =
                    f.call_stats();
                let logs = f.take_logs();
                let ctl = f.ctl();
                JobReport {
                    name,
                    groupid,
                    members: 1,
                    thread_number: f.thread_number(),
                    group_reporting: f.group_reporting(),
                    description: f.description().map(str::to_owned),
                    options,
                    read,
                    write,
                    usr_ns,
                    sys_ns,
                    ctx,
                    migrations,
                    runtime_ns,
                    iodepth_level,
                    iodepth_submit,
                    iodepth_complete,
                    submit_calls,
                    complete_calls,
                    job_start_ns: f.started_at(),
                    // stat.c: latency_qd, the depth a latency target found.
                    latency_depth: ctl.lat().map_or(f.iodepth(), |l| l.qd()),
                    clat_percentiles: f.clat_percentiles(),
                    logs,
                    trim,
                    error: ctl.error().map(|e| irqlab_report::JobError {
                        code: e.code,
                        func: match e.code {
                            super::fio_ctl::EIO => "check_min_rate".into(),
                            _ => "max latency exceeded".into(),
                        },
                        msg: e.msg.clone(),
                    }),
                    latency_target: ctl.lat().map(|l| irqlab_report::LatencyTargetReport {
                        target_ns: l.cfg().target_ns,
                        window_us: l.cfg().window_ns / 1_000,
                        percentile: l.cfg().percentile,
                    }),
                    steadystate: ctl.ss().map(super::steadystate::SsState::report),
                    no_io,
                    zone_resets: ctl.zones().map(|z| z.resets()),
                }
            })
            .collect();
        irqlab_report::group_reporting(jobs)
    }

    /// Each CPU's time buckets and counters (its tick lateness moves into the report).
    fn cpu_reports(&mut self) -> Vec<CpuReport> {
        self.cpus
            .iter_mut()
            .enumerate()
            .map(|(i, c)| c.acct.cpu_report(i))
            .collect()
    }

    /// /proc/interrupts as the report shows it: every device vector, then the polled
    /// queues that completed I/O, as POLLED rows.
    fn vector_reports(&self) -> Vec<VectorReport> {
        // The MSI-X entry of a queue: its number on its device (nvme0q3 is entry 3).
        let mut per_dev = vec![0u32; self.devices.len()];
        let entry: Vec<u32> = self
            .queues
            .iter()
            .map(|q| {
                per_dev[q.device().ix()] += 1;
                per_dev[q.device().ix()]
            })
            .collect();
        let mut vectors: Vec<VectorReport> = self
            .vectors
            .iter()
            .enumerate()
            .map(|(i, v)| VectorReport {
                name: v.name().to_string(),
                // The IRTE's format: posted or remapped (the chip /proc/interrupts names).
                chip: if self.queues[v.queue().ix()].is_virtio() {
                    CHIP_INJECTED
                } else if self.posted_vector(i) {
                    CHIP_POSTED
                } else {
                    CHIP_REMAPPED
                }
                .to_string(),
                device: pci_address(self.queues[v.queue().ix()].device().ix()),
                hwirq: entry[v.queue().ix()],
                messages: v.messages(),
                per_cpu: v.per_cpu().to_vec(),
                device_coalesced: v.device_coalesced(),
                completions: v.completions(),
                moderation: v.moderator().map(ModerationReport::from),
            })
            .collect();
        let names = super::build::queue_names(self);
        for (qi, q) in self.queues.iter().enumerate() {
            if q.vector().is_none() && q.completions() > 0 {
                vectors.push(VectorReport {
                    name: names[qi].clone(),
                    chip: CHIP_POLLED.into(),
                    device: pci_address(q.device().ix()),
                    hwirq: entry[qi],
                    messages: 0,
                    per_cpu: vec![0; self.cpus.len()],
                    device_coalesced: 0,
                    completions: q.completions(),
                    moderation: None,
                });
            }
        }
        vectors
    }

    /// fio's disk statistics of the devices the jobs used.
    fn disk_utils(&self, duration_ns: u64) -> Vec<DiskUtil> {
        let window_ms = duration_ns / 1_000_000;
        self.fio
            .disks()
            .iter()
            .zip(&self.devices)
            .filter(|(d, _)| d.used())
            .map(|(d, dev)| DiskUtil {
                // The block device fio names: nvme0 is nvme0n1.
                name: if dev.name().starts_with("nvme") {
                    format!("{}n1", dev.name())
                } else {
                    dev.name().to_string()
                },
                ios: d.ios(),
                sectors: d.bytes().map(|b| b / 512),
                ticks_ms: d.ticks_ns().map(|t| t / 1_000_000),
                in_queue_ms: (d.in_queue_ns() / 1_000_000) as u64,
                busy_ms: d.busy_ns() / 1_000_000,
                window_ms,
            })
            .collect()
    }

    /// The model's own counters: events, conservation totals, merged and withheld
    /// messages, the interrupt router, softirq and irq_poll, the busy root ports.
    fn extra_counters(&self, duration_ns: u64) -> Vec<(String, f64)> {
        let pct = |ns: u64| {
            if duration_ns > 0 {
                100.0 * ns as f64 / duration_ns as f64
            } else {
                0.0
            }
        };
        let sum = |f: &dyn Fn(&Vector) -> u64| self.vectors.iter().map(f).sum::<u64>();
        let mut extra = vec![(
            "events".to_string(),
            (self.q.popped() + self.merged_events) as f64,
        )];
        let totals = self.totals.counters().into_iter();
        extra.extend(totals.map(|(k, n)| (k.to_string(), n as f64)));
        extra.extend([
            ("msi_merged".to_string(), sum(&|v| v.merged()) as f64),
            ("irq_pended".to_string(), sum(&|v| v.pended()) as f64),
            ("irq_resent".to_string(), sum(&|v| v.resent()) as f64),
            ("msi_withheld".to_string(), sum(&|v| v.withheld()) as f64),
            (
                "notifications_delivered".to_string(),
                self.fabric.router().delivered() as f64,
            ),
            (
                "router_busy_pct".to_string(),
                pct(self.fabric.router().busy_ns()),
            ),
            ("simulated_ns".to_string(), self.now as f64),
            (
                irqlab_report::EXTRA_CUT_SHORT.to_string(),
                f64::from(u8::from(self.cut_short)),
            ),
        ]);
        // Over the whole run (the kernel's counters are not reset at the ramp's end).
        let soft = |f: &dyn Fn(&irqlab_core::softirq::SoftirqCounters) -> u64| {
            self.cpus
                .iter()
                .map(|c| f(&c.soft.pending().counters()))
                .sum::<u64>() as f64
        };
        if self.interrupted {
            extra.push((irqlab_report::EXTRA_INTERRUPTED.to_string(), 1.0));
        }
        if self.place.is_some() {
            // Moves of the jobs the scheduler places (perf's cpu-migrations of fio).
            let moved: u64 = self.jobs.iter().map(|j| j.migrations()).sum();
            extra.push(("migrations".into(), moved as f64));
        }
        extra.push(("softirq_invocations".into(), soft(&|s| s.invocations)));
        extra.push(("softirq_restarts".into(), soft(&|s| s.restarts)));
        extra.push((
            "irq_poll_polls".into(),
            self.cpus
                .iter()
                .map(|c| c.soft.irq_poll().counters().polls)
                .sum::<u64>() as f64,
        ));
        if self.policy.irq_poll_until != irqlab_core::irq_poll::IrqPollUntil::Budget {
            // Runs Sagi's variant ended on need_resched (the kernel's rule never does).
            extra.push((
                "irq_poll_need_resched".into(),
                self.cpus
                    .iter()
                    .map(|c| c.soft.irq_poll().counters().need_resched)
                    .sum::<u64>() as f64,
            ));
        }
        extra.extend(self.irq_move_counters());
        for (i, port) in self.fabric.ports().iter().enumerate() {
            let (busy, stalled) = (port.busy_ns(), port.stalled_ns());
            if busy == 0 && stalled == 0 {
                continue;
            }
            extra.push((format!("port{i}_busy_pct"), pct(busy)));
            extra.push((format!("port{i}_stalled_pct"), pct(stalled)));
        }
        extra
    }
}
