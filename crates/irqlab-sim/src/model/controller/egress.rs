//! The controller's side of PCIe flow control: completions served and MSIs decided that
//! its root port had no posted-header credit for, held in order until credits return,
//! and whether the device waits in its port's line of devices.

use crate::model::ids::{IoId, VectorId};
use std::collections::VecDeque;

/// The write a device holds that goes next when its turn comes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Held {
    /// A vector's MSI: it follows the CQEs already written, ahead of held completions.
    Msi(VectorId),
    /// An I/O's data and CQE.
    Completion(IoId),
}

#[derive(Default)]
pub(crate) struct Egress {
    /// Completions served but not yet written.
    completions: VecDeque<IoId>,
    /// MSIs decided but not yet written (ahead of `completions`); MSI-X keeps one pending
    /// message per vector, so a vector is here at most once.
    msis: VecDeque<VectorId>,
    /// In its port's line of devices waiting for credits.
    waiting: bool,
}

impl Egress {
    /// Nothing held: a completion may go straight to the port.
    #[inline(always)]
    pub(crate) fn is_empty(&self) -> bool {
        self.completions.is_empty() && self.msis.is_empty()
    }

    /// No MSI held: a message may go straight to the port.
    #[inline(always)]
    pub(crate) fn no_msi(&self) -> bool {
        self.msis.is_empty()
    }

    /// A message of vector `v` waits here for a credit.
    #[inline(always)]
    pub(crate) fn holds_msi(&self, v: VectorId) -> bool {
        !self.msis.is_empty() && self.msis.contains(&v)
    }

    /// Holds `io`'s completion. True: the device joins its port's line now.
    pub(crate) fn hold_completion(&mut self, io: IoId) -> bool {
        self.completions.push_back(io);
        self.join()
    }

    /// Holds vector `v`'s message. True: the device joins its port's line now.
    pub(crate) fn hold_msi(&mut self, v: VectorId) -> bool {
        self.msis.push_back(v);
        self.join()
    }

    fn join(&mut self) -> bool {
        !std::mem::replace(&mut self.waiting, true)
    }

    /// What goes next when the device's turn comes.
    pub(crate) fn next(&self) -> Option<Held> {
        match self.msis.front() {
            Some(&v) => Some(Held::Msi(v)),
            None => self.completions.front().map(|&io| Held::Completion(io)),
        }
    }

    /// The write `next` named goes to the port.
    pub(crate) fn release(&mut self) {
        if self.msis.pop_front().is_none() {
            self.completions.pop_front();
        }
    }

    /// The device wrote one thing in its turn and left the head of the line. True: it
    /// still holds writes and waits again, behind the others.
    pub(crate) fn turn_over(&mut self) -> bool {
        if self.is_empty() {
            self.waiting = false;
        }
        self.waiting
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_device_joins_its_ports_line_once_and_leaves_when_empty() {
        let mut e = Egress::default();
        assert!(e.hold_completion(IoId::new(1)), "first held write");
        assert!(!e.hold_msi(VectorId::new(4)), "already in line");
        assert!(e.holds_msi(VectorId::new(4)) && !e.holds_msi(VectorId::new(5)));
        assert_eq!(e.next(), Some(Held::Msi(VectorId::new(4))), "MSIs go first");
        e.release();
        assert!(e.turn_over(), "a completion is still held");
        assert_eq!(e.next(), Some(Held::Completion(IoId::new(1))));
        e.release();
        assert!(!e.turn_over());
        assert!(
            e.is_empty() && e.hold_completion(IoId::new(2)),
            "it joins again"
        );
    }
}
