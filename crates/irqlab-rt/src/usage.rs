//! getrusage(2): CPU time and context switches of the process or of one thread.

/// One getrusage sample.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Usage {
    pub usr_ns: u64,
    pub sys_ns: u64,
    /// ru_nvcsw: the thread blocked (our futex waits).
    pub voluntary_ctx: u64,
    /// ru_nivcsw: the scheduler preempted it.
    pub involuntary_ctx: u64,
}

impl Usage {
    /// The whole process (RUSAGE_SELF), every thread included.
    pub fn process() -> Usage {
        sample(libc::RUSAGE_SELF)
    }

    /// The calling thread only (RUSAGE_THREAD, Linux 2.6.26+).
    pub fn thread() -> Usage {
        sample(libc::RUSAGE_THREAD)
    }

    /// What happened between `earlier` and `self`.
    pub fn since(&self, earlier: &Usage) -> Usage {
        Usage {
            usr_ns: self.usr_ns.saturating_sub(earlier.usr_ns),
            sys_ns: self.sys_ns.saturating_sub(earlier.sys_ns),
            voluntary_ctx: self.voluntary_ctx.saturating_sub(earlier.voluntary_ctx),
            involuntary_ctx: self.involuntary_ctx.saturating_sub(earlier.involuntary_ctx),
        }
    }

    pub fn cpu_ns(&self) -> u64 {
        self.usr_ns + self.sys_ns
    }

    pub fn ctx(&self) -> u64 {
        self.voluntary_ctx + self.involuntary_ctx
    }
}

fn sample(who: libc::c_int) -> Usage {
    // SAFETY: rusage is plain old data; getrusage only writes into the struct we own.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: a valid `who` and a valid pointer; on failure the struct stays zeroed.
    let rc = unsafe { libc::getrusage(who, &mut ru) };
    if rc != 0 {
        return Usage::default();
    }
    let tv = |t: libc::timeval| t.tv_sec as u64 * 1_000_000_000 + t.tv_usec as u64 * 1_000;
    Usage {
        usr_ns: tv(ru.ru_utime),
        sys_ns: tv(ru.ru_stime),
        voluntary_ctx: ru.ru_nvcsw as u64,
        involuntary_ctx: ru.ru_nivcsw as u64,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn burning_cpu_and_sleeping_show_up_in_the_thread_sample() {
        let before = Usage::thread();
        let mut x = 0u64;
        let end = crate::clock::now_ns() + 30_000_000;
        while crate::clock::now_ns() < end {
            x = x.wrapping_add(std::hint::black_box(1));
        }
        std::thread::sleep(std::time::Duration::from_millis(2));
        let d = Usage::thread().since(&before);
        assert!(x > 0);
        assert!(d.cpu_ns() >= 10_000_000, "{d:?}");
        assert!(
            d.voluntary_ctx >= 1,
            "sleeping is a voluntary switch: {d:?}"
        );
        assert!(Usage::process().cpu_ns() >= d.cpu_ns());
    }
}
