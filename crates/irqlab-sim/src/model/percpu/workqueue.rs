//! A CPU's bound kworker and the moderation work items queued on it (schedule_work on
//! system_wq, kernel/workqueue.c): ib_cq_rdma_dim_work, irq-am's program work, net_dim's.
//! Each item posts the device command, sleeps until its completion interrupt, then has
//! the device run the level its moderator chose.

use crate::model::ids::{ThreadId, VectorId};
use std::collections::VecDeque;

/// A kworker's progress through one moderation work item.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum WorkState {
    /// Between items.
    #[default]
    Idle,
    /// Building and posting the command (mailbox, doorbell).
    Posting,
    /// Asleep in wait_for_completion until the device's command completes.
    Waiting,
}

/// What the kworker does next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum WorkStep {
    /// Nothing queued: it sleeps until schedule_work wakes it.
    Sleep,
    /// Builds the command and rings its doorbell.
    Post,
    /// Waits for the command's completion.
    Wait,
    /// The command completed: the device runs `vector`'s new level; then the next item.
    Program(Option<VectorId>),
}

#[derive(Default)]
pub(crate) struct Workqueue {
    /// This CPU's kworker, when an adaptive moderator needs one.
    kworker: Option<ThreadId>,
    /// Items queued, in order.
    items: VecDeque<VectorId>,
    state: WorkState,
}

impl Workqueue {
    pub fn set_kworker(&mut self, t: ThreadId) {
        self.kworker = Some(t);
    }

    /// schedule_work for `v`'s moderator: returns the kworker to wake.
    pub fn schedule(&mut self, v: VectorId) -> Option<ThreadId> {
        self.items.push_back(v);
        self.kworker
    }

    /// The kworker's next step in the item at the head of the queue.
    pub fn advance(&mut self) -> WorkStep {
        match self.state {
            WorkState::Idle if self.items.is_empty() => WorkStep::Sleep,
            WorkState::Idle => {
                self.state = WorkState::Posting;
                WorkStep::Post
            }
            WorkState::Posting => {
                self.state = WorkState::Waiting;
                WorkStep::Wait
            }
            WorkState::Waiting => {
                self.state = WorkState::Idle;
                WorkStep::Program(self.items.pop_front())
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_item_is_posted_waited_for_and_programmed_in_order() {
        let mut wq = Workqueue::default();
        assert_eq!(wq.advance(), WorkStep::Sleep);
        wq.set_kworker(ThreadId::new(7));
        assert_eq!(wq.schedule(VectorId::new(1)), Some(ThreadId::new(7)));
        wq.schedule(VectorId::new(2));
        for v in [1, 2] {
            assert_eq!(wq.advance(), WorkStep::Post);
            assert_eq!(wq.advance(), WorkStep::Wait);
            assert_eq!(wq.advance(), WorkStep::Program(Some(VectorId::new(v))));
        }
        assert_eq!(wq.advance(), WorkStep::Sleep);
    }
}
