//! Steady-state detection (fio's steadystate.c): fio's helper thread measures every
//! job's IOPS, bandwidth and mean clat each `steadystate_check_interval`; when the last
//! `steadystate_duration` of them meet the criterion (the largest deviation from their
//! mean, or their least-squares slope, under the limit) the job (with group_reporting:
//! its group) is terminated. The arithmetic is fio's, unsigned wrap-around included.

use super::state::{JobPhase, Sim};
use crate::engine::Event;
use crate::observer::Observer;
use irqlab_fio::{SsMetric, SteadyState};

/// steadystate.h FIO_SS_* flags this model keeps.
const RAMP_OVER: u32 = 1;
const BUFFER_FULL: u32 = 2;
const ATTAINED: u32 = 4;
/// The job holds its group's measurements (steadystate_setup).
const DATA: u32 = 8;

/// struct steadystate_data of one job.
#[derive(Clone, Debug)]
pub(crate) struct SsState {
    cfg: SteadyState,
    state: u32,
    head: usize,
    tail: usize,
    iops_data: Vec<u64>,
    bw_data: Vec<u64>,
    lat_data: Vec<u64>,
    slope: f64,
    deviation: f64,
    criterion: f64,
    sum_y: u64,
    sum_x: u64,
    sum_x_sq: u64,
    sum_xy: u64,
    oldest_y: u64,
    prev_time: u64,
    prev_iops: u64,
    prev_bytes: u64,
    prev_lat_sum: f64,
    prev_lat_samples: u64,
}

impl SsState {
    /// The job started, or its window opened, at `now`: the first interval runs from there.
    pub fn restart_clock(&mut self, now: u64) {
        self.prev_time = now;
    }

    /// td_steadystate_init.
    pub fn new(cfg: SteadyState) -> SsState {
        let n = cfg.intervals();
        let state = if cfg.ramp_ns == 0 { RAMP_OVER } else { 0 };
        SsState {
            cfg,
            state,
            head: 0,
            tail: 0,
            iops_data: Vec::new(),
            bw_data: Vec::new(),
            lat_data: Vec::new(),
            slope: 0.0,
            deviation: 0.0,
            criterion: 0.0,
            sum_y: 0,
            sum_x: (n * n.saturating_sub(1) / 2) as u64,
            sum_x_sq: (n.saturating_sub(1) * n * (2 * n).saturating_sub(1) / 6) as u64,
            sum_xy: 0,
            oldest_y: 0,
            prev_time: 0,
            prev_iops: 0,
            prev_bytes: 0,
            prev_lat_sum: 0.0,
            prev_lat_samples: 0,
        }
    }

    /// steadystate_alloc: this job keeps the measurements (itself, or its group's).
    pub fn alloc(&mut self) {
        let n = self.cfg.intervals();
        self.iops_data = vec![0; n];
        self.bw_data = vec![0; n];
        self.lat_data = vec![0; n];
        self.state |= DATA;
    }

    pub fn attained(&self) -> bool {
        self.state & ATTAINED != 0
    }

    fn value(&self, i: usize) -> u64 {
        match self.cfg.metric {
            SsMetric::Iops => self.iops_data[i],
            SsMetric::Bw => self.bw_data[i],
            SsMetric::Lat => self.lat_data[i],
        }
    }

    /// steadystate_slope and steadystate_deviation: store the new measurement and test
    /// the window once it is full.
    fn measure(&mut self, iops: u64, bw: u64, lat: f64) -> bool {
        let n = self.cfg.intervals();
        self.bw_data[self.tail] = bw;
        self.iops_data[self.tail] = iops;
        self.lat_data[self.tail] = lat as u64;
        let new_val = self.value(self.tail);
        let slope = self.cfg.slope;
        if self.state & BUFFER_FULL != 0 || self.tail.wrapping_sub(self.head) == n - 1 {
            if self.state & BUFFER_FULL == 0 {
                self.sum_y = 0;
                for i in 0..n {
                    self.sum_y = self.sum_y.wrapping_add(self.value(i));
                    if slope {
                        let j = (self.head + i) % n;
                        self.sum_xy = self
                            .sum_xy
                            .wrapping_add((i as u64).wrapping_mul(self.value(j)));
                    }
                }
                self.state |= BUFFER_FULL;
            } else {
                self.sum_y = self.sum_y.wrapping_sub(self.oldest_y).wrapping_add(new_val);
                if slope {
                    self.sum_xy = self
                        .sum_xy
                        .wrapping_sub(self.sum_y)
                        .wrapping_add((n as u64).wrapping_mul(new_val));
                }
            }
            self.oldest_y = self.value(self.head);
            let nf = n as f64;
            let mean = self.sum_y as f64 / nf;
            let hit = if slope {
                self.slope = (self.sum_xy as f64 - self.sum_x as f64 * self.sum_y as f64 / nf)
                    / (self.sum_x_sq as f64 - self.sum_x as f64 * self.sum_x as f64 / nf);
                self.criterion = if self.cfg.pct {
                    100.0 * self.slope / mean
                } else {
                    self.slope
                };
                self.criterion.abs() < self.cfg.limit
            } else {
                self.deviation = (0..n)
                    .map(|i| (self.value(i) as f64 - mean).abs())
                    .fold(0.0, f64::max);
                self.criterion = if self.cfg.pct {
                    100.0 * self.deviation / mean
                } else {
                    self.deviation
                };
                self.criterion < self.cfg.limit
            };
            if hit {
                return true;
            }
        }
        self.tail = (self.tail + 1) % n;
        // steadystate_slope advances the head when the tail passes it,
        // steadystate_deviation when they meet.
        let advance = if slope {
            self.tail <= self.head
        } else {
            self.tail == self.head
        };
        if advance {
            self.head = (self.head + 1) % n;
        }
        false
    }

    /// fio's JSON "steadystate" and the text line (stat.c show_ss_normal).
    pub fn report(&self) -> irqlab_report::SteadyStateReport {
        let n = self.cfg.intervals();
        let start = if self.attained() || self.state & BUFFER_FULL == 0 {
            self.head
        } else if self.head == 0 {
            n - 1
        } else {
            self.head - 1
        };
        let order = |data: &[u64]| -> Vec<u64> {
            if data.is_empty() {
                return vec![0; n];
            }
            (0..n).map(|l| data[(start + l) % n]).collect()
        };
        let mean = |data: &[u64]| -> u64 {
            if data.is_empty() || n == 0 {
                0
            } else {
                data.iter().fold(0u64, |a, &x| a.wrapping_add(x)) / n as u64
            }
        };
        irqlab_report::SteadyStateReport {
            criterion_name: self.cfg.describe(),
            duration_s: self.cfg.duration_s,
            attained: self.attained(),
            criterion: self.criterion,
            pct: self.cfg.pct,
            metric: match self.cfg.metric {
                SsMetric::Iops => "iops",
                SsMetric::Bw => "bw",
                SsMetric::Lat => "lat",
            },
            slope_criterion: self.cfg.slope,
            max_deviation: self.deviation,
            slope: self.slope,
            bw: order(&self.bw_data),
            iops: order(&self.iops_data),
            lat_ns: (self.cfg.metric == SsMetric::Lat).then(|| order(&self.lat_data)),
            bw_mean: mean(&self.bw_data),
            iops_mean: mean(&self.iops_data),
            lat_mean: mean(&self.lat_data),
        }
    }
}

impl<O: Observer> Sim<'_, O> {
    /// The helper thread's steadystate_check, every check interval from the start.
    pub(crate) fn steadystate_check(&mut self) {
        let now = self.now;
        let Some(interval_ms) = self.fio.ss_interval_ms() else {
            return;
        };
        let (mut group_bw, mut group_iops) = (0u64, 0u64);
        let (mut group_lat_sum, mut group_lat_samples) = (0.0f64, 0u64);
        let mut group_ramp_over = 0u32;
        let mut prev_group: Option<u32> = None;
        let mut live = false;
        for j in 0..self.jobs.len() {
            let job = &self.jobs[j];
            let running = job.fio().started()
                && job.phase() != JobPhase::Done
                && now >= job.ramp_end()
                && job.fio().ctl().ss().is_some_and(|s| !s.attained());
            if !running {
                continue;
            }
            live = true;
            let groupid = job.groupid();
            let grouped = job.fio().group_reporting();
            if !grouped || prev_group != Some(groupid) {
                (group_bw, group_iops, group_lat_sum, group_lat_samples) = (0, 0, 0.0, 0);
                group_ramp_over = 0;
            }
            prev_group = Some(groupid);
            let f = job.fio();
            let (td_iops, td_bytes, lat_sum, lat_n) = f.ctl().ss_inputs();
            let epoch = f.epoch();
            let ss = self.jobs[j]
                .fio_mut()
                .ctl_mut()
                .ss_mut()
                .expect("checked above");
            if ss.cfg.ramp_ns > 0
                && ss.state & RAMP_OVER == 0
                && (now - epoch) / 1_000 >= ss.cfg.ramp_ns / 1_000 + interval_ms * 1_000
            {
                ss.state |= RAMP_OVER;
            }
            let rate_time = (now - ss.prev_time) / 1_000_000;
            ss.prev_time = now;
            if ss.state & RAMP_OVER != 0 {
                let div = interval_ms * interval_ms / 1000;
                group_bw = group_bw.wrapping_add(
                    rate_time.wrapping_mul(td_bytes.wrapping_sub(ss.prev_bytes)) / div,
                );
                group_iops = group_iops
                    .wrapping_add(rate_time.wrapping_mul(td_iops.wrapping_sub(ss.prev_iops)) / div);
                group_lat_sum += lat_sum - ss.prev_lat_sum;
                group_lat_samples =
                    group_lat_samples.wrapping_add(lat_n.wrapping_sub(ss.prev_lat_samples));
                group_ramp_over += 1;
            }
            ss.prev_iops = td_iops;
            ss.prev_bytes = td_bytes;
            ss.prev_lat_sum = lat_sum;
            ss.prev_lat_samples = lat_n;
            if (grouped && ss.state & DATA == 0) || group_ramp_over == 0 {
                continue;
            }
            let group_lat = if group_lat_samples > 0 {
                group_lat_sum / group_lat_samples as f64
            } else {
                0.0
            };
            if ss.measure(group_iops, group_bw, group_lat) {
                let members: Vec<usize> = if grouped {
                    (0..self.jobs.len())
                        .filter(|&k| {
                            self.jobs[k].groupid() == groupid
                                && self.jobs[k].fio().ctl().ss().is_some()
                        })
                        .collect()
                } else {
                    vec![j]
                };
                for k in members {
                    if let Some(s) = self.jobs[k].fio_mut().ctl_mut().ss_mut() {
                        s.state |= ATTAINED;
                    }
                    self.terminate_job(k);
                }
            }
        }
        let pending = self.jobs.iter().any(|j| {
            j.phase() != JobPhase::Done && j.fio().ctl().ss().is_some_and(|s| !s.attained())
        });
        // No job runs past the run's bound: a check after it would find none.
        let next = now + interval_ms * 1_000_000;
        if (live || pending) && next <= self.stop_at {
            self.q.push(next, Event::SteadyCheck);
        }
    }

    /// steadystate_setup: with group_reporting the last job of each group keeps the
    /// group's measurements, else each job its own.
    pub(crate) fn steadystate_setup(jobs: &mut [super::state::Job]) {
        let mut last_of_group: Option<usize> = None;
        let mut prev_group: Option<u32> = None;
        for j in 0..jobs.len() {
            if jobs[j].fio().ctl().ss().is_none() {
                continue;
            }
            if !jobs[j].fio().group_reporting() {
                if let Some(s) = jobs[j].fio_mut().ctl_mut().ss_mut() {
                    s.alloc();
                }
                continue;
            }
            if prev_group != Some(jobs[j].groupid()) {
                if let Some(p) = last_of_group
                    && let Some(s) = jobs[p].fio_mut().ctl_mut().ss_mut()
                {
                    s.alloc();
                }
                prev_group = Some(jobs[j].groupid());
            }
            last_of_group = Some(j);
        }
        if let Some(p) = last_of_group
            && jobs[p].fio().group_reporting()
            && let Some(s) = jobs[p].fio_mut().ctl_mut().ss_mut()
        {
            s.alloc();
        }
    }
}
