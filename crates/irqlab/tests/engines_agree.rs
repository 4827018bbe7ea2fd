//! The simulator and the runtime run the same job under the same policy: where the
//! runtime's host differs from the model's platform the sizes differ, but the directions
//! of the effects must agree. Directions and counts only: the runtime is measured on a
//! shared 2-core host.

use irqlab_core::{HandlerStyle, Policy};
use irqlab_report::RunReport;
use irqlab_sim::{Platform, SimOptions};
use std::path::Path;

/// One synchronous 4 KiB read at a time, as examples/qd1-pvsync2.fio.
const QD1: &str = "[qd1]\nioengine=pvsync2\nrw=randread\nbs=4k\ndirect=1\n\
    filename=/dev/nvme0n1\ncpus_allowed=0\nnumber_ios=2000\n";

fn policy(handler: HandlerStyle) -> Policy {
    Policy {
        handler,
        ..Policy::default()
    }
}

fn jobs() -> Vec<irqlab_fio::JobSpec> {
    irqlab_fio::parse_str(QD1, Path::new("qd1.fio")).unwrap()
}

/// CPU time per I/O over every CPU (all the kernel's and the job's time), and context
/// switches per I/O.
fn costs(r: &RunReport) -> (f64, f64) {
    let ios = r.total_ios() as f64;
    let cpu: u64 = r
        .cpus
        .iter()
        .map(|c| {
            c.usr_ns + c.sys_ns + c.hardirq_ns + c.softirq_ns + c.ksoftirqd_ns + c.irq_thread_ns
        })
        .sum();
    let ctx: u64 = r.cpus.iter().map(|c| c.ctx_switches).sum();
    (cpu as f64 / ios, ctx as f64 / ios)
}

fn sim(handler: HandlerStyle) -> RunReport {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../platforms/example.toml");
    let platform = Platform::load(&path, &[]).unwrap();
    irqlab_sim::simulate(&jobs(), &platform, &policy(handler), &SimOptions::default()).unwrap()
}

fn rt(handler: HandlerStyle) -> RunReport {
    irqlab_rt::run(&jobs(), &policy(handler), &irqlab_rt::RtConfig::default()).unwrap()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

#[test]
fn threaded_handlers_cost_cpu_and_context_switches_in_both_engines() {
    let (sim_hard, sim_thr) = (
        costs(&sim(HandlerStyle::Hardirq)),
        costs(&sim(HandlerStyle::Threaded)),
    );
    assert!(
        sim_thr.0 > sim_hard.0,
        "sim CPU per I/O {sim_thr:?} vs {sim_hard:?}"
    );
    assert!(
        sim_thr.1 > sim_hard.1,
        "sim ctx per I/O {sim_thr:?} vs {sim_hard:?}"
    );
    // The runtime, three times each, interleaved: medians.
    let (mut hard, mut thr) = (Vec::new(), Vec::new());
    for _ in 0..3 {
        let h = rt(HandlerStyle::Hardirq);
        let t = rt(HandlerStyle::Threaded);
        assert_eq!((h.total_ios(), t.total_ios()), (2000, 2000));
        hard.push(costs(&h));
        thr.push((costs(&t), t));
    }
    let cpu = |v: &[(f64, f64)]| median(v.iter().map(|c| c.0).collect());
    let ctx = |v: &[(f64, f64)]| median(v.iter().map(|c| c.1).collect());
    let thr_costs: Vec<(f64, f64)> = thr.iter().map(|(c, _)| *c).collect();
    assert!(
        cpu(&thr_costs) > cpu(&hard),
        "rt CPU per I/O: threaded {} vs hardirq {}",
        cpu(&thr_costs),
        cpu(&hard)
    );
    // Each interrupt wakes the irq thread, which wakes the job: more switches per I/O.
    assert!(
        ctx(&thr_costs) > 1.5 * ctx(&hard),
        "rt ctx per I/O: threaded {} vs hardirq {}",
        ctx(&thr_costs),
        ctx(&hard)
    );
    // Time is booked where it is spent: the reaping in the irq thread, and no longer the
    // irq thread's run in the CPU thread's hardirq time (the primary handler only checks
    // a CQE; the wake-up it asks for takes effect after irq_exit).
    for (_, t) in &thr {
        let wall = t.measured.as_ref().unwrap().wall_ns;
        assert!(t.cpus[0].irq_thread_ns > 0);
        assert!(
            t.cpus[0].hardirq_ns < wall / 10,
            "{:?} of {wall}",
            t.cpus[0]
        );
    }
}
