//! The provenance of every value the platform structs fill in when a file leaves it out
//! (the `#[serde(default)]`s of platform.rs), in one place. A default added there
//! without a line here shows as unsourced in `irqlab platform --explain` and fails
//! `--check` (and the test below).

use super::{Provenance, SourceKind};

/// A default: the keys it covers (`*` is any one part) and why it is what it is.
struct Default {
    pattern: &'static str,
    source: SourceKind,
    cite: Option<&'static str>,
    note: &'static str,
}

const fn d(pattern: &'static str, source: SourceKind, note: &'static str) -> Default {
    Default {
        pattern,
        source,
        cite: None,
        note,
    }
}

const fn k(pattern: &'static str, cite: &'static str, note: &'static str) -> Default {
    Default {
        pattern,
        source: SourceKind::Kernel,
        cite: Some(cite),
        note,
    }
}

use SourceKind::{Estimate, Physics};

const DEFAULTS: &[Default] = &[
    k(
        "cpu.scheduler",
        "kernel/sched/fair.c (EEVDF since v6.6)",
        "the fair scheduler of kernels since v6.6",
    ),
    d("cpu.threads_per_core", Estimate, "absent: no SMT siblings"),
    d(
        "cpu.llc_cpus",
        Estimate,
        "absent: every CPU shares one last-level cache",
    ),
    d("cpu.node_cpus", Estimate, "absent: one NUMA node"),
    d(
        "kernel.managed_irq_affinity",
        Estimate,
        "absent: contiguous CPU ranges per queue, each vector on its range's first CPU",
    ),
    d(
        "kernel.complete_io_ns",
        Estimate,
        "absent: kernel.cqe_ns carries the whole completion (0 here)",
    ),
    d(
        "kernel.pir_round_clean_ns",
        Physics,
        "four L1-hit loads (about 1 ns each at 3-4 GHz) and the loop around them",
    ),
    d(
        "kernel.irq_mask_ns",
        Estimate,
        "absent: masking an MSI-X vector is not charged",
    ),
    k(
        "kernel.irq_am_nr_events",
        "include/linux/dim.h DIM_NEVENTS",
        "irq-am's window; the 2018 RFC leaves nr_events to the consumer: lib/dim's 64",
    ),
    k(
        "kernel.softirq_defer_to_ksoftirqd",
        "d15121be7485 (v6.5) reverted \"softirq: Let ksoftirqd do its job\"",
        "kernels since v6.5 run pending softirqs at irq_exit",
    ),
    d(
        "kernel.moderation_program_ns",
        Estimate,
        "a work item, then Set Features 08h or modify_cq: about 20 us",
    ),
    d(
        "engine.*.task_work_io_ns",
        Estimate,
        "absent: no task_work charged per interrupt-driven completion",
    ),
    d(
        "engine.*",
        Estimate,
        "absent [engine]: the generic costs of platforms/example.toml",
    ),
    d(
        "uncore.ubox_ns",
        Estimate,
        "absent: no interrupt router shared by the stacks",
    ),
    d(
        "root_ports.*.credits",
        Estimate,
        "absent: posted header credits not limited",
    ),
    d(
        "root_ports.*.mps_bytes",
        Estimate,
        "absent: 256 B, the usual max payload size of server root ports",
    ),
    d(
        "devices.*.fetch_busy_ns",
        Estimate,
        "absent: SQ fetches overlap freely",
    ),
    d(
        "devices.*.coalesce_count",
        Estimate,
        "absent: the device does not aggregate on its own",
    ),
    d(
        "devices.*.coalesce_time_ns",
        Estimate,
        "absent: the device does not aggregate on its own",
    ),
    d(
        "devices.*.coalesce_from",
        Estimate,
        "absent: the aggregation time runs from the first withheld completion (feature 08h's rule)",
    ),
    d(
        "devices.*.striped",
        Estimate,
        "absent: a command goes to any free media unit",
    ),
    d(
        "devices.*.vectors_per_cpu",
        Estimate,
        "absent: managed affinity",
    ),
    d(
        "devices.*.writes_data",
        Estimate,
        "absent: data moves as fio's direction says",
    ),
    d(
        "devices.*.submitter.task_work_io_ns",
        Estimate,
        "absent: a kernel submitter has no task_work",
    ),
    d(
        "guest.inject_ns",
        Estimate,
        "absent: interrupts are posted to a running vCPU (APICv, AVIC), no exit",
    ),
    d(
        "guest.eoi_exit_ns",
        Estimate,
        "absent: the EOI does not exit (PV EOI, APICv, AVIC)",
    ),
    d(
        "guest.msix_trap_ns",
        Estimate,
        "absent: masking an MSI-X vector costs no more than on bare metal",
    ),
    d(
        "guest.unmask_hypercall_ns",
        Estimate,
        "absent: unmasking costs the table write only (no retarget hypercall)",
    ),
    d(
        "guest.resend_tasklet",
        Estimate,
        "absent: enable_irq retriggers with a self-IPI (the chip or its parent has irq_retrigger)",
    ),
    d(
        "guest.guest_halt_poll_ns",
        Estimate,
        "absent: cpuidle-haltpoll does not poll; an idle vCPU halts at once",
    ),
];

fn matches(pattern: &str, key: &str) -> bool {
    let p: Vec<&str> = pattern.split('.').collect();
    let k: Vec<&str> = key.split('.').collect();
    // A trailing `*` covers the rest of the key (`engine.*`).
    if p.last() == Some(&"*") && p.len() == 2 && p[0] == "engine" {
        return k.first() == Some(&"engine") && k.len() >= 2;
    }
    p.len() == k.len() && p.iter().zip(&k).all(|(a, b)| *a == "*" || a == b)
}

/// The provenance of the default a platform struct gives `key`, if it has one.
pub fn provenance(key: &str) -> Option<Provenance> {
    let d = DEFAULTS.iter().find(|d| matches(d.pattern, key))?;
    let mut p = Provenance::new(d.source);
    p.cite = d.cite.map(str::to_string);
    p.note = Some(d.note.to_string());
    Some(p)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Platform;

    /// The smallest platform: every key it leaves out is a default.
    const MINIMAL: &str = r#"
name = "m"
[cpu]
count = 1
irq_entry_ns = 1
irq_exit_ns = 1
eoi_ns = 1
idle_exit_ns = 1
ctx_switch_ns = 1
wakeup_ns = 1
ipi_ns = 1
tick_hz = 1000
tick_ns = 1
sched_slice_ns = 1
[kernel]
cqe_ns = 1
cq_doorbell_ns = 1
sq_doorbell_ns = 1
mmio_flight_ns = 1
poll_check_ns = 1
pir_round_ns = 1
irq_poll_call_ns = 1
softirq_ns = 1
irq_thread_ns = 1
hrtimer_ns = 1
[iommu]
dma_translate_ns = 1
[uncore]
stack_rtt_ns = 1
pid_ns = 1
[[root_ports]]
name = "rp0"
write_ns = 1
bytes_per_ns = 1.0
msi_ns = 1
[[devices]]
kind = "nvme"
prefix = "nvme"
count = 1
port = "rp0"
queues = 1
queue_depth = 2
max_iops = 1.0
read_ns = 1
write_ns = 1
service_cv = 0.0
sqe_fetch_ns = 1
cqe_bytes = 16
[devices.submitter]
submit_call_ns = 1
submit_io_ns = 1
reap_call_ns = 1
reap_io_ns = 1
[guest]
hypervisor = "kvm"
kick_ns = 1
vcpu_wake_ns = 1
"#;

    fn leaves(v: &toml::Value, path: &str, out: &mut Vec<String>) {
        match v {
            toml::Value::Table(t) => {
                for (k, x) in t {
                    let p = if path.is_empty() {
                        k.clone()
                    } else {
                        format!("{path}.{k}")
                    };
                    leaves(x, &p, out);
                }
            }
            toml::Value::Array(a) => {
                for (i, x) in a.iter().enumerate() {
                    leaves(x, &format!("{path}.{i}"), out);
                }
            }
            _ => out.push(path.to_string()),
        }
    }

    #[test]
    fn every_default_has_a_provenance() {
        let written: toml::Table = toml::from_str(MINIMAL).unwrap();
        let mut written_keys = Vec::new();
        leaves(&toml::Value::Table(written), "", &mut written_keys);
        let p = Platform::from_toml(MINIMAL, "minimal", &[]).unwrap();
        let mut all = Vec::new();
        leaves(&toml::Value::try_from(&p).unwrap(), "", &mut all);
        let defaults: Vec<&String> = all.iter().filter(|k| !written_keys.contains(k)).collect();
        assert!(defaults.len() > 20, "{defaults:?}");
        for key in defaults {
            assert!(
                provenance(key).is_some(),
                "no provenance for the default of {key}"
            );
        }
        assert!(provenance("devices.0.count").is_none());
    }
}
