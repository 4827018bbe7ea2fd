//! Remapped and posted delivery behind one interface.

use irqlab_core::Delivery;
use irqlab_core::delivery::remapped::RemappedStats;
use irqlab_core::delivery::{DeliveryPath, Notification, PostedPath, RemappedTarget, posted};
use irqlab_core::posted::{POSTED_MSI_NOTIFICATION_VECTOR, PiDesc, vector_bit};
use proptest::prelude::*;

#[test]
fn remapped_notifies_with_the_device_vector_every_time() {
    let path = DeliveryPath::Remapped(RemappedTarget::new(2));
    for _ in 0..3 {
        assert_eq!(
            path.post(0x41).notify,
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
    let path = DeliveryPath::Posted(PostedPath::new(posted::KERNEL, 3, 5));
    assert_eq!(
        path.post(0x41).notify,
        Some(Notification {
            vector: 0xeb,
            dest: 5
        })
    );
    assert_eq!(path.post(0x42).notify, None);
    let pid = path.pi_desc().unwrap();
    assert!(pid.on());
    assert_eq!(pid.pending_words()[1], (1 << 1) | (1 << 2));
}

#[test]
fn the_path_follows_the_delivery_policy() {
    let posted = DeliveryPath::for_delivery(Delivery::Posted { max_loop: 3 }, 7).unwrap();
    let pid = posted.pi_desc().expect("a posted descriptor");
    assert_eq!((pid.nv(), pid.ndst()), (POSTED_MSI_NOTIFICATION_VECTOR, 7));
    let remapped = DeliveryPath::for_delivery(Delivery::Remapped, 7).unwrap();
    assert!(!remapped.is_posted());
    assert_eq!(remapped.post(0x41).notify.map(|n| n.dest), Some(7));
    assert!(DeliveryPath::for_delivery(Delivery::Polled, 7).is_none());
    assert!(DeliveryPath::for_delivery(Delivery::Hybrid, 7).is_none());
}

#[test]
fn a_vector_is_one_bit_of_four_64_bit_words() {
    assert_eq!(vector_bit(0), (0, 1));
    assert_eq!(vector_bit(0x41), (1, 1 << 1));
    assert_eq!(vector_bit(0xeb), (3, 1 << 43));
    assert_eq!(vector_bit(0xff), (3, 1 << 63));
}

proptest! {
    #[test]
    fn remapped_notifications_equal_messages(vs in prop::collection::vec(0x20u8..0xeb, 0..100)) {
        let t = RemappedTarget::new(0);
        let mut stats = RemappedStats::default();
        for v in &vs {
            let n = Some(t.notification(*v));
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
