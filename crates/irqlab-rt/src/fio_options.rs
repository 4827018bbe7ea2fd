//! fio options the runtime does not carry out: they are refused with the line that set
//! them, so a job file never runs differently from what it says. `irqlab run` simulates
//! all of them.

use irqlab_fio::JobSpec;

/// Options `irqlab rt` refuses, with what it lacks.
const NOT_IN_RT: &[(&str, &str)] = &[
    ("rate", "the runtime has no rate clock"),
    ("rate_iops", "the runtime has no rate clock"),
    ("rate_process", "the runtime has no rate clock"),
    ("thinktime", "the runtime's job loop does not think"),
    ("thinktime_spin", "the runtime's job loop does not think"),
    ("thinktime_blocks", "the runtime's job loop does not think"),
    (
        "thinktime_blocks_type",
        "the runtime's job loop does not think",
    ),
    ("bsrange", "the runtime issues one block size per job"),
    ("bssplit", "the runtime issues one block size per job"),
    ("bs_unaligned", "the runtime issues one block size per job"),
    ("startdelay", "the runtime starts every job at once"),
    ("stonewall", "the runtime starts every job at once"),
    ("randseed", "the runtime seeds its draws from --seed"),
    ("randrepeat", "the runtime seeds its draws from --seed"),
    ("write_lat_log", "the runtime writes no fio logs"),
    ("write_bw_log", "the runtime writes no fio logs"),
    ("write_iops_log", "the runtime writes no fio logs"),
    ("log_avg_msec", "the runtime writes no fio logs"),
    ("per_job_logs", "the runtime writes no fio logs"),
    ("bwavgtime", "the runtime takes no bandwidth samples"),
    ("iopsavgtime", "the runtime takes no IOPS samples"),
];

/// What a job asks for beyond its I/O pattern that the runtime does not do: the
/// options that ask for it (the last one written is blamed) and what the runtime lacks.
fn control(job: &JobSpec) -> Option<(&'static [&'static str], &'static str)> {
    let lacks: [(bool, &'static [&'static str], &'static str); 12] = [
        (
            job.controls.submit_mode == irqlab_fio::SubmitMode::Offload,
            &["io_submit_mode"],
            "the runtime's job loop submits inline",
        ),
        (
            job.controls.sqpoll.is_some(),
            &["sqthread_poll", "sqthread_poll_cpu"],
            "the runtime's io_uring rings have no SQPOLL thread",
        ),
        (
            job.controls.exit.exitall,
            &["exitall", "exit_what"],
            "the runtime runs every job to its own end",
        ),
        (
            job.controls.flow.is_some(),
            &["flow", "flow_id", "flow_sleep"],
            "the runtime has no flow control between jobs",
        ),
        (
            job.controls.rate_min.is_set(),
            &["rate_min", "rate_iops_min"],
            "the runtime has no rate clock",
        ),
        (
            job.controls.latency_target.is_some(),
            &["latency_target"],
            "the runtime keeps the job's iodepth",
        ),
        (
            job.controls.max_latency_ns.is_some(),
            &["max_latency"],
            "the runtime does not end jobs on a latency",
        ),
        (
            job.controls.steadystate.is_some(),
            &["steadystate_duration", "steadystate"],
            "the runtime does not detect steady state",
        ),
        (
            job.controls.wait_for.is_some(),
            &["wait_for"],
            "the runtime starts every job at once",
        ),
        (job.rw.trims(), &["rw"], "the runtime reads and writes only"),
        (
            job.controls.zbd.is_some() && job.rw.writes(),
            &["zonemode"],
            "the runtime keeps no zone write pointers",
        ),
        (
            !job.controls.write_mix.is_empty(),
            &["write_mode"],
            "the runtime issues plain writes",
        ),
    ];
    lacks
        .into_iter()
        .find(|l| l.0)
        .map(|(_, names, why)| (names, why))
}

/// The first option of `jobs` the runtime would not carry out, as FILE:LINE: why.
pub fn refuse_unmodelled(jobs: &[JobSpec]) -> Result<(), crate::RtError> {
    for job in jobs {
        if let Some((names, why)) = control(job) {
            // The option written last of those that ask for it (the one fio uses).
            let written = job
                .options
                .iter()
                .rev()
                .find(|o| names.contains(&o.name.as_str()));
            let (file, line, name) = written
                .map_or((job.file.as_path(), job.line, names[0]), |o| {
                    (o.file.as_path(), o.line, o.name.as_str())
                });
            return Err(crate::RtError::Refused(format!(
                "{}:{line}: job '{}': {name} is not carried out by irqlab rt ({why}); expected the option removed, or irqlab run to simulate it",
                file.display(),
                job.name,
            )));
        }
        for o in &job.options {
            if let Some((_, why)) = NOT_IN_RT.iter().find(|(name, _)| *name == o.name) {
                return Err(crate::RtError::Refused(format!(
                    "{}:{}: job '{}': {} is not carried out by irqlab rt ({why}); expected the option removed, or irqlab run to simulate it",
                    o.file.display(),
                    o.line,
                    job.name,
                    o.name
                )));
            }
        }
    }
    Ok(())
}

/// Engines the runtime does not carry out (its job loop drives the kernel's engines),
/// and a polled policy for an engine that cannot poll, refused as `irqlab run` refuses it
/// ([`irqlab_fio::IoEngine::NO_POLL`]), at the ioengine line.
pub fn refuse_engines(
    jobs: &[JobSpec],
    policy: &irqlab_core::Policy,
) -> Result<(), crate::RtError> {
    let polled_run = matches!(
        policy.delivery,
        irqlab_core::Delivery::Polled | irqlab_core::Delivery::Hybrid
    );
    for job in jobs {
        let (file, line) = job
            .option_at(&["ioengine"])
            .unwrap_or((job.file.as_path(), job.line));
        let engine = job.ioengine;
        if !engine.has_device() || engine == irqlab_fio::IoEngine::PosixAio {
            return Err(crate::RtError::Refused(format!(
                "{}:{line}: job '{}': ioengine={} is not carried out by irqlab rt (its job loop drives libaio, io_uring, pvsync2 and psync); expected one of those, or irqlab run to simulate it",
                file.display(),
                job.name,
                engine.name()
            )));
        }
        if (polled_run || job.hipri) && !engine.can_poll() {
            return Err(crate::RtError::Refused(format!(
                "{}:{line}: job '{}': {} {}",
                file.display(),
                job.name,
                engine.name(),
                irqlab_fio::IoEngine::NO_POLL
            )));
        }
    }
    Ok(())
}

/// A job whose runtime plus ramp_time does not fit the runtime's ns clock (584 years) is
/// refused at the line that set the longer one, rather than wrapped into a run of no time.
pub fn refuse_unfit_times(jobs: &[JobSpec]) -> Result<(), crate::RtError> {
    for job in jobs {
        let Some(runtime) = job.runtime_ns else {
            continue;
        };
        if runtime.checked_add(job.ramp_time_ns).is_some() {
            continue;
        }
        let longer = if runtime >= job.ramp_time_ns {
            "runtime"
        } else {
            "ramp_time"
        };
        let (file, line) = job
            .options
            .iter()
            .rev()
            .find(|o| o.name == longer)
            .map_or((job.file.as_path(), job.line), |o| {
                (o.file.as_path(), o.line)
            });
        return Err(crate::RtError::Refused(format!(
            "{}:{line}: job '{}': runtime + ramp_time is over 584 years, more than the runtime's clock holds; expected a shorter {longer}",
            file.display(),
            job.name
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refusals_name_the_line() {
        let jobs = irqlab_fio::parse_str(
            "[global]\nfilename=/dev/nvme0n1\n[a]\nrw=randread\nrate_iops=1000\n",
            "r.fio".as_ref(),
        )
        .unwrap();
        let e = refuse_unmodelled(&jobs).unwrap_err().to_string();
        assert!(
            e.starts_with("r.fio:5: job 'a': rate_iops is not carried out by irqlab rt"),
            "{e}"
        );
        let ok = irqlab_fio::parse_str(
            "[a]\nfilename=/dev/nvme0n1\nnew_group\ngroup_reporting\ndescription=x\nclat_percentiles=0\n",
            "r.fio".as_ref(),
        )
        .unwrap();
        assert!(refuse_unmodelled(&ok).is_ok());
    }

    #[test]
    fn what_fio_does_besides_the_io_pattern_is_refused_at_its_line() {
        for (line, name) in [
            ("io_submit_mode=offload", "io_submit_mode"),
            ("ioengine=io_uring\nsqthread_poll=1", "sqthread_poll"),
            ("exitall", "exitall"),
            ("flow=2", "flow"),
            ("rate_iops_min=10", "rate_iops_min"),
            ("latency_target=1ms", "latency_target"),
            ("max_latency=1ms", "max_latency"),
            ("ss_dur=2s", "steadystate_duration"),
            ("rw=randtrim", "rw"),
            ("rw=randwrite\nzonemode=zbd\nzonesize=1m", "zonemode"),
            ("ioengine=io_uring_cmd\nwrite_mode=zeroes", "write_mode"),
        ] {
            let text = format!("[a]\nfilename=/dev/nvme0n1\n{line}\n");
            let jobs = irqlab_fio::parse_str(&text, "c.fio".as_ref()).unwrap();
            let e = refuse_unmodelled(&jobs).unwrap_err().to_string();
            let at = 3 + line
                .lines()
                .position(|l| {
                    l.starts_with(name)
                        || (name == "steadystate_duration" && l.starts_with("ss_dur"))
                })
                .unwrap();
            let want = format!("c.fio:{at}: job 'a': {name} is not carried out by irqlab rt");
            assert!(e.starts_with(&want), "{line}: {e}");
        }
        // Inline submission and a zoned job that only reads are the runtime's.
        let ok = irqlab_fio::parse_str(
            "[a]\nfilename=/dev/nvme0n1\nio_submit_mode=inline\nzonemode=zbd\nzonesize=1m\n",
            "c.fio".as_ref(),
        )
        .unwrap();
        assert!(refuse_unmodelled(&ok).is_ok());
        let wf = irqlab_fio::parse_str(
            "[a]\nfilename=/dev/nvme0n1\n[b]\nfilename=/dev/nvme0n1\nwait_for=a\n",
            "c.fio".as_ref(),
        )
        .unwrap();
        assert!(
            refuse_unmodelled(&wf)
                .unwrap_err()
                .to_string()
                .starts_with("c.fio:5: job 'b': wait_for")
        );
    }

    #[test]
    fn times_that_overflow_the_clock_are_refused_at_their_line() {
        let jobs = irqlab_fio::parse_str(
            "[a]\nfilename=/dev/nvme0n1\ntime_based\nruntime=18446744073s\nramp_time=1s\n",
            "t.fio".as_ref(),
        )
        .unwrap();
        let e = refuse_unfit_times(&jobs).unwrap_err().to_string();
        assert!(
            e.starts_with("t.fio:4: job 'a': runtime + ramp_time is over 584 years"),
            "{e}"
        );
        let jobs = irqlab_fio::parse_str(
            "[a]\nfilename=/dev/nvme0n1\nruntime=1s\nramp_time=18446744073s\n",
            "t.fio".as_ref(),
        )
        .unwrap();
        let e = refuse_unfit_times(&jobs).unwrap_err().to_string();
        assert!(e.starts_with("t.fio:4: "), "{e}");
        assert!(e.ends_with("expected a shorter ramp_time"), "{e}");
        let ok = irqlab_fio::parse_str(
            "[a]\nfilename=/dev/nvme0n1\nruntime=1h\nramp_time=1s\n",
            "t.fio".as_ref(),
        )
        .unwrap();
        assert!(refuse_unfit_times(&ok).is_ok());
    }
}
