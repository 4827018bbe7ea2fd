//! How completions come back to a job: the kernel completes a request (to the job's
//! event ring, to a SQPOLL thread's task_work, or to a thread blocked in a synchronous
//! command), the job's thread reaps what it polled itself, and the reap call copies
//! events out, where fio's clat ends and its statistics, latency checks and logs see
//! each I/O (io_u.c io_completed, account_io_completion).

use super::commands::Cmd;
use super::fio_ctl::{FioPhase, Role};
use super::ids::IoId;
use super::state::*;
use crate::observer::Observer;

impl<O: Observer> Sim<'_, O> {
    /// The job's thread reaps its queues' CQs itself, ringing each one's doorbell: a
    /// polled wait, or with `trylock_shared` the reap after submit, which takes only
    /// queues shared by several CPUs whose cq_lock is free. Returns the CQEs reaped and
    /// their CPU time.
    pub(crate) fn reap_own_queues(&mut self, j: usize, trylock_shared: bool) -> (u32, u64) {
        let t = self.jobs[j].thread().ix();
        let mut list = self.threads[t].take_reaping();
        let (mut n, mut ns) = (0, 0);
        for i in 0..self.jobs[j].queues().len() {
            let q = self.jobs[j].queues()[i].ix();
            let queue = &self.queues[q];
            let locked_out = trylock_shared && !queue.shared_lock_free();
            if locked_out || !queue.cqe_pending() {
                continue;
            }
            let c = self.threads[t].cpu().ix();
            let got = self.poll_queue(c, q, u32::MAX, &mut list);
            n += got;
            ns += u64::from(got) * self.queues[q].reap_ns();
            self.ring_cq_doorbell(q);
        }
        self.threads[t].put_reaping(list);
        (n, ns)
    }

    /// Completes the CQEs the job's thread reaped itself (polling, reap after submit).
    pub(crate) fn finish_thread_reap(&mut self, c: usize, j: usize) -> u64 {
        let t = self.jobs[j].thread().ix();
        let mut list = self.threads[t].take_reaping();
        let mut woke = 0;
        for &io in &list {
            let rec = self.ios[io.ix()];
            if rec.job().ix() == j && self.jobs[j].hybrid() {
                let rt = self.now - rec.submitted();
                self.jobs[j].observe_completion(rt);
            }
            if let Some(v) = self.queues[rec.queue().ix()].vector()
                && self.measuring
            {
                self.vectors[v.ix()].count_completions(1);
            }
            if self.complete_io(io, c) {
                woke += 1;
            }
        }
        list.clear();
        self.threads[t].put_reaping(list);
        woke
    }

    /// The kernel completed `io` (blk_mq_end_request → aio_complete / io_uring CQE):
    /// it is ready for the job's reap. Wakes the job if enough are ready. Returns whether
    /// it woke a thread.
    #[inline(always)]
    pub(crate) fn complete_io(&mut self, io: IoId, c: usize) -> bool {
        self.totals.completed(1);
        let rec = self.ios[io.ix()];
        let d = self.queues[rec.queue().ix()].device().ix();
        let life = self.now - rec.submitted();
        if let Cmd::Trim { .. } = rec.cmd() {
            // diskstats counts discards apart from reads and writes.
            self.fio
                .disk_mut(d)
                .complete_other(self.now, self.measuring);
        } else {
            self.fio.disk_mut(d).complete(
                self.now,
                self.measuring,
                usize::from(!rec.read()),
                u64::from(rec.bytes()),
                life,
            );
        }
        let j = rec.job().ix();
        if (self.jobs[j].fio().ctl().role() != Role::Main
            || self.jobs[j].fio().ctl().sync_io().is_some())
            && let Some(woke) = self.complete_special(io, j, c)
        {
            return woke;
        }
        let job = &mut self.jobs[j];
        job.io_completed(io);
        let enough = job.enough_ready();
        let t = job.thread().ix();
        if job.phase() == JobPhase::Wait && enough {
            if self.threads[t].state() == TState::Blocked {
                self.wake_thread(t, Some(c));
                return true;
            }
        } else if job.polled() && enough && self.threads[t].spinning() {
            // Reaped for it by another poller of a shared queue: it sees it one poll later.
            self.poke_thread(t);
        }
        false
    }

    /// A completion that does not go to the job's event ring: a synchronous command's
    /// (the blocked caller returns) or a SQPOLL ring's (its thread runs the task_work).
    /// None: the ordinary path.
    #[inline(never)]
    fn complete_special(&mut self, io: IoId, j: usize, c: usize) -> Option<bool> {
        let t = self.jobs[j].thread().ix();
        if self.jobs[j].fio().ctl().sync_io() == Some(io) {
            let job = &mut self.jobs[j];
            job.fio_mut().ctl_mut().sync_completed();
            if job.phase() == JobPhase::Fio(FioPhase::SyncWait)
                && self.threads[t].state() == TState::Blocked
            {
                self.wake_thread(t, Some(c));
                return Some(true);
            }
            return Some(false);
        }
        if let Role::SqThread { .. } = self.jobs[j].fio().ctl().role() {
            // io_req_task_work_add: the SQ thread completes it (its tctx), waking it if
            // it sleeps.
            self.jobs[j].io_completed(io);
            match self.threads[t].state() {
                TState::Blocked => {
                    self.wake_thread(t, Some(c));
                    return Some(true);
                }
                _ => {
                    if self.threads[t].spinning() {
                        self.poke_thread(t);
                    }
                    return Some(false);
                }
            }
        }
        None
    }

    /// The job copies out `n` events: fio's clat ends here. An offload worker's go to its
    /// job's statistics and free its io_us (a wake-up of the job if it waits for one).
    /// Returns the wake-ups done.
    pub(crate) fn collect(&mut self, j: usize, n: u32) -> u64 {
        let now = self.now;
        let (owner, counted, elapsed) = self.reap_clock(j);
        let mut got = 0;
        for _ in 0..n {
            let Some(io) = self.jobs[j].reap_ready() else {
                break;
            };
            got += 1;
            self.reap_io(j, owner, io, counted, elapsed);
        }
        self.count_reap_call(owner, counted, got);
        if self.obs.wants_counters() {
            let depth = f64::from(self.jobs[j].outstanding());
            self.obs.counter(now, "iodepth", j, depth);
        }
        if owner != j {
            return self.worker_done(j, owner, got);
        }
        0
    }

    /// The synchronous command returned: fio accounts it as completed at once (an
    /// offload worker's for its job, which gets the io_u back). Returns the wake-ups
    /// done.
    pub(crate) fn collect_sync(&mut self, j: usize) -> u64 {
        let Some(io) = self.jobs[j].fio_mut().ctl_mut().sync_returned() else {
            return 0;
        };
        let (owner, counted, elapsed) = self.reap_clock(j);
        self.reap_io(j, owner, io, counted, elapsed);
        self.count_reap_call(owner, counted, 1);
        if owner != j {
            return self.worker_done(j, owner, 1);
        }
        0
    }

    /// Who accounts job `j`'s completions now (an offload worker's go to its job),
    /// whether they fall in the measured window, and the batch's log time.
    #[inline(always)]
    fn reap_clock(&mut self, j: usize) -> (usize, bool, u64) {
        let now = self.now;
        let owner = self.stats_owner(j);
        let counted = self.measuring && now >= self.jobs[owner].ramp_end();
        let elapsed = if counted {
            self.jobs[owner].fio_mut().completing(now)
        } else {
            0
        };
        (owner, counted, elapsed)
    }

    /// Job `j` copied out `io`: its slot is freed and `owner` accounts it.
    #[inline(always)]
    fn reap_io(&mut self, j: usize, owner: usize, io: IoId, counted: bool, elapsed: u64) {
        let rec = self.ios[io.ix()];
        self.free_ios.push(io);
        self.totals.reaped();
        self.jobs[j].reaped(1);
        self.jobs[owner].fio_mut().io_reaped();
        self.account_io(owner, rec, counted, elapsed);
    }

    /// One reap call that returned `got` events, in fio's complete-depth histogram.
    #[inline(always)]
    fn count_reap_call(&mut self, owner: usize, counted: bool, got: u32) {
        if counted {
            let job = &mut self.jobs[owner];
            job.fio_mut().io_u_mark_complete(got);
        }
    }

    /// One completed I/O in job `j`'s statistics (in the window: `counted`, with the
    /// batch's log time `elapsed`), and the checks fio makes on its latency.
    #[inline(always)]
    fn account_io(&mut self, j: usize, rec: Io, counted: bool, elapsed: u64) {
        let now = self.now;
        let (slat, clat, lat) = (
            rec.submitted() - rec.start(),
            now - rec.submitted(),
            now - rec.start(),
        );
        let bytes = u64::from(rec.bytes());
        let ddir = rec.cmd().ddir();
        let job = &mut self.jobs[j];
        if counted {
            job.record_io(elapsed, ddir, bytes, (slat, clat, lat));
        }
        if job.fio().ctl().checks_completions() {
            self.latency_checks(j, ddir, bytes, clat, lat);
        }
    }

    /// account_io_completion's checks: max_latency and the latency target on the I/O's
    /// total latency (lat), and the counters the minimum-rate and steady-state checks
    /// read.
    #[inline(never)]
    fn latency_checks(&mut self, j: usize, ddir: usize, bytes: u64, clat: u64, lat: u64) {
        let now = self.now;
        self.jobs[j]
            .fio_mut()
            .ctl_mut()
            .account_io_completion(ddir, bytes, clat, lat, now);
    }
}
