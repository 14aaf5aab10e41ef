//! Text arguments: one `str`, or a sequence of them (borrowed from Python, not copied).

use pyo3::prelude::*;
use pyo3::pybacked::PyBackedStr;

/// One text or many.
pub enum Texts {
    /// A single `str`: the result is a scalar.
    One(PyBackedStr),
    /// A list (or any sequence) of `str`: the result is an array.
    Many(Vec<PyBackedStr>),
}

impl<'py> FromPyObject<'py> for Texts {
    fn extract_bound(ob: &Bound<'py, PyAny>) -> PyResult<Self> {
        if let Ok(s) = ob.extract::<PyBackedStr>() {
            return Ok(Texts::One(s));
        }
        many(ob).map(Texts::Many)
    }
}

/// A sequence of `str`, with an error naming the first item that is not one.
pub fn many(ob: &Bound<'_, PyAny>) -> PyResult<Vec<PyBackedStr>> {
    if let Ok(v) = ob.extract::<Vec<PyBackedStr>>() {
        return Ok(v);
    }
    let iter = ob.try_iter().map_err(|_| {
        pyo3::exceptions::PyTypeError::new_err(format!(
            "expected a str or a sequence of str, got {}",
            type_name(ob)
        ))
    })?;
    let mut out = Vec::new();
    for (i, item) in iter.enumerate() {
        let item = item?;
        out.push(item.extract::<PyBackedStr>().map_err(|_| {
            pyo3::exceptions::PyTypeError::new_err(format!(
                "document {i}: expected a str, got {}",
                type_name(&item)
            ))
        })?);
    }
    Ok(out)
}

fn type_name(ob: &Bound<'_, PyAny>) -> String {
    ob.get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "?".into())
}

/// `document i: <message>` for errors of one document of a batch.
pub fn at(i: usize, e: neardup::Error) -> PyErr {
    let err = crate::errors::lib_error(e);
    Python::with_gil(|py| {
        let msg = format!("document {i}: {}", err.value(py));
        PyErr::from_type(err.get_type(py), msg)
    })
}
