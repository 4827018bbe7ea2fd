//! The socket's interrupt router (the UBox, "the intermediary for interrupt traffic,
//! receiving interrupts from the system and dispatching interrupts to the appropriate
//! core", Intel's uncore manuals): one interrupt message at a time, first come first
//! served, for every stack of the socket.

use crate::model::ids::{CpuId, StackId};
use std::collections::VecDeque;

/// A CPU notification on its way from an IIO stack through the socket's router: a
/// message, not state of its own.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Notification {
    pub cpu: CpuId,
    /// The IDT vector the CPU receives (a device vector, or the posted notification vector).
    pub idt: u16,
    /// A remapped interrupt holds its stack until the router has sent it on.
    pub holds: Option<StackId>,
}

pub(crate) struct Router {
    /// Service time per message, ns (0: instant, no shared limit).
    service_ns: u64,
    busy: bool,
    queue: VecDeque<Notification>,
    /// Statistics over the window: messages sent on and time busy.
    delivered: u64,
    busy_ns: u64,
    busy_since: u64,
}

impl Router {
    /// An idle router taking `service_ns` per message.
    pub(crate) fn idle(service_ns: u64) -> Router {
        Router {
            service_ns,
            busy: false,
            queue: VecDeque::new(),
            delivered: 0,
            busy_ns: 0,
            busy_since: 0,
        }
    }

    /// The notifications waiting their turn, the one being sent on first.
    pub(crate) fn queued(&self) -> impl Iterator<Item = &Notification> {
        self.queue.iter()
    }

    /// The router takes time per message, shared by every stack (0 ns: it is not modelled).
    #[inline]
    pub(crate) fn is_shared(&self) -> bool {
        self.service_ns > 0
    }

    /// A notification arrives from a stack and waits its turn. Returns when it is sent
    /// on if the router was idle and starts on it now.
    pub(crate) fn accept(&mut self, n: Notification, now: u64) -> Option<u64> {
        self.queue.push_back(n);
        if self.busy { None } else { self.start(now) }
    }

    /// The router starts on the message at its head, if any. Returns when it is sent on.
    pub(crate) fn start(&mut self, now: u64) -> Option<u64> {
        if self.queue.is_empty() {
            return None;
        }
        self.busy = true;
        self.busy_since = now;
        Some(now + self.service_ns)
    }

    /// The message at the head was sent on at `now` (`window`: the measured window's
    /// start while measuring). Returns it.
    pub(crate) fn sent(&mut self, now: u64, window: Option<u64>) -> Option<Notification> {
        self.busy = false;
        if let Some(start) = window {
            self.delivered += 1;
            self.busy_ns += now - self.busy_since.max(start);
        }
        self.queue.pop_front()
    }

    /// The measured window opens: the counters start over.
    pub(crate) fn open_window(&mut self) {
        self.delivered = 0;
        self.busy_ns = 0;
    }

    /// Messages sent on in the window.
    pub(crate) fn delivered(&self) -> u64 {
        self.delivered
    }

    /// Time busy in the window, ns.
    pub(crate) fn busy_ns(&self) -> u64 {
        self.busy_ns
    }
}
