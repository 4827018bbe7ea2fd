//! Whole-number arguments of the native classes checked by name: a value out of range
//! (negative, 2**200) is a ValueError that names the argument and its range, not a bare
//! OverflowError from the conversion.

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;

/// `value` as a whole number in `lo..=hi`, or an error naming `name` and the range.
pub(crate) fn whole<T: TryFrom<i128>>(
    value: &Bound<'_, PyAny>,
    name: &str,
    lo: i128,
    hi: i128,
) -> PyResult<T> {
    let range = || format!("expected a whole number from {lo} to {hi}");
    if value.is_instance_of::<pyo3::types::PyBool>()
        || !value.is_instance_of::<pyo3::types::PyInt>()
    {
        return Err(PyTypeError::new_err(format!(
            "{name}={}: {}",
            value.repr()?,
            range()
        )));
    }
    let shown = value.str()?;
    match value.extract::<i128>() {
        Ok(v) if (lo..=hi).contains(&v) => T::try_from(v)
            .map_err(|_| PyValueError::new_err(format!("{name}={shown}: {}", range()))),
        _ => Err(PyValueError::new_err(format!(
            "{name}={shown}: {}",
            range()
        ))),
    }
}
