//! The model: state of every CPU, thread, job, device, queue, vector and root port, and
//! the event loop that moves them. Behaviour lives in the sibling files: `cpu` (interrupt
//! entry, handlers, softirq, scheduler), `device` (controller, root port, IOMMU), `job`
//! (the fio job loop), `build` (topology from platform and jobs), `report`.

mod build;
mod cpu;
mod delivery;
mod device;
mod fio_job;
mod job;
mod report;
mod sched;
mod state;
mod target;

pub(crate) use build::build;
pub(crate) use state::Sim;

use crate::engine::Event;
use crate::observer::Observer;

impl<O: Observer> Sim<'_, O> {
    /// Runs until every job has finished and the machine is quiet.
    pub(crate) fn run(&mut self) {
        let names = build::queue_names(self);
        let vector_names: Vec<String> = self
            .vectors
            .iter()
            .map(|v| names[v.queue as usize].clone())
            .collect();
        self.obs.start(&vector_names, self.cpus.len());
        for c in 0..self.cpus.len() {
            let first = self.costs.tick_period;
            self.q.push(first, Event::Tick { cpu: c as u32 });
        }
        for t in 0..self.threads.len() {
            if self.threads[t].start_runnable {
                self.wake_thread(t, None);
            }
        }
        if self.window_start > 0 {
            self.q.push(self.window_start, Event::RampEnd);
        } else {
            self.open_window();
        }
        while let Some((t, ev)) = self.q.pop() {
            debug_assert!(t >= self.now, "time went backwards");
            if t > self.stop_at {
                self.cut_short = true;
                break;
            }
            self.now = t;
            self.dispatch(ev);
            if self.jobs_live == 0 && !self.draining {
                self.draining = true;
                self.window_end = self.now;
                self.close_window();
            }
        }
        if !self.draining {
            self.window_end = self.now;
            self.close_window();
        }
    }

    #[inline]
    fn dispatch(&mut self, ev: Event) {
        match ev {
            Event::CpuStep { cpu, epoch } => {
                let c = cpu as usize;
                if self.cpus[c].epoch == epoch && self.cpus[c].stepping {
                    self.cpus[c].stepping = false;
                    self.step_done(c);
                }
            }
            Event::SqFetched { queue, count } => self.sq_fetched(queue as usize, count),
            Event::ServiceDone { io } => self.service_done(io),
            Event::TargetResponse { io } => self.deliver_completion(io),
            Event::PortDone { port } => self.port_done(port as usize),
            Event::Notify { cpu, vec } => self.notify(cpu as usize, vec),
            Event::Tick { cpu } => self.tick(cpu as usize),
            Event::CqDoorbell { queue } => self.cq_doorbell_arrives(queue as usize),
            Event::CoalesceTimer { vector, epoch } => self.coalesce_timer(vector as usize, epoch),
            Event::ThreadTimer { thread, epoch } => self.thread_timer(thread as usize, epoch),
            Event::GsimTimer { cpu, epoch } => self.gsim_timer(cpu as usize, epoch),
            Event::ModeratorProgram { vector } => self.moderator_program(vector as usize),
            Event::EngineDone { port } => self.engine_done(port as usize),
            Event::Delivered => self.delivered(),
            Event::RampEnd => self.open_window(),
            Event::JobStart { job } => self.start_job(job as usize),
            Event::JobRampEnd { job } => self.job_ramp_end(job as usize),
        }
    }
}
