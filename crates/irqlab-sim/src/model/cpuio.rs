//! ioengine=cpuio (fio's engines/cpu.c): no I/O; each "I/O" burns one cycle of
//! `cpuchunks` µs in user mode (cpumode=noop), or one pass of fio's sort, whose time on
//! this CPU the platform gives (cpumode=qsort, engine.cpuio_qsort_ns), then sleeps
//! cycle × (100 − cpuload) / cpuload µs (the thinktime fio_cpuio_init sets, after
//! every block). The burn is an ordinary thread's: the scheduler shares its CPU with
//! ksoftirqd and irq threads, and interrupts preempt it.

use super::fio_ctl::FioPhase;
use super::state::*;
use crate::observer::{Observer, SliceKind};

impl<O: Observer> Sim<'_, O> {
    /// The cpuio job's next step: stop, burn a cycle, or sleep the rest of its period.
    pub(crate) fn cpuio_advance(&mut self, j: usize) -> ThreadStep {
        let now = self.now;
        loop {
            match self.jobs[j].phase() {
                JobPhase::Done => return ThreadStep::Exit,
                JobPhase::Fio(FioPhase::Burn) => {
                    let job = &mut self.jobs[j];
                    let cfg = job.fio().ctl().cpuio().expect("a cpuio job");
                    let load = u64::from(cfg.load_pct.max(1));
                    // fio_cpuio_init / do_qsort: thinktime in whole µs.
                    let cycle_us = job.fio().ctl().cpuio_cycle_ns() / 1_000;
                    let sleep = cycle_us * (100 - load.min(100)) / load * 1_000;
                    let left = job.end().map_or(u64::MAX, |e| e.saturating_sub(now));
                    let sleep = sleep.min(left);
                    job.enter_phase(JobPhase::Pause);
                    if sleep > 0 {
                        return ThreadStep::Sleep { ns: sleep };
                    }
                }
                _ => {
                    if self.cpuio_stops(j) {
                        return self.job_exit(j);
                    }
                    let job = &mut self.jobs[j];
                    job.enter_phase(JobPhase::Fio(FioPhase::Burn));
                    job.issued_cycle();
                    return ThreadStep::Run {
                        ns: job.fio().ctl().cpuio_cycle_ns().max(1),
                        kind: SliceKind::Usr,
                    };
                }
            }
        }
    }

    /// The cpuio job's loop ends: its runtime, a terminate, or (exit_on_io_done) no job
    /// that does I/O is left (libfio.c fio_running_or_pending_io_threads).
    fn cpuio_stops(&self, j: usize) -> bool {
        let job = &self.jobs[j];
        if job.end().is_some_and(|e| self.now >= e) || job.fio().ctl().stops() {
            return true;
        }
        if job.io_limit().is_some_and(|l| job.issued() >= l) {
            return true;
        }
        job.fio().ctl().cpuio().is_some_and(|c| c.exit_on_io_done)
            && !self.jobs.iter().enumerate().any(|(k, o)| {
                k != j
                    && o.engine() != irqlab_fio::IoEngine::CpuIo
                    && !self.is_helper(k)
                    && o.phase() != JobPhase::Done
            })
    }
}
