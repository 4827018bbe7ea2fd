//! The event queue: a binary heap ordered by (time in ns, sequence number), so events at
//! the same time run in the order they were scheduled and a run replays exactly.

/// Everything that can happen at a point in virtual time. Payloads are arena indices, so
/// an event is a few bytes and nothing is allocated per event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Event {
    /// The current step of a CPU ended (ignored when `epoch` is stale: the step was
    /// preempted or replaced).
    CpuStep { cpu: u32, epoch: u32 },
    /// The controller fetched `count` SQEs of a queue after the doorbell.
    SqFetched { queue: u32, count: u32 },
    /// A device command's media service ended.
    ServiceDone { io: u32 },
    /// An NVMe over RDMA target's response (RDMA WRITE and SEND) reached the host NIC.
    TargetResponse { io: u32 },
    /// The write at the head of a root port's FIFO finished.
    PortDone { port: u32 },
    /// An interrupt message reaches a CPU's local APIC (`vec` is the IDT vector).
    Notify { cpu: u32, vec: u16 },
    /// A CPU's periodic timer tick is due.
    Tick { cpu: u32 },
    /// A CQ head doorbell write reaches the controller.
    CqDoorbell { queue: u32 },
    /// A device coalescing timer expires (feature 08h aggregation time).
    CoalesceTimer { vector: u32, epoch: u32 },
    /// A thread's hrtimer sleep ends (hybrid polling).
    ThreadTimer { thread: u32, epoch: u32 },
    /// A CPU's GSIM moderation timer fires.
    GsimTimer { cpu: u32, epoch: u32 },
    /// A root port's IOMMU engine finished handling an MSI (remapped or posted).
    EngineDone { port: u32 },
    /// The delivery unit finished sending the notification at the head of its queue.
    Delivered,
    /// A moderator's requested level reaches the device (after the work item).
    ModeratorProgram { vector: u32 },
    /// The ramp time is over: statistics start.
    RampEnd,
    /// A job's startdelay passed or its stonewall wave began.
    JobStart { job: u32 },
    /// A job that started late ends its ramp_time: its statistics start.
    JobRampEnd { job: u32 },
}

/// A deterministic future-event list: a radix heap (a monotone priority queue) keyed by
/// `time << 64 | seq`. Keys are unique and never below the last popped key, so it pops in
/// exactly the order of a binary heap keyed by (time, seq), with pushes that append to
/// one of 129 buckets and no sorting.
#[derive(Debug)]
pub struct EventQueue {
    /// Bucket 0 holds keys equal to `last`; bucket i > 0 keys whose highest bit differing
    /// from `last` is bit i - 1.
    buckets: Vec<Vec<Slot>>,
    /// Bit i - 1 set when bucket i > 0 may be non-empty, so a refill finds the next
    /// bucket with one trailing_zeros instead of scanning 128 vectors.
    occupied: u128,
    last: u128,
    len: usize,
    seq: u64,
    popped: u64,
}

#[derive(Clone, Copy, Debug)]
struct Slot {
    key: u128,
    ev: Event,
}

impl Default for EventQueue {
    fn default() -> Self {
        Self::new()
    }
}

#[inline]
fn bucket_of(key: u128, last: u128) -> usize {
    (128 - (key ^ last).leading_zeros()) as usize
}

impl EventQueue {
    pub fn new() -> Self {
        EventQueue {
            buckets: (0..129).map(|_| Vec::new()).collect(),
            occupied: 0,
            last: 0,
            len: 0,
            seq: 0,
            popped: 0,
        }
    }

    /// Schedules `ev` at absolute time `time` (not before the last popped event).
    #[inline]
    pub fn push(&mut self, time: u64, ev: Event) {
        self.seq += 1;
        let key = (u128::from(time) << 64) | u128::from(self.seq);
        debug_assert!(key > self.last, "event scheduled in the past");
        self.put(Slot { key, ev });
        self.len += 1;
    }

    #[inline]
    fn put(&mut self, s: Slot) {
        let b = bucket_of(s.key, self.last);
        if b > 0 {
            self.occupied |= 1 << (b - 1);
        }
        self.buckets[b].push(s);
    }

    /// The earliest event, FIFO among equal times.
    #[inline]
    pub fn pop(&mut self) -> Option<(u64, Event)> {
        if self.len == 0 {
            return None;
        }
        if self.buckets[0].is_empty() {
            // len > 0 and bucket 0 is empty, so some bucket i > 0 holds the minimum.
            let i = self.occupied.trailing_zeros() as usize + 1;
            self.occupied &= !(1 << (i - 1));
            let mut b = std::mem::take(&mut self.buckets[i]);
            let min = b.iter().map(|s| s.key).min().expect("non-empty bucket");
            self.last = min;
            // Every key of bucket i now falls into a lower bucket.
            for s in b.drain(..) {
                self.put(s);
            }
            // Keep the drained bucket's allocation for reuse.
            self.buckets[i] = b;
        }
        let s = self.buckets[0].pop().expect("the minimum is in bucket 0");
        self.len -= 1;
        self.popped += 1;
        Some(((s.key >> 64) as u64, s.ev))
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Events processed so far.
    pub fn popped(&self) -> u64 {
        self.popped
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
        q.push(10, Event::Tick { cpu: 2 });
        q.push(5, Event::Tick { cpu: 9 });
        q.push(10, Event::Tick { cpu: 1 });
        q.push(10, Event::Tick { cpu: 3 });
        let order: Vec<_> = std::iter::from_fn(|| q.pop()).collect();
        assert_eq!(
            order,
            vec![
                (5, Event::Tick { cpu: 9 }),
                (10, Event::Tick { cpu: 2 }),
                (10, Event::Tick { cpu: 1 }),
                (10, Event::Tick { cpu: 3 }),
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
                let ev = Event::Tick { cpu: step };
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
}
