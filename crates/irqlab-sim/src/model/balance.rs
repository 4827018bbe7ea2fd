//! Idle load balancing of movable threads (kernel/sched/fair.c), in outline: a CPU that
//! finds nothing to run pulls a waiting task (v5.3 idle_balance, v6.6 newidle_balance),
//! and a busy CPU with two or more runnable tasks kicks an idle CPU at its tick
//! (nohz_balancer_kick), which then balances for the idle CPUs (rebalance_domains).
//! Either pulls one task that can_migrate_task allows: a movable fair task waiting on
//! the source (not running), not cache hot (task_hot: it ran within
//! sysctl_sched_migration_cost). A newly idle CPU tries only while its avg_idle is at
//! least that cost, domain by domain from the lowest, from the CPU with the most
//! runnable tasks.
//!
//! Simplified: no group statistics or imbalance sums (find_busiest_group,
//! calculate_imbalance): one waiting task moves to one idle CPU; no periodic balancing
//! between busy CPUs; a hot task is never pulled (no nr_balance_failed retries).

use super::ids::ThreadId;
use super::state::*;
use super::topo::wrap;
use crate::observer::Observer;

/// sysctl_sched_migration_cost, ns.
const MIGRATION_COST: u64 = 500_000;

impl<O: Observer> Sim<'_, O> {
    /// rq->nr_running of CPU `c`.
    fn nr_running(&self, c: usize) -> usize {
        self.cpus[c].rq.nr_running()
    }

    /// can_migrate_task: the first waiting task of `src` that may move.
    fn pullable(&self, src: usize) -> Option<usize> {
        self.cpus[src]
            .rq
            .waiters()
            .position(|t| self.threads[t.ix()].can_migrate(self.now, MIGRATION_COST))
    }

    /// Moves the waiting task at `src`'s run-queue index `i` to `dst`'s run queue.
    fn pull(&mut self, src: usize, i: usize, dst: usize) {
        let Some(t) = self.cpus[src].rq.dequeue(i) else {
            return;
        };
        self.migrate(t.ix(), dst);
        self.cpus[dst].rq.enqueue(ThreadId::new(t.ix()), false);
        self.cpus[dst].rq.busy_without_wakeup();
    }

    /// CPU `c` is about to go idle: pull a waiting task from the busiest CPU of its
    /// lowest domain that has one. True when it did (it is on `c`'s run queue).
    pub(crate) fn newidle_pull(&mut self, c: usize) -> bool {
        if self.place.is_none() || self.cpus[c].rq.avg_idle() < MIGRATION_COST {
            return false;
        }
        let levels = self.topo.levels().to_vec();
        for level in &levels {
            let span = self.topo.block(level.span, c);
            let busiest = wrap(span, c)
                .filter(|&s| s != c && self.nr_running(s) >= 2)
                .filter_map(|s| self.pullable(s).map(|i| (s, i)))
                .max_by_key(|&(s, _)| (self.nr_running(s), std::cmp::Reverse(s)));
            if let Some((src, i)) = busiest {
                self.pull(src, i, c);
                return true;
            }
        }
        false
    }

    /// nohz_balancer_kick at CPU `c`'s tick: with two or more tasks runnable here, the
    /// nearest idle CPU (lowest domain first) pulls a waiting task of `c` and is kicked
    /// with an IPI to run it.
    pub(crate) fn nohz_kick(&mut self, c: usize) {
        if self.place.is_none() || self.nr_running(c) < 2 {
            return;
        }
        let Some(i) = self.pullable(c) else {
            return;
        };
        let levels = self.topo.levels().to_vec();
        for level in &levels {
            let span = self.topo.block(level.span, c);
            if let Some(dst) = wrap(span, c).find(|&d| d != c && self.idle_cpu(d)) {
                self.pull(c, i, dst);
                self.kick_idle(dst);
                return;
            }
        }
    }
}
