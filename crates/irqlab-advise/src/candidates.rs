//! The policies a platform and a job allow, each with the knob a user turns on a real
//! system and whether that knob exists in mainline Linux; and those it does not allow,
//! with why.

use irqlab_fio::{IoEngine, JobSpec};
use irqlab_sim::Platform;
use irqlab_sim::platform::DeviceKind;
use serde::Serialize;

/// One policy to try.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Candidate {
    /// A short name (`posted`, `coalesce 7,1`).
    pub name: String,
    /// `irqlab run` policy options.
    pub policy: String,
    /// What a user sets on a real machine.
    pub knob: String,
    /// Whether the knob is in mainline Linux (else: an out-of-tree patch, named in `knob`).
    pub mainline: bool,
    /// The platform costs the result rests on most (dotted keys; `devices.*` for every
    /// device group).
    pub costs: Vec<String>,
}

/// A policy the platform or the job does not allow, and why.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Excluded {
    pub name: String,
    pub why: String,
}

fn keys(k: &[&str]) -> Vec<String> {
    k.iter().map(|s| s.to_string()).collect()
}

/// The costs every interrupt-driven policy rests on: the device, the interrupt path and
/// the wake-up.
const INTERRUPT_PATH: &[&str] = &[
    "devices.*.read_ns",
    "devices.*.max_iops",
    "cpu.irq_entry_ns",
    "cpu.irq_exit_ns",
    "kernel.cqe_ns",
    "kernel.complete_io_ns",
    "cpu.idle_exit_ns",
    "cpu.wakeup_ns",
    "cpu.ctx_switch_ns",
    "uncore.stack_rtt_ns",
    "uncore.ubox_ns",
];

/// A virtio-blk disk's path instead: the kick, the VMM's service and wake-up, the
/// injection and the halted vCPU's wake.
const VIRTIO_PATH: &[&str] = &[
    "devices.*.host.service_ns",
    "devices.*.host.wake_ns",
    "devices.*.host.notify_ns",
    "guest.kick_ns",
    "guest.vcpu_wake_ns",
    "cpu.irq_entry_ns",
    "cpu.irq_exit_ns",
    "kernel.cqe_ns",
    "kernel.complete_io_ns",
    "cpu.wakeup_ns",
    "cpu.ctx_switch_ns",
];

fn with(extra: &[&str]) -> Vec<String> {
    let mut v = keys(INTERRUPT_PATH);
    v.extend(keys(extra));
    v
}

/// Whether every job can poll for its completions: io_uring (IORING_SETUP_IOPOLL) or
/// pvsync2 (RWF_HIPRI); libaio and psync cannot (fio's hipri is theirs only).
fn can_poll(jobs: &[JobSpec]) -> Result<(), String> {
    match jobs.iter().find(|j| {
        !matches!(
            j.ioengine,
            IoEngine::IoUring | IoEngine::Pvsync2 | IoEngine::Null
        )
    }) {
        Some(j) => Err(format!(
            "job '{}' uses ioengine={}, which cannot poll (io_uring with hipri, i.e. IORING_SETUP_IOPOLL, or pvsync2 with hipri, i.e. RWF_HIPRI, can)",
            j.name,
            j.ioengine.name()
        )),
        None => Ok(()),
    }
}

/// The kinds of the devices the jobs use (all the platform's when none is named).
fn kinds(p: &Platform, jobs: &[JobSpec]) -> Vec<DeviceKind> {
    let used = crate::jobs::groups_used(p, jobs);
    let mut k: Vec<DeviceKind> = if used.is_empty() {
        p.devices.iter().map(|d| d.kind).collect()
    } else {
        used.iter().map(|g| p.devices[*g].kind).collect()
    };
    k.sort_by_key(|k| format!("{k:?}"));
    k.dedup();
    k
}

/// Every policy to try on `p` for `jobs`, and those left out with why.
pub fn candidates(p: &Platform, jobs: &[JobSpec]) -> (Vec<Candidate>, Vec<Excluded>) {
    let kinds = kinds(p, jobs);
    let nvme = kinds.contains(&DeviceKind::Nvme);
    let rdma = kinds.contains(&DeviceKind::Rdma);
    let all_nvme = kinds.iter().all(|k| *k == DeviceKind::Nvme);
    let cpus = p.cpu.count;
    let stock_costs = if kinds.contains(&DeviceKind::VirtioBlk) {
        keys(VIRTIO_PATH)
    } else {
        with(&[])
    };
    let mut out = vec![Candidate {
        name: "stock".into(),
        policy: "--delivery remapped".into(),
        knob: "none: the stock kernel (interrupt remapping as the platform has it, a message per completion, hardirq handler)".into(),
        mainline: true,
        costs: stock_costs,
    }];
    let mut left = Vec::new();
    match crate::posting::allowed(p) {
        Ok(()) => out.push(Candidate {
            name: "posted".into(),
            policy: "--delivery posted".into(),
            knob: "intremap=posted_msi on the kernel command line (Linux 6.10+, CONFIG_X86_POSTED_MSI, Intel VT-d interrupt remapping)".into(),
            mainline: true,
            costs: with(&["uncore.pid_ns", "kernel.pir_round_ns"]),
        }),
        Err(why) => left.push(Excluded {
            name: "posted".into(),
            why: why.to_string(),
        }),
    }
    let virtio = kinds.contains(&DeviceKind::VirtioBlk);
    // virtio_blk keeps one virtqueue for interrupts (min(poll_queues, num_vqs - 1)): a
    // device with one virtqueue cannot poll; with more, the last ones can.
    let virtio_polls = p
        .devices
        .iter()
        .filter(|d| d.kind == DeviceKind::VirtioBlk)
        .all(|d| d.virtio.as_ref().is_some_and(|v| v.poll_queues > 0));
    let pollable = kinds.iter().all(|k| match k {
        DeviceKind::Nvme => true,
        DeviceKind::VirtioBlk => virtio_polls,
        _ => false,
    });
    if virtio && !virtio_polls {
        left.push(Excluded {
            name: "polled, hybrid".into(),
            why: "the virtio-blk disk has no poll queue: virtio_blk.poll_queues=N (Linux 5.19+) needs a device with more than one virtqueue (VIRTIO_BLK_F_MQ), and keeps one for interrupts".into(),
        });
    }
    match (pollable, can_poll(jobs)) {
        (true, Ok(())) => {
            out.push(Candidate {
                name: "polled".into(),
                policy: "--delivery polled".into(),
                knob: if virtio {
                    "virtio_blk.poll_queues=N (module parameter, Linux 5.19+; the device's virtqueues beyond the first) and polled I/O: fio hipri=1 (io_uring: IORING_SETUP_IOPOLL; pvsync2: RWF_HIPRI)".to_string()
                } else {
                    format!(
                        "nvme.poll_queues={cpus} (module parameter) and polled I/O: fio hipri=1 (io_uring: IORING_SETUP_IOPOLL; pvsync2: RWF_HIPRI)"
                    )
                },
                mainline: true,
                costs: keys(&["devices.*.read_ns", "devices.*.max_iops", "kernel.poll_check_ns", "kernel.cqe_ns", "kernel.complete_io_ns"]),
            });
            if jobs.iter().all(|j| j.ioengine == IoEngine::IoUring) {
                out.push(Candidate {
                    name: "hybrid".into(),
                    policy: "--delivery hybrid".into(),
                    knob: format!(
                        "nvme.poll_queues={cpus} and io_uring with IORING_SETUP_IOPOLL | IORING_SETUP_HYBRID_IOPOLL (Linux 6.13+; fio hipri=1 with hybrid polling)"
                    ),
                    mainline: true,
                    costs: keys(&["devices.*.read_ns", "devices.*.max_iops", "kernel.poll_check_ns", "kernel.hrtimer_ns"]),
                });
            } else {
                left.push(Excluded {
                    name: "hybrid".into(),
                    why: "hybrid polling is io_uring's (IORING_SETUP_HYBRID_IOPOLL); the job's engine is not io_uring".into(),
                });
            }
        }
        (false, _) if virtio => {}
        (false, _) => left.push(Excluded {
            name: "polled, hybrid".into(),
            why: "a device the job uses has no poll queues the model can poll (NVMe's nvme.poll_queues)".into(),
        }),
        (true, Err(why)) => left.push(Excluded {
            name: "polled, hybrid".into(),
            why,
        }),
    }
    if all_nvme {
        for (thr, time) in [(3u8, 1u8), (15, 1)] {
            let value = (u32::from(time) << 8) | u32::from(thr);
            out.push(Candidate {
                name: format!("coalesce-{}", u32::from(thr) + 1),
                policy: format!("--coalesce {thr},{time}"),
                knob: format!(
                    "nvme set-feature /dev/nvmeX -f 8 -v 0x{value:04x} (Interrupt Coalescing: {} completions or {} us, whichever first; every controller)",
                    u32::from(thr) + 1,
                    u32::from(time) * 100
                ),
                mainline: true,
                costs: with(&[]),
            });
        }
        out.push(Candidate {
            name: "irq-am".into(),
            policy: "--moderator irq-am".into(),
            knob: "not in mainline: Sagi Grimberg's 2018 irq-am RFC for nvme (adaptive Feature 08h from the completion rate)".into(),
            mainline: false,
            costs: with(&["kernel.moderation_program_ns"]),
        });
        out.push(Candidate {
            name: "net-dim".into(),
            policy: "--moderator net-dim".into(),
            knob: "not for NVMe in mainline: lib/dim's net_dim drives NIC coalescing (ethtool -C DEV adaptive-rx on); for NVMe it needs a patch feeding Feature 08h".into(),
            mainline: false,
            costs: with(&["kernel.moderation_program_ns"]),
        });
    } else {
        left.push(Excluded {
            name: "coalesce, irq-am, net-dim".into(),
            why: if virtio {
                "a virtio-blk device has no coalescing of its own to set (the host's batching and the ring's event index decide its interrupts)".into()
            } else {
                "device coalescing (NVMe Feature 08h) needs NVMe devices; the job uses others".into()
            },
        });
    }
    if rdma {
        out.push(Candidate {
            name: "rdma-dim".into(),
            policy: "--moderator rdma-dim".into(),
            knob: "ib_core's CQ moderation with rdma_dim (on for mlx5 devices, ib_device use_cq_dim; nvme-rdma host and target)".into(),
            mainline: true,
            costs: with(&["kernel.moderation_program_ns"]),
        });
    } else if nvme {
        out.push(Candidate {
            name: "rdma-dim".into(),
            policy: "--moderator rdma-dim".into(),
            knob: "not for NVMe over PCIe in mainline: lib/dim's rdma_dim drives RDMA CQ moderation (ib_core); for nvme-pci it needs a patch feeding Feature 08h".into(),
            mainline: false,
            costs: with(&["kernel.moderation_program_ns"]),
        });
    }
    if virtio {
        left.push(Excluded {
            name: "gsim, threaded".into(),
            why: "virtio_blk's handler (vring_interrupt, virtblk_done) runs in hardirq, and the model refuses NVMe's handler and moderation policies on a virtio-blk device (docs/model.md)".into(),
        });
        return (out, left);
    }
    out.push(Candidate {
        name: "gsim".into(),
        policy: "--moderator gsim".into(),
        knob: "not in mainline: Luigi Rizzo's global software interrupt moderation patches (2025)"
            .into(),
        mainline: false,
        costs: with(&["kernel.irq_mask_ns"]),
    });
    if nvme {
        out.push(Candidate {
            name: "irq-poll".into(),
            policy: "--handler irq-poll".into(),
            knob: "not in mainline: Sagi Grimberg's 2019 nvme irq_poll patch (reap NVME_POLL_BUDGET_IRQ in hardirq, the rest in irq_poll)".into(),
            mainline: false,
            costs: with(&["kernel.irq_poll_call_ns", "kernel.softirq_ns", "kernel.irq_mask_ns"]),
        });
        out.push(Candidate {
            name: "reap-after-submit".into(),
            policy: "--reap-after-submit".into(),
            knob: "not in mainline: Ming Lei's 2019 nvme patch (reap the CQ with a trylock right after a batch submission)".into(),
            mainline: false,
            costs: with(&[]),
        });
    }
    out.push(Candidate {
        name: "threaded".into(),
        policy: "--handler threaded".into(),
        knob: if all_nvme {
            "nvme.use_threaded_interrupts=1 (module parameter; or threadirqs on the command line for every driver)".into()
        } else {
            "threadirqs on the kernel command line".into()
        },
        mainline: true,
        costs: with(&["kernel.irq_thread_ns"]),
    });
    (out, left)
}
