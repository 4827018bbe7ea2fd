//! Which queue each CPU submits to and which CPU each queue's vector interrupts
//! (`kernel.managed_irq_affinity`).
//!
//! `contiguous`: CPU c uses queue c × queues / cpus (blk_mq_map_queues' contiguous
//! ranges); a vector goes to the first CPU of its range, or with vectors_per_cpu = k to
//! that of the first queue of its group of k.
//!
//! `spread`, as v5.3 does it for nvme-pci: irq_build_affinity_masks spreads the vectors
//! over the NUMA nodes (kernel/irq/affinity.c: vecs_per_node = vectors left / nodes
//! left, each vector a run of a node's CPUs, siblings together, the first ones one CPU
//! longer when the node's CPUs do not divide evenly), blk_mq_pci_map_queues maps each
//! CPU to the queue whose mask holds it, and the vector matrix activates each vector on
//! the CPU of its mask with the fewest managed vectors so far, the last such CPU on a tie
//! (kernel/irq/matrix.c matrix_find_best_cpu_managed, since Long Li's "genirq/matrix:
//! Improve target CPU selection for managed interrupts", 2018). Devices are set up in
//! platform order, so the counts carry from one device to the next.

use crate::platform::DeviceGroup;

/// One device's interrupt-driven queue set.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Layout {
    /// Each CPU's queue.
    pub cpu_queue: Vec<usize>,
    /// Each queue's interrupt CPU.
    pub vector_cpu: Vec<usize>,
}

/// blk_mq_map_queues' contiguous ranges: CPU c uses queue c × nq / ncpu.
pub(crate) fn contiguous_map(ncpu: usize, nq: usize) -> Vec<usize> {
    (0..ncpu).map(|c| c * nq / ncpu).collect()
}

/// The `contiguous` layout of group `g`'s `nq` queues on `ncpu` CPUs.
pub(crate) fn contiguous(g: &DeviceGroup, ncpu: usize, nq: usize) -> Layout {
    let cpu_queue = contiguous_map(ncpu, nq);
    let vector_cpu = (0..nq)
        .map(|q| {
            let home = match g.vectors_per_cpu {
                0 => q,
                k => q / k * k,
            };
            g.irq_cpu
                .unwrap_or_else(|| cpu_queue.iter().position(|&x| x == home).unwrap_or(0))
        })
        .collect();
    Layout {
        cpu_queue,
        vector_cpu,
    }
}

/// The `spread` layout of `nq` queues on `ncpu` CPUs in nodes of `node_cpus` (0: one
/// node); `managed` counts each CPU's managed vectors so far and is updated. A group's
/// `irq_cpu` still pins its vectors.
pub(crate) fn spread(
    g: &DeviceGroup,
    ncpu: usize,
    nq: usize,
    node_cpus: usize,
    managed: &mut [u32],
) -> Layout {
    let masks = affinity_masks(ncpu, nq, node_cpus);
    // blk_mq_pci_map_queues; a CPU in no mask falls back to blk_mq_map_queues.
    let mut cpu_queue = contiguous_map(ncpu, nq);
    for (q, m) in masks.iter().enumerate() {
        for &c in m {
            cpu_queue[c] = q;
        }
    }
    let vector_cpu = masks
        .iter()
        .enumerate()
        .map(|(q, m)| {
            if let Some(c) = g.irq_cpu {
                return c;
            }
            let mask: Vec<usize> = if m.is_empty() {
                (0..ncpu).filter(|&c| cpu_queue[c] == q).collect()
            } else {
                m.clone()
            };
            let mut best = None;
            let mut allocated = u32::MAX;
            for &c in &mask {
                if managed[c] > allocated {
                    continue;
                }
                best = Some(c);
                allocated = managed[c];
            }
            let c = best.unwrap_or(0);
            managed[c] += 1;
            c
        })
        .collect();
    Layout {
        cpu_queue,
        vector_cpu,
    }
}

/// irq_build_affinity_masks (v5.3, every CPU present): each vector's CPUs.
fn affinity_masks(ncpu: usize, nvec: usize, node_cpus: usize) -> Vec<Vec<usize>> {
    let node = if node_cpus == 0 { ncpu } else { node_cpus };
    let nodes: Vec<std::ops::Range<usize>> = (0..ncpu.div_ceil(node))
        .map(|n| n * node..((n + 1) * node).min(ncpu))
        .collect();
    let mut masks = vec![Vec::new(); nvec];
    if nvec <= nodes.len() {
        // Fewer vectors than nodes: whole nodes per vector, round robin.
        for (i, n) in nodes.iter().enumerate() {
            masks[i % nvec].extend(n.clone());
        }
        return masks;
    }
    let (mut curvec, mut done, mut left) = (0, 0, nodes.len());
    for n in &nodes {
        let vecs_per_node = (nvec - curvec) / left;
        let ncpus = n.len();
        let to_assign = vecs_per_node.min(ncpus);
        if to_assign == 0 {
            break;
        }
        let mut extra = ncpus - to_assign * (ncpus / to_assign);
        let mut next = n.start;
        let mut v = 0;
        while curvec < nvec && v < to_assign {
            let mut per = ncpus / to_assign;
            if extra > 0 {
                per += 1;
                extra -= 1;
            }
            // irq_spread_init_one: the node's next CPUs, a CPU's siblings with it (the
            // model numbers siblings consecutively).
            masks[curvec].extend(next..(next + per).min(n.end));
            next += per;
            curvec += 1;
            v += 1;
        }
        done += v;
        if done >= nvec {
            break;
        }
        if curvec >= nvec {
            curvec = 0;
        }
        left -= 1;
    }
    masks
}

#[cfg(test)]
mod tests {
    use super::*;

    fn group() -> DeviceGroup {
        let text = include_str!("../../../../platforms/example.toml");
        let p = crate::Platform::from_toml(text, "example.toml", &[]).expect("example");
        p.devices[0].clone()
    }

    #[test]
    fn thirty_two_vectors_over_ten_nodes_of_eight() {
        let m = affinity_masks(80, 32, 8);
        // Eight nodes of three vectors (3, 3 and 2 CPUs), then two of four (2 each).
        assert_eq!(m[0], [0, 1, 2]);
        assert_eq!(m[1], [3, 4, 5]);
        assert_eq!(m[2], [6, 7]);
        assert_eq!(m[3], [8, 9, 10]);
        assert_eq!(m[24], [64, 65]);
        assert_eq!(m[31], [78, 79]);
        assert!(m.iter().all(|v| !v.is_empty()));
    }

    #[test]
    fn the_matrix_spreads_ten_devices_over_every_cpu() {
        let g = group();
        let mut managed = vec![0u32; 80];
        let layouts: Vec<Layout> = (0..10)
            .map(|_| spread(&g, 80, 32, 8, &mut managed))
            .collect();
        // The first device's vectors go to the last CPU of each mask (a tie), the next
        // device's to the last of the least used.
        assert_eq!(layouts[0].vector_cpu[0], 2);
        assert_eq!(layouts[1].vector_cpu[0], 1);
        assert_eq!(layouts[2].vector_cpu[0], 0);
        assert!(managed.iter().all(|&n| (3..=5).contains(&n)), "{managed:?}");
        assert_eq!(layouts[0].cpu_queue[2], 0);
        assert_eq!(layouts[0].cpu_queue[3], 1);
    }

    #[test]
    fn contiguous_puts_each_vector_on_its_ranges_first_cpu() {
        let l = contiguous(&group(), 80, 32);
        assert_eq!(l.cpu_queue[2], 0);
        assert_eq!(l.cpu_queue[3], 1);
        assert_eq!(&l.vector_cpu[..3], [0, 3, 5]);
    }
}
