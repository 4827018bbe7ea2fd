//! The mechanisms on their own, for prototyping in Python: the posted-interrupt
//! descriptor with post and the demux loop (irqlab_core::posted), the per-queue adaptive
//! moderators stepping on samples (irqlab_core::moderator), and the seeded burst replay
//! of `irqlab demo`.

use crate::args::whole;
use crate::err;
use irqlab_core::moderator::{LevelRequest, Moderator as CoreModerator};
use irqlab_core::posted::{
    Demux, FIRST_EXTERNAL_VECTOR, FIRST_SYSTEM_VECTOR, POSTED_MSI_NOTIFICATION_VECTOR, PiDesc,
    PirSnapshot,
};
use irqlab_inputs::{PolicyArgs, PolicyKey};
use pyo3::prelude::*;
use std::sync::Mutex;

/// The vectors set in a snapshot of PIR words (as ints: a Vec<u8> would be bytes).
fn vectors_of(snap: &PirSnapshot) -> Vec<u16> {
    snap.vectors().map(u16::from).collect()
}

#[pyclass(module = "irqlab._native", frozen)]
struct PostedDescriptor {
    // Boxed: PiDesc is 64-byte aligned (a cache line, as the kernel's pi_desc), more than
    // a Python object's storage guarantees.
    desc: Box<PiDesc>,
}

#[pymethods]
impl PostedDescriptor {
    #[new]
    #[pyo3(signature = (nv=None, ndst=None))]
    fn new(
        nv: Option<&Bound<'_, PyAny>>,
        ndst: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PostedDescriptor> {
        let nv = nv.map_or(Ok(POSTED_MSI_NOTIFICATION_VECTOR), |v| {
            whole(v, "nv", 0, 255)
        })?;
        let ndst = ndst.map_or(Ok(0), |v| whole(v, "ndst", 0, i128::from(u32::MAX)))?;
        Ok(PostedDescriptor {
            desc: Box::new(PiDesc::new(nv, ndst)),
        })
    }

    /// Posts `vector` (sets its PIR bit); True when this post set ON and so sends the
    /// notification (pi_test_and_set_on found it clear and SN clear). Only the vectors
    /// the notification handler dispatches (FIRST_EXTERNAL_VECTOR 32 up to
    /// FIRST_SYSTEM_VECTOR 235, exclusive) can be posted: any other would set a bit the
    /// handler drops, and never appear.
    fn post(&self, vector: &Bound<'_, PyAny>) -> PyResult<bool> {
        let v: u8 = whole(
            vector,
            "vector",
            i128::from(FIRST_EXTERNAL_VECTOR),
            i128::from(FIRST_SYSTEM_VECTOR) - 1,
        )?;
        Ok(self.desc.post(v))
    }

    #[getter]
    fn on(&self) -> bool {
        self.desc.on()
    }

    #[getter]
    fn sn(&self) -> bool {
        self.desc.sn()
    }

    /// Suppress notifications (the vCPU/CPU is not running the handler's context).
    fn set_sn(&self) {
        self.desc.set_sn()
    }

    /// Clears SN; True when vectors are pending (the caller should notify itself).
    fn clear_sn(&self) -> bool {
        self.desc.clear_sn()
    }

    /// Vectors whose PIR bit is set, lowest first.
    fn pending(&self) -> Vec<u16> {
        vectors_of(&PirSnapshot::from_words(
            self.desc.pending_words(),
            0,
            false,
        ))
    }

    /// The notification handler: handle_pending_pir rounds until the demux loop is done
    /// (at most `max_loop` rounds with ON set, then ON cleared and one extra round). Each
    /// inner list is one round's dispatched vectors.
    #[pyo3(signature = (max_loop=None))]
    fn demux(&self, max_loop: Option<&Bound<'_, PyAny>>) -> PyResult<Vec<Vec<u16>>> {
        let max_loop = max_loop.map_or(Ok(3), |v| whole(v, "max_loop", 1, 64))?;
        let mut demux = Demux::new(max_loop);
        let mut rounds = Vec::new();
        while let Some(snap) = demux.next_round(&self.desc) {
            rounds.push(vectors_of(&snap));
        }
        Ok(rounds)
    }
}

fn level_dict(py: Python<'_>, r: LevelRequest) -> PyResult<Py<PyAny>> {
    let d = pyo3::types::PyDict::new(py);
    d.set_item("level", r.level)?;
    d.set_item("usec", r.profile.usec)?;
    d.set_item("count", r.profile.count)?;
    Ok(d.into_any().unbind())
}

#[pyclass(module = "irqlab._native")]
struct Moderator {
    inner: Mutex<CoreModerator>,
    kind: String,
}

impl Moderator {
    fn with<R>(&self, f: impl FnOnce(&mut CoreModerator) -> R) -> PyResult<R> {
        let mut m = self
            .inner
            .lock()
            .map_err(|_| err("the moderator was poisoned by a panic"))?;
        Ok(f(&mut m))
    }
}

#[pymethods]
impl Moderator {
    /// A per-queue moderator: "net-dim", "rdma-dim" or "irq-am" (`nr_events`: irq-am's
    /// measurement window in events).
    #[new]
    #[pyo3(signature = (kind, nr_events=None))]
    fn new(kind: &str, nr_events: Option<&Bound<'_, PyAny>>) -> PyResult<Moderator> {
        let nr_events: Option<u16> = nr_events
            .map(|v| whole(v, "nr_events", 1, i128::from(u16::MAX)))
            .transpose()?;
        let mut p = PolicyArgs::default();
        PolicyKey::Moderator.apply(&mut p, kind).map_err(err)?;
        let core_kind = p.policy().moderator;
        let m = CoreModerator::new(core_kind, None)
            .map_err(err)?
            .ok_or_else(|| {
                err(format!(
                    "'{kind}' is not a per-queue moderator (gsim is a per-CPU delay, none \
                     moderates nothing); use net-dim, rdma-dim or irq-am"
                ))
            })?;
        let m = match nr_events {
            Some(n) => m.with_nr_events(n).map_err(err)?,
            None => m,
        };
        Ok(Moderator {
            inner: Mutex::new(m),
            kind: core_kind.to_string(),
        })
    }

    /// One interrupt or poll round at `now_ns` that reaped `completions` CQEs carrying
    /// `bytes`; a dict {level, usec, count} when the moderator asks for a new level
    /// (program it, then call `ack()`), else None.
    #[pyo3(signature = (now_ns, completions, bytes=None))]
    fn on_event(
        &self,
        py: Python<'_>,
        now_ns: &Bound<'_, PyAny>,
        completions: &Bound<'_, PyAny>,
        bytes: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Option<Py<PyAny>>> {
        let now_ns: u64 = whole(now_ns, "now_ns", 0, i128::from(u64::MAX))?;
        let completions: u32 = whole(completions, "completions", 0, i128::from(u32::MAX))?;
        let bytes: u64 = bytes.map_or(Ok(0), |v| whole(v, "bytes", 0, i128::from(u64::MAX)))?;
        let r = self.with(|m| m.on_event(now_ns, completions, bytes))?;
        r.map(|r| level_dict(py, r)).transpose()
    }

    /// The asked-for level is programmed.
    fn ack(&self) -> PyResult<()> {
        self.with(|m| m.ack())
    }

    /// Feeds `samples` of (now_ns, completions, bytes), acknowledging every request at
    /// once; returns the level after each sample.
    fn step(&self, samples: Vec<(u64, u32, u64)>) -> PyResult<Vec<usize>> {
        self.with(|m| {
            samples
                .iter()
                .map(|&(now, n, bytes)| {
                    if m.on_event(now, n, bytes).is_some() {
                        m.ack();
                    }
                    m.level()
                })
                .collect()
        })
    }

    #[getter]
    fn kind(&self) -> String {
        self.kind.clone()
    }

    #[getter]
    fn level(&self) -> PyResult<usize> {
        self.with(|m| m.level())
    }

    /// (usec, count) of the current level.
    #[getter]
    fn profile(&self) -> PyResult<(u16, u16)> {
        self.with(|m| (m.profile().usec, m.profile().count))
    }

    /// (usec, count) of every level.
    #[getter]
    fn levels(&self) -> PyResult<Vec<(u16, u16)>> {
        self.with(|m| m.levels().iter().map(|p| (p.usec, p.count)).collect())
    }

    #[getter]
    fn tune_state(&self) -> PyResult<&'static str> {
        self.with(|m| m.tune_state())
    }

    /// Debugfs-style counters.
    #[getter]
    fn counters(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let c = self.with(|m| m.counters())?;
        let d = pyo3::types::PyDict::new(py);
        d.set_item("events", c.events)?;
        d.set_item("windows", c.windows)?;
        d.set_item("decisions", c.decisions)?;
        d.set_item("level_changes", c.level_changes)?;
        d.set_item("samples_ignored", c.samples_ignored)?;
        d.set_item("programs", c.programs)?;
        Ok(d.into_any().unbind())
    }
}

/// `irqlab demo`'s replay: a seeded burst through remapped and posted delivery. Returns
/// (text as `irqlab demo` prints it, {delivery: {notifications, handled, busy_ns,
/// mean_latency_ns, max_latency_ns}}).
#[pyfunction]
#[pyo3(signature = (vectors=8, messages=20_000, max_loop=3, seed=1, gap_ns=800, handler_ns=500, notify_ns=600, round_ns=40))]
#[allow(clippy::too_many_arguments)]
fn burst(
    py: Python<'_>,
    vectors: u32,
    messages: u64,
    max_loop: u32,
    seed: u64,
    gap_ns: u64,
    handler_ns: u64,
    notify_ns: u64,
    round_ns: u64,
) -> PyResult<(String, Py<PyAny>)> {
    let b = irqlab_burst::Burst {
        vectors,
        messages,
        max_loop,
        seed,
        gap_ns,
        handler_ns,
        notify_ns,
        round_ns,
    };
    let r = py.detach(|| irqlab_burst::replay(&b)).map_err(err)?;
    let out = pyo3::types::PyDict::new(py);
    for (name, o) in [("remapped", &r.remapped), ("posted", &r.posted)] {
        let d = pyo3::types::PyDict::new(py);
        d.set_item("notifications", o.notifications)?;
        d.set_item("handled", o.handled.clone())?;
        d.set_item("busy_ns", o.busy_ns)?;
        d.set_item("mean_latency_ns", o.latency_sum as f64 / messages as f64)?;
        d.set_item("max_latency_ns", o.latency_max)?;
        out.set_item(name, d)?;
    }
    Ok((irqlab_burst::render(&b, &r), out.into_any().unbind()))
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PostedDescriptor>()?;
    m.add_class::<Moderator>()?;
    m.add_function(wrap_pyfunction!(burst, m)?)
}
