//! When a job stops besides its runtime and size, and who else stops with it, as
//! fio's backend.c does: the minimum-rate check (check_min_rate: EIO), the latency
//! target's window (lat_target_check) and its final run, exitall (fio_terminate_threads
//! with exit_what), wait_for, and what a job does once its I/O in flight is quiesced.

use super::fio_ctl::AfterQuiesce;
use super::ids::JobId;
use super::state::*;
use crate::engine::Event;
use crate::observer::Observer;
use irqlab_fio::ExitWhat;

impl<O: Observer> Sim<'_, O> {
    /// The end of a pass of fio's loop (backend.c do_io, after the I/O's submission):
    /// check_min_rate and lat_target_check, outside the ramp.
    pub(crate) fn loop_checks(&mut self, j: usize) {
        let now = self.now;
        let job = &self.jobs[j];
        let ctl = job.fio().ctl();
        if !ctl.checks_in_loop() || now < job.ramp_end() || ctl.stops() {
            return;
        }
        let since = now.saturating_sub(job.fio().epoch());
        let name = job.name().to_owned();
        let ctl = self.jobs[j].fio_mut().ctl_mut();
        if let Some(end_others) = ctl.check_min_rate(&name, now, since) {
            // backend.c: exitall or exitall_on_error end the group at once.
            if end_others {
                self.terminate_others(j);
            }
            return;
        }
        ctl.lat_target_check(now);
    }

    /// Nothing is in flight any more: what the job quiesced for happens.
    pub(crate) fn after_quiesce(&mut self, j: usize, q: AfterQuiesce) -> Option<ThreadStep> {
        let now = self.now;
        match q {
            AfterQuiesce::FlowSleep(ns) if ns > 0 => {
                self.jobs[j].enter_phase(JobPhase::Pause);
                return Some(ThreadStep::Sleep { ns });
            }
            AfterQuiesce::FlowSleep(_) => {
                if self.flow_holds(j) {
                    return Some(self.flow_spin(j));
                }
            }
            AfterQuiesce::ZoneReset { device, zone } => {
                if let (Some(jz), Some(map)) = (
                    self.jobs[j].fio_mut().ctl_mut().zones_mut(),
                    self.fio.zone_map_mut(device),
                ) {
                    map.reset(jz, zone);
                }
            }
            AfterQuiesce::LatTarget { final_run } => {
                if final_run {
                    // reset_all_stats: the final window at the depth found.
                    self.job_ramp_end(j);
                    let job = &mut self.jobs[j];
                    job.measure_from(now.max(self.window_start));
                }
                self.jobs[j].fio_mut().ctl_mut().lat_new_cycle(now);
            }
        }
        self.jobs[j].enter_phase(JobPhase::Start);
        None
    }

    /// backend.c thread_main's end: with exitall (or exitall_on_error and an error),
    /// fio_terminate_threads(groupid, exit_what).
    pub(crate) fn exit_terminates(&mut self, j: usize) {
        let ctl = self.jobs[j].fio().ctl();
        if ctl.exit().exitall || (ctl.exit().on_error && ctl.error().is_some()) {
            self.terminate_others(j);
        }
    }

    /// libfio.c fio_terminate_threads for job `j`'s group and exit_what: `group` ends the
    /// jobs of its reporting group, `stonewall` every job running now, `all` every job.
    /// A job not started yet never starts.
    fn terminate_others(&mut self, j: usize) {
        let what = self.jobs[j].fio().ctl().exit().what;
        let group = self.jobs[j].groupid();
        let now = self.now;
        for k in 0..self.jobs.len() {
            if k == j || self.is_helper(k) || self.jobs[k].phase() == JobPhase::Done {
                continue;
            }
            let job = &self.jobs[k];
            let running = job.fio().started() && now >= job.ramp_end();
            let hit = match what {
                ExitWhat::Group => job.groupid() == group,
                ExitWhat::Stonewall => running,
                ExitWhat::All => true,
            };
            if hit {
                self.terminate_job(k);
            }
        }
    }

    /// fio_mark_td_terminate: the job's loop stops at its next pass (a spinning one at
    /// once); one that has not started exits without running.
    pub(crate) fn terminate_job(&mut self, k: usize) {
        if self.jobs[k].phase() == JobPhase::Done || self.jobs[k].fio().ctl().terminated() {
            return;
        }
        self.jobs[k].fio_mut().ctl_mut().terminate();
        if !self.jobs[k].fio().started() {
            self.exit_unstarted(k);
            return;
        }
        let t = self.jobs[k].thread().ix();
        if self.threads[t].spinning() {
            self.poke_thread(t);
        }
    }

    /// A job that never ran leaves the run (backend.c run_threads: "never got a chance
    /// to start"); its helpers, never created, go with it.
    pub(crate) fn exit_unstarted(&mut self, j: usize) {
        self.jobs[j].enter_phase(JobPhase::Done);
        self.jobs_live -= 1;
        let t = self.jobs[j].thread().ix();
        self.threads[t].exit_unstarted();
        let helpers: Vec<usize> = self.jobs[j].fio().ctl().helpers().map(|h| h.ix()).collect();
        for h in helpers {
            self.jobs[h].enter_phase(JobPhase::Done);
            let t = self.jobs[h].thread().ix();
            self.threads[t].exit_unstarted();
        }
        self.flow_exit(j);
        self.leave_wave(j);
    }

    /// Whether job `j` still waits for a job named by its wait_for (backend.c
    /// waitee_running).
    pub(crate) fn waits(&self, j: usize) -> bool {
        self.jobs[j]
            .fio()
            .ctl()
            .wait_for()
            .iter()
            .any(|w| self.jobs[w.ix()].phase() != JobPhase::Done)
    }

    /// Job `exited` is done: jobs that waited for it start if their wave has begun and
    /// nothing else holds them.
    pub(crate) fn start_waiters(&mut self, exited: usize) {
        let now = self.now;
        for k in 0..self.jobs.len() {
            let job = &self.jobs[k];
            if job.phase() == JobPhase::Done
                || job.fio().started()
                || !job.fio().ctl().wait_for().iter().any(|w| w.ix() == exited)
                || (job.fio().wave() as usize) > self.fio.current_wave()
                || self.waits(k)
            {
                continue;
            }
            let at = now.max(job.fio().startdelay_ns());
            self.q.push(at, Event::JobStart { job: JobId::new(k) });
        }
    }

    /// A job's own timer: its SQ thread's idle time is up, or its flow spin reached the
    /// job's end.
    pub(crate) fn job_timer(&mut self, j: usize, epoch: u32) {
        if let super::fio_ctl::Role::SqThread { owner } = self.jobs[j].fio().ctl().role() {
            let current = self.jobs[owner.ix()]
                .fio()
                .ctl()
                .ring()
                .is_some_and(|r| r.timer_epoch() == epoch);
            if !current {
                return;
            }
        }
        let t = self.jobs[j].thread().ix();
        if self.threads[t].spinning() {
            self.poke_thread(t);
        }
    }
}
