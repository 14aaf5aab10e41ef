//! Library errors as Python exceptions. The classes live in `neardup/errors.py` (so that they
//! can derive from both `NeardupError` and `ValueError`); the messages are the library's own.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyType;

use neardup::engine::EngineError;

/// The exception class `name` of `neardup.errors`.
fn class<'py>(py: Python<'py>, name: &str) -> PyResult<Bound<'py, PyType>> {
    Ok(py
        .import("neardup.errors")?
        .getattr(name)?
        .downcast_into::<PyType>()?)
}

/// A `neardup.errors.<name>` exception carrying `message`.
pub fn raise(name: &'static str, message: String) -> PyErr {
    Python::with_gil(|py| match class(py, name) {
        Ok(t) => PyErr::from_type(t, message),
        // The package's Python half is missing (the extension imported on its own).
        Err(_) => PyValueError::new_err(message),
    })
}

/// The exception of a library error.
pub fn lib_error(e: neardup::Error) -> PyErr {
    match e {
        neardup::Error::EmptyDocument { .. } => raise("EmptyDocumentError", e.to_string()),
        neardup::Error::Io { .. } => raise("ConfigError", e.to_string()),
        e => raise("ConfigError", e.to_string()),
    }
}

/// The exception of an engine error.
pub fn engine_error(e: EngineError) -> PyErr {
    match e {
        EngineError::Fingerprint(inner) => lib_error(inner),
        EngineError::InvalidId { .. } | EngineError::TextRequired { .. } => {
            PyValueError::new_err(e.to_string())
        }
        EngineError::InvalidConfig(_) => raise("ConfigError", e.to_string()),
        EngineError::ConfigMismatch { .. } => raise("ConfigMismatchError", e.to_string()),
        e => raise("EngineError", e.to_string()),
    }
}

/// The exception of a Hamming index error (a distance the layout cannot answer, a bad layout).
pub fn index_error(e: neardup_index::Error) -> PyErr {
    raise("ConfigError", e.to_string())
}

/// A `ConfigError` with `message`.
pub fn config(message: impl Into<String>) -> PyErr {
    raise("ConfigError", message.into())
}
