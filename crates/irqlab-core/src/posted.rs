//! x86 posted MSI (CONFIG_X86_POSTED_MSI, v6.10): the per-CPU posted-interrupt descriptor
//! that the IOMMU updates instead of delivering a device vector, and the notification
//! handler's demux loop (`sysvec_posted_msi_notification`, arch/x86/kernel/irq.c).
//!
//! The descriptor is shared: device threads call [`PiDesc::post`] while the CPU thread runs
//! the [`Demux`]. The simulator uses the same code on one thread and spends virtual time
//! between [`Demux::next_round`] calls, so posts can land between rounds.
//!
//! Memory ordering. The IOMMU sets the PIR bit and test-and-sets ON in one atomic update
//! of the whole cache line; the handler clears ON with a locked `clear_bit` (a full
//! barrier on x86) and then reads the PIR again. In software these are two atomics on
//! each side, a store-buffering pattern, so each side puts a `fence(SeqCst)` between its
//! write and its read: either the poster sees ON cleared (and sends a notification), or
//! the handler's extra round sees the PIR bit. tests/loom_posted.rs checks this.

use crate::sync::{AtomicU64, Ordering, fence};

/// arch/x86/include/asm/irq_vectors.h: the notification vector the CPU enters with.
pub const POSTED_MSI_NOTIFICATION_VECTOR: u8 = 0xeb;
/// arch/x86/kernel/irq.c: "3 is good enough to harvest 90+% of the benefit".
pub const MAX_POSTED_MSI_COALESCING_LOOP: u32 = 3;
/// arch/x86/include/asm/irq_vectors.h: vectors below this are exceptions.
pub const FIRST_EXTERNAL_VECTOR: u8 = 0x20;
/// arch/x86/include/asm/irq_vectors.h: lowered to 0xeb by the posted MSI series.
pub const FIRST_SYSTEM_VECTOR: u8 = 0xeb;
/// arch/x86/include/asm/posted_intr.h: NR_PIR_WORDS for a 256-bit PIR.
pub const NR_PIR_WORDS: usize = 4;

// arch/x86/include/asm/posted_intr.h: POSTED_INTR_ON 0, POSTED_INTR_SN 1.
const POSTED_INTR_ON: u64 = 1 << 0;
const POSTED_INTR_SN: u64 = 1 << 1;
const NV_SHIFT: u32 = 16;
const NDST_SHIFT: u32 = 32;

/// `struct pi_desc`: 256-bit PIR and the control word (ON, SN, NV, NDST) in one line.
#[repr(C, align(64))]
#[derive(Debug)]
pub struct PiDesc {
    pir: [AtomicU64; NR_PIR_WORDS],
    control: AtomicU64,
}

impl PiDesc {
    /// intel_posted_msi_init(): NV = notification vector, NDST = destination APIC ID.
    pub fn new(nv: u8, ndst: u32) -> Self {
        let control = (u64::from(nv) << NV_SHIFT) | (u64::from(ndst) << NDST_SHIFT);
        PiDesc {
            pir: [
                AtomicU64::new(0),
                AtomicU64::new(0),
                AtomicU64::new(0),
                AtomicU64::new(0),
            ],
            control: AtomicU64::new(control),
        }
    }

    /// The IOMMU's posted update for one MSI of `vector`: set its PIR bit, then set ON
    /// unless ON or SN is already set. Returns true when a notification must be sent to
    /// NDST with vector NV (ON went 0 -> 1); false when the post was coalesced.
    pub fn post(&self, vector: u8) -> bool {
        self.post_vector(vector).notify
    }

    /// [`PiDesc::post`] with everything the update found: whether the vector's PIR bit
    /// was set already (the message merged with a pending one: pi_test_and_set_pir's
    /// old value) and whether ON went 0 -> 1 (a notification is due).
    pub fn post_vector(&self, vector: u8) -> PostOutcome {
        let (word, bit) = vector_bit(vector);
        let old = self.pir[word].fetch_or(bit, Ordering::AcqRel);
        // Pairs with the fence after pi_clear_on in the handler (store-buffering pattern).
        fence(Ordering::SeqCst);
        PostOutcome {
            merged: old & bit != 0,
            notify: self.test_and_set_on(),
        }
    }

    /// ON test-and-set, refused while SN is set (VT-d posted-interrupt semantics).
    fn test_and_set_on(&self) -> bool {
        let mut cur = self.control.load(Ordering::Acquire);
        loop {
            if cur & (POSTED_INTR_ON | POSTED_INTR_SN) != 0 {
                return false;
            }
            match self.control.compare_exchange_weak(
                cur,
                cur | POSTED_INTR_ON,
                Ordering::AcqRel,
                Ordering::Acquire,
            ) {
                Ok(_) => return true,
                Err(now) => cur = now,
            }
        }
    }

    /// Outstanding Notification.
    pub fn on(&self) -> bool {
        self.control.load(Ordering::Acquire) & POSTED_INTR_ON != 0
    }

    /// Suppress Notification.
    pub fn sn(&self) -> bool {
        self.control.load(Ordering::Acquire) & POSTED_INTR_SN != 0
    }

    /// pi_set_sn(): later posts only set PIR bits.
    pub fn set_sn(&self) {
        self.control.fetch_or(POSTED_INTR_SN, Ordering::AcqRel);
    }

    /// pi_clear_sn(): posts may notify again. Posts made while SN was set sent nothing,
    /// so if the PIR holds bits and ON was clear this takes ON and returns true: the caller
    /// must then raise the notification itself (as KVM does after clearing SN).
    pub fn clear_sn(&self) -> bool {
        self.control.fetch_and(!POSTED_INTR_SN, Ordering::AcqRel);
        fence(Ordering::SeqCst);
        self.has_pending() && self.test_and_set_on()
    }

    /// pi_clear_on(): the handler reopens notifications. The fence stands for the
    /// locked clear_bit's full barrier, ordering it before the handler's next PIR reads.
    pub fn clear_on(&self) {
        self.control.fetch_and(!POSTED_INTR_ON, Ordering::AcqRel);
        fence(Ordering::SeqCst);
    }

    /// Notification Vector.
    pub fn nv(&self) -> u8 {
        ((self.control.load(Ordering::Relaxed) >> NV_SHIFT) & 0xff) as u8
    }

    /// Notification Destination (APIC ID).
    pub fn ndst(&self) -> u32 {
        (self.control.load(Ordering::Relaxed) >> NDST_SHIFT) as u32
    }

    /// The PIR words as plain loads (READ_ONCE), without clearing anything.
    pub fn pending_words(&self) -> [u64; NR_PIR_WORDS] {
        [0, 1, 2, 3].map(|i| self.pir[i].load(Ordering::Acquire))
    }

    /// pi_pending_this_cpu(vector): the vector's PIR bit is set (arch/x86/include/asm/
    /// posted_intr.h; the vector cleanup and fixup_irqs ask it, arch/x86/kernel/irq.c).
    pub fn is_pending(&self, vector: u8) -> bool {
        let (word, bit) = vector_bit(vector);
        self.pir[word].load(Ordering::Acquire) & bit != 0
    }

    /// Takes one vector's PIR bit, returning whether it was set: fixup_irqs on a CPU going
    /// offline moves a pending vector to its new target instead of handling it here.
    pub fn take_vector(&self, vector: u8) -> bool {
        let (word, bit) = vector_bit(vector);
        self.pir[word].fetch_and(!bit, Ordering::AcqRel) & bit != 0
    }

    /// Any PIR bit set (pi_pending_this_cpu for any vector). A CPU thread that is about to
    /// sleep re-checks this after arming its wake-up.
    pub fn has_pending(&self) -> bool {
        self.pending_words().iter().any(|&w| w != 0)
    }

    /// handle_pending_pir()'s harvest: read all four words, then fetch-and-clear only the
    /// non-zero ones (read x4 then xchg x4 keeps the line's cache state stable). The caller
    /// dispatches from the returned copy.
    pub fn harvest(&self) -> [u64; NR_PIR_WORDS] {
        let mut copy = self.pending_words();
        for (i, w) in copy.iter_mut().enumerate() {
            if *w != 0 {
                *w = self.pir[i].swap(0, Ordering::AcqRel);
            }
        }
        copy
    }
}

/// What one post into a descriptor found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PostOutcome {
    /// The vector's PIR bit was set already: this message merged with a pending one.
    pub merged: bool,
    /// ON went 0 -> 1: a notification to NDST on NV is due.
    pub notify: bool,
}

/// Where `vector` sits in a 256-bit vector bitmap (the PIR, the local APIC's IRR): its
/// word and its bit, BIT_WORD(vector) and BIT_MASK(vector) over 64-bit longs
/// (include/linux/bits.h), as test_and_set_bit(vector, pir) computes them.
pub const fn vector_bit(vector: u8) -> (usize, u64) {
    ((vector / 64) as usize, 1u64 << (vector % 64))
}

/// One round's copy of the PIR: the set vectors, dispatched in ascending order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PirSnapshot {
    words: [u64; NR_PIR_WORDS],
    round: u32,
    extra: bool,
}

impl PirSnapshot {
    /// A snapshot of explicit words (tests, and callers that build their own rounds).
    pub fn from_words(words: [u64; NR_PIR_WORDS], round: u32, extra: bool) -> Self {
        PirSnapshot {
            words,
            round,
            extra,
        }
    }

    /// The raw words harvested, including bits outside the dispatch range.
    pub fn words(&self) -> [u64; NR_PIR_WORDS] {
        self.words
    }

    /// 1-based round number within this notification.
    pub fn round(&self) -> u32 {
        self.round
    }

    /// True for the round run after pi_clear_on(), the one that closes the race with a
    /// post that found ON still set.
    pub fn is_extra_round(&self) -> bool {
        self.extra
    }

    /// Nothing was harvested (handle_pending_pir returned false).
    pub fn is_empty(&self) -> bool {
        self.words.iter().all(|&w| w == 0)
    }

    /// Vectors the handler calls, FIRST_EXTERNAL_VECTOR..FIRST_SYSTEM_VECTOR ascending
    /// (for_each_set_bit_from in handle_pending_pir).
    pub fn vectors(&self) -> PirVectors {
        PirVectors {
            words: self.words,
            next: u16::from(FIRST_EXTERNAL_VECTOR),
        }
    }

    /// Number of vectors [`Self::vectors`] yields.
    pub fn len(&self) -> u32 {
        self.vectors().count() as u32
    }

    /// Bits harvested outside the dispatch range. The kernel clears and drops them
    /// without a handler call; callers may count them as spurious.
    pub fn dropped(&self) -> u32 {
        let all: u32 = self.words.iter().map(|w| w.count_ones()).sum();
        all - self.len()
    }
}

/// Iterator over a snapshot's dispatchable vectors.
#[derive(Clone, Debug)]
pub struct PirVectors {
    words: [u64; NR_PIR_WORDS],
    next: u16,
}

impl Iterator for PirVectors {
    type Item = u8;

    fn next(&mut self) -> Option<u8> {
        let end = u16::from(FIRST_SYSTEM_VECTOR);
        while self.next < end {
            // FIRST_SYSTEM_VECTOR bounds `next`, so it fits a vector number.
            let (word, bit) = vector_bit(self.next as u8);
            // The vector's bit and every bit above it in its word.
            let masked = self.words[word] & !(bit - 1);
            if masked == 0 {
                self.next = (word as u16 + 1) * 64;
                continue;
            }
            let v = word as u16 * 64 + masked.trailing_zeros() as u16;
            if v >= end {
                self.next = end;
                return None;
            }
            self.next = v + 1;
            return Some(v as u8);
        }
        None
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum DemuxState {
    /// Inside `while (++i < MAX_POSTED_MSI_COALESCING_LOOP)`; `i` rounds done so far.
    Looping,
    /// The loop ended; the next step clears ON and runs the extra round.
    ClearThenExtra,
    Done,
}

/// sysvec_posted_msi_notification as a caller-driven step machine: each
/// [`Demux::next_round`] runs one handle_pending_pir round; the caller dispatches the
/// snapshot's vectors and spends its time before asking for the next round.
#[derive(Clone, Debug)]
pub struct Demux {
    max_loop: u32,
    looped: u32,
    state: DemuxState,
}

impl Demux {
    /// `max_loop` is MAX_POSTED_MSI_COALESCING_LOOP; it counts the extra round, so at most
    /// `max_loop - 1` rounds run before ON is cleared. 0 behaves as 1 (only the extra round).
    pub fn new(max_loop: u32) -> Self {
        Demux {
            max_loop,
            looped: 0,
            state: DemuxState::Looping,
        }
    }

    /// Runs the next round on `desc`, or returns None when the handler is done (then the
    /// kernel does apic_eoi and irq_exit). A round that harvested nothing inside the loop
    /// is still returned (its reads cost time); the following call clears ON.
    pub fn next_round(&mut self, desc: &PiDesc) -> Option<PirSnapshot> {
        match self.state {
            DemuxState::Looping if self.looped + 1 < self.max_loop => {
                self.looped += 1;
                let snap = PirSnapshot::from_words(desc.harvest(), self.looped, false);
                if snap.is_empty() || self.looped + 1 >= self.max_loop {
                    self.state = DemuxState::ClearThenExtra;
                }
                Some(snap)
            }
            DemuxState::Looping | DemuxState::ClearThenExtra => {
                // Cleared last to keep the coalescing window open as long as possible.
                desc.clear_on();
                self.state = DemuxState::Done;
                Some(PirSnapshot::from_words(
                    desc.harvest(),
                    self.looped + 1,
                    true,
                ))
            }
            DemuxState::Done => None,
        }
    }

    /// Rounds run so far.
    pub fn rounds(&self) -> u32 {
        match self.state {
            DemuxState::Done => self.looped + 1,
            _ => self.looped,
        }
    }

    pub fn is_done(&self) -> bool {
        self.state == DemuxState::Done
    }
}

/// What one notification's handler did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DemuxOutcome {
    /// handle_pending_pir rounds, the extra round included.
    pub rounds: u32,
    /// Handler calls made (vectors dispatched).
    pub vectors: u32,
    /// Of those, vectors found by the extra round after ON was cleared.
    pub extra_round_vectors: u32,
    /// Harvested bits outside FIRST_EXTERNAL_VECTOR..FIRST_SYSTEM_VECTOR, dropped.
    pub dropped: u32,
}

/// Runs a whole notification handler on `desc`, calling `handler(vector)` for each
/// dispatched vector in order (the runtime's CPU thread uses this).
pub fn handle_notification(
    desc: &PiDesc,
    max_loop: u32,
    mut handler: impl FnMut(u8),
) -> DemuxOutcome {
    let mut demux = Demux::new(max_loop);
    let mut out = DemuxOutcome::default();
    while let Some(snap) = demux.next_round(desc) {
        out.rounds += 1;
        out.dropped += snap.dropped();
        for v in snap.vectors() {
            handler(v);
            out.vectors += 1;
            if snap.is_extra_round() {
                out.extra_round_vectors += 1;
            }
        }
    }
    out
}

/// Plain counters, kept per thread and merged; no shared atomics on the hot path.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PostedStats {
    /// Messages posted into a descriptor.
    pub posts: u64,
    /// Posts that took ON and sent a notification.
    pub notifications_sent: u64,
    /// Handler runs: the /proc/interrupts PMN row (posted_msi_notification_count).
    pub notifications: u64,
    /// Device handlers called by the demux.
    pub vectors_dispatched: u64,
    /// Demux rounds, extra rounds included.
    pub rounds: u64,
    /// Vectors caught by the extra round after pi_clear_on.
    pub extra_round_vectors: u64,
    /// Harvested bits outside the dispatch range.
    pub dropped: u64,
}

impl PostedStats {
    /// Counts one post and whether it sent a notification.
    pub fn record_post(&mut self, sent: bool) {
        self.posts += 1;
        self.notifications_sent += u64::from(sent);
    }

    /// Counts one handler run (inc_irq_stat(posted_msi_notification_count)).
    pub fn record_handler(&mut self, out: &DemuxOutcome) {
        self.notifications += 1;
        self.vectors_dispatched += u64::from(out.vectors);
        self.rounds += u64::from(out.rounds);
        self.extra_round_vectors += u64::from(out.extra_round_vectors);
        self.dropped += u64::from(out.dropped);
    }

    pub fn merge(&mut self, other: &PostedStats) {
        self.posts += other.posts;
        self.notifications_sent += other.notifications_sent;
        self.notifications += other.notifications;
        self.vectors_dispatched += other.vectors_dispatched;
        self.rounds += other.rounds;
        self.extra_round_vectors += other.extra_round_vectors;
        self.dropped += other.dropped;
    }

    /// Messages per CPU notification (1.0 for remapped delivery); 0 with no notifications.
    /// Counts notifications from whichever side was recorded (handler runs or posts that
    /// sent one; they are equal once every notification has been handled).
    pub fn coalescing_ratio(&self) -> f64 {
        let n = self.notifications.max(self.notifications_sent);
        if n == 0 {
            0.0
        } else {
            self.posts as f64 / n as f64
        }
    }

    /// Device handler calls per CPU notification.
    pub fn vectors_per_notification(&self) -> f64 {
        if self.notifications == 0 {
            0.0
        } else {
            self.vectors_dispatched as f64 / self.notifications as f64
        }
    }
}
