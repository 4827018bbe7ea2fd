//! What serves an emulated controller's commands: a timing model of the media, or real
//! I/O to a file or block device.

use crate::error::RtError;
use std::path::PathBuf;

/// The media behind every emulated controller of a run.
#[derive(Clone, Debug, PartialEq)]
pub enum Media {
    /// Each command takes `latency_ns`; the controller starts at most `iops` per second.
    Model(MediaModel),
    /// Real reads and writes through io_uring on this file or block device.
    File(PathBuf),
}

impl Media {
    /// Parses `--media`: "model" or "file:PATH".
    pub fn parse(s: &str, model: MediaModel) -> Result<Media, RtError> {
        if s == "model" {
            return Ok(Media::Model(model));
        }
        match s.strip_prefix("file:") {
            Some("") => Err(RtError::Media("--media file:PATH needs a path".into())),
            Some(p) => Ok(Media::File(PathBuf::from(p))),
            None => Err(RtError::Media(format!(
                "--media '{s}': expected \"model\" or \"file:PATH\""
            ))),
        }
    }

    pub fn describe(&self) -> String {
        match self {
            Media::Model(m) => format!("model(latency={}ns,iops={})", m.latency_ns, m.iops),
            Media::File(p) => format!("file({})", p.display()),
        }
    }
}

/// A device with fixed service latency and a command-start rate limit: at low load every
/// command takes `latency_ns`, at saturation commands queue and throughput is `iops`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MediaModel {
    pub latency_ns: u64,
    pub iops: u64,
}

impl MediaModel {
    pub fn new(latency_ns: u64, iops: u64) -> Result<MediaModel, RtError> {
        if iops == 0 {
            return Err(RtError::Media(
                "the media rate must be at least 1 I/O per second".into(),
            ));
        }
        Ok(MediaModel { latency_ns, iops })
    }

    /// Time between command starts at saturation.
    pub fn gap_ns(&self) -> u64 {
        (1_000_000_000 / self.iops).max(1)
    }
}

/// One controller's media queue: when the next command can start.
#[derive(Clone, Debug)]
pub struct MediaClock {
    model: MediaModel,
    next_start_ns: u64,
}

impl MediaClock {
    pub fn new(model: MediaModel) -> Self {
        MediaClock {
            model,
            next_start_ns: 0,
        }
    }

    /// A command fetched at `now_ns` completes at the returned time. Completion times are
    /// non-decreasing, so a FIFO of pending commands stays sorted.
    pub fn schedule(&mut self, now_ns: u64) -> u64 {
        let start = now_ns.max(self.next_start_ns);
        self.next_start_ns = start + self.model.gap_ns();
        start + self.model.latency_ns
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn idle_media_gives_its_latency_and_busy_media_its_rate() {
        let m = MediaModel::new(10_000, 1_000_000).unwrap();
        let mut c = MediaClock::new(m);
        assert_eq!(c.schedule(100), 10_100);
        // Four commands at the same instant start 1 µs apart.
        let t: Vec<u64> = (0..4).map(|_| c.schedule(5_000_000)).collect();
        assert_eq!(t, vec![5_010_000, 5_011_000, 5_012_000, 5_013_000]);
        assert!(MediaModel::new(1, 0).is_err());
    }

    #[test]
    fn media_option_parses_model_and_file() {
        let m = MediaModel::new(1, 1).unwrap();
        assert_eq!(Media::parse("model", m), Ok(Media::Model(m)));
        assert_eq!(
            Media::parse("file:/tmp/x", m),
            Ok(Media::File("/tmp/x".into()))
        );
        assert!(Media::parse("file:", m).is_err());
        assert!(
            Media::parse("disk", m)
                .unwrap_err()
                .to_string()
                .contains("file:PATH")
        );
    }
}
