//! The model: state of every CPU, thread, job, device, queue, vector and root port, and
//! the event loop that moves them. The sibling files:
//! - `state`: `Sim`, one arena per kind of component, and the cost table; `ids`: typed ids.
//! - `percpu`: a CPU as parts owning their state (local APIC and delivery path, hardirq
//!   frame, softirq and irq_poll, run queue, GSIM and flood detection, kworker, time
//!   accounting); `cpu`: what the CPU does with them (interrupt entry, hardirq handlers,
//!   softirq, ticks, accounting); `sched`: the per-CPU scheduler and the threads' steps;
//!   `thread`: a task's own scheduling state (vruntime, PELT, record_wakee, its step),
//!   answering the scheduler's questions.
//! - `vector`: each device MSI-X vector, owning its route, its device side (core's
//!   `MsixVector`), genirq's descriptor, its moderator and counters, and answering what
//!   they decided; `genirq`: what the simulator carries out of its irq_desc flow
//!   (disable, pend, rerun, resend).
//! - `fabric`: the root ports, IIO stacks and the socket's interrupt router, each owning
//!   its state and answering what happened; `controller`: each device's controller (SQ
//!   fetch, media units, writes held for credits), likewise; `device`: what the
//!   controller's answers, its MSI-X vectors and the root port's writes do; `delivery`:
//!   an MSI's way through the port's IIO stack and the router to a CPU; `target`: NVMe
//!   over RDMA targets;
//!   `virtio`: virtio-blk's rings and its guest driver, `virtio_host` the VMM thread that
//!   serves them; `guest`: vCPU wakes.
//! - `io`: one I/O's request record (job, queue, command id, command, times, media unit).
//! - `job`: the fio job loop; `job_life`: a job's record (its loop's phase, its I/Os in
//!   flight, its statistics), owning its fields; `fio_job` and `fio_ctl`: fio's per-job
//!   and run-wide state, owning theirs.
//! - `irq_move`: `--event`'s vector moves and CPUs going offline.
//! - `build`: the machine from platform, jobs and policy; `report`: the measured window
//!   and the report; `parts`: independent parts of a machine on threads.

mod affinity;
mod balance;
mod budget;
mod build;
mod commands;
mod controller;
mod cpu;
mod cpuio;
mod delivery;
mod device;
mod fabric;
mod fio_build;
mod fio_ctl;
mod fio_job;
mod flow;
mod genirq;
mod guest;
pub(crate) mod ids;
mod io;
mod irq_move;
mod job;
mod job_life;
mod offload;
mod parts;
mod pelt;
mod percpu;
mod placement;
mod queue;
mod reap;
mod report;
mod run_control;
mod sched;
mod sqpoll;
mod state;
mod steadystate;
mod submit;
mod target;
mod thread;
mod topo;
mod vector;
mod virtio;
mod virtio_host;
mod zbd;

pub(crate) use budget::estimate;
pub(crate) use build::{build, device_names, resolve_file};
pub(crate) use parts::{Partition, run_parts};
pub(crate) use state::Sim;

use crate::engine::Event;
use crate::observer::Observer;
use ids::{CpuId, JobId};

/// Events between two looks at the stop flag: a relaxed load every few µs of wall time.
const STOP_CHECK_EVENTS: u64 = 4096;

impl<O: Observer> Sim<'_, O> {
    /// Runs until every job has finished and the machine is quiet.
    pub(crate) fn run(&mut self) {
        self.start(None);
        let end = self.run_jobs();
        self.finish(end);
    }

    /// Schedules the first events: job start delays and ramp ends, every CPU's tick, the
    /// threads that start runnable, the end of the ramp. With `only`, just those of one
    /// part of the machine (parts.rs): the rest stays idle and unreported.
    pub(crate) fn start(&mut self, only: Option<(&Partition, u32)>) {
        let mine = |of: &dyn Fn(&Partition) -> u32| only.is_none_or(|(p, k)| of(p) == k);
        let names = build::queue_names(self);
        let vector_names: Vec<String> = self
            .vectors
            .iter()
            .map(|v| names[v.queue().ix()].clone())
            .collect();
        self.obs.start(&vector_names, self.cpus.len());
        self.jobs_live = 0;
        for j in 0..self.jobs.len() {
            if !mine(&|p| p.job(j)) || self.is_helper(j) {
                continue;
            }
            self.jobs_live += 1;
            if self.waits(j) {
                // wait_for: started when what it waits for has exited.
                continue;
            }
            let f = self.jobs[j].fio();
            let job = JobId::new(j);
            if self.threads[self.jobs[j].thread().ix()].start_runnable() {
                if f.measure_from() > 0 {
                    self.q.push(f.measure_from(), Event::JobRampEnd { job });
                }
            } else if f.wave() == 0 {
                self.q.push(f.startdelay_ns(), Event::JobStart { job });
            }
        }
        for c in 0..self.cpus.len() {
            if mine(&|p| p.cpu(c)) {
                let first = self.costs.tick_period;
                self.q.push(first, Event::Tick { cpu: CpuId::new(c) });
            }
        }
        for t in 0..self.threads.len() {
            if self.threads[t].start_runnable() && mine(&|p| p.thread(t)) {
                self.wake_thread(t, None);
            }
        }
        self.schedule_irq_moves();
        if self.window_start > 0 {
            self.q.push(self.window_start, Event::RampEnd);
        } else {
            self.open_window();
        }
        if let Some(ms) = self.fio.ss_interval_ms()
            && ms * 1_000_000 <= self.stop_at
        {
            self.q.push(ms * 1_000_000, Event::SteadyCheck);
        }
        // Jobs that start at once start their SQPOLL threads with them.
        for j in 0..self.jobs.len() {
            if self.fio_job_started_at_zero(j) && mine(&|p| p.job(j)) {
                self.start_helpers(j);
            }
        }
    }

    /// Whether job `j` started at time 0 with the machine (its thread runnable).
    fn fio_job_started_at_zero(&self, j: usize) -> bool {
        !self.is_helper(j)
            && self.jobs[j].fio().started()
            && self.threads[self.jobs[j].thread().ix()].start_runnable()
    }

    /// Runs until the jobs are done, with every event at the time the last one ended, or
    /// until the time bound, or until the run's stop flag is set. Returns the time the
    /// measuring window may close.
    pub(crate) fn run_jobs(&mut self) -> u64 {
        loop {
            let limit = if self.jobs_live == 0 {
                self.now
            } else {
                self.stop_at
            };
            if self.q.popped().is_multiple_of(STOP_CHECK_EVENTS) && self.stop.is_set() {
                self.interrupted = true;
                break;
            }
            let Some((t, ev)) = self.q.pop_until(limit) else {
                break;
            };
            self.at(t, ev);
        }
        if self.jobs_live > 0 && !self.q.is_empty() && !self.interrupted {
            self.cut_short = true;
        }
        self.now
    }

    /// Runs the events up to `end`, closes the measuring window there, then lets the
    /// machine drain (ticks stop, in-flight work ends) unless the run was cut short. A
    /// stopped run closes its window where it stopped, as fio's report after SIGINT
    /// covers the run so far.
    pub(crate) fn finish(&mut self, end: u64) {
        while !self.interrupted
            && let Some((t, ev)) = self.q.pop_until(end)
        {
            self.at(t, ev);
        }
        self.now = self.now.max(end);
        self.draining = true;
        self.window_end = self.now;
        self.close_window();
        if self.cut_short || self.interrupted {
            return;
        }
        while let Some((t, ev)) = self.q.pop_until(self.stop_at) {
            // fio's helper thread stops with the jobs, and a job's own timers with it:
            // they would only move the clock.
            let stale = match ev {
                Event::SteadyCheck => true,
                Event::JobTimer { job, .. } => self.jobs[job.ix()].phase() == state::JobPhase::Done,
                _ => false,
            };
            if stale {
                continue;
            }
            self.at(t, ev);
        }
        self.cut_short = !self.q.is_empty();
    }

    #[inline(always)]
    fn at(&mut self, t: u64, ev: Event) {
        debug_assert!(t >= self.now, "time went backwards");
        self.now = t;
        self.dispatch(ev);
    }

    #[inline(always)]
    fn dispatch(&mut self, ev: Event) {
        match ev {
            Event::CpuStep { cpu, epoch } => {
                if self.cpus[cpu.ix()].end_step(epoch) {
                    self.step_done(cpu.ix());
                }
            }
            Event::SqFetched { queue, count } => self.sq_fetched(queue.ix(), count),
            Event::ServiceDone { io } => self.service_done(io),
            Event::TargetResponse { io } => self.deliver_completion(io),
            Event::SendWc { queue, tag } => self.send_wc(queue.ix(), tag),
            Event::PortDone { port } => self.port_done(port.ix()),
            Event::Notify { cpu, vec } => {
                // A target NIC's or an injected virtio interrupt reaches its CPU without the
                // socket's router: a notification to observers as a routed one is.
                if vec != state::RESCHEDULE_VECTOR {
                    self.obs.notification(self.now, cpu.ix(), false);
                }
                self.notify(cpu.ix(), vec)
            }
            // An offline CPU's tick stops (model/irq_move.rs).
            Event::Tick { cpu } if self.cpu_offline(cpu.ix()) => {}
            Event::Tick { cpu } => self.tick(cpu.ix()),
            Event::CqDoorbell { queue } => self.cq_doorbell_arrives(queue.ix()),
            Event::CoalesceTimer { vector, epoch } => self.coalesce_timer(vector.ix(), epoch),
            Event::ThreadTimer { thread, epoch } => self.thread_timer(thread.ix(), epoch),
            Event::GsimTimer { cpu, epoch } => self.gsim_timer(cpu.ix(), epoch),
            Event::EngineDone { port } => self.engine_done(port.ix()),
            Event::Delivered => self.delivered(),
            Event::RampEnd => self.open_window(),
            Event::JobStart { job } => self.start_job(job.ix()),
            Event::JobRampEnd { job } => self.job_ramp_end(job.ix()),
            Event::JobTimer { job, epoch } => self.job_timer(job.ix(), epoch),
            Event::SteadyCheck => self.steadystate_check(),
            Event::VirtioHost { device, epoch } => self.host_step(device.ix(), epoch),
            Event::IrqMove { index } => self.irq_move(index as usize),
            Event::VectorCleanup { cpu, idt } => self.vector_cleanup(cpu.ix(), idt),
        }
    }
}
