//! io_uring with sqthread_poll (IORING_SETUP_SQPOLL). The job fills SQEs and moves the
//! ring's tail in user space; it enters the kernel only to wake the SQ thread when that
//! went to sleep (engines/io_uring.c fio_ioring_commit, IORING_SQ_NEED_WAKEUP), and it
//! reaps by spinning on the CQ ring in user space (fio_ioring_getevents never calls
//! io_uring_enter with sqthread_poll). The kernel's SQ thread (io_uring/sqpoll.c
//! io_sq_thread) is a thread of the model on its own CPU (sqthread_poll_cpu, else the
//! one after the job's): it submits what the ring holds (io_submit_sqes: the block
//! layer and driver work per SQE and the doorbell), runs the task_work of their
//! completions (or polls for them when the ring polls, io_do_iopoll), and spins while
//! it had work within sq_thread_idle, burning its CPU; then it sleeps.

use super::fio_ctl::{FioPhase, SQ_THREAD_IDLE_NS};
use super::ids::{JobId, QueueId};
use super::state::*;
use crate::engine::Event;
use crate::observer::Observer;

impl<O: Observer> Sim<'_, O> {
    /// The job's batch goes into the SQ ring; a sleeping SQ thread needs
    /// io_uring_enter(IORING_ENTER_SQ_WAKEUP), a polling one sees the tail move.
    pub(crate) fn ring_commit(&mut self, j: usize, k: u32) -> Option<ThreadStep> {
        let now = self.now;
        let start = self.jobs[j].batch_start();
        let (wake, thread) = self.jobs[j].fio_mut().commit_to_ring(start, now);
        // io_u_mark_submit at commit; the issue time (clat's start) is now.
        self.count_submitted(j, k, true);
        self.jobs[j].enter_phase(JobPhase::Start);
        let st = self.jobs[thread.ix()].thread().ix();
        if wake {
            let c = self.threads[self.jobs[j].thread().ix()].cpu().ix();
            self.wake_thread(st, Some(c));
            let call = self.engine.io_uring.submit_call_ns;
            return Some(ThreadStep::sys(call + self.costs.wakeup));
        }
        if self.threads[st].spinning() {
            self.poke_thread(st);
        }
        None
    }

    /// What the SQ thread of job `owner`'s ring (model job `j`) does next.
    pub(crate) fn sq_thread_advance(&mut self, c: usize, j: usize, owner: usize) -> ThreadStep {
        let _ = c;
        loop {
            match self.jobs[j].phase() {
                JobPhase::Done => return ThreadStep::Exit,
                JobPhase::Fio(FioPhase::SqSubmit { k }) => {
                    self.sq_submitted(j, owner, k);
                    // virtio-blk: the notify exit, when the SQEs asked for a kick.
                    if let Some(ns) = self.kick_step(j) {
                        self.jobs[j].enter_phase(JobPhase::Fio(FioPhase::SqKick));
                        return ThreadStep::sys(ns);
                    }
                }
                JobPhase::Fio(FioPhase::SqKick) => self.kick_done(j),
                JobPhase::Fio(FioPhase::SqTaskWork) => self.sq_posted(j, owner),
                JobPhase::Fio(FioPhase::SqReap) => {
                    self.finish_thread_reap(c, j);
                    self.sq_work_done(owner);
                }
                _ => {}
            }
            self.jobs[j].enter_phase(JobPhase::Fio(FioPhase::SqLoop));
            if let Some(step) = self.sq_loop(j, owner) {
                return step;
            }
        }
    }

    /// One pass of io_sq_thread: submit, complete, poll, or spin until there is work,
    /// sleeping sq_thread_idle after the last.
    fn sq_loop(&mut self, j: usize, owner: usize) -> Option<ThreadStep> {
        let now = self.now;
        if self.jobs[owner].phase() == JobPhase::Done {
            self.jobs[j].enter_phase(JobPhase::Done);
            return Some(ThreadStep::Exit);
        }
        let uring = self.engine.io_uring.clone();
        let ring = self.jobs[owner].fio().ctl().ring().expect("a SQPOLL ring");
        let (pending, iopoll, last_work) = (ring.pending(), ring.iopoll(), ring.last_work());
        if pending > 0 {
            // io_submit_sqes: every SQE the ring holds (one ring per thread: no cap).
            self.jobs[j].enter_phase(JobPhase::Fio(FioPhase::SqSubmit { k: pending }));
            let ns = u64::from(pending) * uring.submit_io_ns + self.sq_doorbell_ns(j);
            return Some(ThreadStep::sys(ns.max(1)));
        }
        let tw = self.jobs[j].ready_len() as u64;
        if tw > 0 {
            // tctx_task_work: io_req_rw_complete posts each CQE.
            self.jobs[j].enter_phase(JobPhase::Fio(FioPhase::SqTaskWork));
            let per = if iopoll { 0 } else { uring.task_work_io_ns };
            return Some(ThreadStep::sys((tw * per).max(1)));
        }
        if iopoll {
            let (n, ns) = self.reap_own_queues(j, false);
            if n > 0 {
                self.jobs[j].enter_phase(JobPhase::Fio(FioPhase::SqReap));
                return Some(ThreadStep::sys(ns + self.costs.cq_doorbell));
            }
        }
        if now >= last_work + SQ_THREAD_IDLE_NS {
            // Idle past sq_thread_idle: IORING_SQ_NEED_WAKEUP, then schedule().
            if let Some(r) = self.jobs[owner].fio_mut().ctl_mut().ring_mut() {
                r.thread_sleeps();
            }
            return Some(ThreadStep::Block);
        }
        let r = self.jobs[owner].fio_mut().ctl_mut().ring_mut();
        let epoch = r.expect("a SQPOLL ring").arm_idle_timer();
        let at = last_work + SQ_THREAD_IDLE_NS;
        // A timer past the run's bound would never fire, only outlive the run and read as
        // work still going (a cut-short run); the thread spins until the end instead.
        if at <= self.stop_at {
            self.q.push(
                at,
                Event::JobTimer {
                    job: JobId::new(j),
                    epoch,
                },
            );
        }
        Some(ThreadStep::Spin)
    }

    /// The SQ thread's submission of `k` SQEs ends: they reach the queues of its CPU
    /// with the doorbell.
    fn sq_submitted(&mut self, j: usize, owner: usize, k: u32) {
        let mut touched: Vec<(QueueId, u32)> = Vec::new();
        for i in 0..k {
            let ring = self.jobs[owner].fio_mut().ctl_mut().ring_mut();
            let Some(e) = ring.expect("a SQPOLL ring").pop_sqe() else {
                break;
            };
            let job = &mut self.jobs[j];
            let q = job.queue_ahead(0);
            let next_q = job.next_file();
            job.start_batch(e.start);
            let last = i + 1 == k || next_q != q;
            let Some(io) = self.queue_command(j, q, e.planned, last) else {
                continue;
            };
            self.ios[io.ix()].submitted_at(e.committed);
            match touched.iter_mut().find(|t| t.0 == q) {
                Some(t) => t.1 += 1,
                None => touched.push((q, 1)),
            }
        }
        for (q, n) in touched {
            self.schedule_fetch(q, n);
        }
        self.sq_work_done(owner);
    }

    /// The task_work ran: the CQEs are in the job's CQ ring, where its spin sees them.
    fn sq_posted(&mut self, j: usize, owner: usize) {
        let done: Vec<_> = self.jobs[j].take_ready();
        let o = &mut self.jobs[owner];
        o.completions_posted(done);
        let ot = o.thread().ix();
        if o.enough_ready() && self.threads[ot].spinning() {
            self.poke_thread(ot);
        }
        self.sq_work_done(owner);
    }

    fn sq_work_done(&mut self, owner: usize) {
        let now = self.now;
        if let Some(r) = self.jobs[owner].fio_mut().ctl_mut().ring_mut() {
            r.worked(now);
        }
    }

    /// A spinning SQ thread looks at its ring: work, or its idle time is up.
    pub(crate) fn sq_found(&self, j: usize, owner: usize) -> bool {
        let o = &self.jobs[owner];
        let Some(r) = o.fio().ctl().ring() else {
            return true;
        };
        o.phase() == JobPhase::Done
            || r.pending() > 0
            || self.jobs[j].ready_len() > 0
            || self.now >= r.last_work() + SQ_THREAD_IDLE_NS
            || (r.iopoll()
                && self.jobs[j]
                    .queues()
                    .iter()
                    .any(|&q| self.queues[q.ix()].cqe_pending()))
    }
}
