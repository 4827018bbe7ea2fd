//! Device-side interrupt coalescing: NVMe feature 08h (Interrupt Coalescing) and the
//! per-vector Coalescing Disable of feature 09h (Interrupt Vector Configuration).
//!
//! CDW11 of 08h: bits 15:08 TIME, the aggregation time in 100 µs units (0 = no delay);
//! bits 07:00 THR, the aggregation threshold in entries, 0-based. The controller signals
//! when either condition is met (nvme-cli's decoders; Microsoft's nvme.h
//! NVME_CDW11_FEATURE_INTERRUPT_COALESCING quotes the spec: "If either the TIME or the
//! THR fields are cleared to 0h, then interrupt coalescing is implicitly disabled").
//! Aggregation time runs from the first completion withheld on the vector.
//!
//! Moderators (lib/dim style) want to program (usec, count) directly. NVMe's only unit
//! is 100 µs; NICs take µs (ethtool rx-usecs/rx-frames, mlx5 CQ moderation periods) and
//! RDMA CQs take ib_modify_cq(cq, cq_count, cq_period in µs), which is what rdma_dim
//! programs. [`CoalesceParams::from_usec_count`] models such a device.

/// When the coalescer's aggregation timer starts: at the first completion it withholds,
/// like lib/dim's DIM_CQ_PERIOD_MODE_START_FROM_EQE (the timer is not restarted by later
/// completions, as START_FROM_CQE's is). A moderator programming this coalescer uses the
/// table made for that mode (lib/dim/net_dim.c picks it by cq_period_mode).
pub const PERIOD_MODE: crate::dim::CqPeriodMode = crate::dim::CqPeriodMode::StartFromEqe;

/// Feature 08h, Interrupt Coalescing, as carried in CDW11.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IrqCoalescing {
    /// THR: aggregation threshold, 0-based (0 means 1 entry).
    pub thr: u8,
    /// TIME: aggregation time in 100 µs units (0 means no delay).
    pub time_100us: u8,
}

impl IrqCoalescing {
    pub const FID: u8 = 0x08;

    pub fn from_cdw11(cdw11: u32) -> Self {
        IrqCoalescing {
            thr: (cdw11 & 0xff) as u8,
            time_100us: ((cdw11 >> 8) & 0xff) as u8,
        }
    }

    pub fn cdw11(&self) -> u32 {
        u32::from(self.thr) | (u32::from(self.time_100us) << 8)
    }

    /// Entries per interrupt (THR + 1, as nvme-cli prints it).
    pub fn threshold_entries(&self) -> u32 {
        u32::from(self.thr) + 1
    }

    pub fn time_ns(&self) -> u64 {
        u64::from(self.time_100us) * 100_000
    }
}

/// Feature 09h, Interrupt Vector Configuration: IV (bits 15:00) and CD (bit 16).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct IrqVectorConfig {
    pub iv: u16,
    /// Coalescing Disable for this vector.
    pub cd: bool,
}

impl IrqVectorConfig {
    pub const FID: u8 = 0x09;

    pub fn from_cdw11(cdw11: u32) -> Self {
        IrqVectorConfig {
            iv: (cdw11 & 0xffff) as u16,
            cd: cdw11 & (1 << 16) != 0,
        }
    }

    pub fn cdw11(&self) -> u32 {
        u32::from(self.iv) | (u32::from(self.cd) << 16)
    }
}

/// Feature 09h's Coalescing Disable over a device's vectors: the IVs whose CD bit the
/// host sets (one Set Features 09h per vector). IV ranges over the 2048 MSI-X entries a
/// function may have; Linux's nvme-pci gives I/O queue N vector N (vector 0 is the admin
/// queue's).
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct CoalescingDisable {
    bits: [u64; 32],
}

/// An IV beyond the 2048 MSI-X entries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IvOutOfRange(pub u32);

impl std::fmt::Display for IvOutOfRange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "interrupt vector {} is beyond the 2048 MSI-X entries (0..=2047)",
            self.0
        )
    }
}

impl std::error::Error for IvOutOfRange {}

impl CoalescingDisable {
    /// The highest IV (MSI-X Table Size is at most 2048).
    pub const MAX_IV: u16 = 2047;

    /// Sets CD for vector `iv`.
    pub fn insert(&mut self, iv: u32) -> Result<(), IvOutOfRange> {
        if iv > u32::from(Self::MAX_IV) {
            return Err(IvOutOfRange(iv));
        }
        self.bits[(iv / 64) as usize] |= 1 << (iv % 64);
        Ok(())
    }

    /// Whether vector `iv` has CD set.
    pub fn contains(&self, iv: u16) -> bool {
        iv <= Self::MAX_IV && self.bits[usize::from(iv / 64)] & (1 << (iv % 64)) != 0
    }

    pub fn is_empty(&self) -> bool {
        self.bits.iter().all(|&w| w == 0)
    }

    /// The vectors with CD set, ascending.
    pub fn ivs(&self) -> impl Iterator<Item = u16> + '_ {
        (0..=Self::MAX_IV).filter(|&iv| self.contains(iv))
    }

    /// The 09h setting of vector `iv`.
    pub fn config(&self, iv: u16) -> IrqVectorConfig {
        IrqVectorConfig {
            iv,
            cd: self.contains(iv),
        }
    }
}

impl std::fmt::Display for CoalescingDisable {
    /// The IVs, comma-separated ("1,3"), as `--coalesce-disable` takes them.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let ivs: Vec<String> = self.ivs().map(|iv| iv.to_string()).collect();
        f.write_str(&ivs.join(","))
    }
}

impl std::fmt::Debug for CoalescingDisable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "CoalescingDisable({self})")
    }
}

/// Coalescing parameters in the units the state machine uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CoalesceParams {
    /// Completions per interrupt (1 = every completion fires).
    pub count: u32,
    /// Longest delay of the first withheld completion (0 = no delay).
    pub time_ns: u64,
}

impl CoalesceParams {
    /// No coalescing: every completion fires.
    pub const OFF: CoalesceParams = CoalesceParams {
        count: 1,
        time_ns: 0,
    };

    pub fn from_feature(f: IrqCoalescing) -> Self {
        CoalesceParams {
            count: f.threshold_entries(),
            time_ns: f.time_ns(),
        }
    }

    /// A device with µs granularity (NIC/RDMA CQ moderation); count 0 is taken as 1.
    pub fn from_usec_count(usec: u32, count: u32) -> Self {
        CoalesceParams {
            count: count.max(1),
            time_ns: u64::from(usec) * 1_000,
        }
    }

    /// The nearest 08h encoding: time rounded up to 100 µs units, both fields clamped
    /// to 8 bits (what a moderator gets on a real NVMe device).
    pub fn to_feature(&self) -> IrqCoalescing {
        IrqCoalescing {
            thr: (self.count.clamp(1, 256) - 1) as u8,
            time_100us: self.time_ns.div_ceil(100_000).min(255) as u8,
        }
    }

    /// Coalescing does nothing: TIME 0 (no delay) or a threshold of one entry.
    pub fn is_off(&self) -> bool {
        self.time_ns == 0 || self.count <= 1
    }
}

/// Why the device raised its interrupt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FireCause {
    /// No coalescing on this vector (off, or 09h CD set).
    Immediate,
    /// The aggregation threshold was reached.
    Threshold,
    /// The aggregation time (or calibrated Δ) expired.
    Timer,
    /// Calibrated interrupts: an URGENT completion.
    Urgent,
    /// Calibrated interrupts: the BARRIER-marked end of a batch.
    Barrier,
}

/// An interrupt the device raises now, covering `coalesced` completions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fire {
    pub coalesced: u32,
    pub cause: FireCause,
}

/// What the device does after a completion.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IrqDecision {
    /// Raise the vector's interrupt now.
    Fire(Fire),
    /// Withhold; make sure `on_timer` is called at `deadline_ns` (this replaces any
    /// earlier deadline; a call for a stale deadline does nothing).
    ArmTimer { deadline_ns: u64 },
    /// Withhold; the armed timer still stands.
    Hold,
}

/// Feature 08h aggregation for one vector, with 09h's Coalescing Disable.
#[derive(Clone, Debug)]
pub struct NvmeCoalescer {
    params: CoalesceParams,
    cd: bool,
    /// The host's CQ head doorbell acknowledging every posted entry cancels the
    /// aggregation ([`NvmeCoalescer::acknowledging`]).
    ack_cancels: bool,
    pending: u32,
    first_ns: u64,
    deadline: Option<u64>,
}

impl NvmeCoalescer {
    pub fn new(params: CoalesceParams) -> Self {
        NvmeCoalescer {
            params,
            cd: false,
            ack_cancels: false,
            pending: 0,
            first_ns: 0,
            deadline: None,
        }
    }

    pub fn from_feature(f: IrqCoalescing) -> Self {
        Self::new(CoalesceParams::from_feature(f))
    }

    pub fn params(&self) -> CoalesceParams {
        self.params
    }

    /// Completions withheld so far.
    pub fn pending(&self) -> u32 {
        self.pending
    }

    /// The armed aggregation deadline, if completions are withheld.
    pub fn deadline(&self) -> Option<u64> {
        self.deadline
    }

    /// Feature 09h for this vector: CD set means every completion fires.
    pub fn set_vector_config(&mut self, cfg: IrqVectorConfig) {
        self.cd = cfg.cd;
    }

    pub fn coalescing_disabled(&self) -> bool {
        self.cd
    }

    fn fire(&mut self, cause: FireCause) -> Fire {
        let f = Fire {
            coalesced: self.pending,
            cause,
        };
        self.pending = 0;
        self.deadline = None;
        f
    }

    /// A device whose aggregation time runs from the first entry the host has not
    /// acknowledged: a CQ head doorbell that acknowledges every entry posted so far
    /// cancels the timer, and the next entry starts it again (not a behaviour of NVMe's
    /// feature 08h, whose time runs from the first withheld completion; a device's own
    /// aggregation, docs/research/azure-device.md rule R4).
    pub fn acknowledging(mut self) -> Self {
        self.ack_cancels = true;
        self
    }

    /// The host's CQ head doorbell acknowledged every posted entry: with
    /// [`NvmeCoalescer::acknowledging`], the withheld completions were consumed without
    /// an interrupt and the timer is cancelled. Returns whether it was.
    pub fn on_ack_all(&mut self) -> bool {
        if !self.ack_cancels || self.pending == 0 {
            return false;
        }
        self.pending = 0;
        self.deadline = None;
        true
    }

    /// A completion entry was posted on this vector's CQ at `now_ns`.
    pub fn on_completion(&mut self, now_ns: u64) -> IrqDecision {
        self.pending += 1;
        if self.cd || self.params.is_off() {
            return IrqDecision::Fire(self.fire(FireCause::Immediate));
        }
        if self.pending >= self.params.count {
            return IrqDecision::Fire(self.fire(FireCause::Threshold));
        }
        if self.pending == 1 {
            self.first_ns = now_ns;
            let deadline_ns = now_ns.saturating_add(self.params.time_ns);
            self.deadline = Some(deadline_ns);
            return IrqDecision::ArmTimer { deadline_ns };
        }
        IrqDecision::Hold
    }

    /// The aggregation timer went off at `now_ns`; fires if it is the live deadline.
    pub fn on_timer(&mut self, now_ns: u64) -> Option<Fire> {
        match self.deadline {
            Some(d) if now_ns >= d && self.pending > 0 => Some(self.fire(FireCause::Timer)),
            _ => None,
        }
    }

    /// A moderator reprograms the vector (Set Features 08h, or (usec, count) on a finer
    /// device). Withheld completions are judged against the new values at once.
    pub fn set_params(&mut self, params: CoalesceParams, now_ns: u64) -> IrqDecision {
        self.params = params;
        if self.pending == 0 {
            return IrqDecision::Hold;
        }
        if self.cd || params.is_off() {
            return IrqDecision::Fire(self.fire(FireCause::Immediate));
        }
        if self.pending >= params.count {
            return IrqDecision::Fire(self.fire(FireCause::Threshold));
        }
        let deadline_ns = self.first_ns.saturating_add(params.time_ns);
        if deadline_ns <= now_ns {
            return IrqDecision::Fire(self.fire(FireCause::Timer));
        }
        self.deadline = Some(deadline_ns);
        IrqDecision::ArmTimer { deadline_ns }
    }
}
