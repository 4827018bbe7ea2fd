//! One outstanding MSI-X message per vector until the host rings the CQ head doorbell.
//!
//! The device treats a vector's message as unserviced until a CQ head doorbell write on
//! that vector's queue shows the host has consumed entries; completions meanwhile are
//! withheld, and one message goes out after the doorbell if entries remain unacknowledged.
//! This is the project's device model (docs: design.md, "the path of one I/O"); the spec
//! text allows it ("the controller may delay an interrupt if it detects that interrupts
//! are already being processed for this vector ... the Completion Queue Head Doorbell
//! register is being updated", quoted in Microsoft's nvme.h documentation of 08h).

/// The message state of one vector.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct VectorGate {
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
    pub fn new() -> Self {
        Self::default()
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

    /// A message is in flight or being handled.
    pub fn is_outstanding(&self) -> bool {
        self.outstanding
    }

    /// A raise is waiting for the doorbell.
    pub fn has_withheld(&self) -> bool {
        self.withheld
    }
}
