//! Typed ids of the model's components. Each is an index into its arena in `Sim`
//! (`cpus`, `threads`, `jobs`, `devices`, `queues`, `vectors`, `ports`, `stacks`, `ios`), so a
//! stored reference or an event payload cannot mix up a queue and a vector.
//!
//! An id is a `u32`, so events stay small and `ix` costs nothing; an absent reference is
//! an `Option<Id>` (8 bytes) where the model used to keep a `u32::MAX` sentinel.

use std::fmt;

macro_rules! id {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
        pub struct $name(u32);

        impl $name {
            /// The id of arena entry `ix`.
            #[inline(always)]
            pub fn new(ix: usize) -> Self {
                debug_assert!(ix < u32::MAX as usize, "{} index out of range", stringify!($name));
                $name(ix as u32)
            }

            /// The arena index.
            #[inline(always)]
            pub fn ix(self) -> usize {
                self.0 as usize
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{}({})", stringify!($name), self.ix())
            }
        }
    };
}

id!(
    /// A CPU (`Sim::cpus`): the host's, then the NVMe over RDMA targets' cores.
    CpuId
);
id!(
    /// A thread (`Sim::threads`): job threads, irq threads and ksoftirqd.
    ThreadId
);
id!(
    /// A fio job clone (`Sim::jobs`).
    JobId
);
id!(
    /// A device (`Sim::devices`): an NVMe controller, a DSA or an RDMA NIC.
    DeviceId
);
id!(
    /// A queue pair (`Sim::queues`).
    QueueId
);
id!(
    /// A device's MSI-X vector (`Sim::vectors`); not an IDT vector number.
    VectorId
);
id!(
    /// A root port (`Sim::ports`).
    PortId
);
id!(
    /// An IIO stack (`Sim::stacks`): the DMAR unit its root ports share.
    StackId
);
id!(
    /// An I/O in flight (`Sim::ios`).
    IoId
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_round_trip() {
        for ix in [0, 1, 41, 1 << 20, u32::MAX as usize - 1] {
            assert_eq!(VectorId::new(ix).ix(), ix);
        }
        assert!(QueueId::new(3) < QueueId::new(4));
        assert_eq!(format!("{:?}", CpuId::new(7)), "CpuId(7)");
    }
}
