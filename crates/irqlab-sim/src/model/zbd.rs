//! zonemode=zbd over the platform's conventional namespaces: fio emulates zones of
//! `zonesize` on them (zbd.c init_zone_info, ZBD_NONE). A device's zones are shared by
//! the jobs writing it (fio's zbd_info is per file): each zone's write pointer, the
//! open zones (max_open_zones), and the zone_reset_threshold/frequency counters. A write
//! goes to the write pointer of a zone with room (sequential jobs fill zones in order,
//! random ones pick a zone), clipped at the zone's capacity; when the zone it needs is
//! full the job quiesces its I/O in flight and resets the zone (zbd_adjust_block), which
//! on a conventional namespace sends no command (__zbd_reset_zone); a trim resets a zone
//! the same way (zbd_do_io_u_trim). The jobs' zones are numbered from the start of their
//! range (offsets are not modelled): jobs of one device with the same size share them.

use crate::rng::Stream;
use irqlab_fio::Zbd;

/// One device's emulated zones.
#[derive(Clone, Debug)]
pub(crate) struct ZoneMap {
    capacity: u64,
    /// Bytes written in each zone (empty when the zones never run out: a job covers the
    /// whole device, whose capacity the platform does not give).
    wp: Vec<u64>,
    open: Vec<usize>,
    /// max_open_zones (0: no limit).
    max_open: usize,
    /// zbd_info->wp_valid_data_bytes and write_cnt.
    valid_bytes: u64,
    write_cnt: u64,
    /// The zone range's bytes (fio's f->io_size, for the threshold).
    io_size: u64,
    reset_threshold: f64,
    reset_frequency: f64,
}

/// A zoned job's own part: its place in sequential writing, its zone choices
/// (FIO_RAND_ZONE_OFF) and the resets it made.
#[derive(Clone, Debug)]
pub(crate) struct JobZones {
    cursor: usize,
    rng: Stream,
    resets: u64,
}

impl JobZones {
    /// Zone resets this job made (the report's zone_resets).
    pub fn resets(&self) -> u64 {
        self.resets
    }

    pub fn new(rng: Stream) -> JobZones {
        JobZones {
            cursor: 0,
            rng,
            resets: 0,
        }
    }
}

/// Where a zoned write goes.
pub(crate) enum ZoneChoice {
    /// Into zone `zone`, `bytes` of it (clipped at the zone's capacity).
    Write { zone: usize, bytes: u64 },
    /// Zone `zone` must be reset first (after the I/O in flight completes).
    Reset { zone: usize },
}

impl ZoneMap {
    /// The map of a device whose zoned jobs have these settings: the largest range, the
    /// first job's capacity, limits and reset rules.
    pub fn of(jobs: &[Zbd]) -> ZoneMap {
        let first = jobs[0];
        let n = if jobs.iter().any(|z| z.zones.is_none()) {
            0
        } else {
            jobs.iter().filter_map(|z| z.zones).max().unwrap_or(0) as usize
        };
        let mut m = ZoneMap {
            capacity: first.capacity,
            wp: vec![0; n],
            open: Vec::new(),
            max_open: first.max_open as usize,
            valid_bytes: 0,
            write_cnt: 0,
            io_size: (n as u64).saturating_mul(first.zone_bytes),
            reset_threshold: first.reset_threshold,
            reset_frequency: first.reset_frequency,
        };
        m.reset_write_cnt();
        m
    }

    /// zbd.c _zbd_reset_write_cnt: writes between threshold resets, 1/frequency.
    fn reset_write_cnt(&mut self) {
        self.write_cnt = if self.reset_frequency > 0.0 {
            (1.0 / self.reset_frequency).min(f64::from(u32::MAX)) as u64
        } else {
            u64::from(u32::MAX)
        };
    }

    fn full(&self, z: usize, min_bs: u64) -> bool {
        self.capacity - self.wp[z] < min_bs
    }

    /// zbd_convert_to_write_zone and the reset rules of zbd_adjust_block for job `jz`'s
    /// write of `bytes` (at least `min_bs`).
    pub fn choose(
        &mut self,
        jz: &mut JobZones,
        bytes: u64,
        min_bs: u64,
        random: bool,
    ) -> ZoneChoice {
        if self.wp.is_empty() {
            return ZoneChoice::Write { zone: 0, bytes };
        }
        let n = self.wp.len();
        let mut z = if random {
            jz.rng.below(n as u64) as usize
        } else {
            jz.cursor % n
        };
        let limit = self.max_open;
        if random && limit > 0 && !self.open.contains(&z) && self.open.len() >= limit {
            z = self.open[jz.rng.below(self.open.len() as u64) as usize];
        }
        if self.full(z, min_bs) {
            // The next zone that can take the write: open ones at the limit, else any.
            let at_limit = limit > 0 && self.open.len() >= limit;
            let found = (1..n)
                .map(|i| (z + i) % n)
                .find(|&c| !self.full(c, min_bs) && (!at_limit || self.open.contains(&c)));
            match found {
                Some(c) => z = c,
                None => return ZoneChoice::Reset { zone: z },
            }
        }
        // zone_reset_threshold/frequency: enough valid data, every 1/frequency writes.
        if self.reset_frequency > 0.0
            && self.valid_bytes as f64 >= self.io_size as f64 * self.reset_threshold
        {
            self.write_cnt = self.write_cnt.saturating_sub(1);
            if self.write_cnt == 0 {
                self.reset_write_cnt();
                if self.wp[z] > 0 {
                    return ZoneChoice::Reset { zone: z };
                }
            }
        }
        if !random {
            jz.cursor = z;
        }
        let room = self.capacity - self.wp[z];
        ZoneChoice::Write {
            zone: z,
            bytes: bytes.min(room) / min_bs * min_bs,
        }
    }

    /// The write was queued (zbd_queue_io): the write pointer moves, a full zone closes.
    pub fn wrote(&mut self, jz: &mut JobZones, zone: usize, bytes: u64, min_bs: u64) {
        if self.wp.is_empty() {
            return;
        }
        if !self.open.contains(&zone) {
            self.open.push(zone);
        }
        self.wp[zone] += bytes;
        self.valid_bytes += bytes;
        if self.full(zone, min_bs) {
            self.open.retain(|&o| o != zone);
            if jz.cursor == zone {
                jz.cursor = (zone + 1) % self.wp.len();
            }
        }
    }

    /// __zbd_reset_zone: the write pointer goes back (no command on a conventional
    /// namespace); a zone with no data is left alone and not counted.
    pub fn reset(&mut self, jz: &mut JobZones, zone: usize) {
        if self.wp.is_empty() || self.wp[zone] == 0 {
            return;
        }
        self.valid_bytes -= self.wp[zone];
        self.wp[zone] = 0;
        self.open.retain(|&o| o != zone);
        jz.resets += 1;
    }

    /// zbd_do_io_u_trim: a trim resets the zone at its offset (sequentially, or a random
    /// one).
    pub fn trim_zone(&mut self, jz: &mut JobZones, random: bool) {
        if self.wp.is_empty() {
            return;
        }
        let n = self.wp.len();
        let z = if random {
            jz.rng.below(n as u64) as usize
        } else {
            let z = jz.cursor % n;
            jz.cursor = (z + 1) % n;
            z
        };
        self.reset(jz, z);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(zones: Option<u64>, max_open: u32) -> Zbd {
        Zbd {
            zone_bytes: 1 << 20,
            capacity: 1 << 20,
            zones,
            max_open,
            reset_threshold: 0.0,
            reset_frequency: 0.0,
        }
    }

    #[test]
    fn sequential_writes_fill_zones_in_order_then_reset() {
        let c = cfg(Some(2), 0);
        let mut m = ZoneMap::of(&[c]);
        let mut jz = JobZones::new(Stream::new(1, 16));
        let bs = 256 << 10;
        let mut zones = Vec::new();
        for _ in 0..8 {
            match m.choose(&mut jz, bs, bs, false) {
                ZoneChoice::Write { zone, bytes } => {
                    assert_eq!(bytes, bs);
                    m.wrote(&mut jz, zone, bytes, bs);
                    zones.push(zone);
                }
                ZoneChoice::Reset { .. } => panic!("room left"),
            }
        }
        assert_eq!(zones, [0, 0, 0, 0, 1, 1, 1, 1]);
        // Both zones full: the next write needs its zone reset first.
        let ZoneChoice::Reset { zone } = m.choose(&mut jz, bs, bs, false) else {
            panic!("every zone is full")
        };
        m.reset(&mut jz, zone);
        assert_eq!((jz.resets, m.valid_bytes), (1, 4 * bs));
        assert!(matches!(
            m.choose(&mut jz, bs, bs, false),
            ZoneChoice::Write { .. }
        ));
    }

    #[test]
    fn writes_stay_in_the_open_zones_at_the_limit() {
        let c = cfg(Some(64), 2);
        let mut m = ZoneMap::of(&[c]);
        let mut jz = JobZones::new(Stream::new(7, 16));
        let bs = 4096;
        for _ in 0..200 {
            if let ZoneChoice::Write { zone, bytes } = m.choose(&mut jz, bs, bs, true) {
                m.wrote(&mut jz, zone, bytes, bs);
            }
            assert!(m.open.len() <= 2, "{:?}", m.open);
        }
        let used = m.wp.iter().filter(|&&w| w > 0).count();
        assert_eq!(used, 2, "two open zones take every write");
    }

    #[test]
    fn a_write_is_clipped_at_the_zone_capacity() {
        let c = Zbd {
            capacity: 5 << 10,
            ..cfg(Some(1), 0)
        };
        let mut m = ZoneMap::of(&[c]);
        let mut jz = JobZones::new(Stream::new(1, 16));
        let ZoneChoice::Write { bytes, .. } = m.choose(&mut jz, 8 << 10, 4 << 10, false) else {
            panic!("an empty zone")
        };
        assert_eq!(bytes, 4 << 10, "5 KiB of room, 4 KiB blocks");
    }
}
