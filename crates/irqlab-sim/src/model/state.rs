//! The model's state, in flat arenas indexed by typed ids (model/ids.rs): no allocation
//! per event.

use super::ids::{IoId, JobId, QueueId, ThreadId, VectorId};
pub(crate) use super::io::Io;
pub(crate) use super::job_life::{DirStats, Job, JobPhase};
pub(crate) use super::thread::{TState, Thread, ThreadKind, Wakee};
use crate::engine::EventQueue;
use crate::observer::{Observer, SliceKind};
use irqlab_core::Policy;
use irqlab_core::delivery::{DeliveryPath, NotificationHandler};
use irqlab_core::irq::Irr;
use irqlab_core::irq_poll::IrqPollCpu;
use irqlab_core::nvme::irq_handler::NvmeIrqHandler;
use irqlab_core::posted::{NR_PIR_WORDS, vector_bit};
use irqlab_core::softirq::SoftirqCpu;
use irqlab_report::Latency;
use std::collections::VecDeque;

/// Costs copied out of the platform for the hot path, ns.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Costs {
    pub irq_entry: u64,
    pub irq_exit: u64,
    pub eoi: u64,
    pub idle_exit: u64,
    pub ctx_switch: u64,
    pub wakeup: u64,
    pub ipi: u64,
    pub tick_period: u64,
    pub tick: u64,
    pub hz: u32,
    pub slice: u64,
    pub cqe: u64,
    pub cq_doorbell: u64,
    pub sq_doorbell: u64,
    pub mmio_flight: u64,
    pub poll_check: u64,
    pub pir_round: u64,
    pub pir_round_clean: u64,
    pub irq_poll_call: u64,
    pub softirq: u64,
    pub irq_thread: u64,
    pub hrtimer: u64,
    pub moderation_program: u64,
    pub irq_mask: u64,
    /// enable_irq's unmask: the mask's table write plus a guest's hypercall (crate::guest).
    pub irq_unmask: u64,
    pub usr_io: u64,
    /// A guest's halted-vCPU wake, added to `idle_exit` after `guest_halt_poll` (model/guest.rs).
    pub vcpu_wake: u64,
    pub guest_halt_poll: u64,
    /// A guest's virtio notify exit (model/virtio.rs).
    pub kick: u64,
    /// The platform has a virtio-blk device: the hot path's one test before its hooks.
    pub has_virtio: bool,
    /// enable_irq resends through the resend tasklet (crate::guest `resend_tasklet`).
    pub resend_tasklet: bool,
}

/// IDT vectors of the system interrupts the model raises: core's (irq::vectors), as the
/// simulator's wider vector numbers.
pub(crate) const RESCHEDULE_VECTOR: u16 = irqlab_core::irq::vectors::RESCHEDULE_VECTOR as u16;
pub(crate) const LOCAL_TIMER_VECTOR: u16 = irqlab_core::irq::vectors::LOCAL_TIMER_VECTOR as u16;
/// The hrtimer expiry of a hybrid-polling sleep. The kernel takes it on the local timer
/// vector; a separate pending bit here keeps the periodic tick's accounting apart.
pub(crate) const HRTIMER_VECTOR: u16 = 0xee;
/// First vector given to device MSI-X entries (FIRST_EXTERNAL_VECTOR + 1).
pub(crate) const FIRST_DEVICE_VECTOR: u16 =
    irqlab_core::irq::vectors::FIRST_EXTERNAL_VECTOR as u16 + 1;
/// Every CPU's min_vruntime, and its threads' vruntime, when the run starts: the machine
/// has been up a while (kernel/sched/fair.c place_entity's floor, min_vruntime minus half a
/// latency period, is then never clamped at 0).
pub(crate) const VRUNTIME_AT_START: u64 = 1_000_000_000;
/// drivers/infiniband/core/cq.c: an IB_POLL_SOFTIRQ CQ's irq_poll weight.
pub(crate) const IB_POLL_BUDGET_IRQ: u32 = 256;
/// The `result` a SEND work completion's CQE carries in the model (RECV: 0).
pub(crate) const WC_SEND: u32 = 1;

/// What a CPU is in the middle of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mode {
    /// Nothing runs (cpuidle).
    Idle,
    /// Waking from idle to take an interrupt.
    IdleExit,
    /// A thread runs (or spins); interrupts are taken at once.
    Thread,
    /// Switching to `current`; interrupts wait for the switch to finish.
    Switch,
    /// Hardirq context; interrupts are off.
    HardIrq,
    /// Softirq at irq_exit; interrupts are taken between steps.
    SoftIrq,
}

/// Where a hardirq handler is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum IrqPhase {
    Entry,
    /// A vector's handler reaped CQEs (held in the CPU's `reaping` list).
    Reap,
    /// The handler rings the CQ head doorbell.
    Doorbell,
    /// nvme_irq after the doorbell: nvme_pci_complete_batch over the reaped requests.
    Complete,
    /// Threaded handler: the primary handler checked the CQ and woke the thread.
    Primary,
    /// Posted MSI: one handle_pending_pir round.
    PirRound,
    /// `--notification self-ipi`: the demux sent one harvested vector to this CPU.
    SelfIpi,
    /// handle_edge_irq found the IRQ disabled or running: mask_ack_irq masks the vector.
    Mask,
    /// handle_edge_irq's loop unmasks the vector before running its handler again.
    Rerun,
    /// Timer tick work.
    Tick,
    /// hrtimer expiry work.
    Hrtimer,
    /// Waker cost of wake-ups done by completions.
    Wakeups,
    /// apic_eoi and irq_exit (with the doorbell before them after a remapped handler).
    Exit,
    /// virtblk_done took used entries (model/virtio.rs).
    VirtioDrain,
    /// An RDMA CQ's interrupt (IB_POLL_SOFTIRQ): mlx5_eq_comp_int took the EQE, armed
    /// the EQ and scheduled the CQ's irq_poll.
    IbEq,
}

/// One hardirq in progress.
#[derive(Clone, Debug)]
pub(crate) struct IrqFrame {
    pub idt: u16,
    pub phase: IrqPhase,
    /// The device vector whose handler runs (None before one starts).
    pub vector: Option<VectorId>,
    /// CQEs reaped by the current vector's handler.
    pub reaped: u32,
    /// Posted: the notification handler's step machine (irqlab-core delivery/handler.rs),
    /// the same one the runtime executes.
    pub notification: Option<NotificationHandler>,
    /// An NVMe vector's handler: core's step machine for the policy's handler style (the
    /// runtime's too); the simulator charges its steps.
    pub nvme: Option<NvmeIrqHandler>,
    /// The budget of the handler's Reap step (nvme_poll_cq's; Sagi's irq_poll budget).
    pub reap_budget: u32,
    /// After Wakeups, go back to this phase's continuation.
    pub after_wakeups: IrqPhase,
}

impl IrqFrame {
    pub fn new(idt: u16) -> Self {
        IrqFrame {
            idt,
            phase: IrqPhase::Entry,
            vector: None,
            reaped: 0,
            notification: None,
            nvme: None,
            reap_budget: u32::MAX,
            after_wakeups: IrqPhase::Reap,
        }
    }

    /// The device vector whose handler runs (the Reap, Complete, Doorbell and Primary
    /// phases come after `start_vector` set it).
    #[inline]
    pub fn running_vector(&self) -> usize {
        self.vector.expect("a device vector's handler runs").ix()
    }
}

/// Where the inline softirq (or ksoftirqd) is inside handle_softirqs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SoftPhase {
    /// Entry cost of handle_softirqs.
    Begin,
    /// An irq_poll poll call is running on `vector` (CQEs in the `reaping` list).
    Poll {
        vector: VectorId,
        work: u32,
    },
    /// Waker cost after a poll call's completions.
    Wakeups {
        vector: VectorId,
        work: u32,
    },
    /// BLOCK_SOFTIRQ completes the CPU's list (in `soft_reaping`), then its wake-ups'
    /// cost (model/virtio.rs).
    Block,
    BlockWakeups,
    /// The resend tasklet runs `vector`'s flow handler: its reap (CQEs in `soft_reaping`),
    /// then the completions' wake-ups; or the mask of a vector found disabled again.
    Resend {
        vector: VectorId,
        reaped: u32,
    },
    ResendWakeups {
        vector: VectorId,
        reaped: u32,
    },
    ResendMasked,
}

/// Time accounting buckets of one CPU, ns, and its counters.
#[derive(Clone, Debug, Default)]
pub(crate) struct CpuStats {
    /// ns per kind of slice, indexed by `SliceKind as usize` (`CpuStats::ns`).
    pub time: [u64; SLICE_KINDS],
    pub ctx_switches: u64,
    pub hardirqs: u64,
    pub pmn: u64,
    pub ticks: u64,
    pub ksoftirqd_wakeups: u64,
    /// Allocated at the first tick: an HDR histogram is a few hundred KiB.
    pub tick_lateness: Option<Box<Latency>>,
}

/// The kinds of slice (`SliceKind`'s variants).
pub(crate) const SLICE_KINDS: usize = 7;

impl CpuStats {
    /// Time spent doing `kind`, ns.
    pub fn ns(&self, kind: SliceKind) -> u64 {
        self.time[kind as usize]
    }
}

/// Whether time doing `kind` is a thread's (its vruntime; a job's usr or sys): the fair
/// class does not charge hardirq and softirq time to the thread (IRQ_TIME_ACCOUNTING).
#[inline(always)]
pub(crate) fn thread_time(kind: SliceKind) -> bool {
    matches!(
        kind,
        SliceKind::Usr | SliceKind::Sys | SliceKind::Ksoftirqd | SliceKind::IrqThread
    )
}

pub(crate) struct Cpu {
    pub epoch: u32,
    pub stepping: bool,
    pub mode: Mode,
    pub kind: SliceKind,
    /// Time accounting, charged lazily (cpu.rs `account`): the CPU's time up to
    /// `acct_from` is charged; [acct_from, acct_mark) is owed to `kind` and the thread
    /// `owed_to`; the time since `acct_mark` (the last step boundary) is not owed yet.
    pub acct_from: u64,
    pub acct_mark: u64,
    pub owed_to: Option<ThreadId>,
    /// The job `owed_to` runs (its usr and sys).
    pub owed_job: Option<JobId>,
    /// The thread that owns the CPU (running, spinning, or interrupted).
    pub current: Option<ThreadId>,
    pub runq: VecDeque<ThreadId>,
    /// The fair class's min_vruntime (kernel/sched/fair.c update_min_vruntime), ns.
    pub min_vruntime: u64,
    pub need_resched: bool,
    /// When `current` last got the CPU (for the CFS slice at ticks).
    pub slice_start: u64,
    /// Pending interrupt vectors (the local APIC IRR, core's: highest vector first).
    pub irr: Irr,
    pub tick_due: u64,
    pub irq: IrqFrame,
    /// `--notification preemptable`: the notification handler a system vector preempted
    /// between two of its steps; it goes on when that interrupt exits.
    pub preempted: Option<IrqFrame>,
    /// The inline softirq was interrupted by a hardirq and resumes after it.
    pub soft_active: bool,
    pub soft_phase: SoftPhase,
    /// CQEs popped by the step in progress (handler, poll call, polled reap).
    pub reaping: Vec<IoId>,
    /// The device vector behind each IDT vector of this CPU.
    pub vec_of_idt: Vec<Option<VectorId>>,
    pub next_idt: u16,
    /// How MSIs reach this CPU: an IRTE in remapped format, or the posted-interrupt
    /// descriptor the IOMMU updates (irqlab-core delivery::DeliveryPath).
    pub path: DeliveryPath,
    /// PIR bits posted and not yet harvested, for the merge count (what the IOMMU merged).
    pub pir_shadow: [u64; NR_PIR_WORDS],
    /// The IOMMU wrote the descriptor's line since the last harvest, so the next round's
    /// read misses in this CPU's cache.
    pub pid_dirty: bool,
    pub softirq: SoftirqCpu,
    pub irq_poll: IrqPollCpu,
    /// Vector of each irq_poll instance on this CPU.
    pub iop_vector: Vec<VectorId>,
    /// This CPU's ksoftirqd (set by the build once the threads exist).
    pub ksoftirqd: Option<ThreadId>,
    /// GSIM's per-CPU moderation state (with --moderator gsim) and its timer's epoch.
    pub gsim: Option<irqlab_core::gsim::GsimCpu>,
    pub gsim_epoch: u32,
    /// Hardirq time since boot (CPUTIME_IRQ), for GSIM's hardirq_percent.
    pub hardirq_total: u64,
    /// Ming Lei's 2019 flood detector (used with --flood-detection).
    pub flood: irqlab_core::flood::FloodDetector,
    /// When the step in progress ends (valid while `stepping`).
    pub step_end: u64,
    /// The inline softirq's next step, to run after a nested hardirq (0: none).
    pub soft_left: u64,
    /// CQEs popped by the softirq step in progress (inline or ksoftirqd).
    pub soft_reaping: Vec<IoId>,
    /// A reschedule IPI is on its way here.
    pub ipi_inflight: bool,
    /// Threads whose hrtimer expired, woken by the hrtimer interrupt.
    pub hrtimer_wake: Vec<ThreadId>,
    /// blk-mq's per-CPU blk_cpu_done list: requests BLOCK_SOFTIRQ will complete.
    pub blk_done: Vec<IoId>,
    /// This CPU's kworker (system_wq's bound pool), when an adaptive moderator needs one.
    pub kworker: Option<ThreadId>,
    /// Moderation work items queued on this CPU's kworker (schedule_work), in order.
    pub work: VecDeque<VectorId>,
    /// Where the kworker is in the item at the head of `work`.
    pub work_state: WorkState,
    /// The idle task's record_wakee state (it is `current` of an idle CPU's interrupts).
    pub idle_wakee: Wakee,
    /// rq->idle_stamp (when the CPU last went idle; 0: busy since) and rq->avg_idle.
    pub idle_stamp: u64,
    pub avg_idle: u64,
    pub stats: CpuStats,
}

/// What the IOMMU's post of one MSI into a CPU's posted-interrupt descriptor did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Posted {
    /// The vector's PIR bit was already set: the message merged with a pending one.
    pub merged: bool,
    /// ON was clear: a notification to the CPU is due.
    pub notify: bool,
}

impl Cpu {
    /// The CpuStep event of `epoch` came due: true when it ends the step in progress (a
    /// stale one's step was preempted or replaced).
    #[inline]
    pub fn end_step(&mut self, epoch: u32) -> bool {
        let current = self.epoch == epoch && self.stepping;
        if current {
            self.stepping = false;
        }
        current
    }

    /// The IOMMU posts IDT vector `idt` into this CPU's descriptor: the PIR bit, then ON
    /// unless already set (the hardware's pi_test_and_set_pir and pi_test_and_set_on,
    /// arch/x86/include/asm/posted_intr.h). Its atomic update takes the descriptor's line
    /// away from this CPU's cache.
    pub fn post_interrupt(&mut self, idt: u16) -> Posted {
        let (w, b) = vector_bit(idt as u8);
        let merged = self.pir_shadow[w] & b != 0;
        self.pir_shadow[w] |= b;
        self.pid_dirty = true;
        let notify = self.path.pi_desc().is_some_and(|pi| pi.post(idt as u8));
        Posted { merged, notify }
    }

    /// handle_pending_pir took `words` out of the PIR (arch/x86/kernel/irq.c,
    /// pi_harvest_pir). Returns whether the IOMMU wrote the descriptor since the last
    /// harvest, so that this read missed in the CPU's cache.
    pub fn harvest_pir(&mut self, words: [u64; NR_PIR_WORDS]) -> bool {
        for (s, w) in self.pir_shadow.iter_mut().zip(words) {
            *s &= !w;
        }
        std::mem::take(&mut self.pid_dirty)
    }

    /// PIR bits posted and not yet harvested.
    pub fn pir_pending(&self) -> u32 {
        self.pir_shadow.iter().map(|w| w.count_ones()).sum()
    }
}

/// A kworker's progress through one moderation work item (ib_cq_rdma_dim_work,
/// irq-am's program work, net_dim's): post the device command, sleep until its
/// completion interrupt, then program the level the moderator chose.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum WorkState {
    /// Between items.
    #[default]
    Idle,
    /// Building and posting the command (mailbox, doorbell).
    Posting,
    /// Asleep in wait_for_completion until the device's command completes.
    Waiting,
}

/// What a thread does next, returned by its logic when a step ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ThreadStep {
    Run {
        ns: u64,
        kind: SliceKind,
    },
    /// Spin on its completion queues until a CQE appears.
    Spin,
    Block,
    /// Sleep on an hrtimer for ns.
    Sleep {
        ns: u64,
    },
    /// Still runnable, but let others run first (cond_resched with work left).
    Yield,
    Exit,
}

impl ThreadStep {
    /// A step of `ns` in the kernel (a system call's work).
    pub fn sys(ns: u64) -> ThreadStep {
        ThreadStep::Run {
            ns,
            kind: SliceKind::Sys,
        }
    }
}

/// Totals for the conservation checks.
#[derive(Clone, Debug, Default)]
pub(crate) struct Totals {
    pub submitted: u64,
    pub completed: u64,
    pub reaped: u64,
    pub cqes_posted: u64,
}

pub(crate) struct Sim<'a, O: Observer> {
    pub now: u64,
    pub q: EventQueue,
    pub costs: Costs,
    pub engine: crate::platform::EngineCosts,
    pub policy: Policy,
    pub scheduler: crate::platform::Scheduler,
    pub platform_name: String,
    pub seed: u64,
    pub cpus: Vec<Cpu>,
    pub threads: Vec<Thread>,
    pub jobs: Vec<Job>,
    /// The devices' controllers (model/controller).
    pub devices: Vec<super::controller::Device>,
    /// The I/O queues (model/queue.rs).
    pub queues: Vec<super::queue::Queue>,
    /// The devices' MSI-X vectors (model/vector.rs).
    pub vectors: Vec<super::vector::Vector>,
    /// Root ports, IIO stacks and the socket's router (model/fabric).
    pub fabric: super::fabric::Fabric,
    pub ios: Vec<Io>,
    pub free_ios: Vec<IoId>,
    pub jobs_live: usize,
    pub draining: bool,
    /// A run always ends: past this time (1 s of simulated time after the last job's
    /// end) the loop stops and the report says `cut_short`. u64::MAX: no bound.
    pub stop_at: u64,
    pub cut_short: bool,
    /// Set from another thread (Ctrl-C) to end the run where it is.
    pub stop: crate::StopFlag,
    /// The loop saw `stop` set: the window closed there and the machine did not drain.
    pub interrupted: bool,
    pub measuring: bool,
    pub window_start: u64,
    pub window_end: u64,
    pub totals: Totals,
    /// Events the other parts of a parallel run processed (parts.rs).
    pub merged_events: u64,
    /// GSIM's global parameters and counters (with --moderator gsim).
    pub gsim: Option<irqlab_core::gsim::GsimGlobal>,
    /// The software resend's bitmap and tasklet (with a guest's `resend_tasklet`).
    pub resend: irqlab_core::irq::ResendTasklet,
    /// Stonewall waves, disk accounting and global options (model/fio_job.rs).
    pub fio: super::fio_job::FioRun,
    /// The sched domains (model/topo.rs).
    pub topo: super::topo::Topology,
    /// Task placement's state (model/placement.rs), when some job may move.
    pub place: Option<Box<super::placement::Placement>>,
    /// Per device, per queue set (interrupt-driven, polled): each CPU's queue.
    pub queue_map: Vec<[Vec<QueueId>; 2]>,
    /// `--event`'s plan and the CPUs online (model/irq_move.rs); None without events.
    pub moves: Option<Box<super::irq_move::IrqMoves>>,
    pub obs: &'a mut O,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::platform::Platform;
    use irqlab_core::Delivery;

    fn cpu(delivery: Delivery) -> Cpu {
        let text = include_str!("../../../../platforms/example.toml");
        let p = Platform::from_toml(text, "example.toml", &[]).expect("example platform");
        let costs = Costs {
            hz: 1000,
            ..Costs::default()
        };
        super::super::build::new_cpu(0, &p, &costs, delivery, None)
    }

    #[test]
    fn posting_sets_pir_bits_and_notifies_only_while_on_is_clear() {
        let mut c = cpu(Delivery::Posted { max_loop: 3 });
        let first = c.post_interrupt(0x21);
        assert_eq!((first.merged, first.notify), (false, true));
        let other = c.post_interrupt(0x22);
        assert_eq!((other.merged, other.notify), (false, false));
        let again = c.post_interrupt(0x21);
        assert_eq!((again.merged, again.notify), (true, false));
        assert_eq!(c.pir_pending(), 2);
        let (w, b) = vector_bit(0x21);
        let mut words = [0; NR_PIR_WORDS];
        words[w] = b;
        assert!(c.harvest_pir(words), "the IOMMU's posts dirtied the line");
        assert_eq!(c.pir_pending(), 1);
        assert!(!c.harvest_pir([0; NR_PIR_WORDS]), "nothing posted since");
    }

    #[test]
    fn a_remapped_cpu_has_no_descriptor_to_notify_through() {
        let mut c = cpu(Delivery::Remapped);
        assert!(!c.post_interrupt(0x21).notify);
    }

    #[test]
    fn only_the_current_step_ends() {
        let mut c = cpu(Delivery::Remapped);
        c.epoch = 3;
        c.stepping = true;
        assert!(!c.end_step(2), "a stale step event");
        assert!(c.end_step(3));
        assert!(!c.end_step(3), "the step already ended");
    }
}
