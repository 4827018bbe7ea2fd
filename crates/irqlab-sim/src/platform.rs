//! The platform file: physical costs of one machine (CPU, kernel paths, IOMMU, root ports,
//! devices). Every field is documented in platforms/example.toml and docs/model.md.
//!
//! `--set dotted.key=value` overrides work on the TOML tree: the file is read, completed
//! with defaults, re-serialised, patched, and deserialised again, so any parameter can be
//! overridden and an unknown key is an error that lists the keys that do exist.

use crate::ledger::dotted;
use crate::toml_input;
use irqlab_core::nvme::MsiRule;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// One machine, as the simulator sees it.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Platform {
    /// A short name printed in reports.
    pub name: String,
    pub cpu: CpuCosts,
    pub kernel: KernelCosts,
    #[serde(default)]
    pub engine: EngineCosts,
    pub iommu: IommuCosts,
    pub uncore: UncoreCosts,
    /// PCIe root ports. A guest whose only devices are paravirtual has none.
    #[serde(default)]
    pub root_ports: Vec<RootPort>,
    pub devices: Vec<DeviceGroup>,
    /// The platform is a virtual machine: its hypervisor and what its exits cost
    /// (crate::guest). Absent: bare metal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub guest: Option<crate::guest::Guest>,
}

/// CPU and scheduler costs, ns unless said otherwise.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct CpuCosts {
    /// Number of logical CPUs.
    pub count: usize,
    /// IDT entry, register save and irq_enter.
    pub irq_entry_ns: u64,
    /// irq_exit and the return from the interrupt.
    pub irq_exit_ns: u64,
    /// The local APIC EOI write.
    pub eoi_ns: u64,
    /// Extra latency when an interrupt wakes an idle CPU (C-state exit).
    pub idle_exit_ns: u64,
    /// One context switch (switch_mm, register state, scheduler pick).
    pub ctx_switch_ns: u64,
    /// try_to_wake_up in the waker, CPU time.
    pub wakeup_ns: u64,
    /// Flight time of a reschedule IPI to another CPU.
    pub ipi_ns: u64,
    /// Timer tick frequency (CONFIG_HZ).
    pub tick_hz: u64,
    /// CPU time of one tick handler (scheduler_tick, RCU, timers).
    pub tick_ns: u64,
    /// CFS slice: a thread that ran this long is preempted at a tick if another waits.
    pub sched_slice_ns: u64,
    /// The fair scheduler's wake-up rule: `cfs` (v2.6.23-v6.5) or `eevdf` (v6.6+). It
    /// also picks the task placement rules (model/placement.rs): v5.3's with `cfs`,
    /// v6.6's with `eevdf`.
    #[serde(default)]
    pub scheduler: Scheduler,
    /// SMT: logical CPUs per core, whose numbers are consecutive (CPU c is on core
    /// c / threads_per_core). The scheduler's SMT domain. 1: no SMT.
    #[serde(default = "default_threads_per_core")]
    pub threads_per_core: usize,
    /// CPUs sharing a last-level cache, consecutive from CPU 0: the scheduler's MC
    /// domain (sd_llc), where select_idle_sibling looks for an idle CPU and
    /// cpus_share_cache holds. 0: every CPU shares one LLC.
    #[serde(default)]
    pub llc_cpus: usize,
    /// CPUs of one NUMA node, consecutive from CPU 0 (a multiple of llc_cpus): the
    /// scheduler's NUMA domain above the LLC, and the nodes managed interrupt affinity
    /// spreads vectors over (`kernel.managed_irq_affinity = "spread"`). 0: one node.
    #[serde(default)]
    pub node_cpus: usize,
}

fn default_threads_per_core() -> usize {
    1
}

/// Which fair scheduler the kernel runs (kernel/sched/fair.c).
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum Scheduler {
    /// CFS: a woken thread preempts when it is a wake-up granularity behind in vruntime.
    Cfs,
    /// EEVDF with RUN_TO_PARITY: the running thread keeps its slice.
    #[default]
    Eevdf,
}

/// Kernel path costs on the completion and submission sides, ns.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct KernelCosts {
    /// nvme_handle_cqe, per CQE: read the entry, find the request, add it to the
    /// completion batch (before the CQ doorbell). With `complete_io_ns` 0 it carries the
    /// whole completion.
    pub cqe_ns: u64,
    /// Per request in nvme_pci_complete_batch, which nvme_irq runs after the CQ doorbell
    /// (drivers/nvme/host/pci.c): blk_mq_end_request_batch, the bio's end_io and the
    /// engine's event (aio ring entry, io_uring CQE or task_work add).
    #[serde(default)]
    pub complete_io_ns: u64,
    /// One MMIO write of the CQ head doorbell.
    pub cq_doorbell_ns: u64,
    /// One MMIO write of the SQ tail doorbell.
    pub sq_doorbell_ns: u64,
    /// Flight time of a host MMIO write to the device.
    pub mmio_flight_ns: u64,
    /// One nvme_poll call that finds nothing (spin iteration of a polled reap).
    pub poll_check_ns: u64,
    /// One handle_pending_pir round in the posted MSI demux after the IOMMU posted into
    /// the descriptor: the read of its cache line misses, then xchg of non-zero words.
    pub pir_round_ns: u64,
    /// A round that finds the descriptor's line as this CPU left it (no post since the
    /// last round): four L1 hits and no xchg.
    #[serde(default = "default_pir_round_clean_ns")]
    pub pir_round_clean_ns: u64,
    /// Fixed cost of one irq_poll poll call (list handling, softirq bookkeeping).
    pub irq_poll_call_ns: u64,
    /// Softirq entry and exit (handle_softirqs bookkeeping) per run.
    pub softirq_ns: u64,
    /// Waking an interrupt thread and the thread's own entry (irq_thread_fn), per run.
    pub irq_thread_ns: u64,
    /// Hybrid polling: the hrtimer sleep set-up and its expiry.
    pub hrtimer_ns: u64,
    /// Masking or unmasking one MSI-X vector (disable_irq's mask_ack_irq on the next
    /// interrupt, enable_irq): the vector-control write and its read-back, a PCIe MMIO
    /// read round trip on bare metal; a trap to the hypervisor in a guest whose MSI-X
    /// table is emulated.
    #[serde(default)]
    pub irq_mask_ns: u64,
    /// irq-am's measurement window in events (irq_am_init's nr_events, which the 2018 RFC
    /// leaves to the consumer). Absent: 64, lib/dim's DIM_NEVENTS.
    #[serde(default = "default_irq_am_nr_events")]
    pub irq_am_nr_events: u16,
    /// Pre-v6.5 softirq rule ("softirq: Let ksoftirqd do its job", 2016; reverted by
    /// d15121be7485 in v6.5): irq_exit leaves pending softirqs to an awake ksoftirqd.
    #[serde(default)]
    pub softirq_defer_to_ksoftirqd: bool,
    /// Adaptive moderation: from a moderator's decision to the device running the new
    /// level (the work item runs, then Set Features 08h / modify_cq completes).
    #[serde(default = "default_moderation_program_ns")]
    pub moderation_program_ns: u64,
    /// How a device's queues and vectors meet the CPUs (model/affinity.rs): `contiguous`
    /// (CPU c submits to queue c x queues / cpus, each vector on its range's first
    /// CPU) or `spread` (v5.3: irq_build_affinity_masks spreads the vectors per NUMA
    /// node, blk_mq_pci_map_queues maps each CPU to the queue whose mask holds it, and
    /// the vector goes to the CPU of its mask with the fewest managed vectors so far,
    /// kernel/irq/matrix.c matrix_find_best_cpu_managed).
    #[serde(default)]
    pub managed_irq_affinity: ManagedAffinity,
}

/// How managed interrupt affinity places a device's queues and vectors.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum ManagedAffinity {
    /// Contiguous CPU ranges per queue, each vector on its range's first CPU.
    #[default]
    Contiguous,
    /// The kernel's spreading per NUMA node and its vector matrix (v5.3).
    Spread,
}

fn default_irq_am_nr_events() -> u16 {
    irqlab_core::dim::IRQ_AM_DEFAULT_NR_EVENTS
}

fn default_moderation_program_ns() -> u64 {
    20_000
}

/// Four L1-hit loads (about 1 ns each at 3–4 GHz) and the loop around them.
fn default_pir_round_clean_ns() -> u64 {
    10
}

/// Per-call and per-I/O costs of each fio ioengine, ns.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct EngineCosts {
    /// fio's own user-space work per I/O (io_u set-up, accounting).
    pub usr_io_ns: u64,
    pub libaio: SyscallCosts,
    pub io_uring: SyscallCosts,
    pub pvsync2: SyscallCosts,
    /// ioengine=cpuio with cpumode=qsort: how long one pass of fio's sort takes on this
    /// CPU (engines/cpu.c do_qsort, four sorts of 256 Ki integers), ns. Absent: such a
    /// job is refused, since its burn cycle is that time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpuio_qsort_ns: Option<u64>,
}

/// The kernel side of one engine.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct SyscallCosts {
    /// Syscall entry and exit of a submit call (io_submit, io_uring_enter, preadv2).
    pub submit_call_ns: u64,
    /// Block layer and NVMe driver work per submitted I/O (bio, request, SQE copy).
    pub submit_io_ns: u64,
    /// Syscall entry and exit of a reap call (io_getevents, io_uring_enter GETEVENTS).
    pub reap_call_ns: u64,
    /// Copying out one completion event.
    pub reap_io_ns: u64,
    /// io_uring only: completing one interrupt-driven request through task_work in the
    /// submitter (io_uring/rw.c io_complete_rw → __io_req_task_work_add, run as
    /// io_req_rw_complete by tctx_task_work). Polled completions (io_complete_rw_iopoll)
    /// skip it. Charged per I/O when the job reaps; 0 for engines without task_work.
    #[serde(default)]
    pub task_work_io_ns: u64,
}

impl Default for EngineCosts {
    fn default() -> Self {
        let sc = |a, b, c, d| SyscallCosts {
            submit_call_ns: a,
            submit_io_ns: b,
            reap_call_ns: c,
            reap_io_ns: d,
            task_work_io_ns: 0,
        };
        EngineCosts {
            usr_io_ns: 150,
            libaio: sc(250, 900, 250, 60),
            io_uring: sc(150, 700, 150, 20),
            pvsync2: sc(250, 900, 0, 100),
            cpuio_qsort_ns: None,
        }
    }
}

/// DMA remapping, ns.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct IommuCosts {
    /// DMA address translation per data or CQE write (IOTLB hit); 0 for passthrough.
    pub dma_translate_ns: u64,
}

/// The socket's interrupt path in the uncore, ns (mechanism P of docs/calibration.md,
/// "The uncore"): root ports belong to IIO stacks, each with one DMAR unit (VT-d §5.1:
/// interrupt remapping is "co-located with the remapping hardware units"), and every
/// interrupt message of the socket passes its interrupt router (the UBox, "the
/// intermediary for interrupt traffic", Intel's uncore manuals).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct UncoreCosts {
    /// A remapped MSI's time at its stack before the router: the drain of the stack's
    /// earlier writes to their commit point, the IRTE lookup and the trip to the router.
    /// The stack handles remapped MSIs one at a time, in arrival order, and holds each
    /// until the router has sent it on (VT-d §5.2.4, PCIe ordering rule A2a).
    pub stack_rtt_ns: u64,
    /// A posted MSI's time at its stack: the atomic read-modify-write of the CPU's
    /// posted-interrupt descriptor (VT-d §5.2.3), one at a time per stack, not ordered
    /// against the notification it may send.
    pub pid_ns: u64,
    /// The socket's interrupt router: time per interrupt message (a remapped MSI or a
    /// posted notification), one at a time, first come first served, for every stack of
    /// the socket. 0: no shared limit.
    #[serde(default)]
    pub ubox_ns: u64,
}

/// Keys of earlier platform files that the stack model replaced, with what replaces
/// each (issue 19): a platform or `--set` naming one is refused with this text.
pub const RETIRED_KEYS: &[(&str, &str)] = &[
    (
        "iommu.remap_ns",
        "uncore.stack_rtt_ns (a remapped MSI's time at its IIO stack: IRTE lookup, drain and the trip to the router; write the old remap_ns + notify_ns)",
    ),
    (
        "iommu.notify_ns",
        "uncore.stack_rtt_ns (a remapped MSI's time at its IIO stack: IRTE lookup, drain and the trip to the router; write the old remap_ns + notify_ns)",
    ),
    (
        "iommu.deliver_ns",
        "uncore.ubox_ns (the socket's interrupt router, per interrupt message)",
    ),
    (
        "iommu.post_ns",
        "uncore.pid_ns (a posted MSI's atomic update of the posted-interrupt descriptor; write the old remap_ns + post_ns)",
    ),
    (
        "root_ports.*.notify_slots",
        "nothing: an IIO stack handles one remapped MSI at a time; root ports that share a stack (one DMAR unit) name it in root_ports.N.stack",
    ),
];

/// What replaced `key` (a dotted key, array indices as numbers), if it is retired.
pub fn retired_key(key: &str) -> Option<&'static str> {
    let parts: Vec<&str> = key.split('.').collect();
    RETIRED_KEYS.iter().find_map(|(pat, why)| {
        let p: Vec<&str> = pat.split('.').collect();
        (p.len() == parts.len()
            && p.iter()
                .zip(&parts)
                .all(|(a, b)| a == b || (*a == "*" && b.parse::<usize>().is_ok())))
        .then_some(*why)
    })
}

/// A PCIe root port: a FIFO of posted writes toward memory, one at a time.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RootPort {
    pub name: String,
    /// Fixed cost of one posted write (TLP header, ordering), ns.
    pub write_ns: u64,
    /// Payload bandwidth, bytes per ns (= GB/s).
    pub bytes_per_ns: f64,
    /// The MSI write itself, before the IOMMU handles it, ns.
    pub msi_ns: u64,
    /// Posted-request header credits the port advertises (PCIe flow control): the posted
    /// TLPs it buffers before a device must hold its writes. A read completion uses one
    /// per `mps_bytes` of data plus one for its CQE; an MSI uses one. 0: unlimited.
    #[serde(default)]
    pub credits: u32,
    /// Max payload size of one posted TLP, bytes (PCIe MPS).
    #[serde(default = "default_mps_bytes")]
    pub mps_bytes: u64,
    /// The IIO stack (one DMAR unit) the port belongs to: ports naming the same stack
    /// share its interrupt handling (a x16 slot bifurcated x4x4x4x4 is four ports on one
    /// stack). Absent: a stack of its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stack: Option<String>,
}

impl RootPort {
    /// The name of the port's IIO stack.
    pub fn stack_name(&self) -> &str {
        self.stack.as_deref().unwrap_or(&self.name)
    }
}

fn default_mps_bytes() -> u64 {
    256
}

/// What kind of device a group holds.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum DeviceKind {
    /// An NVMe controller (nvme-pci).
    Nvme,
    /// An Intel DSA work queue per `queues` (drivers/dma/idxd): descriptors complete by a
    /// completion record write and, with Request Completion Interrupt, one MSI-X message
    /// each; no CQ head doorbell gates the messages and the handler rings none.
    Dsa,
    /// An RDMA completion queue per `queues` (drivers/infiniband/core/cq.c): one
    /// completion event per arm (ib_req_notify_cq IB_CQ_NEXT_COMP), re-armed by the
    /// handler after it polled; the NIC's CQ moderation (usec, comps) coalesces events.
    Rdma,
    /// A virtio-blk device of a guest (drivers/block/virtio_blk.c): split virtqueues whose
    /// host side is the VMM (`[devices.host]`), interrupts injected by the hypervisor
    /// rather than delivered through a root port (model/virtio.rs).
    #[serde(rename = "virtio-blk")]
    VirtioBlk,
}

impl DeviceKind {
    /// Whether the host acknowledges consumed entries with a write the device sees: the
    /// NVMe CQ head doorbell, or an RDMA CQ's re-arm. A DSA completion record has none.
    pub fn has_cq_doorbell(self) -> bool {
        !matches!(self, DeviceKind::Dsa | DeviceKind::VirtioBlk)
    }

    /// The name platform files use.
    pub fn as_str(self) -> &'static str {
        match self {
            DeviceKind::Nvme => "nvme",
            DeviceKind::Dsa => "dsa",
            DeviceKind::Rdma => "rdma",
            DeviceKind::VirtioBlk => "virtio-blk",
        }
    }

    /// The message rule of a device that does not name one: NVMe's MSI-X text asks for a
    /// message per completion; an RDMA CQ raises one event per arm; a DSA descriptor with
    /// Request Completion Interrupt sends its own message.
    pub fn default_msi(self) -> MsiRule {
        match self {
            // virtio-blk decides with the ring's event index, not an MSI-X rule.
            DeviceKind::Nvme | DeviceKind::Dsa | DeviceKind::VirtioBlk => MsiRule::PerCompletion,
            DeviceKind::Rdma => MsiRule::UntilDoorbell,
        }
    }
}

/// `msi = "per_completion" | "until_doorbell"` in platform files, read with the core's
/// own names so the two never drift apart.
mod msi_rule_name {
    use irqlab_core::nvme::MsiRule;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &Option<MsiRule>, s: S) -> Result<S::Ok, S::Error> {
        match v {
            Some(r) => s.serialize_str(r.as_str()),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<MsiRule>, D::Error> {
        let name = String::deserialize(d)?;
        name.parse().map(Some).map_err(serde::de::Error::custom)
    }
}

/// Where a device's own aggregation time runs from.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum CoalesceFrom {
    /// The first completion not yet signalled (NVMe feature 08h).
    #[default]
    FirstWithheld,
    /// The first entry above the host's last CQ head doorbell; a doorbell acknowledging
    /// every entry cancels the aggregation.
    FirstUnacked,
}

/// `count` identical devices behind one root port.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct DeviceGroup {
    pub kind: DeviceKind,
    /// Name prefix; devices are named prefix0, prefix1, ... across groups of one prefix.
    pub prefix: String,
    pub count: usize,
    /// Root port name (absent for virtio-blk, whose host writes guest memory itself).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub port: String,
    /// I/O queue pairs (each with its own MSI-X vector); 0 means one per CPU.
    pub queues: usize,
    /// Entries per queue (CAP.MQES + 1, capped by the driver's io_queue_depth 1024).
    pub queue_depth: u32,
    /// Random-read IOPS at saturation; with the mean service time it sets the internal
    /// parallelism (servers = max_iops × read_ns).
    pub max_iops: f64,
    /// Mean media service time of a read, ns.
    pub read_ns: u64,
    /// Mean media service time of a write, ns.
    pub write_ns: u64,
    /// Coefficient of variation of the service time (lognormal); 0 means constant.
    pub service_cv: f64,
    /// Time for the controller to fetch a batch of SQEs after the doorbell, ns.
    pub sqe_fetch_ns: u64,
    /// How long the controller's fetch engine is busy per SQ doorbell it serves, however
    /// many SQEs that doorbell brings: doorbells queue behind one another, so many
    /// queues at depth 1 saturate it where batched submissions do not. 0: fetches
    /// overlap freely.
    #[serde(default)]
    pub fetch_busy_ns: u64,
    /// Size of a completion queue entry write, bytes.
    pub cqe_bytes: u64,
    /// When the device sends a vector's message: `per_completion` (a message for every
    /// entry written) or `until_doorbell` (one outstanding until the CQ head doorbell).
    /// Absent: the kind's rule (NVMe and DSA per completion, RDMA per arm).
    #[serde(
        default,
        with = "msi_rule_name",
        skip_serializing_if = "Option::is_none"
    )]
    pub msi: Option<MsiRule>,
    /// The device's own interrupt aggregation, used when the policy leaves coalescing off
    /// (a device may coalesce although feature 08h reads zero): completions per message.
    /// 0 or 1: none.
    #[serde(default)]
    pub coalesce_count: u32,
    /// The device's own aggregation time, ns, from the first withheld completion; 0: none.
    #[serde(default)]
    pub coalesce_time_ns: u64,
    /// Where the device's own aggregation time runs from: `first_withheld` (feature 08h's
    /// rule: the first completion not yet signalled) or `first_unacked` (the first entry
    /// the host has not acknowledged with a CQ head doorbell; a doorbell that
    /// acknowledges every entry cancels the timer).
    #[serde(default)]
    pub coalesce_from: CoalesceFrom,
    /// true: a command is served by the media unit its LBA maps to (uniformly random for
    /// random I/O), so commands collide at low depth; false: by any free unit.
    #[serde(default)]
    pub striped: bool,
    /// Device vectors each interrupt CPU hosts: k consecutive queues send their vectors to
    /// the first CPU of the group. 0: managed affinity (each queue's first CPU).
    #[serde(default)]
    pub vectors_per_cpu: usize,
    /// Pins every vector of the group to this CPU (writing /proc/irq/N/smp_affinity), as
    /// the C2 DSA test pins both completion vectors to one CPU. Absent: managed affinity.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub irq_cpu: Option<usize>,
    /// The handler's CPU time per completion of this device, ns, when it differs from
    /// kernel.cqe_ns (an idxd completion record check, an ib_poll_cq work completion).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completion_ns: Option<u64>,
    /// RDMA: the host's CPU time for one SEND work completion (mlx5's CQE poll and
    /// nvme_rdma_send_done), ns. nvme-rdma signals every SEND since v4.15, so each I/O
    /// brings its host CQ two work completions, the SEND's and the response's RECV (whose
    /// cost is `completion_ns` or kernel.cqe_ns). Absent: a SEND completion costs nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub send_wc_ns: Option<u64>,
    /// RDMA: the hardirq of a CQ polled in softirq (IB_POLL_SOFTIRQ): mlx5_eq_comp_int
    /// reads the EQE, finds the CQ, schedules its irq_poll and rings the EQ doorbell, ns
    /// (after cpu.irq_entry_ns). Absent: 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub eq_ns: Option<u64>,
    /// Whether the device writes `bs` bytes of data toward memory for every command,
    /// whatever fio's direction (a DSA memory fill writes its destination buffer).
    #[serde(default)]
    pub writes_data: bool,
    /// The submitter's costs for a device no fio engine drives (a kernel thread posting
    /// DSA batch descriptors): they replace the job's engine costs, and the job has no
    /// user-space work per I/O. Absent: the job's ioengine costs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub submitter: Option<SyscallCosts>,
    /// NVMe over RDMA: the target machine's CPUs serve the commands (nvmet-rdma over
    /// null_blk) instead of media servers. Absent: the device's media model serves them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<RdmaTarget>,
    /// Mean media time of deallocating one range of a Dataset Management command (a
    /// trim), ns; a command of N ranges takes N times as long. Absent: the platform
    /// gives no time for a trim, and a job that trims is refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trim_ns: Option<u64>,
    /// Mean media times of Write Zeroes, Write Uncorrectable and Verify (io_uring_cmd's
    /// write_mode), ns. Absent: a job that issues the command is refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub write_zeroes_ns: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub write_uncor_ns: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verify_ns: Option<u64>,
    /// virtio-blk: the virtqueues as the guest driver negotiated them (crate::guest).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub virtio: Option<crate::guest::VirtioQueues>,
    /// virtio-blk: the host side that serves the rings (crate::guest).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<crate::guest::VirtioHost>,
}

/// The nvmet-rdma target of an NVMe over RDMA device, modelled as CPUs: each host queue
/// connects to one target queue whose completion queue interrupts one of the target's
/// cores (round robin), is moderated like the host's (`--moderator`), and whose handler
/// answers every command it reaps. The target's CPUs take the platform's `[cpu]` costs.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct RdmaTarget {
    /// Target cores taking the queues' interrupts (shown after the host's CPUs).
    pub cores: usize,
    /// Target CPU time per command: the RECV completion, nvmet's parsing and execution on
    /// null_blk, posting the RDMA WRITE and SEND, and their send completions. The group's
    /// `service_cv` spreads it (lognormal); its media fields are not used.
    pub command_ns: u64,
    /// One-way trip of the response from the target NIC to the host NIC, ns.
    pub network_ns: u64,
    /// From the target NIC's completion to the MSI at the target CPU's local APIC, ns.
    pub interrupt_ns: u64,
    /// Target CPU time for the work completion of a response's SEND (nvmet-rdma signals
    /// it: nvmet_rdma_send_done releases the response), ns. Absent: not charged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub send_done_ns: Option<u64>,
    /// The target NIC's payload rate onto the network (B/ns): responses leave it one at a
    /// time, in the order the target posts them. Absent or 0: the network takes no time.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes_per_ns: Option<f64>,
}

impl DeviceGroup {
    /// The device's message rule: its own, or its kind's.
    pub fn msi_rule(&self) -> MsiRule {
        self.msi.unwrap_or(self.kind.default_msi())
    }
}

/// Why a platform could not be used.
#[derive(Debug, Clone, PartialEq)]
pub struct PlatformError(pub String);

impl std::fmt::Display for PlatformError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for PlatformError {}

/// Devices a platform may have in all (devices.N.count added up).
pub const MAX_DEVICES: usize = 4096;
/// NVMe: at most 65535 I/O queue pairs per controller (CAP and Number of Queues).
pub const MAX_QUEUES: usize = 65535;

impl Platform {
    /// The device group device `d` (numbered over all groups, in order) belongs to.
    pub fn device_group(&self, d: usize) -> &DeviceGroup {
        let mut first = 0;
        for g in &self.devices {
            if d < first + g.count {
                return g;
            }
            first += g.count;
        }
        panic!("device {d} is not on the platform")
    }

    /// Reads a platform file (a regular text file of bounded size), resolves the shared
    /// tables it names (beside it) and applies `KEY=VALUE` overrides in order. Values
    /// outside their plausible range are warned about on standard error, once each
    /// ([`crate::ledger`] has the provenance of every value).
    pub fn load(path: &Path, sets: &[String]) -> Result<Platform, PlatformError> {
        let r = crate::ledger::load(path, sets)?;
        r.warnings.iter().for_each(|w| crate::ledger::warn_once(w));
        Ok(r.platform)
    }

    /// Parses platform text (`origin` names it in errors) and applies overrides. Errors
    /// read `ORIGIN:LINE: KEY: what is wrong`. Text has no directory: one that names a
    /// shared table is refused (load it with [`Platform::load`]).
    pub fn from_toml(text: &str, origin: &str, sets: &[String]) -> Result<Platform, PlatformError> {
        let r = crate::ledger::from_text(text, origin, None, sets)?;
        r.warnings.iter().for_each(|w| crate::ledger::warn_once(w));
        Ok(r.platform)
    }

    /// The platform as a self-contained file: every value resolved, no provenance and no
    /// table names, so it loads anywhere (a task sent to another process or machine).
    pub fn to_toml(&self) -> Result<String, PlatformError> {
        toml::to_string(self).map_err(|_| {
            PlatformError(format!(
                "a value of platform '{}' is above {}, the largest whole number a platform file holds",
                self.name,
                i64::MAX
            ))
        })
    }

    /// Applies `dotted.key=value` overrides (array elements by index: `devices.0.count`).
    /// Each is checked as it is applied, so an error names the `--set` that caused it.
    pub fn with_overrides(self, sets: &[String]) -> Result<Platform, PlatformError> {
        if sets.is_empty() {
            return Ok(self);
        }
        let mut tree = toml::Value::try_from(&self).map_err(|_| {
            PlatformError(format!(
                "a value of platform '{}' is above {}, the largest whole number --set can write back",
                self.name,
                i64::MAX
            ))
        })?;
        let mut p = None;
        for set in sets {
            let added = apply_set(&mut tree, set)?;
            let parsed: Result<Platform, toml::de::Error> = tree.clone().try_into();
            p = Some(parsed.map_err(|e| {
                let msg = toml_input::in_users_terms(e.message());
                match &added {
                    // A key absent from the file was added: if the schema has no such
                    // field, say so in the user's terms.
                    Some(k) if msg.starts_with(&format!("unknown key '{k}'")) => {
                        PlatformError(format!("--set '{set}': {msg}"))
                    }
                    _ => {
                        let key = set.split_once('=').map_or(set.as_str(), |(k, _)| k.trim());
                        PlatformError(format!("--set '{set}': {key}: {msg}"))
                    }
                }
            })?);
        }
        let p = p.expect("at least one --set was applied");
        p.validate()
            .map_err(|e| PlatformError(format!("after --set: {e}")))?;
        Ok(p)
    }

    /// Rejects values the model cannot run with.
    pub fn validate(&self) -> Result<(), PlatformError> {
        self.check_values().map_err(PlatformError)
    }

    fn check_values(&self) -> Result<(), String> {
        self.check_machine()?;
        for (i, d) in self.devices.iter().enumerate() {
            self.check_device(i, d)?;
        }
        crate::guest::check(self)?;
        let total = self
            .devices
            .iter()
            .try_fold(0usize, |n, d| n.checked_add(d.count))
            .unwrap_or(usize::MAX);
        if total > MAX_DEVICES {
            return Err(format!(
                "devices: the groups hold {total} devices; at most {MAX_DEVICES} are modelled (lower devices.N.count or --disks)"
            ));
        }
        if self.cpu.tick_ns >= 1_000_000_000 / self.cpu.tick_hz {
            return Err(format!(
                "cpu.tick_ns = {} is not shorter than the tick period at tick_hz = {}",
                self.cpu.tick_ns, self.cpu.tick_hz
            ));
        }
        // Every cost and time in ns is at most a second: an absurd value is refused
        // rather than simulated (and sums of them over a run cannot wrap).
        let tree = toml::Value::try_from(self).map_err(|_| {
            format!(
                "a value is above {}, the largest whole number a platform holds",
                i64::MAX
            )
        })?;
        if let Some((key, v)) = ns_over_a_second(&tree, String::new()) {
            return Err(format!("{key} = {v} ns is more than 1 s (1000000000 ns)"));
        }
        Ok(())
    }

    /// The CPUs, the name and the root ports.
    fn check_machine(&self) -> Result<(), String> {
        if self.cpu.count == 0 || self.cpu.count > 4096 {
            return Err(format!("cpu.count = {} is not in 1..=4096", self.cpu.count));
        }
        self.check_topology()?;
        if self.cpu.tick_hz == 0 || self.cpu.tick_hz > 100_000 {
            return Err(format!(
                "cpu.tick_hz = {} is not in 1..=100000",
                self.cpu.tick_hz
            ));
        }
        if self.devices.is_empty() {
            return Err("no devices: add a [[devices]] table".into());
        }
        if self.name.len() > 256 {
            return Err(format!(
                "name is {} bytes long; expected at most 256",
                self.name.len()
            ));
        }
        if self.root_ports.len() > MAX_DEVICES {
            return Err(format!(
                "root_ports: {} ports; at most {MAX_DEVICES} are modelled",
                self.root_ports.len()
            ));
        }
        for (i, rp) in self.root_ports.iter().enumerate() {
            if rp
                .stack
                .as_ref()
                .is_some_and(|s| s.is_empty() || s.len() > 256)
            {
                return Err(format!(
                    "root_ports.{i}.stack: expected the name of the port's IIO stack, 1 to 256 bytes"
                ));
            }
            if rp.mps_bytes == 0 || rp.mps_bytes > 4096 {
                return Err(format!(
                    "root_ports.{i}.mps_bytes = {} is not in 1..=4096",
                    rp.mps_bytes
                ));
            }
            if !(rp.bytes_per_ns >= 1e-3 && rp.bytes_per_ns <= 1e4) {
                return Err(format!(
                    "root_ports.{i}.bytes_per_ns = {} is not in 0.001..=10000 (1 MB/s to 10 TB/s)",
                    rp.bytes_per_ns
                ));
            }
        }
        Ok(())
    }

    /// SMT siblings, the LLC and the NUMA node nest: each a whole number of the one below.
    fn check_topology(&self) -> Result<(), String> {
        let c = &self.cpu;
        if c.threads_per_core == 0 || c.threads_per_core > 8 {
            return Err(format!(
                "cpu.threads_per_core = {} is not in 1..=8",
                c.threads_per_core
            ));
        }
        let llc = if c.llc_cpus == 0 { c.count } else { c.llc_cpus };
        if c.llc_cpus > c.count || !llc.is_multiple_of(c.threads_per_core) {
            return Err(format!(
                "cpu.llc_cpus = {} must be a multiple of cpu.threads_per_core = {} and at most cpu.count = {} (0: every CPU)",
                c.llc_cpus, c.threads_per_core, c.count
            ));
        }
        let node = if c.node_cpus == 0 {
            c.count
        } else {
            c.node_cpus
        };
        if c.node_cpus > c.count || !node.is_multiple_of(llc) {
            return Err(format!(
                "cpu.node_cpus = {} must be a multiple of the LLC's {llc} CPUs and at most cpu.count = {} (0: one node)",
                c.node_cpus, c.count
            ));
        }
        Ok(())
    }

    /// Device group `i`: its port, counts, sizes and rates.
    fn check_device(&self, i: usize, d: &DeviceGroup) -> Result<(), String> {
        if d.kind != DeviceKind::VirtioBlk && !self.root_ports.iter().any(|rp| rp.name == d.port) {
            return Err(format!(
                "devices.{i}.port = \"{}\" names no [[root_ports]] entry",
                d.port
            ));
        }
        if d.count == 0 || d.count > MAX_DEVICES {
            return Err(format!(
                "devices.{i}.count = {} is not in 1..={MAX_DEVICES}",
                d.count
            ));
        }
        if d.queues > MAX_QUEUES {
            return Err(format!(
                "devices.{i}.queues = {} is above {MAX_QUEUES}, NVMe's most I/O queues (0: one per CPU)",
                d.queues
            ));
        }
        if d.cqe_bytes == 0 || d.cqe_bytes > 4096 {
            return Err(format!(
                "devices.{i}.cqe_bytes = {} is not in 1..=4096 (an NVMe CQE is 16 bytes, a DSA completion record 32)",
                d.cqe_bytes
            ));
        }
        if !(d.max_iops > 0.0 && d.max_iops.is_finite()) {
            return Err(format!("devices.{i}.max_iops must be a positive number"));
        }
        if d.read_ns == 0 || d.write_ns == 0 {
            return Err(format!("devices.{i}: read_ns and write_ns must be above 0"));
        }
        // max_iops x service time servers run in parallel; each is modelled.
        let servers = d.max_iops * d.read_ns.max(d.write_ns) as f64 / 1e9;
        if servers > 1e6 {
            return Err(format!(
                "devices.{i}: max_iops x service time gives {servers:.0} parallel media servers; at most 1000000 are modelled"
            ));
        }
        if !(d.service_cv >= 0.0 && d.service_cv <= 10.0) {
            return Err(format!("devices.{i}.service_cv must be in 0..=10"));
        }
        if d.queue_depth < 2 || d.queue_depth > 65536 {
            return Err(format!("devices.{i}.queue_depth must be in 2..=65536"));
        }
        if d.coalesce_count > 256 {
            return Err(format!(
                "devices.{i}.coalesce_count = {} is above 256 (08h's 8-bit threshold + 1)",
                d.coalesce_count
            ));
        }
        self.check_device_wiring(i, d)
    }

    /// Device group `i`'s MSI rule, NVMe over RDMA target, vectors, interrupt CPU and
    /// name.
    fn check_device_wiring(&self, i: usize, d: &DeviceGroup) -> Result<(), String> {
        match (d.kind, d.msi) {
            (DeviceKind::Dsa, Some(MsiRule::UntilDoorbell)) => {
                return Err(format!(
                    "devices.{i}.msi = \"until_doorbell\": a DSA work queue has no CQ head doorbell to wait for; use per_completion"
                ));
            }
            (DeviceKind::Rdma, Some(MsiRule::PerCompletion)) => {
                return Err(format!(
                    "devices.{i}.msi = \"per_completion\": an RDMA CQ raises one event per arm (ib_req_notify_cq); use until_doorbell"
                ));
            }
            _ => {}
        }
        for (key, set) in [("send_wc_ns", d.send_wc_ns), ("eq_ns", d.eq_ns)] {
            if set.is_some() && d.kind != DeviceKind::Rdma {
                return Err(format!(
                    "devices.{i}.{key}: only an rdma device has work completions and an event queue"
                ));
            }
        }
        if let Some(t) = &d.target {
            if d.kind != DeviceKind::Rdma {
                return Err(format!(
                    "devices.{i}.target: only an rdma device has an NVMe over RDMA target"
                ));
            }
            if t.cores == 0 || t.cores > 4096 {
                return Err(format!("devices.{i}.target.cores must be in 1..=4096"));
            }
            if let Some(r) = t.bytes_per_ns
                && !(r == 0.0 || (1e-3..=1e4).contains(&r))
            {
                return Err(format!(
                    "devices.{i}.target.bytes_per_ns = {r} is not 0 (no network time) or in 0.001..=10000 (1 MB/s to 10 TB/s)"
                ));
            }
        }
        if d.vectors_per_cpu > 256 {
            return Err(format!("devices.{i}.vectors_per_cpu must be in 0..=256"));
        }
        if let Some(c) = d.irq_cpu
            && c >= self.cpu.count
        {
            return Err(format!(
                "devices.{i}.irq_cpu = {c}, but the platform has CPUs 0-{}",
                self.cpu.count - 1
            ));
        }
        if d.prefix.is_empty()
            || d.prefix.len() > 32
            || !d.prefix.chars().all(|c| c.is_ascii_alphanumeric())
        {
            return Err(format!(
                "devices.{i}.prefix = \"{}\" must be an alphanumeric name of 1 to 32 characters",
                d.prefix
            ));
        }

        Ok(())
    }
}

/// The first `*_ns` key in `v` whose value is above 1 s, with its dotted path.
fn ns_over_a_second(v: &toml::Value, path: String) -> Option<(String, i64)> {
    let child = |k: &str| dotted(&path, k);
    match v {
        toml::Value::Table(t) => t.iter().find_map(|(k, x)| match x {
            toml::Value::Integer(n) if k.ends_with("_ns") && *n > 1_000_000_000 => {
                Some((child(k), *n))
            }
            _ => ns_over_a_second(x, child(k)),
        }),
        toml::Value::Array(a) => a
            .iter()
            .enumerate()
            .find_map(|(i, x)| ns_over_a_second(x, child(&i.to_string()))),
        _ => None,
    }
}

/// Applies one `KEY=VALUE`. Returns the last key when it was absent and has been added
/// (an optional field the file leaves out); deserialising then checks that it exists.
fn apply_set(tree: &mut toml::Value, set: &str) -> Result<Option<String>, PlatformError> {
    let (key, raw) = set.split_once('=').ok_or_else(|| {
        PlatformError(format!(
            "--set '{set}': expected KEY=VALUE, e.g. cpu.irq_entry_ns=300"
        ))
    })?;
    let key = key.trim();
    let raw = raw.trim();
    if let Some(why) = retired_key(key) {
        return Err(PlatformError(format!(
            "--set '{set}': {key} is no longer a platform key; replaced by {why}"
        )));
    }
    let mut node = tree;
    let mut walked = String::new();
    let parts: Vec<&str> = key.split('.').collect();
    for (i, &part) in parts.iter().enumerate() {
        let here = if walked.is_empty() {
            "the top level".to_string()
        } else {
            format!("'{walked}'")
        };
        if let toml::Value::Table(t) = node
            && i + 1 == parts.len()
            && !t.contains_key(part)
            && !walked.is_empty()
        {
            // An optional field the file leaves out: add it with the type its text reads as.
            t.insert(part.to_string(), guess_value(raw));
            return Ok(Some(part.to_string()));
        }
        node = match node {
            toml::Value::Table(t) => {
                let known: Vec<String> = t.keys().cloned().collect();
                t.get_mut(part).ok_or_else(|| {
                    // An optional table the file leaves out ([devices.submitter]) cannot be
                    // built from one value; a misspelt table reads the same.
                    let why = if i + 1 < parts.len() {
                        format!(
                            "{here} has no table '{part}' in this file (--set changes one value; a table the file leaves out must be written into it)"
                        )
                    } else {
                        format!("unknown key '{part}' in {here}")
                    };
                    PlatformError(format!(
                        "--set '{set}': {why}; keys there: {}",
                        known.join(", ")
                    ))
                })?
            }
            toml::Value::Array(a) => {
                let len = a.len();
                let ix: usize = part.parse().map_err(|_| {
                    PlatformError(format!(
                        "--set '{set}': {here} is a list; use an index 0..{len}, not '{part}'"
                    ))
                })?;
                a.get_mut(ix).ok_or_else(|| {
                    PlatformError(format!(
                        "--set '{set}': index {ix} is out of range for {here} ({len} entries)"
                    ))
                })?
            }
            _ => {
                return Err(PlatformError(format!(
                    "--set '{set}': {here} is a value, it has no key '{part}'"
                )));
            }
        };
        if !walked.is_empty() {
            walked.push('.');
        }
        walked.push_str(part);
    }
    let new = match node {
        toml::Value::Integer(_) => raw.parse::<i64>().map(toml::Value::Integer).map_err(|e| {
            use std::num::IntErrorKind::{NegOverflow, PosOverflow};
            match e.kind() {
                PosOverflow | NegOverflow => {
                    format!("too large; {}", crate::toml_input::integer_limit())
                }
                _ => "expected an integer".to_string(),
            }
        }),
        toml::Value::Float(_) => raw
            .parse::<f64>()
            .map(toml::Value::Float)
            .map_err(|_| "expected a number".to_string()),
        toml::Value::Boolean(_) => raw
            .parse::<bool>()
            .map(toml::Value::Boolean)
            .map_err(|_| "expected true or false".to_string()),
        toml::Value::String(_) => Ok(toml::Value::String(raw.trim_matches('"').to_string())),
        _ => Err("this key holds a table or list; set one of its values".to_string()),
    }
    .map_err(|why| PlatformError(format!("--set '{set}': '{raw}' for '{key}': {why}")))?;
    *node = new;
    Ok(None)
}

/// The TOML value a bare `--set` text stands for: an integer, a number, a boolean, or text.
fn guess_value(raw: &str) -> toml::Value {
    if let Ok(i) = raw.parse::<i64>() {
        toml::Value::Integer(i)
    } else if let Ok(f) = raw.parse::<f64>() {
        toml::Value::Float(f)
    } else if let Ok(b) = raw.parse::<bool>() {
        toml::Value::Boolean(b)
    } else {
        toml::Value::String(raw.trim_matches('"').to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const EXAMPLE: &str = include_str!("../../../platforms/example.toml");

    #[test]
    fn example_platform_parses() {
        let p = Platform::from_toml(EXAMPLE, "example.toml", &[]).unwrap();
        assert_eq!(p.cpu.count, 16);
    }

    #[test]
    fn set_overrides_nested_and_indexed_keys() {
        let sets = vec![
            "cpu.irq_entry_ns=777".to_string(),
            "devices.0.count=2".to_string(),
        ];
        let p = Platform::from_toml(EXAMPLE, "example.toml", &sets).unwrap();
        assert_eq!(p.cpu.irq_entry_ns, 777);
        assert_eq!(p.devices[0].count, 2);
    }

    #[test]
    fn unknown_set_key_is_named() {
        let sets = vec!["cpu.irq_entri_ns=1".to_string()];
        let e = Platform::from_toml(EXAMPLE, "example.toml", &sets).unwrap_err();
        assert!(e.0.contains("unknown key 'irq_entri_ns'"), "{e}");
        assert!(e.0.contains("irq_entry_ns"), "{e}");
    }

    #[test]
    fn optional_keys_left_out_of_the_file_can_be_set() {
        let sets = vec![
            "devices.0.msi=until_doorbell".to_string(),
            "devices.0.irq_cpu=3".to_string(),
        ];
        let p = Platform::from_toml(EXAMPLE, "example.toml", &sets).unwrap();
        assert_eq!(p.devices[0].msi, Some(MsiRule::UntilDoorbell));
        assert_eq!(p.devices[0].irq_cpu, Some(3));
        let bad = vec!["devices.0.msi_rule=per_completion".to_string()];
        let e = Platform::from_toml(EXAMPLE, "example.toml", &bad).unwrap_err();
        assert!(e.0.contains("unknown key 'msi_rule'"), "{e}");
        assert!(e.0.contains("msi"), "names the keys that exist: {e}");
        let bad_rule = vec!["devices.0.msi=per_cqe".to_string()];
        let e = Platform::from_toml(EXAMPLE, "example.toml", &bad_rule).unwrap_err();
        assert!(e.0.contains("per_completion or until_doorbell"), "{e}");
    }

    #[test]
    fn set_value_of_wrong_type_is_rejected() {
        let sets = vec!["cpu.count=many".to_string()];
        let e = Platform::from_toml(EXAMPLE, "example.toml", &sets).unwrap_err();
        assert!(e.0.contains("expected an integer"), "{e}");
        // A whole number past TOML's range is too large, not "not an integer".
        let sets = vec!["devices.0.read_ns=99999999999999999999".to_string()];
        let e = Platform::from_toml(EXAMPLE, "example.toml", &sets).unwrap_err();
        assert_eq!(
            e.0,
            "--set 'devices.0.read_ns=99999999999999999999': '99999999999999999999' for 'devices.0.read_ns': too large; a TOML file holds whole numbers up to 9223372036854775807"
        );
    }
}
