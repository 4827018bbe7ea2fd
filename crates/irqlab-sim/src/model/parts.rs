//! Independent parts of a machine, simulated on separate threads.
//!
//! Two components interact when one can change the other's state: a thread and its CPU,
//! a job and its queues, a queue and its device, vector and target queue, a vector and
//! its CPU and irq thread, a device and its root port, a root port and its IIO stack, and
//! every stack whose MSIs go through the socket's interrupt router. Components joined that way form a part; parts
//! share nothing, so each one's events happen in the same order whether it runs alone
//! or beside the others, and its components end in the same state. The run then merges
//! the parts' components into one machine and reports it as if it had run whole.
//!
//! The measuring window is the one global decision: it closes when the last job of any
//! part is done, so every part first runs to its own end, then all run to the latest.

use super::state::Sim;
use crate::SimError;
use crate::observer::{NoObserver, Observer};

/// Runs every part of `partition` on up to `threads` threads, each part in a machine
/// from `build`, and merges them into `whole`. False when a part hit the run's time
/// bound (the caller then runs the machine whole, whose bound is global).
pub(crate) fn run_parts<'a, O: Observer>(
    partition: &Partition,
    threads: usize,
    build: impl Fn() -> Result<Sim<'static, NoObserver>, SimError> + Sync,
    whole: &mut Sim<'a, O>,
) -> Result<bool, SimError> {
    let workers = threads.min(partition.parts as usize).max(1);
    let mine = |w: usize| (w..partition.parts as usize).step_by(workers);
    // Phase 1: every part runs until its own jobs are done.
    let mut done: Vec<Vec<(u32, Sim<'static, NoObserver>, u64)>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..workers)
            .map(|w| {
                let build = &build;
                s.spawn(move || -> Result<_, SimError> {
                    let mut out = Vec::new();
                    for k in mine(w) {
                        let mut sim = build()?;
                        sim.start(Some((partition, k as u32)));
                        let end = sim.run_jobs();
                        out.push((k as u32, sim, end));
                    }
                    Ok(out)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("a part's thread panicked"))
            .collect::<Result<Vec<_>, SimError>>()
    })?;
    if done.iter().flatten().any(|(_, sim, _)| sim.cut_short) {
        return Ok(false);
    }
    // Phase 2: all run to the latest end, close the window there, and drain.
    let end = done.iter().flatten().map(|(_, _, e)| *e).max().unwrap_or(0);
    std::thread::scope(|s| {
        for group in &mut done {
            s.spawn(move || {
                for (_, sim, _) in group.iter_mut() {
                    sim.finish(end);
                }
            });
        }
    });
    let mut parts: Vec<_> = done.into_iter().flatten().collect();
    parts.sort_by_key(|(k, _, _)| *k);
    if parts.iter().any(|(_, sim, _)| sim.cut_short) {
        return Ok(false);
    }
    whole.window_end = end;
    for (k, sim, _) in &mut parts {
        partition.merge_into(*k, whole, sim);
    }
    // The end of the ramp is the one event every part ran: count it once. A part stopped
    // by its flag (Ctrl-C) before the ramp ended did not run it.
    if whole.window_start > 0 {
        let ran = parts
            .iter()
            .filter(|(_, sim, _)| !sim.interrupted || sim.now > whole.window_start)
            .count() as u64;
        whole.merged_events -= ran.saturating_sub(1);
    }
    Ok(true)
}

/// Which part every component belongs to.
#[derive(Clone, Debug)]
pub(crate) struct Partition {
    cpu: Vec<u32>,
    thread: Vec<u32>,
    job: Vec<u32>,
    device: Vec<u32>,
    queue: Vec<u32>,
    vector: Vec<u32>,
    port: Vec<u32>,
    stack: Vec<u32>,
    /// The part holding the interrupt router (the one whose MSIs use it).
    router: u32,
    parts: u32,
}

impl Partition {
    pub fn parts(&self) -> usize {
        self.parts as usize
    }
    pub fn cpu(&self, c: usize) -> u32 {
        self.cpu[c]
    }
    pub fn thread(&self, t: usize) -> u32 {
        self.thread[t]
    }
    pub fn job(&self, j: usize) -> u32 {
        self.job[j]
    }

    /// Splits `sim`'s machine into parts; None when it does not split (one part, a
    /// global mechanism such as GSIM or the resend tasklet, stonewall waves that start jobs across parts, jobs
    /// fio couples (flows, exitall, wait_for, ...), or jobs the scheduler may move to any
    /// CPU).
    pub fn of<O: Observer>(sim: &Sim<'_, O>) -> Option<Partition> {
        // A virtio-blk host thread serves all its queues' jobs, placement moves jobs
        // between CPUs, and `--event` moves vectors: such a machine runs whole.
        if sim.gsim.is_some()
            || sim.moves.is_some()
            || sim.costs.resend_tasklet
            || sim.fio.wave_count() > 1
            || sim.fio.couples_jobs(&sim.jobs)
            || sim.place.is_some()
            || sim.devices.iter().any(|d| d.is_virtio())
        {
            return None;
        }
        let n = Nodes::new(sim);
        let mut uf = connect(sim, &n);
        let uses_router = sim.fabric.router().is_shared();
        // Parts are numbered in order of their first component, so the numbering (and
        // the merge) does not depend on the union order.
        let roots: Vec<usize> = (0..n.total).map(|x| uf.find(x)).collect();
        let mut has_job = vec![false; n.total];
        for x in n.jobs.clone() {
            has_job[roots[x]] = true;
        }
        let mut label: Vec<Option<u32>> = vec![None; n.total];
        let mut parts = 0u32;
        for &r in &roots {
            if has_job[r] && label[r].is_none() {
                label[r] = Some(parts);
                parts += 1;
            }
        }
        // What no job reaches (idle CPUs that only tick, unused queues) rides with part 0.
        let part = |x: usize| label[roots[x]].unwrap_or(0);
        if parts < 2 {
            return None;
        }
        let map = |r: &std::ops::Range<usize>| r.clone().map(part).collect::<Vec<u32>>();
        let (cpu, thread, job) = (map(&n.cpus), map(&n.threads), map(&n.jobs));
        let (device, queue) = (map(&n.devices), map(&n.queues));
        let (vector, port, stack) = (map(&n.vectors), map(&n.ports), map(&n.stacks));
        // An unused router (no service time) is nobody's: every part's copy is untouched.
        let router = if uses_router { part(n.router) } else { 0 };
        Some(Partition {
            cpu,
            thread,
            job,
            device,
            queue,
            vector,
            port,
            stack,
            router,
            parts,
        })
    }

    /// Moves every component part `k` owns from `from` into `into` (both machines were
    /// built from the same inputs), with the counters that add up.
    pub fn merge_into<O: Observer, P: Observer>(
        &self,
        k: u32,
        into: &mut Sim<'_, O>,
        from: &mut Sim<'_, P>,
    ) {
        fn take<T>(owner: &[u32], k: u32, into: &mut [T], from: &mut [T]) {
            for (i, &o) in owner.iter().enumerate() {
                if o == k {
                    std::mem::swap(&mut into[i], &mut from[i]);
                }
            }
        }
        take(&self.cpu, k, &mut into.cpus, &mut from.cpus);
        take(&self.thread, k, &mut into.threads, &mut from.threads);
        take(&self.job, k, &mut into.jobs, &mut from.jobs);
        take(&self.device, k, &mut into.devices, &mut from.devices);
        take(&self.device, k, into.fio.disks_mut(), from.fio.disks_mut());
        take(&self.queue, k, &mut into.queues, &mut from.queues);
        take(&self.vector, k, &mut into.vectors, &mut from.vectors);
        into.fabric.take_part(
            &mut from.fabric,
            |p| self.port[p] == k,
            |s| self.stack[s] == k,
            self.router == k,
        );
        into.totals.add(&from.totals);
        into.merged_events += from.q.popped() + from.merged_events;
        into.now = into.now.max(from.now);
        into.cut_short |= from.cut_short;
        into.interrupted |= from.interrupted;
    }
}

/// Joins every two components of `sim` that can change each other's state: a thread and
/// its CPU, a job and its thread and queues, and along each queue a job uses its device,
/// target queue, spinners, vector, the vector's CPU and irq thread, and the router its
/// MSIs go through; each device and its root port; each root port and its IIO stack.
fn connect<O: Observer>(sim: &Sim<'_, O>, n: &Nodes) -> UnionFind {
    let mut uf = UnionFind::new(n.total);
    for (t, th) in sim.threads.iter().enumerate() {
        uf.union(n.thread(t), n.cpu(th.cpu().ix()));
    }
    for (j, job) in sim.jobs.iter().enumerate() {
        uf.union(n.job(j), n.thread(job.thread().ix()));
        for &q in job.queues() {
            uf.union(n.job(j), n.queue(q.ix()));
        }
    }
    // Only queues a job uses carry traffic (with their NVMe over RDMA target queues);
    // the others' queues and vectors never change, whichever part holds them.
    let mut used = vec![false; sim.queues.len()];
    for job in &sim.jobs {
        for &q in job.queues() {
            used[q.ix()] = true;
            if let Some(tq) = sim.queues[q.ix()].target() {
                used[tq.ix()] = true;
            }
        }
    }
    let uses_router = sim.fabric.router().is_shared();
    for (q, queue) in sim.queues.iter().enumerate() {
        if !used[q] {
            continue;
        }
        uf.union(n.queue(q), n.device(queue.device().ix()));
        if let Some(tq) = queue.target() {
            uf.union(n.queue(q), n.queue(tq.ix()));
        }
        for &t in queue.spinners() {
            uf.union(n.queue(q), n.thread(t.ix()));
        }
        let Some(v) = queue.vector() else {
            continue;
        };
        let (v, vec) = (v.ix(), &sim.vectors[v.ix()]);
        uf.union(n.queue(q), n.vector(v));
        uf.union(n.vector(v), n.cpu(vec.cpu().ix()));
        if let Some(t) = vec.thread() {
            uf.union(n.vector(v), n.thread(t.ix()));
        }
        if uses_router && !queue.is_target() {
            // Its MSIs leave through the port's stack for the socket's router.
            uf.union(n.vector(v), n.router);
        }
    }
    for (d, dev) in sim.devices.iter().enumerate() {
        uf.union(n.device(d), n.port(dev.port().ix()));
    }
    for (p, port) in sim.fabric.ports().iter().enumerate() {
        // The stack serves its ports' MSIs in one queue.
        uf.union(n.port(p), n.stack(port.stack().ix()));
    }
    uf
}

/// Component indices laid out in one range for the union-find.
struct Nodes {
    cpus: std::ops::Range<usize>,
    threads: std::ops::Range<usize>,
    jobs: std::ops::Range<usize>,
    devices: std::ops::Range<usize>,
    queues: std::ops::Range<usize>,
    vectors: std::ops::Range<usize>,
    ports: std::ops::Range<usize>,
    stacks: std::ops::Range<usize>,
    router: usize,
    total: usize,
}

impl Nodes {
    fn new<O: Observer>(sim: &Sim<'_, O>) -> Self {
        let mut at = 0;
        let mut range = |n: usize| {
            let r = at..at + n;
            at += n;
            r
        };
        let cpus = range(sim.cpus.len());
        let threads = range(sim.threads.len());
        let jobs = range(sim.jobs.len());
        let devices = range(sim.devices.len());
        let queues = range(sim.queues.len());
        let vectors = range(sim.vectors.len());
        let ports = range(sim.fabric.ports().len());
        let stacks = range(sim.fabric.stack_count());
        let router = range(1).start;
        Nodes {
            cpus,
            threads,
            jobs,
            devices,
            queues,
            vectors,
            ports,
            stacks,
            router,
            total: at,
        }
    }
    fn cpu(&self, i: usize) -> usize {
        self.cpus.start + i
    }
    fn thread(&self, i: usize) -> usize {
        self.threads.start + i
    }
    fn job(&self, i: usize) -> usize {
        self.jobs.start + i
    }
    fn device(&self, i: usize) -> usize {
        self.devices.start + i
    }
    fn queue(&self, i: usize) -> usize {
        self.queues.start + i
    }
    fn vector(&self, i: usize) -> usize {
        self.vectors.start + i
    }
    fn port(&self, i: usize) -> usize {
        self.ports.start + i
    }
    fn stack(&self, i: usize) -> usize {
        self.stacks.start + i
    }
}

struct UnionFind {
    parent: Vec<usize>,
}

impl UnionFind {
    fn new(n: usize) -> Self {
        UnionFind {
            parent: (0..n).collect(),
        }
    }
    fn find(&mut self, mut x: usize) -> usize {
        while self.parent[x] != x {
            self.parent[x] = self.parent[self.parent[x]];
            x = self.parent[x];
        }
        x
    }
    fn union(&mut self, a: usize, b: usize) {
        let (a, b) = (self.find(a), self.find(b));
        if a != b {
            self.parent[a.max(b)] = a.min(b);
        }
    }
}
