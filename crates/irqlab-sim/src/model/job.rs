//! The fio job thread: fill the queue to iodepth in batches of iodepth_batch_submit,
//! then reap at least iodepth_batch_complete_min (1 when it is 0 and the queue is full)
//! and at most iodepth_batch_complete_max, as fio's do_io / wait_for_completions do.
//! Interrupt-driven jobs sleep until enough completions are posted (aio read_events,
//! io_cqring_wait); polled jobs (hipri) spin on their completion queues, hybrid ones
//! first sleep half the fastest completion time seen. Rate limits and think time
//! quiesce the queue and sleep (io_u.c rate_ddir, backend.c handle_thinktime); jobs
//! start after their startdelay or stonewall wave (backend.c run_threads). Around this
//! loop, as backend.c does: flow control, the minimum-rate and latency-target checks,
//! quiesces before zone resets, offloaded submission and SQPOLL rings (their files:
//! offload.rs, sqpoll.rs, flow.rs, run_control.rs, submit.rs, reap.rs).

use super::fio_ctl::{FioPhase, Role};
use super::ids::JobId;
use super::state::*;
use crate::engine::Event;
use crate::observer::Observer;
use crate::observer::SliceKind;
use irqlab_fio::IoEngine;

impl<O: Observer> Sim<'_, O> {
    /// (submit call, submit per I/O, reap call, reap per I/O) of job `j`'s engine. The
    /// per-I/O reap includes io_uring's task_work completion unless the ring polls
    /// (io_uring/rw.c: io_complete_rw queues task_work, io_complete_rw_iopoll does not)
    /// or its SQPOLL thread runs it.
    pub(crate) fn engine_costs(&self, j: usize) -> (u64, u64, u64, u64) {
        let c = match self.jobs[j].submitter() {
            Some(sub) => sub,
            None => match super::build::syscall_costs(&self.engine, self.jobs[j].engine()) {
                Some(c) => c,
                // fio's null engine: no syscall, no kernel work.
                None => return (0, 0, 0, 0),
            },
        };
        // POSIX aio: glibc's helper threads each make one pread/pwrite (its syscall and
        // doorbell) and wake the job's thread when it returns; the job's own calls
        // (aio_read, aio_suspend) stay in user space until it sleeps.
        if self.jobs[j].engine() == IoEngine::PosixAio {
            return (
                0,
                c.submit_call_ns + c.submit_io_ns + self.costs.sq_doorbell,
                0,
                c.reap_call_ns + c.reap_io_ns + self.costs.wakeup,
            );
        }
        let task_work = self.jobs[j].polled() || self.jobs[j].fio().ctl().ring().is_some();
        (
            c.submit_call_ns,
            c.submit_io_ns,
            c.reap_call_ns,
            c.reap_io_ns + if task_work { 0 } else { c.task_work_io_ns },
        )
    }

    /// The job's thread finished its step on CPU `c`: what next? One arm per phase of
    /// fio's loop; an arm returns None when the next phase starts at once.
    pub(crate) fn job_advance(&mut self, c: usize, j: usize) -> ThreadStep {
        if let Role::SqThread { owner } = self.jobs[j].fio().ctl().role() {
            return self.sq_thread_advance(c, j, owner.ix());
        }
        if self.jobs[j].engine() == IoEngine::CpuIo {
            return self.cpuio_advance(j);
        }
        let (submit_call, submit_io, reap_call, reap_io) = self.engine_costs(j);
        loop {
            let next = match self.jobs[j].phase() {
                JobPhase::Start => self.decide(j, reap_call),
                JobPhase::Usr { k } => {
                    if let Some(p) = self.special_submit(j, k) {
                        self.jobs[j].enter_phase(JobPhase::Fio(p));
                        continue;
                    }
                    self.jobs[j].enter_phase(JobPhase::Submit { k });
                    // The batch's doorbell (POSIX aio's are in its per-I/O cost; the null
                    // engine rings none, nor does a batch that reaches no device).
                    let dev = self.device_ios(j, k);
                    let doorbell = match self.jobs[j].engine() {
                        IoEngine::Null | IoEngine::PosixAio => 0,
                        _ if dev == 0 => 0,
                        _ => self.sq_doorbell_ns(j),
                    };
                    let call = if dev == 0 { 0 } else { submit_call };
                    let ns = call + u64::from(dev) * submit_io + doorbell;
                    if ns == 0 {
                        // Nothing in the kernel: the I/Os complete as they are queued.
                        continue;
                    }
                    Some(ThreadStep::sys(ns))
                }
                JobPhase::Submit { k } | JobPhase::TagWait { k } => {
                    let sent = self.submit_batch(j, k);
                    if sent < k {
                        // blk_mq_get_tag: no tag free on the next queue; sleep until
                        // one is (a job the scheduler moved may find its new queue full).
                        // What went was committed (blk_mq_commit_rqs), kicked if asked.
                        if let Some(ns) = self.kick_step(j) {
                            self.kick_done(j);
                            self.jobs[j].enter_phase(JobPhase::TagWait { k: k - sent });
                            return ThreadStep::sys(ns);
                        }
                        self.jobs[j].enter_phase(JobPhase::TagWait { k: k - sent });
                        return ThreadStep::Block;
                    }
                    // virtio-blk: the notify exit, when the batch asked for a kick.
                    if let Some(ns) = self.kick_step(j) {
                        self.jobs[j].enter_phase(JobPhase::Kick);
                        return ThreadStep::sys(ns);
                    }
                    // Ming Lei's 2019 patch: after bd->last on a queue shared by several
                    // CPUs, spin_trylock the CQ lock and reap what is there.
                    let (n, reap_ns) = if self.policy.reap_after_submit && !self.jobs[j].polled() {
                        self.reap_own_queues(j, true)
                    } else {
                        (0, 0)
                    };
                    if n > 0 {
                        self.jobs[j].enter_phase(JobPhase::SubmitReap);
                        Some(ThreadStep::sys(reap_ns + self.costs.cq_doorbell))
                    } else {
                        self.decide(j, reap_call)
                    }
                }
                JobPhase::SubmitReap => {
                    let woke = self.finish_thread_reap(c, j);
                    if woke > 0 {
                        // The waker's cost of the wake-ups it did for other jobs.
                        self.jobs[j].enter_phase(JobPhase::Start);
                        Some(ThreadStep::sys(woke * self.costs.wakeup))
                    } else {
                        self.decide(j, reap_call)
                    }
                }
                JobPhase::ReapCall | JobPhase::Wait => self.wait_for_events(j, reap_io),
                JobPhase::HybridSleep => {
                    self.jobs[j].enter_phase(JobPhase::Poll);
                    None
                }
                JobPhase::ThinkSpin { sleep_ns } => {
                    let job = &mut self.jobs[j];
                    if sleep_ns > 0 {
                        job.enter_phase(JobPhase::Pause);
                        Some(ThreadStep::Sleep { ns: sleep_ns })
                    } else {
                        job.enter_phase(JobPhase::Start);
                        None
                    }
                }
                JobPhase::Pause => {
                    self.jobs[j].enter_phase(JobPhase::Start);
                    None
                }
                JobPhase::Kick => {
                    self.kick_done(j);
                    self.decide(j, reap_call)
                }
                JobPhase::Collect { n } => {
                    let woke = self.collect(j, n);
                    if woke > 0 {
                        // An offload worker woke its job (put_io_u's free_cond signal).
                        self.jobs[j].enter_phase(JobPhase::Start);
                        Some(ThreadStep::sys(woke * self.costs.wakeup))
                    } else {
                        self.decide(j, reap_call)
                    }
                }
                JobPhase::Poll => self.poll_step(j),
                JobPhase::PollReap => {
                    self.finish_thread_reap(c, j);
                    let job = &mut self.jobs[j];
                    let next = if job.enough_ready() {
                        JobPhase::ReapCall
                    } else {
                        JobPhase::Poll
                    };
                    job.enter_phase(next);
                    None
                }
                JobPhase::Fio(p) => self.fio_phase(j, p, reap_call),
                JobPhase::Done => Some(ThreadStep::Exit),
            };
            if let Some(step) = next {
                return step;
            }
        }
    }

    /// The phases of fio's loop beyond submitting and reaping.
    fn fio_phase(&mut self, j: usize, p: FioPhase, reap_call: u64) -> Option<ThreadStep> {
        match p {
            FioPhase::Handoff => self.handoff(j),
            FioPhase::FreeWait | FioPhase::Idle | FioPhase::FlowSpin | FioPhase::Burn => {
                self.jobs[j].enter_phase(JobPhase::Start);
                None
            }
            FioPhase::RingCommit { k } => self.ring_commit(j, k),
            FioPhase::RingSpin => {
                self.jobs[j].enter_phase(JobPhase::ReapCall);
                None
            }
            FioPhase::SyncSubmit => self.sync_submit(j),
            FioPhase::SyncIssue => self.sync_issue(j),
            FioPhase::SyncKick => self.sync_kicked(j),
            FioPhase::SyncWait => {
                // Woken: the command completed (reap.rs complete_io).
                self.jobs[j].enter_phase(JobPhase::Fio(FioPhase::SyncReap));
                let reap = super::build::syscall_costs(&self.engine, IoEngine::Pvsync2)
                    .map_or(0, |c| c.reap_io_ns);
                Some(ThreadStep::sys(reap.max(1)))
            }
            FioPhase::SyncReap => {
                let woke = self.collect_sync(j);
                if woke > 0 {
                    self.jobs[j].enter_phase(JobPhase::Start);
                    return Some(ThreadStep::sys(woke * self.costs.wakeup));
                }
                self.decide(j, reap_call)
            }
            FioPhase::SqLoop
            | FioPhase::SqSubmit { .. }
            | FioPhase::SqKick
            | FioPhase::SqTaskWork
            | FioPhase::SqReap => unreachable!("the SQPOLL thread's phases are its own"),
        }
    }

    /// The reap call (io_getevents, io_uring_enter with min_complete): collect when
    /// enough completions are ready; otherwise block until they are, or poll (a hybrid
    /// ring first sleeps). A SQPOLL ring's getevents spins on the CQ ring in user space.
    fn wait_for_events(&mut self, j: usize, reap_io: u64) -> Option<ThreadStep> {
        let (now, hrtimer) = (self.now, self.costs.hrtimer);
        let ring = self.jobs[j].fio().ctl().ring().is_some();
        let job = &mut self.jobs[j];
        let ready = job.ready_len() as u32;
        if ready >= job.waiting_for() {
            let n = ready.min(job.complete_max()).max(1);
            job.enter_phase(JobPhase::Collect { n });
            job.wait_for(0);
            let ns = u64::from(n) * reap_io;
            return (ns > 0).then_some(if ring {
                ThreadStep::Run {
                    ns,
                    kind: SliceKind::Usr,
                }
            } else {
                ThreadStep::sys(ns)
            });
        }
        if ring {
            job.enter_phase(JobPhase::Fio(FioPhase::RingSpin));
            return Some(ThreadStep::Spin);
        }
        if !job.polled() {
            job.enter_phase(JobPhase::Wait);
            return Some(ThreadStep::Block);
        }
        // io_uring hybrid IOPOLL: sleep half the fastest completion.
        if job.hybrid()
            && let Some(wake_at) = job.hybrid_sleep_until(now, hrtimer)
        {
            job.enter_phase(JobPhase::HybridSleep);
            return Some(ThreadStep::Sleep { ns: wake_at - now });
        }
        job.enter_phase(JobPhase::Poll);
        None
    }

    /// One look at the job's completion queues while it polls: reap what is there, or
    /// spin until a CQE appears.
    fn poll_step(&mut self, j: usize) -> Option<ThreadStep> {
        // Another poller of a shared queue may have reaped our completions.
        let job = &mut self.jobs[j];
        if job.enough_ready() {
            job.enter_phase(JobPhase::ReapCall);
            return None;
        }
        let (n, reap_ns) = self.reap_own_queues(j, false);
        if n == 0 {
            return Some(ThreadStep::Spin);
        }
        self.jobs[j].enter_phase(JobPhase::PollReap);
        Some(ThreadStep::sys(reap_ns + self.costs.cq_doorbell))
    }

    /// The top of fio's loop: stop, quiesce, wait for the flow, think, submit a batch
    /// (as the rate clock allows), or reap.
    pub(crate) fn decide(&mut self, j: usize, reap_call: u64) -> Option<ThreadStep> {
        if let Role::Worker { parent } = self.jobs[j].fio().ctl().role() {
            return self.worker_decide(j, parent.ix(), reap_call);
        }
        self.loop_checks(j);
        let now = self.now;
        let offload = self.jobs[j].fio().ctl().offload().is_some();
        let held = self.flow_holds(j);
        let job = &mut self.jobs[j];
        let limit_left = job.io_limit().map(|l| l.saturating_sub(job.issued()));
        let stopping = job.end().is_some_and(|e| now >= e)
            || limit_left == Some(0)
            || job.fio().bytes_done()
            || job.fio().ctl().stops();
        if stopping {
            if job.outstanding() == 0 {
                return Some(self.job_exit(j));
            }
            job.wait_for(job.outstanding());
        } else if let Some(q) = job.fio().ctl().quiesce() {
            // io_u_quiesce: reap one or more at a time until nothing is in flight.
            if job.outstanding() > 0 && !offload {
                job.wait_for(1);
            } else {
                job.fio_mut().ctl_mut().quiesced();
                return self.after_quiesce(j, q);
            }
        } else if held {
            return self.flow_wait(j, reap_call);
        } else if job.fio_mut().think_due() {
            // handle_thinktime: io_u_quiesce (reap one or more at a time until nothing
            // is in flight; an offloading job has nothing of its own in flight), then
            // spin and sleep.
            if job.outstanding() > 0 && !offload {
                job.wait_for(1);
            } else {
                return self.think(j);
            }
        } else if job.outstanding() < job.depth_limit() {
            let mut k = if offload {
                1
            } else {
                job.batch_submit()
                    .min(job.depth_limit() - job.outstanding())
            };
            if let Some(left) = limit_left {
                k = k.min(left.min(u64::from(u32::MAX)) as u32);
            }
            match self.plan_batch(j, k) {
                Ok(0) => {
                    // The first I/O waits for a quiesce (a zone reset before it).
                    debug_assert!(self.jobs[j].fio().ctl().quiesce().is_some());
                    return self.decide(j, reap_call);
                }
                Ok(k) => {
                    let job = &mut self.jobs[j];
                    job.start_batch(now);
                    job.enter_phase(JobPhase::Usr { k });
                    let ns = u64::from(k) * job.usr_io();
                    // A kernel submitter (usr_io 0) has no user-space part: its 1 ns is sys.
                    let kind = if ns == 0 {
                        SliceKind::Sys
                    } else {
                        SliceKind::Usr
                    };
                    return Some(ThreadStep::Run {
                        ns: ns.max(1),
                        kind,
                    });
                }
                Err(due) => {
                    // rate_ddir: ahead of the rate, quiesce (inline submission: reap
                    // one or more at a time until nothing is in flight) and sleep.
                    let job = &mut self.jobs[j];
                    if job.outstanding() > 0 && !offload {
                        job.wait_for(1);
                    } else {
                        let until = due.min(job.end().unwrap_or(u64::MAX));
                        job.enter_phase(JobPhase::Pause);
                        return Some(ThreadStep::Sleep {
                            ns: until.saturating_sub(now).max(1),
                        });
                    }
                }
            }
        } else {
            // wait_for_completions(): a full queue must reap at least one.
            let n = if job.complete_min() == 0 {
                1
            } else {
                job.complete_min().min(job.outstanding())
            };
            job.wait_for(n);
        }
        if offload {
            // Nothing of its own to reap: it waits for a worker to put an io_u back
            // (__get_io_u's free_cond, workqueue_flush at the end).
            self.jobs[j].enter_phase(JobPhase::Fio(FioPhase::FreeWait));
            return Some(ThreadStep::Block);
        }
        let ring = self.jobs[j].fio().ctl().ring().is_some();
        let job = &mut self.jobs[j];
        job.enter_phase(JobPhase::ReapCall);
        job.start_wait();
        if ring {
            // fio_ioring_getevents: with sqthread_poll it never enters the kernel.
            return None;
        }
        (reap_call > 0).then_some(ThreadStep::sys(reap_call))
    }

    /// backend.c handle_thinktime with the queue empty: spin thinktime_spin, sleep the
    /// rest of thinktime, neither past the runtime.
    fn think(&mut self, j: usize) -> Option<ThreadStep> {
        let now = self.now;
        let job = &mut self.jobs[j];
        let t = job.fio_mut().thinktime()?;
        let left = job.end().map_or(u64::MAX, |e| e.saturating_sub(now));
        let spin = t.spin_ns.min(left);
        let sleep = t.ns.saturating_sub(spin).min(left - spin);
        if spin > 0 {
            job.enter_phase(JobPhase::ThinkSpin { sleep_ns: sleep });
            return Some(ThreadStep::Run {
                ns: spin,
                kind: SliceKind::Usr,
            });
        }
        if sleep > 0 {
            job.enter_phase(JobPhase::Pause);
            return Some(ThreadStep::Sleep { ns: sleep });
        }
        job.enter_phase(JobPhase::Start);
        None
    }

    /// The job is done: its logs close, its flow and helpers let go of it, exitall
    /// ends others, and its wave may be over.
    pub(crate) fn job_exit(&mut self, j: usize) -> ThreadStep {
        let now = self.now;
        let job = &mut self.jobs[j];
        job.enter_phase(JobPhase::Done);
        job.finished(now);
        job.fio_mut().finish(now);
        self.jobs_live -= 1;
        self.release_helpers(j);
        self.flow_exit(j);
        self.exit_terminates(j);
        self.leave_wave(j);
        ThreadStep::Exit
    }

    /// Job `j` is out of its stonewall wave: when the wave is over the next wave's jobs
    /// start (each not before its startdelay; one with wait_for when what it waits for
    /// has exited), and jobs waiting for `j` may start.
    pub(crate) fn leave_wave(&mut self, j: usize) {
        let now = self.now;
        let w = self.jobs[j].fio().wave() as usize;
        for next in self.fio.leave_wave(w) {
            for i in 0..self.fio.wave(next).len() {
                let jj = self.fio.wave(next)[i];
                if self.jobs[jj.ix()].phase() == JobPhase::Done || self.waits(jj.ix()) {
                    continue;
                }
                let at = now.max(self.jobs[jj.ix()].fio().startdelay_ns());
                self.q.push(at, Event::JobStart { job: jj });
            }
        }
        self.start_waiters(j);
    }

    /// Job `j` starts now (its startdelay passed or its wave began); a job exitall
    /// ended before it started never runs (backend.c run_threads: "never got a chance
    /// to start").
    pub(crate) fn start_job(&mut self, j: usize) {
        let now = self.now;
        if self.jobs[j].phase() == JobPhase::Done {
            return;
        }
        if self.jobs[j].fio().ctl().terminated() {
            self.exit_unstarted(j);
            return;
        }
        let window_start = self.window_start;
        let job = &mut self.jobs[j];
        job.start(now, window_start);
        if job.ramp_end() > now {
            self.q
                .push(job.ramp_end(), Event::JobRampEnd { job: JobId::new(j) });
        }
        let t = job.thread().ix();
        self.wake_thread(t, None);
        self.start_helpers(j);
    }

    /// A job's ramp_time ended: its statistics start from zero (libfio.c
    /// reset_all_stats).
    pub(crate) fn job_ramp_end(&mut self, j: usize) {
        let now = self.now;
        // What its CPU owes the job so far counts before the reset, as it always did.
        let c = self.threads[self.jobs[j].thread().ix()].cpu().ix();
        self.settle(c);
        self.jobs[j].reset_window(now);
    }
}

impl<O: Observer> Sim<'_, O> {
    /// What a spinning job's thread looks at (cpu.rs spin_check): whether it finds
    /// work, and whether it spins in user space (fio's own loops) or in the kernel.
    pub(crate) fn job_spin(&self, j: usize) -> (bool, SliceKind) {
        let job = &self.jobs[j];
        match job.phase() {
            JobPhase::Fio(FioPhase::FlowSpin) => (self.flow_found(j), SliceKind::Usr),
            JobPhase::Fio(FioPhase::RingSpin) => (job.enough_ready(), SliceKind::Usr),
            _ => match job.fio().ctl().role() {
                Role::SqThread { owner } => (self.sq_found(j, owner.ix()), SliceKind::Sys),
                _ => (
                    job.enough_ready()
                        || job
                            .queues()
                            .iter()
                            .any(|&q| self.queues[q.ix()].cqe_pending()),
                    SliceKind::Sys,
                ),
            },
        }
    }
}

impl Job {
    /// The most I/Os the job keeps in flight now: iodepth, or the latency target's
    /// depth (io_u.c queue_full: cur_depth >= latency_qd).
    pub(crate) fn depth_limit(&self) -> u32 {
        match self.fio().ctl().lat() {
            Some(l) => l.qd().min(self.iodepth()),
            None => self.iodepth(),
        }
    }
}
