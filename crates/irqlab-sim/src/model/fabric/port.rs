//! A PCIe root port: an ordered FIFO of posted writes toward memory, one at a time, with
//! posted-header flow control (the devices it cannot take yet wait for credits in turn).

use crate::model::ids::{DeviceId, IoId, QueueId, StackId, VectorId};
use crate::platform::RootPort;
use std::collections::VecDeque;

/// An entry of a root port's posted-write FIFO.
#[derive(Clone, Copy, Debug)]
pub(crate) enum PortItem {
    /// Data (reads only) and the CQE of one I/O, holding `credits` posted header credits.
    Completion { io: IoId, credits: u32 },
    /// An MSI write for a vector.
    Msi { vector: VectorId },
    /// A SEND work completion's CQE (no data) for command `tag` of a queue.
    SendWc { queue: QueueId, tag: u16 },
}

impl PortItem {
    /// Credits the entry holds in the FIFO (a completion's were counted as it entered).
    #[inline]
    fn credits(self) -> u32 {
        match self {
            PortItem::Completion { credits, .. } => credits,
            PortItem::Msi { .. } | PortItem::SendWc { .. } => 1,
        }
    }
}

pub(crate) struct Port {
    fifo: VecDeque<PortItem>,
    busy: bool,
    write_ns: u64,
    bytes_per_ns: f64,
    msi_ns: u64,
    /// Posted header credits (0: unlimited), those held by the FIFO, and the payload size
    /// one credit carries.
    credits: u32,
    used: u32,
    mps: u64,
    /// Devices holding writes until credits return, served in turn.
    blocked: VecDeque<DeviceId>,
    /// The port's IIO stack (its DMAR unit).
    stack: StackId,
    /// The MSI at the FIFO head waits in its stack's queue, and the writes behind it wait
    /// too (PCIe ordering rule A2a: a posted write does not pass another).
    waits_for_stack: bool,
    /// The IOMMU's DMA address translation of each data or CQE write (IOTLB hit), ns.
    translate_ns: u64,
    /// Time the FIFO spent writing, and stalled on its stack, in the window (ns).
    busy_ns: u64,
    stalled_ns: u64,
    stalled_since: u64,
    /// The last completion write's (device, data, bytes) key and its port time: runs
    /// repeat one block size, and the float division is the costly part.
    write_memo: (u64, u64),
}

impl Port {
    /// A root port with an empty FIFO, on stack `stack`, its writes translated by the
    /// IOMMU in `translate_ns`.
    pub(crate) fn new(rp: &RootPort, stack: StackId, translate_ns: u64) -> Port {
        Port {
            fifo: VecDeque::new(),
            busy: false,
            write_ns: rp.write_ns,
            bytes_per_ns: rp.bytes_per_ns,
            msi_ns: rp.msi_ns,
            credits: rp.credits,
            used: 0,
            mps: rp.mps_bytes,
            blocked: VecDeque::new(),
            stack,
            waits_for_stack: false,
            translate_ns,
            busy_ns: 0,
            stalled_ns: 0,
            stalled_since: 0,
            write_memo: (u64::MAX, 0),
        }
    }

    /// The port's IIO stack.
    #[inline]
    pub(crate) fn stack(&self) -> StackId {
        self.stack
    }

    /// Posted header credits a completion carrying `bytes` of data holds: one per MPS of
    /// data and one for the CQE, but at most half the port's: flow control is per TLP, so
    /// a long transfer streams through a window of credits instead of waiting for an
    /// empty port.
    #[inline(always)]
    pub(crate) fn data_credits(&self, bytes: u32) -> u32 {
        if self.credits == 0 {
            // Unlimited credits: nothing is counted, and the cap below would make it 1.
            return 1;
        }
        let tlps = u64::from(bytes).div_ceil(self.mps) + 1;
        tlps.min(u64::from(self.credits.div_ceil(2)).max(1)) as u32
    }

    /// Whether the port accepts a write needing `need` credits (an empty port takes any).
    #[inline]
    pub(crate) fn has_room(&self, need: u32) -> bool {
        self.credits == 0 || self.used == 0 || self.used + need <= self.credits
    }

    /// The FIFO accepts a write and holds its credits. True: the FIFO was idle, so the
    /// write at its head starts now.
    #[inline(always)]
    pub(crate) fn accept(&mut self, item: PortItem) -> bool {
        if self.credits > 0 {
            self.used += item.credits();
        }
        self.fifo.push_back(item);
        !self.busy
    }

    /// The write at the FIFO head.
    #[inline]
    pub(crate) fn head(&self) -> Option<PortItem> {
        self.fifo.front().copied()
    }

    /// Port time of an MSI write (the stack's work comes after it).
    #[inline]
    pub(crate) fn msi_ns(&self) -> u64 {
        self.msi_ns
    }

    /// Port time of a write of a CQE alone (a SEND work completion).
    pub(crate) fn cqe_write_ns(&self, cqe_bytes: u64) -> u64 {
        let cqe = cqe_bytes as f64 / self.bytes_per_ns;
        self.write_ns + cqe as u64 + self.translate_ns
    }

    /// Port time of one completion of `device`: its data (`bytes`, when it carries data)
    /// and its CQE, each with its DMA address translation.
    #[inline]
    pub(crate) fn completion_write_ns(
        &mut self,
        device: usize,
        data: bool,
        bytes: u32,
        cqe_bytes: u64,
    ) -> u64 {
        let key = ((device as u64) << 48) | (u64::from(data) << 40) | u64::from(bytes);
        if self.write_memo.0 == key {
            return self.write_memo.1;
        }
        let per = |n: u64| (n as f64 / self.bytes_per_ns) as u64;
        let translate = self.translate_ns;
        let data_ns = if data {
            self.write_ns + per(u64::from(bytes)) + translate
        } else {
            0
        };
        let ns = data_ns + self.write_ns + per(cqe_bytes) + translate;
        self.write_memo = (key, ns);
        ns
    }

    /// The MSI at the head found its stack busy: the FIFO stalls from `now`.
    pub(crate) fn stall(&mut self, now: u64) {
        if self.stalled_since == 0 {
            self.stalled_since = now.max(1);
        }
    }

    /// The write at the head starts and takes `dur`; `window` is the measured window's
    /// start while measuring. Returns when the write departs.
    #[inline(always)]
    pub(crate) fn start_write(&mut self, now: u64, dur: u64, window: Option<u64>) -> u64 {
        let since = std::mem::take(&mut self.stalled_since);
        if let Some(start) = window {
            self.busy_ns += dur;
            if since > 0 {
                self.stalled_ns += now - since.max(start);
            }
        }
        self.busy = true;
        now + dur.max(1)
    }

    /// The write at the head departed and its credits return. Returns what landed.
    #[inline(always)]
    pub(crate) fn write_done(&mut self) -> Option<PortItem> {
        let item = self.fifo.pop_front();
        self.busy = false;
        if self.credits > 0
            && let Some(it) = item
        {
            self.used -= it.credits();
        }
        item
    }

    /// No write is in progress and the FIFO holds one to start.
    #[inline]
    pub(crate) fn ready(&self) -> bool {
        !self.busy && !self.fifo.is_empty()
    }

    /// Device `d` holds writes until credits return; it waits behind the others.
    pub(crate) fn block(&mut self, d: DeviceId) {
        self.blocked.push_back(d);
    }

    /// The device whose turn it is to write what it holds.
    #[inline]
    pub(crate) fn first_blocked(&self) -> Option<DeviceId> {
        self.blocked.front().copied()
    }

    /// The device whose turn it was wrote one thing; it leaves the head of the line.
    pub(crate) fn unblock_first(&mut self) {
        self.blocked.pop_front();
    }

    /// Devices wait for credits.
    #[inline]
    pub(crate) fn has_blocked(&self) -> bool {
        !self.blocked.is_empty()
    }

    /// The MSI at the head waits for the port's stack. True the first time: the port
    /// joins the stack's queue once.
    pub(crate) fn wait_for_stack(&mut self) -> bool {
        !std::mem::replace(&mut self.waits_for_stack, true)
    }

    /// The stack took the port off its queue. True: no write is in progress, so the MSI
    /// at the head starts now.
    pub(crate) fn stack_turn(&mut self) -> bool {
        self.waits_for_stack = false;
        !self.busy
    }

    /// The measured window opens: the port's time counters start over.
    pub(crate) fn open_window(&mut self) {
        self.busy_ns = 0;
        self.stalled_ns = 0;
    }

    /// Time the FIFO spent writing in the window, ns.
    pub(crate) fn busy_ns(&self) -> u64 {
        self.busy_ns
    }

    /// Time the FIFO spent stalled on its stack in the window, ns.
    pub(crate) fn stalled_ns(&self) -> u64 {
        self.stalled_ns
    }
}
