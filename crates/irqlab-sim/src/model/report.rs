//! The measured window (after ramp_time) and the [`RunReport`] built from the model.

use super::state::*;
use crate::observer::Observer;
use irqlab_core::moderator::Moderator;
use irqlab_report::{
    CpuReport, DirReport, Engine, JobReport, Latency, ModerationReport, RunReport, VectorReport,
};

/// A vector's moderator as the report shows it: its final level, programs and time at
/// each level (the whole run; the moderator keeps them).
fn moderation_report(m: &Moderator) -> ModerationReport {
    ModerationReport {
        moderator: m.kind().to_string(),
        final_level: m.applied_level(),
        programs: m.counters().programs,
        level_ns: m.level_ns().to_vec(),
    }
}

impl<O: Observer> Sim<'_, O> {
    /// ramp_time is over: every statistic starts from zero now.
    pub(crate) fn open_window(&mut self) {
        for c in 0..self.cpus.len() {
            self.account(c);
            self.cpus[c].stats = CpuStats::default();
        }
        for job in &mut self.jobs {
            job.read = DirStats::default();
            job.write = DirStats::default();
            job.usr = 0;
            job.sys = 0;
            job.ctx = 0;
            job.depth_level = [0; 7];
        }
        for v in &mut self.vectors {
            v.messages = 0;
            v.per_cpu.iter_mut().for_each(|x| *x = 0);
            v.device_coalesced = 0;
            v.completions = 0;
            v.merged = 0;
            v.pended = 0;
            v.withheld = 0;
        }
        for q in &mut self.queues {
            q.completions = 0;
        }
        self.measuring = true;
    }

    /// Every job is done: charge the CPUs up to now and stop measuring.
    pub(crate) fn close_window(&mut self) {
        for c in 0..self.cpus.len() {
            self.account(c);
        }
        self.measuring = false;
    }

    pub(crate) fn report(&mut self) -> RunReport {
        let duration_ns = self.window_end.saturating_sub(self.window_start);
        let dir = |d: &mut DirStats, runtime_ns: u64| {
            let [slat, clat, lat] = match d.lat.take() {
                Some(b) => *b,
                None => [Latency::new(), Latency::new(), Latency::new()],
            };
            DirReport {
                total_ios: d.ios,
                io_bytes: d.bytes,
                runtime_ns,
                slat,
                clat,
                lat,
            }
        };
        let window_start = self.window_start;
        let jobs = self
            .jobs
            .iter_mut()
            .map(|j| {
                let runtime_ns = j.finished_at.saturating_sub(j.ramp_end.max(window_start));
                JobReport {
                    name: j.name.clone(),
                    groupid: j.groupid,
                    options: j.options.clone(),
                    read: {
                        let rt = if j.read.ios > 0 { runtime_ns } else { 0 };
                        dir(&mut j.read, rt)
                    },
                    write: {
                        let rt = if j.write.ios > 0 { runtime_ns } else { 0 };
                        dir(&mut j.write, rt)
                    },
                    usr_ns: j.usr,
                    sys_ns: j.sys,
                    ctx: j.ctx,
                    runtime_ns,
                    iodepth_level: j.depth_level,
                }
            })
            .collect();
        let cpus = self
            .cpus
            .iter_mut()
            .enumerate()
            .map(|(i, c)| {
                let s = &mut c.stats;
                CpuReport {
                    cpu: i,
                    usr_ns: s.usr,
                    sys_ns: s.sys,
                    hardirq_ns: s.hardirq,
                    softirq_ns: s.softirq,
                    ksoftirqd_ns: s.ksoftirqd,
                    irq_thread_ns: s.irq_thread,
                    idle_ns: s.idle,
                    ctx_switches: s.ctx_switches,
                    hardirqs: s.hardirqs,
                    pmn: s.pmn,
                    timer_ticks: s.ticks,
                    ksoftirqd_wakeups: s.ksoftirqd_wakeups,
                    tick_lateness: s.tick_lateness.take().map_or_else(Latency::new, |b| *b),
                }
            })
            .collect();
        let chip = if self.posted {
            "INTEL-IR-POST"
        } else {
            "IR-PCI-MSIX"
        };
        let mut vectors: Vec<VectorReport> = self
            .vectors
            .iter()
            .map(|v| VectorReport {
                name: v.name.clone(),
                chip: chip.to_string(),
                messages: v.messages,
                per_cpu: v.per_cpu.clone(),
                device_coalesced: v.device_coalesced,
                completions: v.completions,
                moderation: v.moderator.as_ref().map(moderation_report),
            })
            .collect();
        // Polled queues have no vector; they show as POLLED rows with their completions.
        let names = super::build::queue_names(self);
        for (qi, q) in self.queues.iter().enumerate() {
            if q.vector.is_none() && q.completions > 0 {
                vectors.push(VectorReport {
                    name: names[qi].clone(),
                    chip: "POLLED".into(),
                    messages: 0,
                    per_cpu: vec![0; self.cpus.len()],
                    device_coalesced: 0,
                    completions: q.completions,
                    moderation: None,
                });
            }
        }
        let sum = |f: &dyn Fn(&Vector) -> u64| self.vectors.iter().map(f).sum::<u64>();
        let extra = vec![
            ("events".to_string(), self.q.popped() as f64),
            ("ios_submitted".to_string(), self.totals.submitted as f64),
            ("ios_completed".to_string(), self.totals.completed as f64),
            ("ios_reaped".to_string(), self.totals.reaped as f64),
            ("cqes_posted".to_string(), self.totals.cqes_posted as f64),
            ("msi_merged".to_string(), sum(&|v| v.merged) as f64),
            ("msi_pended".to_string(), sum(&|v| v.pended) as f64),
            ("msi_withheld".to_string(), sum(&|v| v.withheld) as f64),
            ("simulated_ns".to_string(), self.now as f64),
            ("cut_short".to_string(), f64::from(u8::from(self.cut_short))),
        ];
        RunReport {
            engine: Engine::Simulated,
            platform: self.platform_name.clone(),
            policy: self.policy.describe(),
            seed: self.seed,
            duration_ns,
            jobs,
            cpus,
            vectors,
            measured: None,
            extra,
        }
    }
}
