//! virtio-blk devices (a guest's disks). The model's virtio-blk kind (issue 20 item 3) is
//! not in this build yet; until it is, a capture whose runs used such a disk is refused
//! here, naming what is missing. This is the one place to fill in when it lands.

use crate::FromCaptureError;
use irqlab_capture::devices::BlockDevice;

/// Why a virtio-blk device cannot be modelled in this build.
pub fn unmodelled(d: &BlockDevice) -> FromCaptureError {
    FromCaptureError::Unmodelled {
        what: format!(
            "{} (virtio-blk{}, a virtual machine's disk)",
            d.name,
            d.irq_prefix
                .as_deref()
                .map_or_else(String::new, |p| format!(" {p}"))
        ),
        missing: "a virtio-blk device kind in the model: this build has NVMe, DSA and RDMA devices only (the virtio-blk kind, with the host's service and the ring's notification suppression, is issue 20 item 3)".into(),
    }
}
