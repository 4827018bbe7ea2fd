//! One hardirq in progress on a CPU: the IDT vector taken, where its handler is, the
//! device vector whose handler runs and what it reaped, and the step machines from core
//! that decide its steps (the posted notification's demux, the NVMe handler's flow).

use crate::model::ids::VectorId;
use crate::model::state::IrqPhase;
use irqlab_core::delivery::NotificationHandler;
use irqlab_core::nvme::irq_handler::NvmeIrqHandler;

#[derive(Clone, Debug)]
pub(crate) struct IrqFrame {
    idt: u16,
    phase: IrqPhase,
    /// The device vector whose handler runs (None before one starts).
    vector: Option<VectorId>,
    /// CQEs reaped by the current vector's handler.
    reaped: u32,
    /// Posted: the notification handler's step machine (irqlab-core delivery/handler.rs),
    /// the same one the runtime executes.
    notification: Option<NotificationHandler>,
    /// An NVMe vector's handler: core's step machine for the policy's handler style (the
    /// runtime's too); the simulator charges its steps.
    nvme: Option<NvmeIrqHandler>,
    /// The budget of the handler's Reap step (nvme_poll_cq's; Sagi's irq_poll budget).
    reap_budget: u32,
    /// After Wakeups, go back to this phase's continuation.
    after_wakeups: IrqPhase,
}

impl IrqFrame {
    /// The CPU takes IDT vector `idt` (interrupt entry).
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

    #[inline]
    pub fn idt(&self) -> u16 {
        self.idt
    }

    #[inline]
    pub fn phase(&self) -> IrqPhase {
        self.phase
    }

    /// The step that starts now is `phase`.
    #[inline]
    pub fn enter(&mut self, phase: IrqPhase) {
        self.phase = phase;
    }

    /// The Wakeups step that starts now goes on at `then`'s continuation.
    #[inline]
    pub fn wake_then(&mut self, then: IrqPhase) {
        self.after_wakeups = then;
    }

    #[inline]
    pub fn after_wakeups(&self) -> IrqPhase {
        self.after_wakeups
    }

    // ------------------------------------------------------------------------ handler

    /// handle_irq_event: vector `v`'s handler starts (again) with nothing reaped.
    #[inline]
    pub fn start_handler(&mut self, v: VectorId) {
        self.vector = Some(v);
        self.reaped = 0;
        self.nvme = None;
    }

    /// The device vector whose handler runs (the Reap, Complete, Doorbell and Primary
    /// phases come after `start_handler` set it).
    #[inline]
    pub fn running_vector(&self) -> usize {
        self.vector.expect("a device vector's handler runs").ix()
    }

    /// The handler returned (IRQD_IRQ_INPROGRESS cleared): its vector, if one ran.
    #[inline]
    pub fn handler_returned(&mut self) -> Option<VectorId> {
        self.vector.take()
    }

    /// handle_edge_irq's loop runs `v`'s handler again.
    #[inline]
    pub fn handler_again(&mut self, v: VectorId) {
        self.vector = Some(v);
    }

    /// The NVMe handler's step machine runs this handler, its reap limited to `budget`
    /// when it has one.
    #[inline]
    pub fn run_nvme(&mut self, h: NvmeIrqHandler, budget: Option<u32>) {
        self.nvme = Some(h);
        if let Some(b) = budget {
            self.reap_budget = b;
        }
    }

    #[inline]
    pub fn nvme_mut(&mut self) -> Option<&mut NvmeIrqHandler> {
        self.nvme.as_mut()
    }

    #[inline]
    pub fn reaped(&self) -> u32 {
        self.reaped
    }

    /// What the reap budget still allows.
    #[inline]
    pub fn budget_left(&self) -> u32 {
        self.reap_budget.saturating_sub(self.reaped)
    }

    /// The handler's step reaped `n` more CQEs (told to its step machine too).
    #[inline]
    pub fn add_reaped(&mut self, n: u32) {
        self.reaped += n;
        if let Some(h) = self.nvme.as_mut() {
            h.reaped(n);
        }
    }

    // ------------------------------------------------------------------------ posted

    /// The posted notification's demux starts.
    pub fn begin_notification(&mut self, h: NotificationHandler) {
        self.notification = Some(h);
    }

    #[inline]
    pub fn notification_mut(&mut self) -> Option<&mut NotificationHandler> {
        self.notification.as_mut()
    }
}
