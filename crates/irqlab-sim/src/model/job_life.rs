//! One fio job clone's record (a thread_data's I/O loop part): what it is made with
//! (build.rs for a job of the file, fio_build.rs for a helper), where its loop is, what it
//! has in flight and its statistics over the window, which the end of ramp_time clears.

use super::fio_job::FioJob;
use super::ids::{DeviceId, IoId, QueueId, ThreadId};
use irqlab_fio::IoEngine;
use irqlab_report::Latency;
use std::collections::VecDeque;

/// Where a fio job thread is in its loop.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum JobPhase {
    Start,
    Usr {
        k: u32,
    },
    Submit {
        k: u32,
    },
    /// Reaping the CQ right after a submission (reap_after_submit).
    SubmitReap,
    ReapCall,
    /// Blocked waiting for `waiting_for` events.
    Wait,
    Collect {
        n: u32,
    },
    /// Spinning or reaping in a polled wait.
    Poll,
    PollReap,
    HybridSleep,
    /// Asleep in blk_mq_get_tag with `k` I/Os of its batch still to submit.
    TagWait {
        k: u32,
    },
    /// thinktime_spin: burning CPU, then sleeping `sleep_ns`.
    ThinkSpin {
        sleep_ns: u64,
    },
    /// Sleeping on an hrtimer for the rate clock or thinktime; starts over on waking.
    Pause,
    /// A phase of what fio does besides submitting and reaping (model/fio_ctl.rs).
    Fio(super::fio_ctl::FioPhase),
    /// A virtio notify's exit inside the submit call (model/virtio.rs).
    Kick,
    Done,
}

/// Per-direction statistics of a job.
#[derive(Clone, Debug, Default)]
pub(crate) struct DirStats {
    pub ios: u64,
    pub bytes: u64,
    /// slat, clat, lat; allocated at the first I/O of the direction.
    pub lat: Option<Box<[Latency; 3]>>,
}

impl DirStats {
    #[inline(always)]
    pub fn record(&mut self, bytes: u64, slat: u64, clat: u64, lat: u64) {
        self.ios += 1;
        self.bytes += bytes;
        let l = self
            .lat
            .get_or_insert_with(|| Box::new([Latency::new(), Latency::new(), Latency::new()]));
        l[0].record(slat);
        l[1].record_clat(clat);
        l[2].record(lat);
    }
}

pub(crate) struct Job {
    pub name: String,
    pub groupid: u32,
    pub options: Vec<(String, String)>,
    pub thread: ThreadId,
    pub engine: irqlab_fio::IoEngine,
    /// The device's submitter costs, replacing the engine's (DSA), and fio's user-space
    /// work per I/O (0 with a device submitter).
    pub submitter: Option<crate::platform::SyscallCosts>,
    pub usr_io: u64,
    /// Queues the job's files map to from its CPU (round robin per I/O).
    pub queues: Vec<QueueId>,
    /// The devices its files name, in order (a moved job's queues are remapped).
    pub devices: Vec<DeviceId>,
    pub next_file: usize,
    pub iodepth: u32,
    pub batch_submit: u32,
    pub complete_min: u32,
    pub complete_max: u32,
    pub polled: bool,
    pub hybrid: bool,
    pub ramp_end: u64,
    pub end: Option<u64>,
    pub io_limit: Option<u64>,
    pub issued: u64,
    /// Submitted and not yet reaped by the job.
    pub outstanding: u32,
    /// Completed by the kernel, waiting for the job's reap call.
    pub ready: VecDeque<IoId>,
    pub waiting_for: u32,
    pub phase: JobPhase,
    pub batch_start: u64,
    /// io_uring hybrid IOPOLL's ring state (used when `hybrid`).
    pub hybrid_poll: irqlab_core::hybrid::HybridPoll,
    pub last_submit: u64,
    pub finished_at: u64,
    // statistics over the window
    pub read: DirStats,
    pub write: DirStats,
    pub usr: u64,
    pub sys: u64,
    pub ctx: u64,
    /// Times its thread moved to another CPU (perf's migrations; fio has no field).
    pub migrations: u64,
    pub depth_level: [u64; 7],
    /// fio's job state beyond the queue (model/fio_job.rs).
    pub fio: Box<super::fio_job::FioJob>,
}

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
