//! The model's state, in flat arenas indexed by typed ids (model/ids.rs): no allocation
//! per event.

use super::ids::{IoId, QueueId, VectorId};
pub(crate) use super::io::Io;
pub(crate) use super::job_life::{DirStats, Job, JobPhase};
pub(crate) use super::percpu::{Cpu, CpuSoftirq, IrqFrame, LocalApic, SoftModeration, WorkStep};
pub(crate) use super::thread::{TState, Thread, ThreadKind, Wakee};
use crate::engine::EventQueue;
use crate::observer::{Observer, SliceKind};
use irqlab_core::Policy;

/// Costs copied out of the platform for the hot path, ns.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Costs {
    pub(super) irq_entry: u64,
    pub(super) irq_exit: u64,
    pub(super) eoi: u64,
    pub(super) idle_exit: u64,
    pub(super) ctx_switch: u64,
    pub(super) wakeup: u64,
    pub(super) ipi: u64,
    pub(super) tick_period: u64,
    pub(super) tick: u64,
    pub(super) hz: u32,
    pub(super) slice: u64,
    pub(super) cqe: u64,
    pub(super) cq_doorbell: u64,
    pub(super) sq_doorbell: u64,
    pub(super) mmio_flight: u64,
    pub(super) poll_check: u64,
    pub(super) pir_round: u64,
    pub(super) pir_round_clean: u64,
    pub(super) irq_poll_call: u64,
    pub(super) softirq: u64,
    pub(super) irq_thread: u64,
    pub(super) hrtimer: u64,
    pub(super) moderation_program: u64,
    pub(super) irq_mask: u64,
    /// enable_irq's unmask: the mask's table write plus a guest's hypercall (crate::guest).
    pub(super) irq_unmask: u64,
    pub(super) usr_io: u64,
    /// A guest's halted-vCPU wake, added to `idle_exit` after `guest_halt_poll` (model/guest.rs).
    pub(super) vcpu_wake: u64,
    pub(super) guest_halt_poll: u64,
    /// A guest's virtio notify exit (model/virtio.rs).
    pub(super) kick: u64,
    /// The platform has a virtio-blk device: the hot path's one test before its hooks.
    pub(super) has_virtio: bool,
    /// enable_irq resends through the resend tasklet (crate::guest `resend_tasklet`).
    pub(super) resend_tasklet: bool,
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

/// Where the inline softirq (or ksoftirqd) is inside handle_softirqs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SoftPhase {
    /// Entry cost of handle_softirqs.
    Begin,
    /// An irq_poll poll call is running on `vector` (CQEs in the softirq's reap list).
    Poll {
        vector: VectorId,
        work: u32,
    },
    /// Waker cost after a poll call's completions.
    Wakeups {
        vector: VectorId,
        work: u32,
    },
    /// BLOCK_SOFTIRQ completes the CPU's list (in the softirq's reap list), then its
    /// wake-ups' cost (model/virtio.rs).
    Block,
    BlockWakeups,
    /// The resend tasklet runs `vector`'s flow handler: its reap (CQEs in the softirq's
    /// reap list), then the completions' wake-ups; or the mask of a vector found disabled
    /// again.
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

/// Whether time doing `kind` is a thread's (its vruntime; a job's usr or sys): the fair
/// class does not charge hardirq and softirq time to the thread (IRQ_TIME_ACCOUNTING).
#[inline(always)]
pub(crate) fn thread_time(kind: SliceKind) -> bool {
    matches!(
        kind,
        SliceKind::Usr | SliceKind::Sys | SliceKind::Ksoftirqd | SliceKind::IrqThread
    )
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

/// Totals for the conservation checks: every I/O submitted is completed once, every
/// CQE posted is reaped once.
#[derive(Clone, Debug, Default)]
pub(crate) struct Totals {
    submitted: u64,
    completed: u64,
    reaped: u64,
    cqes_posted: u64,
}

impl Totals {
    #[inline(always)]
    pub fn submitted(&mut self, n: u64) {
        self.submitted += n;
    }

    #[inline(always)]
    pub fn completed(&mut self, n: u64) {
        self.completed += n;
    }

    #[inline(always)]
    pub fn reaped(&mut self) {
        self.reaped += 1;
    }

    #[inline(always)]
    pub fn cqes_posted(&mut self, n: u64) {
        self.cqes_posted += n;
    }

    /// A part of a machine run on another thread (model/parts.rs) adds its totals.
    pub fn add(&mut self, other: &Totals) {
        self.submitted += other.submitted;
        self.completed += other.completed;
        self.reaped += other.reaped;
        self.cqes_posted += other.cqes_posted;
    }

    /// The report's counters, under their keys.
    pub fn counters(&self) -> [(&'static str, u64); 4] {
        [
            ("ios_submitted", self.submitted),
            ("ios_completed", self.completed),
            ("ios_reaped", self.reaped),
            ("cqes_posted", self.cqes_posted),
        ]
    }
}

pub(crate) struct Sim<'a, O: Observer> {
    pub(super) now: u64,
    pub(super) q: EventQueue,
    pub(super) costs: Costs,
    pub(super) engine: crate::platform::EngineCosts,
    pub(super) policy: Policy,
    pub(super) scheduler: crate::platform::Scheduler,
    pub(super) platform_name: String,
    pub(super) seed: u64,
    pub(super) cpus: Vec<Cpu>,
    pub(super) threads: Vec<Thread>,
    pub(super) jobs: Vec<Job>,
    /// The devices' controllers (model/controller).
    pub(super) devices: Vec<super::controller::Device>,
    /// The I/O queues (model/queue.rs).
    pub(super) queues: Vec<super::queue::Queue>,
    /// The devices' MSI-X vectors (model/vector.rs).
    pub(super) vectors: Vec<super::vector::Vector>,
    /// Root ports, IIO stacks and the socket's router (model/fabric).
    pub(super) fabric: super::fabric::Fabric,
    pub(super) ios: Vec<Io>,
    pub(super) free_ios: Vec<IoId>,
    pub(super) jobs_live: usize,
    pub(super) draining: bool,
    /// A run always ends: past this time (1 s of simulated time after the last job's
    /// end) the loop stops and the report says `cut_short`. u64::MAX: no bound.
    pub(super) stop_at: u64,
    pub(super) cut_short: bool,
    /// Set from another thread (Ctrl-C) to end the run where it is.
    pub(super) stop: crate::StopFlag,
    /// The loop saw `stop` set: the window closed there and the machine did not drain.
    pub(super) interrupted: bool,
    pub(super) measuring: bool,
    pub(super) window_start: u64,
    pub(super) window_end: u64,
    pub(super) totals: Totals,
    /// Events the other parts of a parallel run processed (parts.rs).
    pub(super) merged_events: u64,
    /// GSIM's global parameters and counters (with --moderator gsim).
    pub(super) gsim: Option<irqlab_core::gsim::GsimGlobal>,
    /// The software resend's bitmap and tasklet (with a guest's `resend_tasklet`).
    pub(super) resend: irqlab_core::irq::ResendTasklet,
    /// Stonewall waves, disk accounting and global options (model/fio_job.rs).
    pub(super) fio: super::fio_job::FioRun,
    /// The sched domains (model/topo.rs).
    pub(super) topo: super::topo::Topology,
    /// Task placement's state (model/placement.rs), when some job may move.
    pub(super) place: Option<Box<super::placement::Placement>>,
    /// Per device, per queue set (interrupt-driven, polled): each CPU's queue.
    pub(super) queue_map: Vec<[Vec<QueueId>; 2]>,
    /// `--event`'s plan and the CPUs online (model/irq_move.rs); None without events.
    pub(super) moves: Option<Box<super::irq_move::IrqMoves>>,
    pub(super) obs: &'a mut O,
}
