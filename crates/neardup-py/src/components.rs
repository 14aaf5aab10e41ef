//! `components`: connected components of a graph given as two arrays of node numbers — the
//! single-linkage clusters of confirmed pairs, as `neardup dedup --linkage components` forms
//! them ([`neardup::dedup::union_find`]).

use numpy::{PyArray1, PyReadonlyArray1};
use pyo3::prelude::*;

use crate::arrays::Array1;

/// The connected components of nodes ``0 … n - 1`` linked by the edges ``(a[i], b[i])`` (two
/// ``numpy.int64`` arrays of one length): each node's component's smallest node, as a
/// ``numpy.uint32`` array of ``n`` values. ``ValueError`` when the arrays differ in length,
/// when an edge names a node outside ``0 … n - 1``, or when ``n`` exceeds ``2**32``.
#[pyfunction]
pub fn components<'py>(
    py: Python<'py>,
    n: usize,
    a: PyReadonlyArray1<'py, i64>,
    b: PyReadonlyArray1<'py, i64>,
) -> PyResult<Array1<'py, u32>> {
    let value_error = pyo3::exceptions::PyValueError::new_err;
    if n > 1 << 32 {
        return Err(value_error(format!(
            "n = {n}: at most 2**32 nodes; split the graph"
        )));
    }
    let (a, b) = (a.as_array(), b.as_array());
    if a.len() != b.len() {
        return Err(value_error(format!(
            "a has {} edges and b has {}; pass one node of b per node of a",
            a.len(),
            b.len()
        )));
    }
    let mut edges = Vec::with_capacity(a.len());
    for (i, (&x, &y)) in a.iter().zip(b.iter()).enumerate() {
        if x < 0 || y < 0 || x as u64 >= n as u64 || y as u64 >= n as u64 {
            return Err(value_error(format!(
                "edge {i} ({x}, {y}) names a node outside 0 … {}; nodes are numbered from 0 to n - 1",
                n as i64 - 1
            )));
        }
        edges.push((x as u32, y as u32));
    }
    let roots = py.allow_threads(|| neardup::dedup::union_find::components(n, edges));
    Ok(PyArray1::from_vec(py, roots))
}
