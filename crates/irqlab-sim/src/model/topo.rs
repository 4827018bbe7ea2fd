//! The scheduler's view of the machine (kernel/sched/topology.c): its sched domains.
//!
//! The platform gives SMT siblings, the LLC and the NUMA node as consecutive blocks of
//! CPUs (`cpu.threads_per_core`, `cpu.llc_cpus`, `cpu.node_cpus`). A CPU's domains are,
//! from the bottom, SMT (its core), MC (its LLC), the node, and the whole machine; a
//! domain that spans no more than the one below it is dropped, as
//! sd_parent_degenerate drops it. Each domain's groups are the child's spans. Every
//! domain has SD_WAKE_AFFINE and SD_BALANCE_FORK (sd_init's defaults; the one NUMA
//! level is taken to be within RECLAIM_DISTANCE, so it keeps them too), none has
//! SD_BALANCE_WAKE.

use crate::platform::CpuCosts;
use std::ops::Range;

/// One level of a CPU's sched domains.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Level {
    /// CPUs the domain spans (a block of this size holding the CPU).
    pub span: usize,
    /// CPUs of each of its groups (the child domain's span; 1 at the bottom).
    pub group: usize,
    /// sd->imbalance_pct (sd_init: 110 for SMT, 117 for the LLC, 125 above).
    pub imbalance_pct: u64,
    /// SD_NUMA: the level above the node.
    pub numa: bool,
}

/// The machine's sched domains, the same shape on every CPU.
#[derive(Clone, Debug)]
pub(crate) struct Topology {
    cpus: usize,
    smt: usize,
    llc: usize,
    /// Lowest first.
    levels: Vec<Level>,
}

impl Topology {
    pub fn new(c: &CpuCosts) -> Topology {
        let cpus = c.count;
        let smt = c.threads_per_core.clamp(1, cpus);
        let llc = if c.llc_cpus == 0 { cpus } else { c.llc_cpus };
        let node = if c.node_cpus == 0 { cpus } else { c.node_cpus };
        let mut levels = Vec::new();
        let mut below = 1;
        for (span, pct, numa) in [
            (smt, 110, false),
            (llc, 117, false),
            (node, 125, false),
            (cpus, 125, node < cpus),
        ] {
            let span = span.min(cpus);
            if span > below {
                levels.push(Level {
                    span,
                    group: below,
                    imbalance_pct: pct,
                    numa,
                });
                below = span;
            }
        }
        Topology {
            cpus,
            smt,
            llc: llc.min(cpus),
            levels,
        }
    }

    /// The CPU's domains, lowest first (for_each_domain).
    pub fn levels(&self) -> &[Level] {
        &self.levels
    }

    /// The block of `size` CPUs holding `c` (the last block may be short).
    pub fn block(&self, size: usize, c: usize) -> Range<usize> {
        let start = c / size * size;
        start..(start + size).min(self.cpus)
    }

    /// cpus_share_cache: the same sd_llc_id.
    pub fn share_cache(&self, a: usize, b: usize) -> bool {
        a / self.llc == b / self.llc
    }

    /// The span of sd_llc (the highest domain with SD_SHARE_PKG_RESOURCES), None when no
    /// CPU shares a cache with another.
    pub fn llc_span(&self, c: usize) -> Option<Range<usize>> {
        (self.llc > 1).then(|| self.block(self.llc, c))
    }

    /// sd_llc_size (1 without a shared cache).
    pub fn llc_size(&self, c: usize) -> usize {
        self.block(self.llc, c).len()
    }

    /// cpu_smt_mask: the CPU's core.
    pub fn core(&self, c: usize) -> Range<usize> {
        self.block(self.smt, c)
    }

    /// sched_smt_active: cores have several CPUs.
    pub fn smt_active(&self) -> bool {
        self.smt > 1
    }

    /// The groups of `level` on CPU `c`, the local group first, then in CPU order around
    /// the span (build_sched_groups links them in that order).
    pub fn groups(&self, level: &Level, c: usize) -> Vec<Range<usize>> {
        let span = self.block(level.span, c);
        let n = span.len().div_ceil(level.group);
        let local = (c - span.start) / level.group;
        (0..n)
            .map(|i| {
                let g = (local + i) % n;
                let start = span.start + g * level.group;
                start..(start + level.group).min(span.end)
            })
            .collect()
    }
}

/// for_each_cpu_wrap(cpu, span, start): the span's CPUs from `start` on, wrapping.
pub(crate) fn wrap(span: Range<usize>, start: usize) -> impl Iterator<Item = usize> {
    let n = span.len();
    // An empty span (a level with no CPU there) has nothing to visit.
    let first = if n == 0 {
        0
    } else {
        start.clamp(span.start, span.end - 1) - span.start
    };
    (0..n).map(move |i| span.start + (first + i) % n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wrapping_an_empty_span_visits_nothing() {
        assert_eq!(wrap(56..56, 56).count(), 0);
        assert_eq!(wrap(4..8, 6).collect::<Vec<_>>(), vec![6, 7, 4, 5]);
    }

    fn topo(count: usize, smt: usize, llc: usize, node: usize) -> Topology {
        let text = include_str!("../../../../platforms/example.toml");
        let mut p = crate::Platform::from_toml(text, "example.toml", &[]).expect("example");
        p.cpu.count = count;
        p.cpu.threads_per_core = smt;
        p.cpu.llc_cpus = llc;
        p.cpu.node_cpus = node;
        Topology::new(&p.cpu)
    }

    #[test]
    fn one_llc_is_one_domain_of_single_cpu_groups() {
        let t = topo(16, 1, 0, 0);
        assert_eq!(t.levels().len(), 1);
        assert_eq!((t.levels()[0].span, t.levels()[0].group), (16, 1));
        assert!(t.share_cache(0, 15));
        assert_eq!(t.llc_size(3), 16);
    }

    #[test]
    fn smt_llc_and_numa_nest_and_degenerate_levels_go() {
        // L80s_v2-like: cores of 2, LLC of 8 = node of 8: SMT, MC, NUMA (the node level
        // spans no more than the LLC and is dropped).
        let t = topo(80, 2, 8, 8);
        let spans: Vec<(usize, usize, bool)> = t
            .levels()
            .iter()
            .map(|l| (l.span, l.group, l.numa))
            .collect();
        assert_eq!(spans, [(2, 1, false), (8, 2, false), (80, 8, true)]);
        assert!(t.share_cache(8, 15) && !t.share_cache(7, 8));
        assert_eq!(t.core(5), 4..6);
        let g = t.groups(&t.levels()[1], 13);
        assert_eq!(g, [12..14, 14..16, 8..10, 10..12]);
    }

    #[test]
    fn wrap_starts_at_the_target() {
        assert_eq!(wrap(8..12, 10).collect::<Vec<_>>(), [10, 11, 8, 9]);
    }
}
