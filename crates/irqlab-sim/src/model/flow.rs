//! Token-based flow control between jobs (fio's flow.c): the jobs of one flow id keep
//! their issued I/Os in the ratio of their `flow` weights. Before each I/O a job whose
//! share of the group's count is above its share of the weight is held back: with
//! `flow_sleep` it quiesces and sleeps that long, otherwise it spins in fio's loop (user
//! time on its CPU) until the others catch up.

use super::fio_ctl::{AfterQuiesce, FioPhase, flow_exceeded};
use super::ids::JobId;
use super::state::*;
use crate::engine::Event;
use crate::observer::Observer;

impl<O: Observer> Sim<'_, O> {
    /// flow_threshold_exceeded's test for job `j`.
    pub(crate) fn flow_holds(&self, j: usize) -> bool {
        let Some(m) = self.jobs[j].fio().ctl().flow() else {
            return false;
        };
        flow_exceeded(m, self.fio.flow(m.group()))
    }

    /// The job passed the test and issues one I/O: its counter and the group's move,
    /// which may let a held job of the group go on.
    pub(crate) fn flow_issue(&mut self, j: usize) {
        let Some(g) = self.jobs[j].fio_mut().ctl_mut().flow_issued() else {
            return;
        };
        self.fio.flow_mut(g).issued();
        self.poke_flow(g, j);
    }

    /// flow_exit_job: the job's count and weight leave the group.
    pub(crate) fn flow_exit(&mut self, j: usize) {
        let Some(m) = self.jobs[j].fio_mut().ctl_mut().leave_flow() else {
            return;
        };
        self.fio.flow_mut(m.group()).leave(&m);
        self.poke_flow(m.group(), j);
    }

    /// The group's count moved: members spinning on it look again.
    fn poke_flow(&mut self, g: usize, except: usize) {
        for i in 0..self.fio.flow(g).members().len() {
            let k = self.fio.flow(g).members()[i].ix();
            if k == except || self.jobs[k].phase() != JobPhase::Fio(FioPhase::FlowSpin) {
                continue;
            }
            let t = self.jobs[k].thread().ix();
            if self.threads[t].spinning() {
                self.poke_thread(t);
            }
        }
    }

    /// The flow holds job `j` back: flow_sleep quiesces and sleeps; without it fio's
    /// loop spins (a zoned job quiesces first, flow.c).
    pub(crate) fn flow_wait(&mut self, j: usize, reap_call: u64) -> Option<ThreadStep> {
        let sleep = self.jobs[j].fio().ctl().flow().map_or(0, |m| m.sleep_ns());
        let zoned = self.jobs[j].fio().ctl().zones().is_some();
        if (sleep > 0 || zoned) && self.jobs[j].outstanding() > 0 {
            self.jobs[j]
                .fio_mut()
                .ctl_mut()
                .quiesce_then(AfterQuiesce::FlowSleep(sleep));
            return self.decide(j, reap_call);
        }
        if sleep > 0 {
            self.jobs[j].enter_phase(JobPhase::Pause);
            return Some(ThreadStep::Sleep { ns: sleep });
        }
        Some(self.flow_spin(j))
    }

    /// Spin in fio's loop: its runtime check ends the spin at the job's end.
    pub(crate) fn flow_spin(&mut self, j: usize) -> ThreadStep {
        self.jobs[j].enter_phase(JobPhase::Fio(FioPhase::FlowSpin));
        if let Some(end) = self.jobs[j].end()
            && end > self.now
        {
            self.q.push(
                end,
                Event::JobTimer {
                    job: JobId::new(j),
                    epoch: 0,
                },
            );
        }
        ThreadStep::Spin
    }

    /// A spinning job's look at its flow: it may go on, or must stop.
    pub(crate) fn flow_found(&self, j: usize) -> bool {
        let job = &self.jobs[j];
        !self.flow_holds(j) || job.end().is_some_and(|e| self.now >= e) || job.fio().ctl().stops()
    }
}
