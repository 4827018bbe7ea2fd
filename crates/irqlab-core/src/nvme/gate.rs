//! When a device sends an MSI-X message for a vector: its message rule.
//!
//! NVMe's MSI-X text asks for nothing more than a message when entries are posted; the
//! spec's interrupt-coalescing section lets a controller "delay an interrupt if it detects
//! that interrupts are already being processed for this vector ... the Completion Queue
//! Head Doorbell register is being updated" (quoted in Microsoft's nvme.h documentation of
//! feature 08h). Devices differ, so the rule is a property of the device:
//!
//! - [`MsiRule::PerCompletion`]: a message for every completion entry written (the literal
//!   reading; an Intel DSA descriptor with Request Completion Interrupt does this too).
//! - [`MsiRule::UntilDoorbell`]: one outstanding message per vector until the host writes
//!   the CQ head doorbell; entries posted meanwhile raise one message after it (an RDMA CQ
//!   armed with IB_CQ_NEXT_COMP is this rule, the re-arm being the "doorbell").
//!
//! A device's own aggregation (08h-style count and time) sits in front of either rule.

use std::fmt;
use std::str::FromStr;

/// How a device decides to send a vector's next message.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum MsiRule {
    /// Every completion written sends a message.
    PerCompletion,
    /// One message outstanding until the CQ head doorbell (or CQ re-arm).
    #[default]
    UntilDoorbell,
}

impl MsiRule {
    /// The name platform files use.
    pub fn as_str(self) -> &'static str {
        match self {
            MsiRule::PerCompletion => "per_completion",
            MsiRule::UntilDoorbell => "until_doorbell",
        }
    }
}

impl fmt::Display for MsiRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A rule name that is neither `per_completion` nor `until_doorbell`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownMsiRule(pub String);

impl fmt::Display for UnknownMsiRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown MSI rule '{}'; expected per_completion or until_doorbell",
            self.0
        )
    }
}

impl std::error::Error for UnknownMsiRule {}

impl FromStr for MsiRule {
    type Err = UnknownMsiRule;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "per_completion" => Ok(MsiRule::PerCompletion),
            "until_doorbell" => Ok(MsiRule::UntilDoorbell),
            _ => Err(UnknownMsiRule(s.to_string())),
        }
    }
}

/// The message state of one vector.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct VectorGate {
    rule: MsiRule,
    outstanding: bool,
    withheld: bool,
    /// Messages sent.
    pub sent: u64,
    /// Raises that found a message outstanding.
    pub withheld_raises: u64,
    /// Raises that found no unconsumed entry (the host had reaped them already).
    pub empty_raises: u64,
}

impl VectorGate {
    /// The until-doorbell rule (the NVMe gate this project started with).
    pub fn new() -> Self {
        Self::default()
    }

    /// A gate following `rule`.
    pub fn with_rule(rule: MsiRule) -> Self {
        VectorGate {
            rule,
            ..Self::default()
        }
    }

    pub fn rule(&self) -> MsiRule {
        self.rule
    }

    /// The device wants to signal the vector; `unacked` is the number of entries the host
    /// has not consumed (CompletionQueue::unacked plus any still on their way). True: send
    /// the message now. False: nothing is owed, or one is outstanding and the raise waits
    /// for the doorbell.
    pub fn raise(&mut self, unacked: u32) -> bool {
        // A raise for entries the host already reaped (after submit, or before a coalescing
        // timer fired) owes nothing; sent anyway, its handler would find an empty CQ, ring
        // no doorbell (pci.c nvme_poll_cq rings only when it found entries), and the gate
        // would stay shut for good.
        if unacked == 0 {
            self.empty_raises += 1;
            return false;
        }
        if self.rule == MsiRule::PerCompletion {
            self.sent += 1;
            return true;
        }
        if self.outstanding {
            self.withheld = true;
            self.withheld_raises += 1;
            return false;
        }
        self.outstanding = true;
        self.sent += 1;
        true
    }

    /// The host wrote the CQ head doorbell; `unacked` is the number of entries still past
    /// the new head (CompletionQueue::unacked). True: send a message now for a raise that
    /// was withheld and whose entries the host has not consumed yet.
    pub fn on_cq_doorbell(&mut self, unacked: u32) -> bool {
        self.outstanding = false;
        let resend = self.withheld && unacked > 0;
        self.withheld = false;
        if resend {
            self.outstanding = true;
            self.sent += 1;
        }
        resend
    }

    /// A message is in flight or being handled (never under the per-completion rule).
    pub fn is_outstanding(&self) -> bool {
        self.outstanding
    }

    /// A raise is waiting for the doorbell.
    pub fn has_withheld(&self) -> bool {
        self.withheld
    }
}
