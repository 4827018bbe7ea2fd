//! A split virtqueue's notification logic: the avail and used indices, the event indices
//! and the two suppression flags, with the driver's side as drivers/virtio/virtio_ring.c
//! runs it and the device's side as the virtio spec (2.7.7, 2.7.10) and the hosts that
//! implement it (Firecracker's `Queue`, QEMU's hw/virtio/virtio.c) do.
//!
//! Only indices live here: which request sits in which slot is the caller's (the ring's
//! entries are handed out in order). Whether a kick or an interrupt is sent is decided
//! by [`vring_need_event`] with VIRTIO_RING_F_EVENT_IDX, by the NO_NOTIFY and
//! NO_INTERRUPT flags without it.
//!
//! Linux's driver (v6.18), split ring:
//! - `virtqueue_add` publishes the new avail index at every add; `virtqueue_kick_prepare`
//!   (virtio_blk's `virtio_queue_rq` calls it only on `bd->last`) asks whether the batch
//!   since the last decision crossed `avail_event`.
//! - `vring_interrupt` sets `event_triggered` (with EVENT_IDX, 8d622d21d248, v5.13);
//!   `virtqueue_disable_cb` then returns early, and `virtqueue_get_buf` does not move
//!   `used_event` while it is set (the 2023 fix "Fixes: 8d622d21d248"), so `used_event`
//!   stays where the last `virtqueue_enable_cb` put it for the whole handler.
//! - `virtqueue_enable_cb` writes `used_event = last_used_idx`, clears `event_triggered`
//!   and returns false when entries arrived meanwhile (`virtqueue_poll`): virtblk_done
//!   then loops.

/// include/uapi/linux/virtio_ring.h: whether moving an index from `old` to `new_idx`
/// crossed `event_idx`, that is, `event_idx` lies in `[old, new_idx)` modulo 2^16.
#[inline]
pub fn vring_need_event(event_idx: u16, new_idx: u16, old: u16) -> bool {
    new_idx.wrapping_sub(event_idx).wrapping_sub(1) < new_idx.wrapping_sub(old)
}

/// Ring descriptors one virtio-blk request takes: the header, one data segment and the
/// status byte, or one indirect descriptor (drivers/block/virtio_blk.c virtblk_add_req).
pub fn blk_descs_per_request(indirect: bool) -> u16 {
    if indirect { 1 } else { 3 }
}

/// The tags virtio_blk gives a queue of `ring_size` entries by default: the ring's free
/// descriptors, halved without VIRTIO_RING_F_INDIRECT_DESC ("without indirect descs, we
/// use 2 descs per req", virtblk_probe).
pub fn blk_queue_depth(ring_size: u16, indirect: bool) -> u16 {
    if indirect { ring_size } else { ring_size / 2 }
}

/// A ring size the spec allows for a split virtqueue: a power of two up to 32768.
pub fn valid_ring_size(n: u32) -> bool {
    n.is_power_of_two() && n <= 32768
}

/// How many times each side asked and decided, for reports and tests.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RingCounters {
    /// `virtqueue_kick_prepare` calls, and those that said to notify the device.
    pub kick_checks: u64,
    pub kicks: u64,
    /// The device's notification decisions after a publish, and those that interrupt.
    pub notify_checks: u64,
    pub notifies: u64,
    /// Entries the device published in the used ring.
    pub published: u64,
}

/// One split virtqueue's indices and notification state, both sides.
#[derive(Clone, Debug)]
pub struct SplitRing {
    /// VIRTIO_RING_F_EVENT_IDX was negotiated (`vq->event`).
    event_idx: bool,
    // Shared memory, each written by one side.
    /// `avail->idx` (driver).
    avail_idx: u16,
    /// `avail->flags & VRING_AVAIL_F_NO_INTERRUPT` (driver, without EVENT_IDX).
    avail_no_interrupt: bool,
    /// `used_event`, after the avail ring (driver, with EVENT_IDX).
    used_event: u16,
    /// `used->idx` (device).
    used_idx: u16,
    /// `used->flags & VRING_USED_F_NO_NOTIFY` (device, without EVENT_IDX).
    used_no_notify: bool,
    /// `avail_event`, after the used ring (device, with EVENT_IDX).
    avail_event: u16,
    // The driver's own state (struct vring_virtqueue).
    num_added: u16,
    last_used: u16,
    shadow_no_interrupt: bool,
    event_triggered: bool,
    // The device's own state.
    next_avail: u16,
    next_used: u16,
    /// The used index at the device's last notification decision (QEMU's
    /// `signalled_used`; Firecracker's `next_used - num_added`).
    signalled_used: u16,
    signalled_valid: bool,
    counters: RingCounters,
}

impl SplitRing {
    /// A reset ring: every index 0, notifications enabled both ways.
    pub fn new(event_idx: bool) -> SplitRing {
        SplitRing {
            event_idx,
            avail_idx: 0,
            avail_no_interrupt: false,
            used_event: 0,
            used_idx: 0,
            used_no_notify: false,
            avail_event: 0,
            num_added: 0,
            last_used: 0,
            shadow_no_interrupt: false,
            event_triggered: false,
            next_avail: 0,
            next_used: 0,
            signalled_used: 0,
            signalled_valid: false,
            counters: RingCounters::default(),
        }
    }

    pub fn event_idx(&self) -> bool {
        self.event_idx
    }

    pub fn counters(&self) -> RingCounters {
        self.counters
    }

    // ---- driver (the guest) ----

    /// virtqueue_add_split: one request's head enters the avail ring, and `avail->idx`
    /// is published at once.
    pub fn add(&mut self) {
        self.avail_idx = self.avail_idx.wrapping_add(1);
        self.num_added = self.num_added.wrapping_add(1);
    }

    /// virtqueue_kick_prepare_split: whether the requests added since the last call need
    /// a notification of the device (with EVENT_IDX: whether they crossed `avail_event`;
    /// without: whether the device left VRING_USED_F_NO_NOTIFY clear).
    pub fn kick_prepare(&mut self) -> bool {
        let new = self.avail_idx;
        let old = new.wrapping_sub(self.num_added);
        self.num_added = 0;
        let kick = if self.event_idx {
            vring_need_event(self.avail_event, new, old)
        } else {
            !self.used_no_notify
        };
        self.counters.kick_checks += 1;
        self.counters.kicks += u64::from(kick);
        kick
    }

    /// Used entries the driver has not taken yet (`more_used`).
    pub fn more_used(&self) -> bool {
        self.last_used != self.used_idx
    }

    /// vring_interrupt: false (IRQ_NONE) when nothing was used; otherwise, with EVENT_IDX,
    /// notes that the device triggered an event, and the callback runs.
    pub fn interrupt(&mut self) -> bool {
        if !self.more_used() {
            return false;
        }
        if self.event_idx {
            self.event_triggered = true;
        }
        true
    }

    /// virtqueue_disable_cb: nothing after an interrupt (the device will not signal
    /// again until `used_event` moves); otherwise the shadow NO_INTERRUPT flag, and with
    /// EVENT_IDX `used_event = 0` ("a hack"), without it the flag in shared memory.
    pub fn disable_cb(&mut self) {
        if self.event_triggered || self.shadow_no_interrupt {
            return;
        }
        self.shadow_no_interrupt = true;
        if self.event_idx {
            self.used_event = 0;
        } else {
            self.avail_no_interrupt = true;
        }
    }

    /// virtqueue_get_buf_ctx_split: takes the next used entry, if any. `used_event`
    /// follows it only while callbacks are on and no event is being handled.
    pub fn get_buf(&mut self) -> bool {
        if !self.more_used() {
            return false;
        }
        self.last_used = self.last_used.wrapping_add(1);
        if !self.shadow_no_interrupt && !self.event_triggered {
            self.used_event = self.last_used;
        }
        true
    }

    /// virtqueue_enable_cb: callbacks on, `used_event = last_used_idx`; true when nothing
    /// arrived meanwhile (false: the caller must drain again, virtblk_done's loop).
    pub fn enable_cb(&mut self) -> bool {
        self.event_triggered = false;
        if self.shadow_no_interrupt {
            self.shadow_no_interrupt = false;
            if !self.event_idx {
                self.avail_no_interrupt = false;
            }
        }
        self.used_event = self.last_used;
        !self.more_used()
    }

    /// Requests in the ring the driver has not got back yet.
    pub fn in_flight(&self) -> u16 {
        self.avail_idx.wrapping_sub(self.last_used)
    }

    // ---- device (the host) ----

    /// Requests in the avail ring the device has not popped.
    pub fn avail_pending(&self) -> u16 {
        self.avail_idx.wrapping_sub(self.next_avail)
    }

    /// Takes the next avail entry, if any.
    pub fn pop(&mut self) -> bool {
        if self.avail_pending() == 0 {
            return false;
        }
        self.next_avail = self.next_avail.wrapping_add(1);
        true
    }

    /// The device stops asking for kicks while it works: without EVENT_IDX it sets
    /// VRING_USED_F_NO_NOTIFY; with it `avail_event` is simply not moved (QEMU's
    /// virtio_queue_set_notification(vq, 0)).
    pub fn disable_notification(&mut self) {
        if !self.event_idx {
            self.used_no_notify = true;
        }
    }

    /// The device asks for a kick at the next request (`avail_event = next_avail`, or
    /// NO_NOTIFY cleared), then looks again (the barrier and re-check of Firecracker's
    /// try_enable_notification): true when the ring is still empty and it may sleep.
    pub fn enable_notification(&mut self) -> bool {
        if self.event_idx {
            self.avail_event = self.next_avail;
        } else {
            self.used_no_notify = false;
        }
        self.avail_pending() == 0
    }

    /// One entry written to the used ring, not yet visible (`used->idx` unchanged).
    pub fn add_used(&mut self) {
        self.next_used = self.next_used.wrapping_add(1);
    }

    /// Publishes `used->idx` for every entry added; returns how many became visible.
    pub fn publish(&mut self) -> u16 {
        let n = self.next_used.wrapping_sub(self.used_idx);
        self.used_idx = self.next_used;
        self.counters.published += u64::from(n);
        n
    }

    /// The device's decision after a publish (QEMU virtio_split_should_notify,
    /// Firecracker prepare_kick): with EVENT_IDX whether the entries published since the
    /// last decision crossed `used_event` (the first decision always notifies); without,
    /// whether the driver left VRING_AVAIL_F_NO_INTERRUPT clear.
    pub fn should_notify(&mut self) -> bool {
        let new = self.used_idx;
        let old = self.signalled_used;
        let valid = std::mem::replace(&mut self.signalled_valid, true);
        self.signalled_used = new;
        let notify = if new == old && valid {
            false
        } else if self.event_idx {
            !valid || vring_need_event(self.used_event, new, old)
        } else {
            !self.avail_no_interrupt
        };
        self.counters.notify_checks += 1;
        self.counters.notifies += u64::from(notify);
        notify
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn need_event_is_true_only_when_the_batch_crosses_the_index() {
        // event 5 in [3, 8)
        assert!(vring_need_event(5, 8, 3));
        assert!(
            vring_need_event(3, 8, 3),
            "the first new entry is the event"
        );
        assert!(!vring_need_event(8, 8, 3), "one past the batch");
        assert!(!vring_need_event(2, 8, 3), "already passed");
        assert!(!vring_need_event(5, 3, 3), "an empty batch crosses nothing");
    }

    #[test]
    fn need_event_wraps_around_the_16_bit_indices() {
        // The batch 65534, 65535, 0, 1 crosses every index in it, across the wrap.
        for ev in [65534u16, 65535, 0, 1] {
            assert!(vring_need_event(ev, 2, 65534), "event {ev}");
        }
        for ev in [65533u16, 2, 3, 32768] {
            assert!(!vring_need_event(ev, 2, 65534), "event {ev}");
        }
        // A full 2^16 - 1 batch crosses everything but `new` itself.
        assert!(vring_need_event(100, 99, 100));
        assert!(!vring_need_event(99, 99, 100));
    }

    #[test]
    fn blk_depth_follows_indirect() {
        assert_eq!(blk_queue_depth(256, false), 128);
        assert_eq!(blk_queue_depth(256, true), 256);
        assert_eq!(blk_descs_per_request(false), 3);
        assert!(valid_ring_size(256) && !valid_ring_size(300) && !valid_ring_size(65536));
    }

    /// A device that went idle asks for one kick; requests added while it has not looked
    /// again ride on it.
    #[test]
    fn one_kick_while_the_device_is_busy() {
        for event_idx in [true, false] {
            let mut r = SplitRing::new(event_idx);
            assert!(r.enable_notification());
            r.add();
            assert!(r.kick_prepare(), "idle device: kick ({event_idx})");
            r.disable_notification();
            assert!(r.pop());
            for _ in 0..5 {
                r.add();
                assert!(!r.kick_prepare(), "busy device: no kick ({event_idx})");
            }
            while r.pop() {}
            assert!(r.enable_notification());
            r.add();
            assert!(r.kick_prepare(), "idle again ({event_idx})");
        }
    }

    /// The difference between the two modes: a device that has not started yet (woken,
    /// not running) is kicked again without EVENT_IDX, not with it.
    #[test]
    fn event_idx_kicks_once_per_wake_flags_on_every_batch() {
        let mut ev = SplitRing::new(true);
        let mut fl = SplitRing::new(false);
        for r in [&mut ev, &mut fl] {
            r.enable_notification();
        }
        let kicks = |r: &mut SplitRing| {
            (0..4)
                .map(|_| {
                    r.add();
                    r.kick_prepare()
                })
                .filter(|&k| k)
                .count()
        };
        assert_eq!(kicks(&mut ev), 1);
        assert_eq!(kicks(&mut fl), 4);
    }

    /// virtblk_done on a current kernel: after the interrupt, `used_event` stays behind
    /// for the whole drain, so nothing the device publishes meanwhile interrupts; the
    /// re-enable asks for the next entry.
    #[test]
    fn one_interrupt_per_handler_pass_with_event_idx() {
        let mut r = SplitRing::new(true);
        r.enable_cb();
        for _ in 0..3 {
            r.add();
            r.pop();
            r.add_used();
        }
        r.publish();
        assert!(r.should_notify(), "first publish after enable_cb");
        assert!(r.interrupt());
        r.disable_cb();
        assert!(r.get_buf());
        // The device publishes two more while the driver drains.
        for _ in 0..2 {
            r.add();
            r.pop();
            r.add_used();
            r.publish();
            assert!(!r.should_notify(), "suppressed during the handler");
        }
        while r.get_buf() {}
        assert!(r.enable_cb(), "drained everything");
        r.add();
        r.pop();
        r.add_used();
        r.publish();
        assert!(r.should_notify(), "re-armed");
    }

    /// Without EVENT_IDX the flag decides: clear from enable_cb to disable_cb, so a second
    /// publish before the handler starts interrupts again.
    #[test]
    fn flags_interrupt_until_the_handler_disables() {
        let mut r = SplitRing::new(false);
        r.enable_cb();
        let publish = |r: &mut SplitRing| {
            r.add();
            r.pop();
            r.add_used();
            r.publish();
            r.should_notify()
        };
        assert!(publish(&mut r));
        assert!(
            publish(&mut r),
            "the handler has not disabled callbacks yet"
        );
        assert!(r.interrupt());
        r.disable_cb();
        assert!(!publish(&mut r), "NO_INTERRUPT set");
        while r.get_buf() {}
        assert!(r.enable_cb());
        assert!(publish(&mut r));
        // With EVENT_IDX the second publish before the handler is suppressed.
        let mut e = SplitRing::new(true);
        e.enable_cb();
        assert!(publish(&mut e));
        assert!(!publish(&mut e));
    }

    #[test]
    fn enable_cb_reports_entries_that_arrived_during_the_drain() {
        let mut r = SplitRing::new(true);
        r.add();
        r.pop();
        r.add_used();
        r.publish();
        assert!(r.interrupt());
        r.disable_cb();
        assert!(r.get_buf());
        r.add();
        r.pop();
        r.add_used();
        r.publish();
        assert!(!r.enable_cb(), "one more arrived: drain again");
        r.disable_cb();
        assert!(r.get_buf());
        assert!(r.enable_cb());
        assert_eq!(r.in_flight(), 0);
        assert!(!r.interrupt(), "nothing used: IRQ_NONE");
    }

    #[test]
    fn indices_survive_wraparound() {
        let mut r = SplitRing::new(true);
        r.enable_notification();
        r.enable_cb();
        let mut kicks = 0;
        let mut irqs = 0;
        // 70000 rounds of two requests each: the indices wrap twice.
        for _ in 0..70_000u32 {
            r.add();
            kicks += u32::from(r.kick_prepare());
            r.add();
            kicks += u32::from(r.kick_prepare());
            r.disable_notification();
            while r.pop() {
                r.add_used();
            }
            assert!(r.enable_notification());
            r.publish();
            if r.should_notify() {
                irqs += 1;
                assert!(r.interrupt());
                r.disable_cb();
                while r.get_buf() {}
                assert!(r.enable_cb());
            }
        }
        assert_eq!(kicks, 70_000, "one kick per round");
        assert_eq!(irqs, 70_000, "one interrupt per round");
        assert_eq!(r.counters().published, 140_000);
    }
}
