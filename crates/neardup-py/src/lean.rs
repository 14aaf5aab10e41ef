//! `LeanIndex`: exact search at distance 3 or less in about 15.5 bytes per fingerprint, built
//! once (`neardup_index::LeanIndex`: two tables and one-bit query flips).

use numpy::PyReadonlyArray1;
use pyo3::prelude::*;

use neardup_index::LeanIndex as Index;

use crate::arrays::Array1;
use crate::errors::index_error;
use crate::index::{entries_of, match_arrays, match_pairs};
use crate::threads;

/// An exact index of ``(fingerprint, handle)`` entries for distances up to 3, built once from
/// ``fingerprints`` (``uint64``) and ``handles`` (``uint32``, default ``0, 1, 2, …``), in about
/// 15.5 bytes per entry (:class:`HammingIndex` takes 40 or more): for tens of millions of
/// fingerprints in little memory. Searches answer exactly what :class:`HammingIndex` answers.
#[pyclass(module = "neardup", frozen)]
pub struct LeanIndex {
    inner: Index,
}

#[pymethods]
impl LeanIndex {
    #[new]
    #[pyo3(signature = (fingerprints, handles = None))]
    fn new(
        py: Python<'_>,
        fingerprints: PyReadonlyArray1<'_, u64>,
        handles: Option<PyReadonlyArray1<'_, u32>>,
    ) -> PyResult<Self> {
        let (fps, hs) = entries_of(fingerprints, handles)?;
        let inner = py
            .allow_threads(|| match hs {
                None => Index::from_fingerprints(&fps),
                Some(hs) => {
                    let entries: Vec<(u64, u32)> = fps.into_iter().zip(hs).collect();
                    Index::build(&entries)
                }
            })
            .map_err(index_error)?;
        Ok(LeanIndex { inner })
    }

    /// The entries within distance ``k`` (default 3) of ``fingerprint``, as ``(handle,
    /// distance)`` pairs, nearest first (then by handle).
    #[pyo3(signature = (fingerprint, k = None))]
    fn search(&self, py: Python<'_>, fingerprint: u64, k: Option<u32>) -> PyResult<Vec<(u32, u8)>> {
        let k = k.unwrap_or(self.inner.max_distance());
        let ms = py
            .allow_threads(|| self.inner.search(fingerprint, k))
            .map_err(index_error)?;
        Ok(match_pairs(ms))
    }

    /// :meth:`search` for many queries, in parallel: ``(query, handle, distance)`` as three
    /// arrays (``uint32``, ``uint32``, ``uint8``), one row per match, by query.
    #[pyo3(signature = (fingerprints, k = None, *, threads = 0))]
    fn search_many<'py>(
        &self,
        py: Python<'py>,
        fingerprints: PyReadonlyArray1<'py, u64>,
        k: Option<u32>,
        threads: usize,
    ) -> PyResult<(Array1<'py, u32>, Array1<'py, u32>, Array1<'py, u8>)> {
        let qs: Vec<u64> = fingerprints.as_array().iter().copied().collect();
        let k = k.unwrap_or(self.inner.max_distance());
        let r =
            threads::run(py, threads, || self.inner.search_batch(&qs, k))?.map_err(index_error)?;
        Ok(match_arrays(py, r))
    }

    /// The largest distance the index answers (3).
    #[getter]
    fn max_distance(&self) -> u32 {
        self.inner.max_distance()
    }

    /// Bytes the index holds.
    #[getter]
    fn nbytes(&self) -> usize {
        self.inner.heap_bytes()
    }

    fn __len__(&self) -> usize {
        self.inner.len()
    }

    fn __repr__(&self) -> String {
        format!(
            "LeanIndex(len={}, max_distance={}, nbytes={})",
            self.inner.len(),
            self.inner.max_distance(),
            self.inner.heap_bytes()
        )
    }
}
