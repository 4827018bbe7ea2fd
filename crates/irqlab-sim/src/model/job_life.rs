//! A job's state outside fio's loop: what it is made with (build.rs for a job of the
//! file, fio_build.rs for a helper) and what the end of ramp_time clears.

use super::fio_job::FioJob;
use super::ids::{DeviceId, QueueId, ThreadId};
use super::state::{DirStats, Job, JobPhase};
use irqlab_fio::IoEngine;
use std::collections::VecDeque;

impl Job {
    /// A job that has issued nothing: iodepth 1, batches of one, no limit and no end,
    /// not polling, in no reporting group but 0. Callers set what their job differs in.
    pub(crate) fn new(
        name: String,
        thread: ThreadId,
        engine: IoEngine,
        queues: Vec<QueueId>,
        devices: Vec<DeviceId>,
        fio: FioJob,
    ) -> Job {
        Job {
            name,
            groupid: 0,
            options: Vec::new(),
            thread,
            engine,
            submitter: None,
            usr_io: 0,
            queues,
            devices,
            next_file: 0,
            iodepth: 1,
            batch_submit: 1,
            complete_min: 1,
            complete_max: 1,
            polled: false,
            hybrid: false,
            ramp_end: 0,
            end: None,
            io_limit: None,
            issued: 0,
            outstanding: 0,
            ready: VecDeque::new(),
            waiting_for: 0,
            phase: JobPhase::Start,
            batch_start: 0,
            hybrid_poll: irqlab_core::hybrid::HybridPoll::new(),
            last_submit: 0,
            finished_at: 0,
            read: DirStats::default(),
            write: DirStats::default(),
            usr: 0,
            sys: 0,
            ctx: 0,
            migrations: 0,
            depth_level: [0; 7],
            fio: Box::new(fio),
        }
    }

    /// Its statistics start from zero at `now` (libfio.c reset_all_stats): at the end of
    /// its own ramp_time, or when the machine's window opens.
    pub(crate) fn reset_window(&mut self, now: u64) {
        self.read = DirStats::default();
        self.write = DirStats::default();
        self.usr = 0;
        self.sys = 0;
        self.ctx = 0;
        self.migrations = 0;
        self.depth_level = [0; 7];
        self.fio.reset_window(now);
    }
}
