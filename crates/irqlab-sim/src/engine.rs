//! The event queue: a binary heap ordered by (time in ns, sequence number), so events at
//! the same time run in the order they were scheduled and a run replays exactly.

pub use crate::model::ids::{CpuId, DeviceId, IoId, JobId, PortId, QueueId, ThreadId, VectorId};

/// Everything that can happen at a point in virtual time. Payloads are typed arena ids
/// (model/ids.rs), so an event is a few bytes and nothing is allocated per event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// The current step of a CPU ended (ignored when `epoch` is stale: the step was
    /// preempted or replaced).
    CpuStep { cpu: CpuId, epoch: u32 },
    /// The controller fetched `count` SQEs of a queue after the doorbell.
    SqFetched { queue: QueueId, count: u32 },
    /// A device command's media service ended.
    ServiceDone { io: IoId },
    /// An NVMe over RDMA target's response (RDMA WRITE and SEND) reached the host NIC.
    TargetResponse { io: IoId },
    /// The RC acknowledgement of a signalled SEND reached its NIC: the SEND's work
    /// completion is written into `queue`'s CQ (for command id `tag`).
    SendWc { queue: QueueId, tag: u16 },
    /// The write at the head of a root port's FIFO finished.
    PortDone { port: PortId },
    /// An interrupt message reaches a CPU's local APIC (`vec` is the IDT vector).
    Notify { cpu: CpuId, vec: u16 },
    /// A CPU's periodic timer tick is due.
    Tick { cpu: CpuId },
    /// A CQ head doorbell write reaches the controller.
    CqDoorbell { queue: QueueId },
    /// A device coalescing timer expires (feature 08h aggregation time).
    CoalesceTimer { vector: VectorId, epoch: u32 },
    /// A thread's hrtimer sleep ends (hybrid polling).
    ThreadTimer { thread: ThreadId, epoch: u32 },
    /// A CPU's GSIM moderation timer fires.
    GsimTimer { cpu: CpuId, epoch: u32 },
    /// A root port's IOMMU engine finished handling an MSI (remapped or posted).
    EngineDone { port: PortId },
    /// The delivery unit finished sending the notification at the head of its queue.
    Delivered,
    /// The ramp time is over: statistics start.
    RampEnd,
    /// A job's startdelay passed or its stonewall wave began.
    JobStart { job: JobId },
    /// A job that started late ends its ramp_time: its statistics start.
    JobRampEnd { job: JobId },
    /// A job's own timer (a SQPOLL thread's idle time, a flow spin's end); ignored when
    /// `epoch` is stale.
    JobTimer { job: JobId, epoch: u32 },
    /// fio's helper thread checks steady state (every steadystate_check_interval).
    SteadyCheck,
    /// A virtio-blk host thread's step ended (stale when `epoch` moved on).
    VirtioHost { device: DeviceId, epoch: u32 },
    /// `--event` number `index` of the run (model/irq_move.rs) is due.
    IrqMove { index: u32 },
    /// __vector_cleanup's timer on `cpu` for its old vector `idt` (model/irq_move.rs).
    VectorCleanup { cpu: CpuId, idt: u16 },
}

/// A deterministic future-event list: a calendar queue. The slots form a ring that
/// covers the next `SLOTS << SLOT_SHIFT` ns from the earliest event; an event in that
/// window goes to the slot of its time (a shift and a mask), a slot holds a few events,
/// and an occupancy bitmap finds the next non-empty one. Later events (ticks, ramp ends,
/// slow media) wait in a 4-ary heap until the window slides over them. Keys are
/// `time << 64 | seq` and unique, so events pop in exactly the order of a heap keyed by
/// (time, seq): FIFO among equal times, and a run replays exactly. An event pushed in an
/// earlier slot than every queued one (the next step of a chain, most events of a QD1
/// run) waits aside in `front` and pops next without touching the ring.
#[derive(Debug)]
pub struct EventQueue {
    /// Fixed-size arrays: an index masked to the ring needs no bounds check.
    slots: Box<[Vec<Slot>; SLOTS as usize]>,
    /// Bit `i % 64` of word `i / 64` set when slot `i` is non-empty.
    occupied: Box<[u64; WORDS]>,
    /// Absolute slot number (time >> SLOT_SHIFT) of the earliest near event or before.
    cursor: u64,
    /// Absolute slot number of the earliest near event (u64::MAX when there is none).
    near_first: u64,
    near: usize,
    /// An event earlier than every other queued one (its slot before `near_first`, inside
    /// the window, so before every far event too), popped next.
    front: Option<Slot>,
    far: FarHeap,
    /// Slot number of the earliest far event (u64::MAX when there is none).
    far_first: u64,
    seq: u64,
    popped: u64,
}

/// ns per slot as a shift: 16 ns, a few events per slot at tens of millions of events per
/// simulated second.
const SLOT_SHIFT: u32 = 4;
/// Slots in the ring: 4096 × 16 ns = 65.5 µs, longer than a flash read.
const SLOTS: u64 = 4096;
const MASK: u64 = SLOTS - 1;
/// Words of the occupancy bitmap.
const WORDS: usize = (SLOTS / 64) as usize;

#[derive(Clone, Copy, Debug)]
struct Slot {
    key: u128,
    ev: Event,
}

impl Slot {
    fn time(&self) -> u64 {
        (self.key >> 64) as u64
    }
}

impl Default for EventQueue {
    fn default() -> Self {
        Self::new()
    }
}

impl EventQueue {
    pub fn new() -> Self {
        EventQueue {
            slots: (0..SLOTS)
                .map(|_| Vec::new())
                .collect::<Box<[_]>>()
                .try_into()
                .expect("SLOTS slots"),
            occupied: Box::new([0; WORDS]),
            cursor: 0,
            near_first: u64::MAX,
            near: 0,
            front: None,
            far: FarHeap::default(),
            far_first: u64::MAX,
            seq: 0,
            popped: 0,
        }
    }

    /// Schedules `ev` at absolute time `time` (not before the last popped event).
    #[inline(always)]
    pub fn push(&mut self, time: u64, ev: Event) {
        self.seq += 1;
        let s = Slot {
            key: (u128::from(time) << 64) | u128::from(self.seq),
            ev,
        };
        debug_assert!(
            time >> SLOT_SHIFT >= self.cursor,
            "event scheduled in the past"
        );
        let slot = time >> SLOT_SHIFT;
        if slot - self.cursor < SLOTS {
            if slot < self.near_first {
                // Earlier than every queued event but the front one, if any: the earlier
                // of the two waits in front and the other takes its slot.
                match self.front {
                    None => {
                        self.front = Some(s);
                        return;
                    }
                    Some(f) if s.key < f.key => {
                        self.front = Some(s);
                        self.put_near(f);
                        return;
                    }
                    Some(_) => {}
                }
            }
            self.put_near(s);
        } else {
            self.far.push(s);
            self.far_first = self.far_first.min(time >> SLOT_SHIFT);
        }
    }

    /// Takes back the queued event `ev` due at `time` (one that no other queued event
    /// equals: it carries an epoch), so that it never pops. False when it waits beyond the
    /// window (a far event, rare): it then pops as usual and its handler must see that it
    /// is stale.
    #[inline(always)]
    pub fn cancel(&mut self, time: u64, ev: Event) -> bool {
        let is = |s: &Slot| s.ev == ev && s.time() == time;
        if self.front.as_ref().is_some_and(is) {
            self.front = None;
            return true;
        }
        let slot = time >> SLOT_SHIFT;
        if slot.wrapping_sub(self.cursor) >= SLOTS {
            return false;
        }
        // Inside the window every queued event is in the ring (far ones are brought in
        // as the window slides over them).
        let i = (slot & MASK) as usize;
        let entries = &mut self.slots[i];
        let Some(j) = entries.iter().position(is) else {
            debug_assert!(false, "a cancelled event is queued");
            return false;
        };
        entries.swap_remove(j);
        self.near -= 1;
        if entries.is_empty() {
            self.occupied[i / 64] &= !(1 << (i % 64));
            if slot == self.near_first {
                self.near_first = if self.near == 0 {
                    u64::MAX
                } else {
                    slot + ((self.next_occupied(i) as u64).wrapping_sub(i as u64) & MASK)
                };
            }
        }
        true
    }

    #[inline(always)]
    fn put_near(&mut self, s: Slot) {
        let slot = s.time() >> SLOT_SHIFT;
        let i = (slot & MASK) as usize;
        self.slots[i].push(s);
        self.occupied[i / 64] |= 1 << (i % 64);
        self.near += 1;
        self.near_first = self.near_first.min(slot);
    }

    /// The earliest event, FIFO among equal times.
    #[inline(always)]
    pub fn pop(&mut self) -> Option<(u64, Event)> {
        self.pop_until(u64::MAX)
    }

    /// The earliest event if it is due by `limit` (inclusive); None leaves it queued.
    #[inline(always)]
    pub fn pop_until(&mut self, limit: u64) -> Option<(u64, Event)> {
        if let Some(f) = &self.front {
            let (t, ev) = (f.time(), f.ev);
            if t > limit {
                return None;
            }
            self.front = None;
            self.popped += 1;
            return Some((t, ev));
        }
        if self.near == 0 {
            // Jump to the earliest far event.
            let first = self.far.peek_time()?;
            if first > limit {
                return None;
            }
            self.cursor = first >> SLOT_SHIFT;
            self.bring_in_far();
        }
        let i = (self.near_first & MASK) as usize;
        let slot = &mut self.slots[i];
        let (mut min, mut min_key) = (0, slot[0].key);
        for (j, s) in slot.iter().enumerate().skip(1) {
            if s.key < min_key {
                (min, min_key) = (j, s.key);
            }
        }
        if (min_key >> 64) as u64 > limit {
            return None;
        }
        // Order inside a slot does not matter: the minimum is searched each time.
        let s = slot.swap_remove(min);
        self.cursor = self.near_first;
        self.near -= 1;
        if slot.is_empty() {
            self.occupied[i / 64] &= !(1 << (i % 64));
            self.near_first = if self.near == 0 {
                u64::MAX
            } else {
                self.cursor + ((self.next_occupied(i) as u64).wrapping_sub(i as u64) & MASK)
            };
        }
        self.popped += 1;
        if self.far_first.wrapping_sub(self.cursor) < SLOTS {
            self.bring_in_far();
        }
        Some((s.time(), s.ev))
    }

    /// The first non-empty slot at or after ring index `start` in ring order (one exists).
    #[inline]
    fn next_occupied(&self, start: usize) -> usize {
        let mut w = start / 64;
        let mut bits = self.occupied[w] & (!0u64 << (start % 64));
        while bits == 0 {
            w = (w + 1) % WORDS;
            bits = self.occupied[w];
        }
        w * 64 + bits.trailing_zeros() as usize
    }

    /// Far events the window now covers move to their slots.
    fn bring_in_far(&mut self) {
        self.far_first = u64::MAX;
        while let Some(t) = self.far.peek_time() {
            if (t >> SLOT_SHIFT) - self.cursor >= SLOTS {
                self.far_first = t >> SLOT_SHIFT;
                break;
            }
            let s = self.far.pop().expect("peeked");
            self.put_near(s);
        }
    }

    pub fn len(&self) -> usize {
        usize::from(self.front.is_some()) + self.near + self.far.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Events processed so far.
    pub fn popped(&self) -> u64 {
        self.popped
    }
}

/// The far events: an implicit 4-ary min-heap on the key.
#[derive(Debug, Default)]
struct FarHeap {
    heap: Vec<Slot>,
}

const ARITY: usize = 4;

impl FarHeap {
    fn len(&self) -> usize {
        self.heap.len()
    }

    fn peek_time(&self) -> Option<u64> {
        self.heap.first().map(Slot::time)
    }

    fn push(&mut self, s: Slot) {
        let mut i = self.heap.len();
        self.heap.push(s);
        while i > 0 {
            let parent = (i - 1) / ARITY;
            if self.heap[parent].key <= s.key {
                break;
            }
            self.heap[i] = self.heap[parent];
            i = parent;
        }
        self.heap[i] = s;
    }

    fn pop(&mut self) -> Option<Slot> {
        let last = self.heap.pop()?;
        let Some(&top) = self.heap.first() else {
            return Some(last);
        };
        let n = self.heap.len();
        let mut i = 0;
        loop {
            let first = i * ARITY + 1;
            if first >= n {
                break;
            }
            let end = (first + ARITY).min(n);
            let mut min = first;
            for c in first + 1..end {
                if self.heap[c].key < self.heap[min].key {
                    min = c;
                }
            }
            if last.key <= self.heap[min].key {
                break;
            }
            self.heap[i] = self.heap[min];
            i = min;
        }
        self.heap[i] = last;
        Some(top)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cmp::Ordering;
    use std::collections::BinaryHeap;

    #[derive(Clone, Copy, Debug)]
    struct Entry {
        time: u64,
        seq: u64,
        ev: Event,
    }

    impl PartialEq for Entry {
        fn eq(&self, o: &Self) -> bool {
            self.time == o.time && self.seq == o.seq
        }
    }
    impl Eq for Entry {}
    impl PartialOrd for Entry {
        fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
            Some(self.cmp(o))
        }
    }
    impl Ord for Entry {
        // Reversed: BinaryHeap is a max-heap and we pop the earliest (time, seq).
        fn cmp(&self, o: &Self) -> Ordering {
            (o.time, o.seq).cmp(&(self.time, self.seq))
        }
    }

    #[test]
    fn same_time_events_pop_in_schedule_order() {
        let mut q = EventQueue::new();
        q.push(10, Event::Tick { cpu: CpuId::new(2) });
        q.push(5, Event::Tick { cpu: CpuId::new(9) });
        q.push(10, Event::Tick { cpu: CpuId::new(1) });
        q.push(10, Event::Tick { cpu: CpuId::new(3) });
        let order: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
        assert_eq!(
            order,
            vec![
                (5, Event::Tick { cpu: CpuId::new(9) }),
                (10, Event::Tick { cpu: CpuId::new(2) }),
                (10, Event::Tick { cpu: CpuId::new(1) }),
                (10, Event::Tick { cpu: CpuId::new(3) }),
            ]
        );
        assert_eq!(q.popped(), 4);
    }

    /// Same pop order as a binary heap keyed by (time, seq), for near, far and equal
    /// times pushed while popping (the hold model), with the queue growing (two pushes
    /// per pop) and with few events queued (a chain: the front slot's case).
    #[test]
    fn matches_a_binary_heap_ordering() {
        check_against_heap(3, 200_000, None);
        check_against_heap(2, 200_000, None);
    }

    /// The same with one of the recent pushes cancelled every few steps: the rest keep
    /// their order, and a cancel that declines (a far event) leaves the event to pop.
    #[test]
    fn cancelling_keeps_the_binary_heap_ordering() {
        check_against_heap(3, 30_000, Some(5));
        check_against_heap(2, 30_000, Some(3));
    }

    /// Every `pop_every`th step pops (when something is queued), the others push; every
    /// `cancel_every`th step also cancels one of the last 16 pushes, if still queued.
    fn check_against_heap(pop_every: u32, steps: u32, cancel_every: Option<u32>) {
        let mut q = EventQueue::new();
        let mut h: BinaryHeap<Entry> = BinaryHeap::new();
        let mut x: u64 = 12345;
        let mut rnd = || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut seq = 0;
        let mut now = 0;
        let mut recent: [Option<(u64, Event)>; 16] = [None; 16];
        for step in 0..steps {
            if step % pop_every != pop_every - 1 || h.is_empty() {
                let d = match rnd() % 4 {
                    0 => 0,
                    1 => rnd() % 300,
                    2 => rnd() % 100_000,
                    _ => rnd() % 5_000_000,
                };
                seq += 1;
                let ev = Event::Tick {
                    cpu: CpuId::new(step as usize),
                };
                q.push(now + d, ev);
                h.push(Entry {
                    time: now + d,
                    seq,
                    ev,
                });
                recent[step as usize % recent.len()] = Some((now + d, ev));
            } else {
                let e = h.pop().unwrap();
                assert_eq!(q.pop(), Some((e.time, e.ev)));
                now = e.time;
            }
            if cancel_every.is_some_and(|k| step % k == 0)
                && let Some((time, ev)) = recent[rnd() as usize % recent.len()].take()
                && h.iter().any(|e| e.ev == ev)
                && q.cancel(time, ev)
            {
                h.retain(|e| e.ev != ev);
            }
        }
        while let Some(e) = h.pop() {
            assert_eq!(q.pop(), Some((e.time, e.ev)));
        }
        assert!(q.pop().is_none() && q.is_empty());
    }

    /// The front event: a chain of pushes each earlier than everything queued, a push
    /// earlier than the front one (which then joins the ring), a push between the front
    /// and the ring, and a limit below the front's time.
    #[test]
    fn an_event_earlier_than_all_others_pops_first() {
        let mut q = EventQueue::new();
        let tick = |c: usize| Event::Tick { cpu: CpuId::new(c) };
        q.push(10_000, tick(0));
        q.push(100, tick(1));
        q.push(50, tick(2));
        q.push(70, tick(3));
        q.push(50, tick(4));
        assert_eq!(q.len(), 5);
        assert_eq!(q.pop_until(49), None);
        assert_eq!(q.pop(), Some((50, tick(2))));
        assert_eq!(q.pop(), Some((50, tick(4))));
        q.push(60, tick(5));
        assert_eq!(q.pop(), Some((60, tick(5))));
        assert_eq!(q.pop(), Some((70, tick(3))));
        assert_eq!(q.pop(), Some((100, tick(1))));
        q.push(200, tick(6));
        q.push(200, tick(7));
        assert_eq!(q.pop(), Some((200, tick(6))));
        assert_eq!(q.pop(), Some((200, tick(7))));
        assert_eq!(q.pop(), Some((10_000, tick(0))));
        assert!(q.pop().is_none() && q.is_empty());
        assert_eq!(q.popped(), 8);
    }

    /// A cancelled event never pops, wherever it waits: in front, alone in the earliest
    /// slot (the next slot becomes the earliest), among others of its slot; a far one
    /// stays queued and says so.
    #[test]
    fn cancelled_events_do_not_pop() {
        let mut q = EventQueue::new();
        let step = |c: usize, epoch: u32| Event::CpuStep {
            cpu: CpuId::new(c),
            epoch,
        };
        q.push(500, step(0, 1));
        q.push(100, step(1, 1));
        q.push(300, step(2, 1));
        q.push(300, step(3, 1));
        q.push(900, step(4, 1));
        q.push(10_000_000, step(5, 1));
        assert!(q.cancel(100, step(1, 1)), "the front event");
        assert!(q.cancel(300, step(3, 1)), "one of two in a slot");
        assert!(q.cancel(500, step(0, 1)), "alone in its slot");
        assert!(!q.cancel(10_000_000, step(5, 1)), "far beyond the window");
        assert_eq!(q.len(), 3);
        assert_eq!(q.pop(), Some((300, step(2, 1))));
        assert!(
            q.cancel(900, step(4, 1)),
            "the earliest slot, the ring then empty"
        );
        assert_eq!(q.pop(), Some((10_000_000, step(5, 1))));
        assert!(q.pop().is_none() && q.is_empty());
        assert_eq!(q.popped(), 2);
    }

    /// A queue slot is a 16-byte key and the event: ids must not make events bigger.
    #[test]
    fn events_stay_small() {
        assert!(std::mem::size_of::<Event>() <= 16);
    }
}
