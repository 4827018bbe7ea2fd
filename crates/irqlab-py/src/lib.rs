//! irqlab from Python: the `irqlab._native` extension module. The Python package
//! (python/irqlab) wraps it: `run`, `reproduce`, `calibrate`, `sweep` (threads here or a
//! Dask cluster), the mechanisms (a posted descriptor, the moderators), and your machine:
//! `capture`, `platform_from_capture`, `advise`. Every call
//! that simulates releases the GIL, so threads of one process simulate in parallel.

mod args;
mod calib;
mod machine;
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

/// Adds `dir` (a folder holding platforms/ and scenarios/, as the wheel carries them)
/// to where bare platform and scenario names are looked up, after the current directory.
#[pyfunction]
fn add_data_dir(dir: std::path::PathBuf) {
    irqlab_inputs::locate::add_search_dir(dir);
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("IrqlabError", m.py().get_type::<IrqlabError>())?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add_function(wrap_pyfunction!(add_data_dir, m)?)?;
    run::register(m)?;
    sweep::register(m)?;
    calib::register(m)?;
    mechanisms::register(m)?;
    machine::register(m)?;
    Ok(())
}
