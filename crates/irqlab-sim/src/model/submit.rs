//! How a job's batch goes out: the I/Os it plans (io_u.c get_io_u, with flow control,
//! zoned write pointers and synchronous trims cutting the batch), the submit call's
//! end (the SQEs in the SQ, the doorbell), the null engine's and zoned trims' local
//! completions, and the controller's fetch after the doorbell.

use super::commands::Cmd;
use super::fio_ctl::{AfterQuiesce, FioPhase};
use super::fio_job::Planned;
use super::ids::{IoId, JobId, QueueId};
use super::state::*;
use super::zbd::ZoneChoice;
use crate::engine::Event;
use crate::observer::Observer;
use irqlab_core::nvme::{NVME_CMD_READ, NVME_CMD_WRITE, SQE_HINT_BARRIER, Sqe};
use irqlab_fio::IoEngine;

/// NVMe opcodes of the commands besides read and write (NVMe base specification, NVM
/// command set: Write Uncorrectable 04h, Write Zeroes 08h, Dataset Management 09h,
/// Verify 0Ch).
fn opcode(cmd: Cmd) -> u8 {
    match cmd {
        Cmd::Read => NVME_CMD_READ,
        Cmd::Write => NVME_CMD_WRITE,
        Cmd::WriteUncor => 0x04,
        Cmd::WriteZeroes => 0x08,
        Cmd::Trim { .. } => 0x09,
        Cmd::Verify => 0x0c,
    }
}

impl<O: Observer> Sim<'_, O> {
    /// Up to `k` I/Os the job issues now (directions, sizes), or when the rate clock lets
    /// the first one go.
    pub(crate) fn plan_batch(&mut self, j: usize, k: u32) -> Result<u32, u64> {
        let c = self.jobs[j].fio().ctl();
        if c.flow().is_some() || c.zones().is_some() || c.sync_trims() || c.holds() {
            return self.plan_batch_held(j, k);
        }
        let now = self.now;
        let f = self.jobs[j].fio_mut();
        f.clear_batch();
        while (f.batch().len() as u32) < k && !f.bytes_done() {
            match f.next_io(now) {
                Ok(p) => f.queue_io(p),
                Err(due) if f.batch().is_empty() => return Err(due),
                Err(_) => break,
            }
        }
        Ok(f.batch().len() as u32)
    }

    /// plan_batch for a job whose batch another mechanism may cut: flow control checks
    /// every I/O (flow.c: once per pass of fio's loop), a zoned write may need its zone
    /// reset after a quiesce (zbd_adjust_block), and a trim an async engine makes
    /// through an ioctl goes alone (its queue() returns FIO_Q_BUSY while others wait).
    fn plan_batch_held(&mut self, j: usize, k: u32) -> Result<u32, u64> {
        let now = self.now;
        self.jobs[j].fio_mut().clear_batch();
        loop {
            let f = self.jobs[j].fio_mut();
            if f.batch().len() as u32 >= k || f.bytes_done() && !f.ctl().holds() {
                break;
            }
            let fresh = !f.ctl().holds();
            if fresh && !f.batch().is_empty() && self.flow_holds(j) {
                break;
            }
            let f = self.jobs[j].fio_mut();
            let mut p = match f.ctl_mut().take_held() {
                Some(p) => p,
                None => match f.next_io(now) {
                    Ok(p) => p,
                    Err(due) if f.batch().is_empty() => return Err(due),
                    Err(_) => break,
                },
            };
            if fresh {
                self.flow_issue(j);
            }
            if self.jobs[j].fio().ctl().zones().is_some() && !self.jobs[j].queues().is_empty() {
                let job = &self.jobs[j];
                let q = job.queue_ahead(job.fio().batch().len());
                let device = self.queues[q.ix()].device().ix();
                if !self.zoned_io(j, device, &mut p) {
                    break;
                }
            }
            let f = self.jobs[j].fio_mut();
            let sync_trim = f.ctl().is_sync_trim(&p);
            if sync_trim && !f.batch().is_empty() {
                f.ctl_mut().hold(p);
                break;
            }
            f.queue_io(p);
            if sync_trim {
                break;
            }
        }
        Ok(self.jobs[j].fio().batch().len() as u32)
    }

    /// A zoned job's I/O `p` on `device`: a write goes to a zone's write pointer (after a
    /// reset, at once when nothing is in flight, else after a quiesce: false, the I/O
    /// held), a trim resets a zone and completes without a command.
    fn zoned_io(&mut self, j: usize, device: usize, p: &mut Planned) -> bool {
        let nothing_out = self.jobs[j].outstanding() == 0 && self.jobs[j].fio().batch().is_empty();
        let f = self.jobs[j].fio_mut();
        let (random, min_bs) = (f.random(), f.min_bs(1));
        let (Some(jz), Some(map)) = (f.ctl_mut().zones_mut(), self.fio.zone_map_mut(device)) else {
            return true;
        };
        if p.ddir == 2 {
            // zbd_do_io_u_trim: a trim resets a zone; a conventional namespace gets no
            // command.
            map.trim_zone(jz, random);
            p.local = true;
            return true;
        }
        if p.ddir != 1 {
            return true;
        }
        let choice = match map.choose(jz, p.bytes, min_bs, random) {
            ZoneChoice::Reset { zone } if nothing_out => {
                // Nothing in flight: the reset happens now.
                map.reset(jz, zone);
                map.choose(jz, p.bytes, min_bs, random)
            }
            other => other,
        };
        match choice {
            ZoneChoice::Write { zone, bytes } => {
                map.wrote(jz, zone, bytes, min_bs);
                p.bytes = bytes;
                true
            }
            ZoneChoice::Reset { zone } => {
                let ctl = f.ctl_mut();
                ctl.hold(*p);
                ctl.quiesce_then(AfterQuiesce::ZoneReset { device, zone });
                false
            }
        }
    }

    /// The I/Os of job `j`'s batch of `k` that reach a device.
    pub(crate) fn device_ios(&self, j: usize, k: u32) -> u32 {
        let job = &self.jobs[j];
        if job.engine() == IoEngine::Null {
            return 0;
        }
        if job.fio().ctl().zones().is_none() {
            return k;
        }
        job.fio().batch().iter().filter(|p| !p.local).count() as u32
    }

    /// Where a batch goes instead of the engine's submit call: to an offload worker, into
    /// a SQPOLL ring, or through a synchronous trim ioctl.
    pub(crate) fn special_submit(&self, j: usize, _k: u32) -> Option<FioPhase> {
        let ctl = self.jobs[j].fio().ctl();
        if ctl.offload().is_some() {
            return Some(FioPhase::Handoff);
        }
        if ctl.ring().is_some() {
            return Some(FioPhase::RingCommit { k: _k });
        }
        let first = self.jobs[j].fio().batch().first()?;
        ctl.is_sync_trim(first).then_some(FioPhase::SyncSubmit)
    }

    /// A trim through an ioctl (BLKDISCARD, engines' do_io_u_trim): the call's cost as
    /// one blocking syscall (the platform's pvsync2 costs), then the command, then the
    /// job blocks until it completes.
    pub(crate) fn sync_submit(&mut self, j: usize) -> Option<ThreadStep> {
        let (call, per_io) = super::build::syscall_costs(&self.engine, IoEngine::Pvsync2)
            .map_or((0, 0), |c| (c.submit_call_ns, c.submit_io_ns));
        self.jobs[j].enter_phase(JobPhase::Fio(FioPhase::SyncIssue));
        Some(ThreadStep::sys(call + per_io + self.sq_doorbell_ns(j)))
    }

    /// The ioctl's work is done: the command goes out and the job waits for it (after
    /// a virtio kick's exit, when the request asked for one). With no tag free on its
    /// queue it sleeps for one and issues again (blk_mq_get_tag).
    pub(crate) fn sync_issue(&mut self, j: usize) -> Option<ThreadStep> {
        self.jobs[j].fio_mut().ctl_mut().sync_issue();
        if self.submit_batch(j, 1) == 0 {
            return Some(ThreadStep::Block);
        }
        if let Some(ns) = self.kick_step(j) {
            self.jobs[j].enter_phase(JobPhase::Fio(FioPhase::SyncKick));
            return Some(ThreadStep::sys(ns));
        }
        self.jobs[j].enter_phase(JobPhase::Fio(FioPhase::SyncWait));
        Some(ThreadStep::Block)
    }

    /// The kick's exit is over: the job waits for the command, unless the host already
    /// completed it (a polling host thread needs no kick to see the request).
    pub(crate) fn sync_kicked(&mut self, j: usize) -> Option<ThreadStep> {
        self.kick_done(j);
        self.jobs[j].enter_phase(JobPhase::Fio(FioPhase::SyncWait));
        if self.jobs[j].fio().ctl().sync_done() {
            return None;
        }
        Some(ThreadStep::Block)
    }

    /// The submit call ends: the SQEs are in the SQ and the doorbell is written
    /// (bd->last), so the controller fetches them after the MMIO flight. Returns how
    /// many of the batch's `k` went; the rest wait for a tag of their queue.
    pub(crate) fn submit_batch(&mut self, j: usize, k: u32) -> u32 {
        if self.jobs[j].engine() == IoEngine::Null {
            self.complete_null(j, k);
            return k;
        }
        // The queues this batch rang, and how many SQEs each fetch brings.
        let mut touched: [(Option<QueueId>, u32); 4] = [(None, 0); 4];
        let sync = self.jobs[j].fio().ctl().sync_trims();
        let mut sent = 0;
        for i in 0..k {
            let planned = self.jobs[j].fio().batch()[i as usize];
            if planned.local {
                self.complete_local(j, planned);
                sent += 1;
                continue;
            }
            let job = &self.jobs[j];
            let q = job.queue_ahead(0);
            // The tag set holds one entry less than the ring (nvme: q_depth - 1).
            if self.queues[q.ix()].tags_free() <= 1 {
                let t = self.jobs[j].thread();
                self.queues[q.ix()].wait_for_tag(t);
                break;
            }
            let job = &mut self.jobs[j];
            let next_q = job.next_file();
            // Each POSIX aio helper thread's pread is a submission of its own. A request
            // after which the next finds no tag ends the dispatch too: blk-mq then calls
            // the driver's commit_rqs (virtio_commit_rqs kicks), as bd->last would.
            let next_starved = i + 1 < k && {
                let taken = usize::from(next_q == q);
                self.queues[next_q.ix()].tags_free().saturating_sub(taken) <= 1
            };
            let last =
                i + 1 == k || next_q != q || job.engine() == IoEngine::PosixAio || next_starved;
            sent += 1;
            let Some(io) = self.queue_command(j, q, planned, last) else {
                continue;
            };
            if sync && planned.ddir == 2 {
                self.jobs[j].fio_mut().ctl_mut().sync_queued(io);
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
        if sent < k {
            // What is left of the batch goes when a tag is free.
            self.jobs[j].fio_mut().batch_sent(sent as usize);
        }
        self.count_submitted(j, sent, true);
        sent
    }

    /// fio's accounting of a submitted batch of `k` (the depth it reached, the submit
    /// call); an offload worker's goes to its job (sum_thread_stats). `counter`: the
    /// observer sees the depth.
    pub(crate) fn count_submitted(&mut self, j: usize, k: u32, counter: bool) {
        let now = self.now;
        let owner = self.stats_owner(j);
        let job = &mut self.jobs[j];
        let depth = job.submitted(k, now);
        if counter && self.obs.wants_counters() {
            self.obs.counter(now, "iodepth", j, f64::from(depth));
        }
        self.totals.submitted(u64::from(k));
        if self.measuring {
            // io_u.c: io_u_mark_depth at commit, io_u_mark_submit per submit call.
            let o = &mut self.jobs[owner];
            o.mark_depth(depth, k);
            o.fio_mut().io_u_mark_submit(k);
        }
    }

    /// Whose statistics job `j`'s I/Os count in: its own, or an offload worker's job's.
    #[inline(always)]
    pub(crate) fn stats_owner(&self, j: usize) -> usize {
        match self.jobs[j].fio().ctl().role() {
            super::fio_ctl::Role::Worker { parent } => parent.ix(),
            _ => j,
        }
    }

    /// A record for an I/O that reaches no queue (null engine, zoned trims).
    fn local_io(&mut self, j: usize, planned: Planned) -> IoId {
        let now = self.now;
        let rec = Io::local(JobId::new(j), planned, self.jobs[j].batch_start(), now);
        match self.free_ios.pop() {
            Some(io) => {
                self.ios[io.ix()] = rec;
                io
            }
            None => {
                self.ios.push(rec);
                IoId::new(self.ios.len() - 1)
            }
        }
    }

    /// A zoned trim completes in fio's own code (zbd_do_io_u_trim: no command on a
    /// conventional namespace); the job reaps it as any other.
    fn complete_local(&mut self, j: usize, planned: Planned) {
        let io = self.local_io(j, planned);
        self.ios[io.ix()].trim_in_fio();
        self.jobs[j].io_completed(io);
        self.totals.completed(1);
    }

    /// fio's null engine (engines/null.c): the batch is queued and completed at once, with
    /// no device and no interrupt; the job reaps it as it would a device's.
    fn complete_null(&mut self, j: usize, k: u32) {
        for i in 0..k {
            let planned = self.jobs[j].fio().batch()[i as usize];
            let io = self.local_io(j, planned);
            self.jobs[j].io_completed(io);
        }
        self.totals.completed(u64::from(k));
        self.count_submitted(j, k, false);
    }

    /// Job `j` puts one command into queue `q`'s SQ: a free tag, the I/O's record and its
    /// SQE (`last`: bd->last, the SQE hint that closes a batch). None when no tag is free.
    pub(crate) fn queue_command(
        &mut self,
        j: usize,
        q: QueueId,
        planned: Planned,
        last: bool,
    ) -> Option<IoId> {
        let now = self.now;
        let hints = if last { SQE_HINT_BARRIER } else { 0 };
        let start = self.jobs[j].batch_start();
        if self.queues[q.ix()].tags_free() == 0 {
            debug_assert!(false, "no free tag: the depth check failed");
            return None;
        }
        // The request's slot first (a freed one, else a new one at the end), then its tag
        // (blk_mq_get_tag), which the record carries.
        let io = self
            .free_ios
            .pop()
            .unwrap_or_else(|| IoId::new(self.ios.len()));
        let tag = self.queues[q.ix()]
            .alloc_tag(io)
            .expect("a free tag was checked");
        let rec = Io::queued(JobId::new(j), q, tag, planned, hints, start, now);
        if io.ix() == self.ios.len() {
            self.ios.push(rec);
        } else {
            self.ios[io.ix()] = rec;
        }
        let queue = &mut self.queues[q.ix()];
        let d = queue.device().ix();
        self.fio.disk_mut(d).submit(now, self.measuring);
        let _ = queue.submit(
            Sqe {
                command_id: tag,
                opcode: opcode(planned.cmd),
                hints,
                data: io.ix() as u32,
            },
            last,
        );
        if self.costs.has_virtio && queue.is_virtio() {
            self.virtio_queue_rq(j, q.ix(), last);
        }
        Some(io)
    }

    /// The SQ tail doorbell reaches the device; its fetch engine serves doorbells in
    /// arrival order, one at a time when it has an occupancy (`fetch_busy_ns`).
    pub(crate) fn schedule_fetch(&mut self, q: QueueId, count: u32) {
        if self.costs.has_virtio && self.queues[q.ix()].is_virtio() {
            // The host thread pops the avail ring itself (model/virtio.rs).
            return;
        }
        let d = self.queues[q.ix()].device().ix();
        let at = self.devices[d].fetch(self.now + self.costs.mmio_flight);
        self.q.push(at, Event::SqFetched { queue: q, count });
    }
}
