//! The numpy results of bulk calls, named.

use numpy::{PyArray1, PyArray2};
use pyo3::prelude::*;

/// A 1-D numpy array.
pub type Array1<'py, T> = Bound<'py, PyArray1<T>>;

/// A 2-D numpy array.
pub type Array2<'py, T> = Bound<'py, PyArray2<T>>;

/// Values and a mask (or a second column) of the same length.
pub type Pair<'py, A, B> = (Array1<'py, A>, Array1<'py, B>);
