//! The fio runs of a capture: 4 KiB random reads with O_DIRECT, each pinning one part of
//! the model: QD1 synchronous (the device's service time and the interrupt and wake-up
//! path), QD1 polled where the device has poll queues (the same without the
//! interrupt), one job at QD32 with libaio (interrupt moderation and completions per
//! interrupt under load), several such jobs (the device's ceiling), and io_uring with
//! batched submission.

/// The queue depth of the loaded runs.
pub const DEPTH: u32 = 32;

/// One run: its name (file stem) and its job options beyond the shared ones.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunSpec {
    pub name: String,
    pub what: String,
    pub options: Vec<(&'static str, String)>,
}

fn spec(
    name: impl Into<String>,
    what: impl Into<String>,
    options: &[(&'static str, &str)],
) -> RunSpec {
    RunSpec {
        name: name.into(),
        what: what.into(),
        options: options.iter().map(|(k, v)| (*k, v.to_string())).collect(),
    }
}

/// The battery for a host of `cpus` CPUs whose target device can (or cannot) poll.
pub fn battery(cpus: usize, polled: bool) -> Vec<RunSpec> {
    let d = DEPTH.to_string();
    let jobs = cpus.clamp(1, 4);
    let mut v = vec![spec(
        "qd1-psync",
        "QD1 synchronous reads (psync), one job",
        &[("ioengine", "psync"), ("iodepth", "1")],
    )];
    if polled {
        v.push(spec(
            "qd1-hipri",
            "QD1 polled reads (pvsync2 hipri), one job",
            &[("ioengine", "pvsync2"), ("hipri", "1"), ("iodepth", "1")],
        ));
    }
    v.push(spec(
        format!("qd{DEPTH}-libaio"),
        format!("QD{DEPTH} reads with libaio, one job"),
        &[("ioengine", "libaio"), ("iodepth", &d)],
    ));
    if jobs > 1 {
        v.push(spec(
            format!("qd{DEPTH}x{jobs}-libaio"),
            format!("QD{DEPTH} reads with libaio, {jobs} jobs"),
            &[
                ("ioengine", "libaio"),
                ("iodepth", &d),
                ("numjobs", &jobs.to_string()),
            ],
        ));
    }
    v.push(spec(
        format!("qd{DEPTH}-uring-batch"),
        format!("QD{DEPTH} reads with io_uring, submitted 8 at a time, one job"),
        &[
            ("ioengine", "io_uring"),
            ("iodepth", &d),
            ("iodepth_batch_submit", "8"),
            ("iodepth_batch_complete_min", "1"),
        ],
    ));
    v
}

/// The job file of a run on `target`; `size` limits a file target to what was laid out.
pub fn job_file(r: &RunSpec, target: &str, size: Option<u64>, runtime_s: u32) -> String {
    let mut s = format!(
        "; irqlab capture: {}\n[global]\nfilename={target}\n",
        r.what
    );
    for (k, v) in [
        ("rw", "randread".to_string()),
        ("bs", "4k".into()),
        ("direct", "1".into()),
        ("norandommap", "1".into()),
        ("time_based", "1".into()),
        ("runtime", runtime_s.to_string()),
    ] {
        s += &format!("{k}={v}\n");
    }
    if let Some(b) = size {
        s += &format!("size={b}\n");
    }
    s += &format!("\n[{}]\n", r.name);
    for (k, v) in &r.options {
        s += &format!("{k}={v}\n");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_battery_polls_only_where_it_can_and_scales_jobs_with_cpus() {
        let names = |v: Vec<RunSpec>| v.into_iter().map(|r| r.name).collect::<Vec<_>>();
        assert_eq!(
            names(battery(2, false)),
            vec![
                "qd1-psync",
                "qd32-libaio",
                "qd32x2-libaio",
                "qd32-uring-batch"
            ]
        );
        assert_eq!(
            names(battery(1, true)),
            vec!["qd1-psync", "qd1-hipri", "qd32-libaio", "qd32-uring-batch"]
        );
        assert!(names(battery(64, false)).contains(&"qd32x4-libaio".to_string()));
        let j = job_file(&battery(2, false)[0], "/tmp/t", Some(1 << 20), 3);
        assert!(
            j.contains("filename=/tmp/t\n")
                && j.contains("size=1048576\n")
                && j.contains("runtime=3\n")
        );
        assert!(j.contains("[qd1-psync]\nioengine=psync\n"), "{j}");
    }
}
