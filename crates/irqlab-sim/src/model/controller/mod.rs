//! One device's controller: its SQ fetch engine, its media (`media`: units, the commands
//! waiting for them, media times), its held writes under PCIe flow control (`egress`),
//! and what an NVMe over RDMA target or a virtio-blk host adds to it. Each owns its
//! state; the controller answers what happened (a command starts service and for how
//! long, a unit is free and takes the next, a write is held and the device joins its
//! port's line) and the simulator applies the effects on I/Os, queues, vectors and the
//! port (model/device.rs, model/submit.rs, model/target.rs, model/virtio_host.rs).

mod egress;
mod media;

pub(crate) use egress::Held;
pub(crate) use media::{Service, media_units, partial_unit};

use super::commands::Cmd;
use super::ids::{IoId, PortId, VectorId};
use super::target::Wire;
use super::virtio_host::Host;
use crate::platform::DeviceGroup;
use crate::rng::{ServiceTime, Stream};
use egress::Egress;
use media::Media;

pub(crate) struct Device {
    name: String,
    port: PortId,
    media: Media,
    /// The device's random stream: stripe units, media, target and host service times.
    rng: Stream,
    cqe_bytes: u64,
    /// An SQE fetch's latency, the fetch engine's occupancy per doorbell, and when it is
    /// free again.
    fetch_ns: u64,
    fetch_busy_ns: u64,
    fetch_free_at: u64,
    egress: Egress,
    /// Every command writes `bs` bytes toward memory (DSA memory fill), not only reads.
    writes_data: bool,
    /// NVMe over RDMA: a target's response crosses the network this long (ns), and the
    /// target's CPU time per command (spread by the device's service_cv).
    response_ns: u64,
    command_time: Option<ServiceTime>,
    /// NVMe over RDMA: the target NIC's transmit onto the network (model/target.rs).
    wire: Option<Wire>,
    /// virtio-blk: the host thread that serves the virtqueues (model/virtio_host.rs).
    virtio: Option<Box<Host>>,
}

impl Device {
    /// Device `d` of group `g`, idle, behind root port `port`, its stream from the run's
    /// seed.
    pub(crate) fn new(g: &DeviceGroup, name: &str, port: PortId, seed: u64, d: usize) -> Device {
        Device {
            name: name.to_string(),
            port,
            media: Media::new(g),
            rng: Stream::new(seed, 1_000 + d as u64),
            cqe_bytes: g.cqe_bytes,
            fetch_ns: g.sqe_fetch_ns,
            fetch_busy_ns: g.fetch_busy_ns,
            fetch_free_at: 0,
            egress: Egress::default(),
            writes_data: g.writes_data,
            response_ns: 0,
            command_time: None,
            wire: None,
            virtio: None,
        }
    }

    pub(crate) fn name(&self) -> &str {
        &self.name
    }

    /// The root port its writes go through.
    #[inline(always)]
    pub(crate) fn port(&self) -> PortId {
        self.port
    }

    /// Bytes of one completion queue entry.
    #[inline]
    pub(crate) fn cqe_bytes(&self) -> u64 {
        self.cqe_bytes
    }

    /// Whether a completion of a read (`read`) or not carries data toward memory.
    #[inline(always)]
    pub(crate) fn carries_data(&self, read: bool) -> bool {
        read || self.writes_data
    }

    /// Whether the media have a time for `cmd`.
    pub(crate) fn serves(&self, cmd: Cmd) -> bool {
        self.media.serves(cmd)
    }

    // ---------------------------------------------------------------- SQ fetch

    /// An SQE fetch's latency (an RDMA capsule's trip to the responder).
    #[inline]
    pub(crate) fn fetch_ns(&self) -> u64 {
        self.fetch_ns
    }

    /// An SQ tail doorbell reaches the device at `arrival`; its fetch engine serves
    /// doorbells in arrival order, one at a time when it has an occupancy. Returns when
    /// the SQEs are fetched.
    #[inline]
    pub(crate) fn fetch(&mut self, arrival: u64) -> u64 {
        let start = if self.fetch_busy_ns > 0 {
            let start = arrival.max(self.fetch_free_at);
            self.fetch_free_at = start + self.fetch_busy_ns;
            start
        } else {
            arrival
        };
        start + self.fetch_ns
    }

    // ---------------------------------------------------------------- media

    /// A fetched command goes to the media (media.rs `Media::take`).
    #[inline(always)]
    pub(crate) fn take(&mut self, io: IoId, cmd: Cmd) -> Service {
        self.media.take(io, cmd, &mut self.rng)
    }

    /// The command in `slot` ended its service; returns the one its unit takes next.
    #[inline(always)]
    pub(crate) fn finish(&mut self, slot: u32) -> Option<Service> {
        self.media.finish(slot, &mut self.rng)
    }

    // ---------------------------------------------------------------- flow control

    /// Nothing held: a completion may go straight to the port.
    #[inline(always)]
    pub(crate) fn holds_nothing(&self) -> bool {
        self.egress.is_empty()
    }

    /// No MSI held: a message may go straight to the port.
    #[inline(always)]
    pub(crate) fn holds_no_msi(&self) -> bool {
        self.egress.no_msi()
    }

    /// A message of vector `v` waits in the device for a credit.
    #[inline(always)]
    pub(crate) fn holds_msi(&self, v: VectorId) -> bool {
        self.egress.holds_msi(v)
    }

    /// The port had no credit: the device holds `io`'s completion. True: the device
    /// joins its port's line of devices waiting for credits.
    pub(crate) fn hold_completion(&mut self, io: IoId) -> bool {
        self.egress.hold_completion(io)
    }

    /// The device holds vector `v`'s message (behind held MSIs, ahead of held
    /// completions). True: the device joins its port's line.
    pub(crate) fn hold_msi(&mut self, v: VectorId) -> bool {
        self.egress.hold_msi(v)
    }

    /// The held write that goes next in the device's turn.
    pub(crate) fn held(&self) -> Option<Held> {
        self.egress.next()
    }

    /// The write `held` named goes to the port.
    pub(crate) fn release_held(&mut self) {
        self.egress.release()
    }

    /// The device wrote one thing in its turn. True: it still holds writes and takes
    /// its place at the back of its port's line.
    pub(crate) fn turn_over(&mut self) -> bool {
        self.egress.turn_over()
    }

    // ---------------------------------------------------------------- NVMe over RDMA

    /// The device is an NVMe over RDMA host's: its target answers `network_ns` away,
    /// taking `command` of CPU time per command, its NIC transmitting on `wire`.
    pub(crate) fn attach_target(
        &mut self,
        network_ns: u64,
        command: ServiceTime,
        wire: Option<Wire>,
    ) {
        self.response_ns = network_ns;
        self.command_time = Some(command);
        self.wire = wire;
    }

    /// The target's CPU time for `n` commands, drawn from the device's stream (`per`
    /// each without a target).
    pub(crate) fn command_ns(&mut self, n: u32, per: u64) -> u64 {
        match &self.command_time {
            Some(t) => (0..n).map(|_| t.draw(&mut self.rng)).sum(),
            None => u64::from(n) * per,
        }
    }

    /// The target posts a response of `bytes` at `now`. Returns when it has left the
    /// target's NIC (behind the responses already on the wire) and the network's trip.
    pub(crate) fn respond(&mut self, now: u64, bytes: u64) -> (u64, u64) {
        let trip = self.response_ns.max(1);
        let at = match &mut self.wire {
            Some(wire) => wire.send(now, bytes),
            None => now,
        };
        (at, trip)
    }

    // ---------------------------------------------------------------- virtio-blk

    /// A virtio-blk device (its host thread serves the virtqueues).
    #[inline]
    pub(crate) fn is_virtio(&self) -> bool {
        self.virtio.is_some()
    }

    pub(crate) fn host(&self) -> Option<&Host> {
        self.virtio.as_deref()
    }

    pub(crate) fn host_mut(&mut self) -> Option<&mut Host> {
        self.virtio.as_deref_mut()
    }

    /// The host thread, made by `make` for the first queue set it serves.
    pub(crate) fn host_or_insert_with(&mut self, make: impl FnOnce() -> Host) -> &mut Host {
        self.virtio.get_or_insert_with(|| Box::new(make()))
    }

    /// The host thread's time to serve one request, drawn from the device's stream.
    pub(crate) fn host_service_ns(&mut self) -> u64 {
        let h = self.virtio.as_deref().expect("a virtio device");
        h.service_ns(&mut self.rng)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::platform::Platform;

    fn device(fetch_busy_ns: u64) -> Device {
        let text = include_str!("../../../../../platforms/example.toml");
        let p = Platform::from_toml(text, "example.toml", &[]).expect("example platform");
        let g = DeviceGroup {
            sqe_fetch_ns: 600,
            fetch_busy_ns,
            ..p.devices[0].clone()
        };
        Device::new(&g, "nvme0", PortId::new(0), 1, 0)
    }

    #[test]
    fn a_busy_fetch_engine_serves_doorbells_one_at_a_time() {
        let mut d = device(1_000);
        assert_eq!(d.fetch(100), 700);
        assert_eq!(d.fetch(100), 1_700, "behind the first doorbell's occupancy");
        assert_eq!(d.fetch(5_000), 5_600, "idle again");
    }

    #[test]
    fn without_occupancy_fetches_overlap() {
        let mut d = device(0);
        assert_eq!((d.fetch(100), d.fetch(100)), (700, 700));
    }
}
