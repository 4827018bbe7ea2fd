//! The NVMe commands a job issues besides reads and writes: Dataset Management
//! (deallocate, fio's trims, one or several ranges), and io_uring_cmd's write commands
//! (Write Zeroes, Write Uncorrectable, Verify). Each takes the media time the platform
//! gives it (`devices.N.trim_ns`, `write_zeroes_ns`, `write_uncor_ns`, `verify_ns`);
//! none of them moves data to the host.

use crate::rng::{ServiceTime, Stream};

/// The command an I/O is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub(crate) enum Cmd {
    #[default]
    Read,
    Write,
    /// Dataset Management with the deallocate attribute, over `ranges` ranges.
    Trim {
        ranges: u16,
    },
    WriteZeroes,
    WriteUncor,
    Verify,
}

impl Cmd {
    /// fio's data direction: DDIR_READ 0, DDIR_WRITE 1 (every write_mode command counts
    /// as a write), DDIR_TRIM 2.
    pub fn ddir(self) -> usize {
        match self {
            Cmd::Read => 0,
            Cmd::Write | Cmd::WriteZeroes | Cmd::WriteUncor | Cmd::Verify => 1,
            Cmd::Trim { .. } => 2,
        }
    }

    /// The write command of io_uring_cmd's `write_mode`.
    pub fn of_write(w: irqlab_fio::WriteCmd) -> Cmd {
        match w {
            irqlab_fio::WriteCmd::Write => Cmd::Write,
            irqlab_fio::WriteCmd::Zeroes => Cmd::WriteZeroes,
            irqlab_fio::WriteCmd::Uncor => Cmd::WriteUncor,
            irqlab_fio::WriteCmd::Verify => Cmd::Verify,
        }
    }

    /// The platform key that gives this command's media time, for messages.
    pub fn key(self) -> &'static str {
        match self {
            Cmd::Read => "read_ns",
            Cmd::Write => "write_ns",
            Cmd::Trim { .. } => "trim_ns",
            Cmd::WriteZeroes => "write_zeroes_ns",
            Cmd::WriteUncor => "write_uncor_ns",
            Cmd::Verify => "verify_ns",
        }
    }
}

/// One device's media times of the other commands (None: the platform gives none).
#[derive(Clone, Debug, Default)]
pub(crate) struct CmdTimes {
    trim: Option<ServiceTime>,
    zeroes: Option<ServiceTime>,
    uncor: Option<ServiceTime>,
    verify: Option<ServiceTime>,
}

impl CmdTimes {
    /// The times of device group `g`, spread by its service_cv.
    pub fn of(g: &crate::platform::DeviceGroup) -> CmdTimes {
        let t = |ns: Option<u64>| ns.map(|n| ServiceTime::new(n, g.service_cv));
        CmdTimes {
            trim: t(g.trim_ns),
            zeroes: t(g.write_zeroes_ns),
            uncor: t(g.write_uncor_ns),
            verify: t(g.verify_ns),
        }
    }

    /// Whether the device has a time for `cmd`.
    pub fn has(&self, cmd: Cmd) -> bool {
        match cmd {
            Cmd::Read | Cmd::Write => true,
            Cmd::Trim { .. } => self.trim.is_some(),
            Cmd::WriteZeroes => self.zeroes.is_some(),
            Cmd::WriteUncor => self.uncor.is_some(),
            Cmd::Verify => self.verify.is_some(),
        }
    }

    /// The media time of `cmd` (not a read or a write), drawn from `rng`: a trim of N
    /// ranges as N deallocations one after the other.
    #[inline]
    pub fn draw(&self, cmd: Cmd, rng: &mut Stream) -> u64 {
        let (t, n) = match cmd {
            Cmd::Trim { ranges } => (&self.trim, u64::from(ranges.max(1))),
            Cmd::WriteZeroes => (&self.zeroes, 1),
            Cmd::WriteUncor => (&self.uncor, 1),
            _ => (&self.verify, 1),
        };
        // The build refused a job whose command has no time here.
        let t = t.as_ref().expect("a media time for the command");
        (0..n).map(|_| t.draw(rng)).sum()
    }
}
