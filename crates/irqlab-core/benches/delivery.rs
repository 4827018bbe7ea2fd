//! Cost of delivery: a burst of k posts into one descriptor followed by the notification
//! handler's demux, against remapped delivery of the same messages.

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use irqlab_core::delivery::{DeliveryPath, RemappedTarget};
use irqlab_core::posted::{
    MAX_POSTED_MSI_COALESCING_LOOP, POSTED_MSI_NOTIFICATION_VECTOR, PiDesc, handle_notification,
};
use std::hint::black_box;

/// k distinct device vectors spread over the PIR words, as queues of several disks.
fn burst(k: usize) -> Vec<u8> {
    (0..k).map(|i| 0x21 + ((i * 37) % 0xc8) as u8).collect()
}

fn posted_burst_then_demux(c: &mut Criterion) {
    let mut g = c.benchmark_group("posted_burst_then_demux");
    for k in [1usize, 4, 16, 64] {
        let vs = burst(k);
        let desc = PiDesc::new(POSTED_MSI_NOTIFICATION_VECTOR, 0);
        // Elements = posts: criterion's time per iteration is the cost per notification.
        g.throughput(Throughput::Elements(k as u64));
        g.bench_with_input(BenchmarkId::from_parameter(k), &vs, |b, vs| {
            b.iter(|| {
                let mut sent = 0u32;
                for &v in vs {
                    sent += u32::from(desc.post(black_box(v)));
                }
                let mut sum = 0u32;
                let out = handle_notification(&desc, MAX_POSTED_MSI_COALESCING_LOOP, |v| {
                    sum += u32::from(v)
                });
                black_box((sent, sum, out))
            })
        });
    }
    g.finish();
}

fn posted_single_post(c: &mut Criterion) {
    let desc = PiDesc::new(POSTED_MSI_NOTIFICATION_VECTOR, 0);
    desc.post(0x30);
    // ON stays set: every post is the coalesced path (PIR fetch_or, fence, ON test).
    c.bench_function("posted_post_coalesced", |b| {
        b.iter(|| black_box(desc.post(black_box(0x31))))
    });
}

fn remapped_deliver(c: &mut Criterion) {
    let mut g = c.benchmark_group("remapped_deliver");
    for k in [1usize, 16] {
        let vs = burst(k);
        let t = DeliveryPath::Remapped(RemappedTarget::new(0));
        g.throughput(Throughput::Elements(k as u64));
        g.bench_with_input(BenchmarkId::from_parameter(k), &vs, |b, vs| {
            b.iter(|| {
                let mut n = 0u32;
                for &v in vs {
                    n += u32::from(t.post(black_box(v)).notify.is_some());
                }
                black_box(n)
            })
        });
    }
    g.finish();
}

criterion_group!(
    benches,
    posted_burst_then_demux,
    posted_single_post,
    remapped_deliver
);
criterion_main!(benches);
