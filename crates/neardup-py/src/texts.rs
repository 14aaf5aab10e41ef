//! Text arguments: one `str`, or a sequence of them (borrowed from Python, not copied).

use pyo3::prelude::*;
use pyo3::pybacked::PyBackedStr;
use pyo3::types::PyString;

/// One text or many.
pub enum Texts {
    /// A single `str`: the result is a scalar.
    One(PyBackedStr),
    /// A list (or any sequence) of `str`: the result is an array.
    Many(Vec<PyBackedStr>),
}

impl<'py> FromPyObject<'py> for Texts {
    fn extract_bound(ob: &Bound<'py, PyAny>) -> PyResult<Self> {
        if ob.is_instance_of::<PyString>() {
            return one(ob, None).map(Texts::One);
        }
        many(ob).map(Texts::Many)
    }
}

/// A `str` as UTF-8; a `str` that has none (lone surrogates) is a `ValueError` naming the
/// document.
fn one(ob: &Bound<'_, PyAny>, i: Option<usize>) -> PyResult<PyBackedStr> {
    ob.extract::<PyBackedStr>().map_err(|e| {
        let at = i.map_or(String::new(), |i| format!("document {i}: "));
        if ob.is_instance_of::<PyString>() {
            pyo3::exceptions::PyValueError::new_err(format!(
                "{at}the text is not valid Unicode ({}); neardup reads UTF-8 text",
                e.value(ob.py())
            ))
        } else {
            pyo3::exceptions::PyTypeError::new_err(format!(
                "{at}expected a str, got {}",
                type_name(ob)
            ))
        }
    })
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
        out.push(one(&item, Some(i))?);
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
