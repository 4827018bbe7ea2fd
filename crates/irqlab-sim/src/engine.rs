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
    /// A moderator's requested level reaches the device (after the work item).
    ModeratorProgram { vector: VectorId },
    /// The ramp time is over: statistics start.
    RampEnd,
    /// A job's startdelay passed or its stonewall wave began.
    JobStart { job: JobId },
    /// A job that started late ends its ramp_time: its statistics start.
    JobRampEnd { job: JobId },
    /// A virtio-blk host thread's step ended (stale when `epoch` moved on).
    VirtioHost { device: DeviceId, epoch: u32 },
}

/// A deterministic future-event list: a calendar queue. The slots form a ring that
/// covers the next `SLOTS << SLOT_SHIFT` ns from the earliest event; an event in that
/// window goes to the slot of its time (a shift and a mask), a slot holds a few events,
/// and an occupancy bitmap finds the next non-empty one. Later events (ticks, ramp ends,
/// slow media) wait in a 4-ary heap until the window slides over them. Keys are
/// `time << 64 | seq` and unique, so events pop in exactly the order of a heap keyed by
/// (time, seq): FIFO among equal times, and a run replays exactly.
#[derive(Debug)]
pub struct EventQueue {
    /// Fixed-size arrays: an index masked to the ring needs no bounds check.
    slots: Box<[Vec<Slot>; SLOTS as usize]>,
    /// Bit `i % 64` of word `i / 64` set when slot `i` is non-empty.
    occupied: Box<[u64; WORDS]>,
    /// Absolute slot number (time >> SLOT_SHIFT) of the earliest near event or before.
    cursor: u64,
    near: usize,
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
            near: 0,
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
        if (time >> SLOT_SHIFT) - self.cursor < SLOTS {
            self.put_near(s);
        } else {
            self.far.push(s);
            self.far_first = self.far_first.min(time >> SLOT_SHIFT);
        }
    }

    #[inline]
    fn put_near(&mut self, s: Slot) {
        let i = ((s.time() >> SLOT_SHIFT) & MASK) as usize;
        self.slots[i].push(s);
        self.occupied[i / 64] |= 1 << (i % 64);
        self.near += 1;
    }

    /// The earliest event, FIFO among equal times.
    #[inline(always)]
    pub fn pop(&mut self) -> Option<(u64, Event)> {
        self.pop_until(u64::MAX)
    }

    /// The earliest event if it is due by `limit` (inclusive); None leaves it queued.
    #[inline(always)]
    pub fn pop_until(&mut self, limit: u64) -> Option<(u64, Event)> {
        if self.near == 0 {
            // Jump to the earliest far event.
            let first = self.far.peek_time()?;
            if first > limit {
                return None;
            }
            self.cursor = first >> SLOT_SHIFT;
            self.bring_in_far();
        }
        let i = self.next_occupied();
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
        if slot.is_empty() {
            self.occupied[i / 64] &= !(1 << (i % 64));
        }
        self.cursor += (i as u64).wrapping_sub(self.cursor) & MASK;
        self.near -= 1;
        self.popped += 1;
        if self.far_first.wrapping_sub(self.cursor) < SLOTS {
            self.bring_in_far();
        }
        Some((s.time(), s.ev))
    }

    /// The first non-empty slot at or after the cursor in ring order (one exists).
    #[inline]
    fn next_occupied(&self) -> usize {
        let start = (self.cursor & MASK) as usize;
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
        self.near + self.far.len()
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
    /// times pushed while popping (the hold model).
    #[test]
    fn matches_a_binary_heap_ordering() {
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
        for step in 0..200_000u32 {
            if step % 3 != 2 || h.is_empty() {
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
            } else {
                let e = h.pop().unwrap();
                assert_eq!(q.pop(), Some((e.time, e.ev)));
                now = e.time;
            }
        }
        while let Some(e) = h.pop() {
            assert_eq!(q.pop(), Some((e.time, e.ev)));
        }
        assert!(q.pop().is_none() && q.is_empty());
    }

    /// A queue slot is a 16-byte key and the event: ids must not make events bigger.
    #[test]
    fn events_stay_small() {
        assert!(std::mem::size_of::<Event>() <= 16);
    }
}
