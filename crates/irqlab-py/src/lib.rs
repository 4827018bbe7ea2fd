//! irqlab from Python: the `irqlab._native` extension module. The Python package
//! (python/irqlab) wraps it: `run`, `reproduce`, `calibrate`, `sweep` (threads here or a
//! Dask cluster), and the mechanisms (a posted descriptor, the moderators). Every call
//! that simulates releases the GIL, so threads of one process simulate in parallel.

mod calib;
mod mechanisms;
mod run;
mod sweep;

use pyo3::create_exception;
use pyo3::prelude::*;

create_exception!(
    _native,
    IrqlabError,
    pyo3::exceptions::PyException,
    "A job, platform, option or run that irqlab refused; the message names the file or option."
);

/// Any library error as an IrqlabError with its message.
pub(crate) fn err(e: impl std::fmt::Display) -> PyErr {
    IrqlabError::new_err(e.to_string())
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("IrqlabError", m.py().get_type::<IrqlabError>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    run::register(m)?;
    sweep::register(m)?;
    calib::register(m)?;
    mechanisms::register(m)?;
    Ok(())
}
