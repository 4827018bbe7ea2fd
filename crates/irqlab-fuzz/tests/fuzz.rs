//! The fuzz targets, run by `make test` (a fixed seed, FUZZ_CASES cases each) and by
//! `make fuzz` (FUZZ_SECS seconds each, fresh seeds). A failure prints the seed and the
//! smallest mutation list that still fails.

use irqlab_fuzz::grammar::{edit_job, job_edits, perturb_platform, perturbations};
use irqlab_fuzz::mutate::{HOSTILE_VALUES, apply, mutations};
use irqlab_fuzz::{Plan, cap_memory, fuzz, seeds, targets};
use proptest::prelude::*;

/// Every case of this process together stays under this: a blow-up fails an allocation.
const MEMORY_CAP: u64 = 6 << 30;

fn mutated(seeds: Vec<String>, max: usize) -> impl Strategy<Value = Vec<u8>> {
    (prop::sample::select(seeds), mutations(max)).prop_map(|(s, m)| apply(&s, &m))
}

#[test]
fn fio_parser() {
    cap_memory(MEMORY_CAP);
    fuzz(
        "fio_parser",
        Plan::from_env(),
        mutated(seeds::jobs(), 8),
        targets::fio_parser,
    );
}

#[test]
fn platform_loader() {
    cap_memory(MEMORY_CAP);
    let keys = vec![
        "cpu.count",
        "cpu.tick_hz",
        "cpu.tick_ns",
        "kernel.cqe_ns",
        "uncore.ubox_ns",
        "root_ports.0.bytes_per_ns",
        "root_ports.0.credits",
        "devices.0.count",
        "devices.0.queues",
        "devices.0.queue_depth",
        "devices.0.max_iops",
        "devices.0.read_ns",
        "devices.0.cqe_bytes",
        "devices.0.irq_cpu",
        "devices.0.vectors_per_cpu",
        "devices.0.service_cv",
        "devices.0.prefix",
        "devices.9.count",
        "nope.key",
    ];
    let set = (
        prop::sample::select(keys),
        prop::sample::select(HOSTILE_VALUES.to_vec()),
    )
        .prop_map(|(k, v)| format!("{k}={v}"));
    fuzz(
        "platform_loader",
        Plan::from_env(),
        (
            mutated(seeds::platforms(), 6),
            prop::collection::vec(set, 0..3),
        ),
        targets::platform_loader,
    );
}

#[test]
fn whole_simulation() {
    cap_memory(MEMORY_CAP);
    let mut plan = Plan::from_env();
    // A simulation costs more than a parse: fewer cases in the fixed-seed run.
    plan.cases = plan.cases.div_ceil(4);
    // Grammar-aware most of the time (issue 23): valid platforms with perturbed costs,
    // jobs edited as a user edits them, shaped as `--max-runtime 2ms` shapes them; the
    // hostile mutations for the rest.
    let example = seeds::example_platform();
    let platform = prop_oneof![
        3 => Just(example.clone().into_bytes()),
        3 => perturbations(4).prop_map(move |ps| perturb_platform(&example, &ps)),
        // Every platform, perturbed: the scenarios' jobs want their larger machines.
        2 => (prop::sample::select(seeds::good_platforms()), perturbations(3))
            .prop_map(|(p, ps)| perturb_platform(&p, &ps)),
        1 => mutated(vec![seeds::example_platform()], 3),
    ];
    let job = prop_oneof![
        1 => prop::sample::select(seeds::good_jobs()).prop_map(String::into_bytes),
        4 => (prop::sample::select(seeds::good_jobs()), job_edits(4)).prop_map(|(s, e)| edit_job(&s, &e)),
        1 => mutated(seeds::jobs(), 3),
    ];
    // Polled deliveries (targets::policies 2 and 3) refuse libaio jobs: less often.
    let policy =
        prop_oneof![6 => prop::sample::select(vec![0usize, 1, 4, 5, 6, 7]), 1 => 2usize..4];
    let cap = prop_oneof![7 => Just(Some(2_000_000u64)), 1 => Just(None)];
    fuzz(
        "whole_simulation",
        plan,
        (job, platform, policy, cap),
        targets::simulate,
    );
}
