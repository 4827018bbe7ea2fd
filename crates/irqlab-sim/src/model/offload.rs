//! io_submit_mode=offload (fio's rate-submit.c and workqueue.c): the job's thread
//! prepares each I/O (its rate clock, sizes, user-space work) and hands it to one of
//! `iodepth` worker threads with a condition-variable signal; each worker has its own
//! engine context at depth 1, submits the I/O and waits for it (io_u_queued_complete
//! with min_evts 1), then puts the io_u back, waking the job if it waits for one. The
//! workers are threads of the model: they take CPU time and context switches on their
//! CPUs. Their I/O statistics are the job's (sum_thread_stats); their CPU time is not
//! in the job's cpu line (fio reads RUSAGE_THREAD of the job's thread).

use super::fio_ctl::{FioPhase, Role};
use super::state::*;
use crate::observer::Observer;

impl<O: Observer> Sim<'_, O> {
    /// workqueue.c get_submit_worker: the first idle worker from `next_free` on, else
    /// the one whose last work is oldest.
    fn pick_worker(&mut self, j: usize) -> usize {
        let off = self.jobs[j]
            .fio()
            .ctl()
            .offload()
            .expect("an offloading job");
        let pick = off.get_submit_worker(|w| {
            let q = self.jobs[w.ix()].fio().ctl().worker();
            (q.is_some_and(|q| q.idle()), q.map_or(0, |q| q.seq()))
        });
        let off = self.jobs[j].fio_mut().ctl_mut().offload_mut();
        off.expect("an offloading job").submit_to(pick).ix()
    }

    /// workqueue_enqueue: the I/O the job prepared goes to a worker, which the signal
    /// wakes if it sleeps (the waker's cost).
    pub(crate) fn handoff(&mut self, j: usize) -> Option<ThreadStep> {
        let planned = self.jobs[j].fio().batch()[0];
        let start = self.jobs[j].batch_start();
        let w = self.pick_worker(j);
        let off = self.jobs[j].fio_mut().ctl_mut().offload_mut();
        let seq = off.expect("an offloading job").next_seq();
        let q = self.jobs[w].fio_mut().ctl_mut().worker_mut();
        q.expect("a worker").enqueue(planned, start, seq);
        // backend.c: io_issues and the rate clock count at enqueue.
        let job = &mut self.jobs[j];
        job.submitted(1, self.now);
        job.enter_phase(JobPhase::Start);
        let wt = self.jobs[w].thread().ix();
        if self.threads[wt].state() == TState::Blocked {
            let c = self.threads[self.jobs[j].thread().ix()].cpu().ix();
            self.wake_thread(wt, Some(c));
            return Some(ThreadStep::sys(self.costs.wakeup));
        }
        None
    }

    /// A worker's pass of its loop (io_workqueue_fn per queued io_u): reap the I/O in
    /// flight, submit the next one handed over, or sleep until one is.
    pub(crate) fn worker_decide(
        &mut self,
        j: usize,
        parent: usize,
        reap_call: u64,
    ) -> Option<ThreadStep> {
        let now = self.now;
        let job = &mut self.jobs[j];
        if job.outstanding() > 0 {
            // min_evts = 1: the worker's depth is 1.
            job.wait_for(1);
            job.enter_phase(JobPhase::ReapCall);
            job.start_wait();
            return (reap_call > 0).then_some(ThreadStep::sys(reap_call));
        }
        let q = job.fio_mut().ctl_mut().worker_mut().expect("a worker");
        if let Some((p, start)) = q.next_work() {
            job.fio_mut().clear_batch();
            job.fio_mut().queue_io(p);
            job.start_batch(start);
            job.enter_phase(JobPhase::Usr { k: 1 });
            // No user-space work of its own: fio's was done by the job's thread.
            let _ = now;
            return Some(ThreadStep::sys(1));
        }
        if self.jobs[parent].phase() == JobPhase::Done {
            self.jobs[j].enter_phase(JobPhase::Done);
            return Some(ThreadStep::Exit);
        }
        self.jobs[j].enter_phase(JobPhase::Fio(FioPhase::Idle));
        Some(ThreadStep::Block)
    }

    /// A worker reaped `got` I/Os: put_io_u gives them back to the job, whose thread is
    /// woken if it sleeps on free_cond. Returns the wake-ups done.
    pub(crate) fn worker_done(&mut self, j: usize, parent: usize, got: u32) -> u64 {
        let p = &mut self.jobs[parent];
        p.reaped(got);
        let pt = p.thread().ix();
        if p.phase() == JobPhase::Fio(FioPhase::FreeWait)
            && self.threads[pt].state() == TState::Blocked
        {
            let c = self.threads[self.jobs[j].thread().ix()].cpu().ix();
            self.wake_thread(pt, Some(c));
            return 1;
        }
        0
    }

    /// The job exited: its offload workers and its SQPOLL thread exit too
    /// (workqueue_exit, io_uring's ring teardown).
    pub(crate) fn release_helpers(&mut self, j: usize) {
        let helpers: Vec<usize> = self.jobs[j].fio().ctl().helpers().map(|h| h.ix()).collect();
        for h in helpers {
            self.jobs[h].enter_phase(JobPhase::Done);
            let t = self.jobs[h].thread().ix();
            match self.threads[t].state() {
                TState::Blocked => {
                    let c = self.threads[self.jobs[j].thread().ix()].cpu().ix();
                    self.wake_thread(t, Some(c));
                }
                _ if self.threads[t].spinning() => self.poke_thread(t),
                _ => {}
            }
        }
    }

    /// The job started: its SQPOLL thread starts polling (it was created with the ring).
    pub(crate) fn start_helpers(&mut self, j: usize) {
        let Some(t) = self.jobs[j].fio().ctl().ring().and_then(|r| r.thread()) else {
            return;
        };
        let now = self.now;
        if let Some(r) = self.jobs[j].fio_mut().ctl_mut().ring_mut() {
            r.worked(now);
        }
        let th = self.jobs[t.ix()].thread().ix();
        self.wake_thread(th, None);
    }

    /// Whether job `j` is a helper of another (not a job of the file).
    pub(crate) fn is_helper(&self, j: usize) -> bool {
        self.jobs[j].fio().ctl().role() != Role::Main
    }
}
