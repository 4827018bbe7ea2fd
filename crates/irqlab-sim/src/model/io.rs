//! One I/O in flight: the request record submission creates (its job, queue, command id,
//! size, command and times). It owns its fields; the controller assigns it a media unit,
//! a delayed submission (SQPOLL, a virtio kick) moves its submit time, and a zoned trim
//! fio does itself drops its ranges, through the methods named for them (model/submit.rs,
//! model/device.rs, model/sqpoll.rs, model/virtio.rs).

use super::commands::Cmd;
use super::fio_job::Planned;
use super::ids::{JobId, QueueId};

/// One I/O in flight.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Io {
    job: JobId,
    queue: QueueId,
    tag: u16,
    read: bool,
    /// Its size (bs, bsrange or bssplit), bytes.
    bytes: u32,
    /// SQE_HINT_* bits (calibrated interrupts: BARRIER on the last I/O of a batch).
    hints: u8,
    start: u64,
    submitted: u64,
    /// Striped media: the unit serving it.
    unit: u32,
    /// The command (model/commands.rs): a read, a write, a trim, a write_mode command.
    cmd: Cmd,
}

impl Io {
    /// Job `job`'s `planned` I/O, queued on `queue` under command id `tag` with SQE
    /// `hints` at `now`, in a batch that started at `start`; no media unit yet.
    #[inline]
    pub(crate) fn queued(
        job: JobId,
        queue: QueueId,
        tag: u16,
        planned: Planned,
        hints: u8,
        start: u64,
        now: u64,
    ) -> Io {
        Io {
            job,
            queue,
            tag,
            read: planned.ddir == 0,
            bytes: planned.bytes as u32,
            hints,
            start,
            submitted: now,
            unit: 0,
            cmd: planned.cmd,
        }
    }

    /// Job `job`'s `planned` I/O that reaches no queue (null engine, zoned trims),
    /// submitted at `now` in a batch that started at `start`.
    #[inline]
    pub(crate) fn local(job: JobId, planned: Planned, start: u64, now: u64) -> Io {
        // No queue: the I/O never reaches one.
        Io::queued(job, QueueId::new(0), 0, planned, 0, start, now)
    }

    #[inline]
    pub(crate) fn job(&self) -> JobId {
        self.job
    }

    #[inline]
    pub(crate) fn queue(&self) -> QueueId {
        self.queue
    }

    /// Its NVMe command id (blk-mq tag) in its queue.
    #[inline]
    pub(crate) fn tag(&self) -> u16 {
        self.tag
    }

    #[inline]
    pub(crate) fn read(&self) -> bool {
        self.read
    }

    #[inline]
    pub(crate) fn bytes(&self) -> u32 {
        self.bytes
    }

    #[inline]
    pub(crate) fn hints(&self) -> u8 {
        self.hints
    }

    /// When its batch started (fio's io_u start time), ns.
    #[inline]
    pub(crate) fn start(&self) -> u64 {
        self.start
    }

    /// When it was submitted to the device, ns.
    #[inline]
    pub(crate) fn submitted(&self) -> u64 {
        self.submitted
    }

    #[inline]
    pub(crate) fn unit(&self) -> u32 {
        self.unit
    }

    #[inline]
    pub(crate) fn cmd(&self) -> Cmd {
        self.cmd
    }

    /// fio trims it in its own code, sending no ranges to the device (zbd.c
    /// zbd_do_io_u_trim on a conventional zone).
    #[inline]
    pub(crate) fn trim_in_fio(&mut self) {
        self.cmd = Cmd::Trim { ranges: 0 };
    }

    /// The controller's media gave it unit `unit` (model/controller/media.rs).
    #[inline]
    pub(crate) fn assign_unit(&mut self, unit: u32) {
        self.unit = unit;
    }

    /// It reached the device at `at`, after it was queued (an SQPOLL thread's commit, a
    /// virtio kick).
    #[inline]
    pub(crate) fn submitted_at(&mut self, at: u64) {
        self.submitted = at;
    }
}
