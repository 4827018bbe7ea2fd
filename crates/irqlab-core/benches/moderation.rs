//! Cost of one moderator decision step per event (net_dim, rdma_dim, irq-am fed a synthetic
//! completion stream through `Moderator::on_event`), and of one IRQ_POLL softirq run.

use std::hint::black_box;

use criterion::{Criterion, criterion_group, criterion_main};
use irqlab_core::ModeratorKind;
use irqlab_core::irq_poll::IrqPollCpu;
use irqlab_core::moderator::Moderator;

/// A deterministic stream: 5 µs apart, completions cycling 1..=16, 4 KiB each.
struct Stream {
    now: u64,
    i: u32,
}

impl Stream {
    fn next(&mut self) -> (u64, u32, u64) {
        self.now += 5_000;
        self.i = self.i.wrapping_add(1);
        let comps = 1 + (self.i.wrapping_mul(2_654_435_761) >> 28);
        (self.now, comps, u64::from(comps) * 4096)
    }
}

fn moderator_per_event(c: &mut Criterion) {
    for kind in [
        ModeratorKind::NetDim,
        ModeratorKind::RdmaDim,
        ModeratorKind::IrqAm,
    ] {
        let Ok(Some(mut m)) = Moderator::new(kind, None) else {
            continue;
        };
        let mut s = Stream { now: 0, i: 0 };
        c.bench_function(&format!("moderator_event/{kind}"), |b| {
            b.iter(|| {
                let (now, comps, bytes) = s.next();
                if m.on_event(black_box(now), black_box(comps), black_box(bytes))
                    .is_some()
                {
                    m.ack();
                }
            })
        });
    }
}

fn irq_poll_softirq_run(c: &mut Criterion) {
    let mut cpu = IrqPollCpu::default();
    let a = cpu.init(64).expect("weight 64 is valid");
    let b = cpu.init(64).expect("weight 64 is valid");
    c.bench_function("irq_poll_softirq_run/2x64_budget_256", |bench| {
        bench.iter(|| {
            let _ = cpu.sched(a);
            let _ = cpu.sched(b);
            let _ = cpu.start_softirq(0);
            // Busy instances for three polls, then each finds nothing and completes.
            let mut polls = 0;
            while let Ok(Some((id, w))) = cpu.next_poll(0) {
                polls += 1;
                let work = if polls <= 3 { w } else { 0 };
                let _ = cpu.poll_done(id, work, work < w);
            }
            black_box(cpu.finish())
        })
    });
}

criterion_group!(benches, moderator_per_event, irq_poll_softirq_run);
criterion_main!(benches);
