//! Remapped and posted delivery behind one interface.

use irqlab_core::posted::{POSTED_MSI_NOTIFICATION_VECTOR, PiDesc};
use irqlab_core::remapped::{Deliver, DeliveryPath, Notification, RemappedStats, RemappedTarget};
use proptest::prelude::*;

#[test]
fn remapped_notifies_with_the_device_vector_every_time() {
    let path = DeliveryPath::Remapped(RemappedTarget::new(2));
    for _ in 0..3 {
        assert_eq!(
            path.deliver(0x41),
            Some(Notification {
                vector: 0x41,
                dest: 2
            })
        );
    }
    assert!(path.pi_desc().is_none());
}

#[test]
fn posted_notifies_once_with_the_notification_vector() {
    let path = DeliveryPath::Posted(PiDesc::new(POSTED_MSI_NOTIFICATION_VECTOR, 5));
    assert_eq!(
        path.deliver(0x41),
        Some(Notification {
            vector: 0xeb,
            dest: 5
        })
    );
    assert_eq!(path.deliver(0x42), None);
    let pid = path.pi_desc().unwrap();
    assert!(pid.on());
    assert_eq!(pid.pending_words()[1], (1 << 1) | (1 << 2));
}

proptest! {
    #[test]
    fn remapped_notifications_equal_messages(vs in prop::collection::vec(0x20u8..0xeb, 0..100)) {
        let t = RemappedTarget::new(0);
        let mut stats = RemappedStats::default();
        for v in &vs {
            let n = t.deliver(*v);
            prop_assert_eq!(n.map(|n| n.vector), Some(*v));
            stats.record(n);
        }
        prop_assert_eq!(stats.messages, vs.len() as u64);
        prop_assert_eq!(stats.notifications, stats.messages);
    }

    #[test]
    fn posted_never_notifies_more_than_remapped(vs in prop::collection::vec(0x20u8..0xeb, 1..100)) {
        let d = PiDesc::new(0xeb, 0);
        let sent = vs.iter().filter(|v| d.post(**v)).count();
        prop_assert_eq!(sent, 1, "without a handler ON stays set after the first post");
    }
}
