//! The fio job thread: fill the queue to iodepth in batches of iodepth_batch_submit,
//! then reap at least iodepth_batch_complete_min (1 when it is 0 and the queue is full)
//! and at most iodepth_batch_complete_max, as fio's do_io / wait_for_completions do.
//! Interrupt-driven jobs sleep until enough completions are posted (aio read_events,
//! io_cqring_wait); polled jobs (hipri) spin on their completion queues, hybrid ones
//! first sleep half the fastest completion time seen. Rate limits and think time
//! quiesce the queue and sleep (io_u.c rate_ddir, backend.c handle_thinktime); jobs
//! start after their startdelay or stonewall wave (backend.c run_threads).

use super::fio_job::{Planned, calls_bucket, depth_bucket};
use super::ids::{IoId, JobId, QueueId};
use super::state::*;
use crate::engine::Event;
use crate::observer::{Observer, SliceKind};
use irqlab_core::nvme::{NVME_CMD_READ, NVME_CMD_WRITE, SQE_HINT_BARRIER, Sqe};
use irqlab_fio::IoEngine;

impl<O: Observer> Sim<'_, O> {
    /// (submit call, submit per I/O, reap call, reap per I/O) of job `j`'s engine. The
    /// per-I/O reap includes io_uring's task_work completion unless the ring polls
    /// (io_uring/rw.c: io_complete_rw queues task_work, io_complete_rw_iopoll does not).
    fn engine_costs(&self, j: usize) -> (u64, u64, u64, u64) {
        let c = match &self.jobs[j].submitter {
            Some(sub) => sub,
            None => match super::build::syscall_costs(&self.engine, self.jobs[j].engine) {
                Some(c) => c,
                // fio's null engine: no syscall, no kernel work.
                None => return (0, 0, 0, 0),
            },
        };
        // POSIX aio: glibc's helper threads each make one pread/pwrite (its syscall and
        // doorbell) and wake the job's thread when it returns; the job's own calls
        // (aio_read, aio_suspend) stay in user space until it sleeps.
        if self.jobs[j].engine == IoEngine::PosixAio {
            return (
                0,
                c.submit_call_ns + c.submit_io_ns + self.costs.sq_doorbell,
                0,
                c.reap_call_ns + c.reap_io_ns + self.costs.wakeup,
            );
        }
        (
            c.submit_call_ns,
            c.submit_io_ns,
            c.reap_call_ns,
            c.reap_io_ns
                + if self.jobs[j].polled {
                    0
                } else {
                    c.task_work_io_ns
                },
        )
    }

    /// The job's thread finished its step on CPU `c`: what next? One arm per phase of
    /// fio's loop; an arm returns None when the next phase starts at once.
    pub(crate) fn job_advance(&mut self, c: usize, j: usize) -> ThreadStep {
        let (submit_call, submit_io, reap_call, reap_io) = self.engine_costs(j);
        loop {
            let next = match self.jobs[j].phase {
                JobPhase::Start => self.decide(j, reap_call),
                JobPhase::Usr { k } => {
                    self.jobs[j].phase = JobPhase::Submit { k };
                    // The batch's doorbell (POSIX aio's are in its per-I/O cost; the null
                    // engine rings none).
                    let doorbell = match self.jobs[j].engine {
                        IoEngine::Null | IoEngine::PosixAio => 0,
                        _ => self.sq_doorbell_ns(j),
                    };
                    let ns = submit_call + u64::from(k) * submit_io + doorbell;
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
                            self.jobs[j].phase = JobPhase::TagWait { k: k - sent };
                            return ThreadStep::sys(ns);
                        }
                        self.jobs[j].phase = JobPhase::TagWait { k: k - sent };
                        return ThreadStep::Block;
                    }
                    // virtio-blk: the notify exit, when the batch asked for a kick.
                    if let Some(ns) = self.kick_step(j) {
                        self.jobs[j].phase = JobPhase::Kick;
                        return ThreadStep::sys(ns);
                    }
                    // Ming Lei's 2019 patch: after bd->last on a queue shared by several
                    // CPUs, spin_trylock the CQ lock and reap what is there.
                    let (n, reap_ns) = if self.policy.reap_after_submit && !self.jobs[j].polled {
                        self.reap_own_queues(j, true)
                    } else {
                        (0, 0)
                    };
                    if n > 0 {
                        self.jobs[j].phase = JobPhase::SubmitReap;
                        Some(ThreadStep::sys(reap_ns + self.costs.cq_doorbell))
                    } else {
                        self.decide(j, reap_call)
                    }
                }
                JobPhase::SubmitReap => {
                    let woke = self.finish_thread_reap(c, j);
                    if woke > 0 {
                        // The waker's cost of the wake-ups it did for other jobs.
                        self.jobs[j].phase = JobPhase::Start;
                        Some(ThreadStep::sys(woke * self.costs.wakeup))
                    } else {
                        self.decide(j, reap_call)
                    }
                }
                JobPhase::ReapCall | JobPhase::Wait => self.wait_for_events(j, reap_io),
                JobPhase::HybridSleep => {
                    self.jobs[j].phase = JobPhase::Poll;
                    None
                }
                JobPhase::ThinkSpin { sleep_ns } => {
                    let job = &mut self.jobs[j];
                    if sleep_ns > 0 {
                        job.phase = JobPhase::Pause;
                        Some(ThreadStep::Sleep { ns: sleep_ns })
                    } else {
                        job.phase = JobPhase::Start;
                        None
                    }
                }
                JobPhase::Pause => {
                    self.jobs[j].phase = JobPhase::Start;
                    None
                }
                JobPhase::Kick => {
                    self.kick_done(j);
                    self.decide(j, reap_call)
                }
                JobPhase::Collect { n } => {
                    self.collect(j, n);
                    self.decide(j, reap_call)
                }
                JobPhase::Poll => self.poll_step(j),
                JobPhase::PollReap => {
                    self.finish_thread_reap(c, j);
                    let job = &mut self.jobs[j];
                    job.phase = if job.ready.len() as u32 >= job.waiting_for {
                        JobPhase::ReapCall
                    } else {
                        JobPhase::Poll
                    };
                    None
                }
                JobPhase::Done => Some(ThreadStep::Exit),
            };
            if let Some(step) = next {
                return step;
            }
        }
    }

    /// The reap call (io_getevents, io_uring_enter with min_complete): collect when
    /// enough completions are ready; otherwise block until they are, or poll (a hybrid
    /// ring first sleeps).
    fn wait_for_events(&mut self, j: usize, reap_io: u64) -> Option<ThreadStep> {
        let (now, hrtimer) = (self.now, self.costs.hrtimer);
        let job = &mut self.jobs[j];
        let ready = job.ready.len() as u32;
        if ready >= job.waiting_for {
            let n = ready.min(job.complete_max).max(1);
            job.phase = JobPhase::Collect { n };
            job.waiting_for = 0;
            let ns = u64::from(n) * reap_io;
            return (ns > 0).then_some(ThreadStep::sys(ns));
        }
        if !job.polled {
            job.phase = JobPhase::Wait;
            return Some(ThreadStep::Block);
        }
        // io_uring hybrid IOPOLL: sleep half the fastest completion.
        if job.hybrid
            && let Some(wake_at) = job.hybrid_poll.sleep_until(now, job.last_submit, hrtimer)
        {
            job.phase = JobPhase::HybridSleep;
            return Some(ThreadStep::Sleep { ns: wake_at - now });
        }
        job.phase = JobPhase::Poll;
        None
    }

    /// One look at the job's completion queues while it polls: reap what is there, or
    /// spin until a CQE appears.
    fn poll_step(&mut self, j: usize) -> Option<ThreadStep> {
        // Another poller of a shared queue may have reaped our completions.
        let job = &mut self.jobs[j];
        if job.ready.len() as u32 >= job.waiting_for {
            job.phase = JobPhase::ReapCall;
            return None;
        }
        let (n, reap_ns) = self.reap_own_queues(j, false);
        if n == 0 {
            return Some(ThreadStep::Spin);
        }
        self.jobs[j].phase = JobPhase::PollReap;
        Some(ThreadStep::sys(reap_ns + self.costs.cq_doorbell))
    }

    /// The top of fio's loop: stop, think, submit a batch (as the rate clock allows),
    /// or reap.
    fn decide(&mut self, j: usize, reap_call: u64) -> Option<ThreadStep> {
        let now = self.now;
        let job = &mut self.jobs[j];
        let limit_left = job.io_limit.map(|l| l.saturating_sub(job.issued));
        let stopping =
            job.end.is_some_and(|e| now >= e) || limit_left == Some(0) || job.fio.bytes_done();
        if stopping {
            if job.outstanding == 0 {
                return Some(self.job_exit(j));
            }
            job.waiting_for = job.outstanding;
        } else if job.fio.think_due() {
            // handle_thinktime: io_u_quiesce (reap one or more at a time until nothing
            // is in flight), then spin and sleep.
            if job.outstanding > 0 {
                job.waiting_for = 1;
            } else {
                return self.think(j);
            }
        } else if job.outstanding < job.iodepth {
            let mut k = job.batch_submit.min(job.iodepth - job.outstanding);
            if let Some(left) = limit_left {
                k = k.min(left.min(u64::from(u32::MAX)) as u32);
            }
            match self.plan_batch(j, k) {
                Ok(k) => {
                    let job = &mut self.jobs[j];
                    job.batch_start = now;
                    job.phase = JobPhase::Usr { k };
                    let ns = u64::from(k) * job.usr_io;
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
                    if job.outstanding > 0 {
                        job.waiting_for = 1;
                    } else {
                        let until = due.min(job.end.unwrap_or(u64::MAX));
                        job.phase = JobPhase::Pause;
                        return Some(ThreadStep::Sleep {
                            ns: until.saturating_sub(now).max(1),
                        });
                    }
                }
            }
        } else {
            // wait_for_completions(): a full queue must reap at least one.
            job.waiting_for = if job.complete_min == 0 {
                1
            } else {
                job.complete_min.min(job.outstanding)
            };
        }
        let job = &mut self.jobs[j];
        job.phase = JobPhase::ReapCall;
        job.hybrid_poll.start_wait();
        (reap_call > 0).then_some(ThreadStep::sys(reap_call))
    }

    /// Up to `k` I/Os the job issues now (directions, sizes), or when the rate clock lets
    /// the first one go.
    fn plan_batch(&mut self, j: usize, k: u32) -> Result<u32, u64> {
        let now = self.now;
        let f = &mut self.jobs[j].fio;
        f.batch.clear();
        while (f.batch.len() as u32) < k && !f.bytes_done() {
            match f.next_io(now) {
                Ok(p) => f.batch.push(p),
                Err(due) if f.batch.is_empty() => return Err(due),
                Err(_) => break,
            }
        }
        Ok(f.batch.len() as u32)
    }

    /// backend.c handle_thinktime with the queue empty: spin thinktime_spin, sleep the
    /// rest of thinktime, neither past the runtime.
    fn think(&mut self, j: usize) -> Option<ThreadStep> {
        let now = self.now;
        let job = &mut self.jobs[j];
        job.fio.stalling = false;
        let t = job.fio.think?;
        let left = job.end.map_or(u64::MAX, |e| e.saturating_sub(now));
        let spin = t.spin_ns.min(left);
        let sleep = t.ns.saturating_sub(spin).min(left - spin);
        if spin > 0 {
            job.phase = JobPhase::ThinkSpin { sleep_ns: sleep };
            return Some(ThreadStep::Run {
                ns: spin,
                kind: SliceKind::Usr,
            });
        }
        if sleep > 0 {
            job.phase = JobPhase::Pause;
            return Some(ThreadStep::Sleep { ns: sleep });
        }
        job.phase = JobPhase::Start;
        None
    }

    /// The job is done: its logs close, and when its stonewall wave is over the next
    /// wave's jobs start (each not before its startdelay).
    fn job_exit(&mut self, j: usize) -> ThreadStep {
        let now = self.now;
        let job = &mut self.jobs[j];
        job.phase = JobPhase::Done;
        job.finished_at = now;
        job.fio.finish(now);
        self.jobs_live -= 1;
        let w = job.fio.wave as usize;
        self.fio.wave_left[w] -= 1;
        while self.fio.current_wave < self.fio.waves.len()
            && self.fio.wave_left[self.fio.current_wave] == 0
        {
            self.fio.current_wave += 1;
            if let Some(next) = self.fio.waves.get(self.fio.current_wave) {
                for &jj in next {
                    let at = now.max(self.jobs[jj.ix()].fio.startdelay_ns);
                    self.q.push(at, Event::JobStart { job: jj });
                }
            }
        }
        ThreadStep::Exit
    }

    /// Job `j` starts now (its startdelay passed or its wave began).
    pub(crate) fn start_job(&mut self, j: usize) {
        let now = self.now;
        let window_start = self.window_start;
        let job = &mut self.jobs[j];
        job.fio.start(now, window_start);
        job.ramp_end = job.fio.measure_from;
        job.end = job.fio.total_ns.map(|t| now + t);
        if job.ramp_end > now {
            self.q
                .push(job.ramp_end, Event::JobRampEnd { job: JobId::new(j) });
        }
        let t = job.thread.ix();
        self.wake_thread(t, None);
    }

    /// A job's ramp_time ended: its statistics start from zero (libfio.c
    /// reset_all_stats).
    pub(crate) fn job_ramp_end(&mut self, j: usize) {
        let now = self.now;
        // What its CPU owes the job so far counts before the reset, as it always did.
        let c = self.threads[self.jobs[j].thread.ix()].cpu.ix();
        self.settle(c);
        let job = &mut self.jobs[j];
        job.read = DirStats::default();
        job.write = DirStats::default();
        job.usr = 0;
        job.sys = 0;
        job.ctx = 0;
        job.migrations = 0;
        job.depth_level = [0; 7];
        job.fio.reset_window(now);
    }

    /// The submit call ends: the SQEs are in the SQ and the doorbell is written
    /// (bd->last), so the controller fetches them after the MMIO flight. Returns how
    /// many of the batch's `k` went; the rest wait for a tag of their queue.
    fn submit_batch(&mut self, j: usize, k: u32) -> u32 {
        let now = self.now;
        if self.jobs[j].engine == IoEngine::Null {
            self.complete_null(j, k);
            return k;
        }
        // The queues this batch rang, and how many SQEs each fetch brings.
        let mut touched: [(Option<QueueId>, u32); 4] = [(None, 0); 4];
        let mut sent = 0;
        for i in 0..k {
            let job = &mut self.jobs[j];
            let q = job.queues[job.next_file];
            // The tag set holds one entry less than the ring (nvme: q_depth - 1).
            if self.queues[q.ix()].tags.free() <= 1 {
                let t = self.jobs[j].thread;
                self.queues[q.ix()].tag_waiters.push(t);
                break;
            }
            let job = &mut self.jobs[j];
            job.next_file = (job.next_file + 1) % job.queues.len();
            let next_q = job.queues[job.next_file];
            let planned = job.fio.batch[i as usize];
            // Each POSIX aio helper thread's pread is a submission of its own. A request
            // after which the next finds no tag ends the dispatch too: blk-mq then calls
            // the driver's commit_rqs (virtio_commit_rqs kicks), as bd->last would.
            let next_starved = i + 1 < k && {
                let taken = usize::from(next_q == q);
                self.queues[next_q.ix()].tags.free().saturating_sub(taken) <= 1
            };
            let last =
                i + 1 == k || next_q != q || job.engine == IoEngine::PosixAio || next_starved;
            sent += 1;
            if !self.queue_command(j, q, planned, last) {
                continue;
            }
            if let Some(slot) = touched.iter_mut().find(|s| s.0.is_none_or(|t| t == q)) {
                slot.0 = Some(q);
                slot.1 += 1;
            } else {
                self.schedule_fetch(q, 1);
            }
        }
        for &(q, n) in &touched {
            if let Some(q) = q {
                self.schedule_fetch(q, n);
            }
        }
        let job = &mut self.jobs[j];
        if sent < k {
            // What is left of the batch goes when a tag is free.
            job.fio.batch.drain(..sent as usize);
        }
        let k = sent;
        job.outstanding += k;
        job.issued += u64::from(k);
        job.fio.issues += u64::from(k);
        if self.obs.wants_counters() {
            let depth = f64::from(job.outstanding);
            self.obs.counter(now, "iodepth", j, depth);
        }
        job.last_submit = now;
        self.totals.submitted += u64::from(k);
        if self.measuring {
            // io_u.c: io_u_mark_depth at commit, io_u_mark_submit per submit call.
            job.depth_level[depth_bucket(job.outstanding)] += u64::from(k);
            job.fio.submit_hist[calls_bucket(k)] += 1;
            job.fio.submit_calls += 1;
        }
        sent
    }

    /// fio's null engine (engines/null.c): the batch is queued and completed at once, with
    /// no device and no interrupt; the job reaps it as it would a device's.
    fn complete_null(&mut self, j: usize, k: u32) {
        let now = self.now;
        let start = self.jobs[j].batch_start;
        for i in 0..k {
            let planned = self.jobs[j].fio.batch[i as usize];
            let rec = Io {
                job: JobId::new(j),
                // No queue: the null engine's I/Os never reach one.
                queue: QueueId::new(0),
                tag: 0,
                read: planned.ddir == 0,
                bytes: planned.bytes as u32,
                hints: 0,
                start,
                submitted: now,
                unit: 0,
            };
            let io = match self.free_ios.pop() {
                Some(io) => {
                    self.ios[io.ix()] = rec;
                    io
                }
                None => {
                    self.ios.push(rec);
                    IoId::new(self.ios.len() - 1)
                }
            };
            self.jobs[j].ready.push_back(io);
        }
        let job = &mut self.jobs[j];
        job.outstanding += k;
        job.issued += u64::from(k);
        job.fio.issues += u64::from(k);
        job.last_submit = now;
        self.totals.submitted += u64::from(k);
        self.totals.completed += u64::from(k);
        if self.measuring {
            job.depth_level[depth_bucket(job.outstanding)] += u64::from(k);
            job.fio.submit_hist[calls_bucket(k)] += 1;
            job.fio.submit_calls += 1;
        }
    }

    /// Job `j` puts one command into queue `q`'s SQ: a free tag, the I/O's record and its
    /// SQE (`last`: bd->last, the SQE hint that closes a batch). False when no tag is free.
    fn queue_command(&mut self, j: usize, q: QueueId, planned: Planned, last: bool) -> bool {
        let now = self.now;
        let read = planned.ddir == 0;
        let hints = if last { SQE_HINT_BARRIER } else { 0 };
        let start = self.jobs[j].batch_start;
        if self.queues[q.ix()].tags.free() == 0 {
            debug_assert!(false, "no free tag: the depth check failed");
            return false;
        }
        // The request's slot first (a freed one, else a new one at the end), then its tag
        // (blk_mq_get_tag), which the record carries.
        let io = self
            .free_ios
            .pop()
            .unwrap_or_else(|| IoId::new(self.ios.len()));
        let tag = self.queues[q.ix()]
            .tags
            .alloc(io)
            .expect("a free tag was checked");
        let rec = Io {
            job: JobId::new(j),
            queue: q,
            tag,
            read,
            bytes: planned.bytes as u32,
            hints,
            start,
            submitted: now,
            unit: 0,
        };
        if io.ix() == self.ios.len() {
            self.ios.push(rec);
        } else {
            self.ios[io.ix()] = rec;
        }
        let queue = &mut self.queues[q.ix()];
        let d = queue.device.ix();
        self.fio.disks[d].submit(now, self.measuring);
        let _ = queue.qp.submit(
            Sqe {
                command_id: tag,
                opcode: if read { NVME_CMD_READ } else { NVME_CMD_WRITE },
                hints,
                data: io.ix() as u32,
            },
            last,
        );
        if self.costs.has_virtio && queue.virtio.is_some() {
            self.virtio_queue_rq(j, q.ix(), last);
        }
        true
    }

    /// The SQ tail doorbell reaches the device; its fetch engine serves doorbells in
    /// arrival order, one at a time when it has an occupancy (`fetch_busy_ns`).
    fn schedule_fetch(&mut self, q: QueueId, count: u32) {
        if self.costs.has_virtio && self.queues[q.ix()].virtio.is_some() {
            // The host thread pops the avail ring itself (model/virtio.rs).
            return;
        }
        let d = self.queues[q.ix()].device.ix();
        let dev = &mut self.devices[d];
        let arrival = self.now + self.costs.mmio_flight;
        let start = if dev.fetch_busy_ns > 0 {
            let start = arrival.max(dev.fetch_free_at);
            dev.fetch_free_at = start + dev.fetch_busy_ns;
            start
        } else {
            arrival
        };
        self.q
            .push(start + dev.fetch_ns, Event::SqFetched { queue: q, count });
    }

    /// The job's thread reaps its queues' CQs itself, ringing each one's doorbell: a
    /// polled wait, or with `trylock_shared` the reap after submit, which takes only
    /// queues shared by several CPUs whose cq_lock is free. Returns the CQEs reaped and
    /// their CPU time.
    fn reap_own_queues(&mut self, j: usize, trylock_shared: bool) -> (u32, u64) {
        let t = self.jobs[j].thread.ix();
        let mut list = std::mem::take(&mut self.threads[t].reaping);
        let (mut n, mut ns) = (0, 0);
        for i in 0..self.jobs[j].queues.len() {
            let q = self.jobs[j].queues[i].ix();
            let queue = &self.queues[q];
            let locked_out = trylock_shared && (!queue.shared || queue.cq_locked);
            if locked_out || !queue.qp.cqe_pending() {
                continue;
            }
            let c = self.threads[t].cpu.ix();
            let got = self.poll_queue(c, q, u32::MAX, &mut list);
            n += got;
            ns += u64::from(got) * self.queues[q].reap_ns();
            self.ring_cq_doorbell(q);
        }
        self.threads[t].reaping = list;
        (n, ns)
    }

    /// Completes the CQEs the job's thread reaped itself (polling, reap after submit).
    fn finish_thread_reap(&mut self, c: usize, j: usize) -> u64 {
        let t = self.jobs[j].thread.ix();
        let mut list = std::mem::take(&mut self.threads[t].reaping);
        let mut woke = 0;
        for &io in &list {
            let rec = self.ios[io.ix()];
            if rec.job.ix() == j && self.jobs[j].hybrid {
                let rt = self.now - rec.submitted;
                self.jobs[j].hybrid_poll.observe(rt);
            }
            if let Some(v) = self.queues[rec.queue.ix()].vector
                && self.measuring
            {
                self.vectors[v.ix()].completions += 1;
            }
            if self.complete_io(io, c) {
                woke += 1;
            }
        }
        list.clear();
        self.threads[t].reaping = list;
        woke
    }

    /// The kernel completed `io` (blk_mq_end_request → aio_complete / io_uring CQE):
    /// it is ready for the job's reap. Wakes the job if enough are ready. Returns whether
    /// it woke a thread.
    #[inline(always)]
    pub(crate) fn complete_io(&mut self, io: IoId, c: usize) -> bool {
        self.totals.completed += 1;
        let rec = self.ios[io.ix()];
        let d = self.queues[rec.queue.ix()].device.ix();
        self.fio.disks[d].complete(
            self.now,
            self.measuring,
            usize::from(!rec.read),
            u64::from(rec.bytes),
            self.now - rec.submitted,
        );
        let j = rec.job.ix();
        let job = &mut self.jobs[j];
        job.ready.push_back(io);
        let enough = job.ready.len() as u32 >= job.waiting_for;
        let t = job.thread.ix();
        if job.phase == JobPhase::Wait && enough {
            if self.threads[t].state == TState::Blocked {
                self.wake_thread(t, Some(c));
                return true;
            }
        } else if job.polled && enough && self.threads[t].spinning {
            // Reaped for it by another poller of a shared queue: it sees it one poll later.
            self.poke_thread(t);
        }
        false
    }

    /// The job copies out `n` events: fio's clat ends here.
    fn collect(&mut self, j: usize, n: u32) {
        let now = self.now;
        let counted = self.measuring && now >= self.jobs[j].ramp_end;
        let elapsed = if counted {
            self.jobs[j].fio.completing(now)
        } else {
            0
        };
        let mut got = 0;
        for _ in 0..n {
            let Some(io) = self.jobs[j].ready.pop_front() else {
                break;
            };
            got += 1;
            let rec = self.ios[io.ix()];
            self.free_ios.push(io);
            self.totals.reaped += 1;
            let job = &mut self.jobs[j];
            job.outstanding -= 1;
            job.fio.completions += 1;
            if counted {
                let (slat, clat, lat) = (
                    rec.submitted - rec.start,
                    now - rec.submitted,
                    now - rec.start,
                );
                let bytes = u64::from(rec.bytes);
                let dir = if rec.read {
                    &mut job.read
                } else {
                    &mut job.write
                };
                dir.record(bytes, slat, clat, lat);
                job.fio
                    .completed(elapsed, usize::from(!rec.read), bytes, slat, clat, lat);
            }
        }
        let job = &mut self.jobs[j];
        if counted {
            job.fio.complete_hist[calls_bucket(got)] += 1;
            job.fio.complete_calls += 1;
        }
        if self.obs.wants_counters() {
            let depth = f64::from(self.jobs[j].outstanding);
            self.obs.counter(now, "iodepth", j, depth);
        }
    }
}
