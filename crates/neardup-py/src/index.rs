//! `HammingIndex`: exact search of 64-bit fingerprints within a Hamming distance
//! (`neardup-index`, permuted block tables).

use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};

use numpy::{PyArray1, PyReadonlyArray1};
use pyo3::prelude::*;

use neardup_index::{HammingIndex as Index, Layout, Match};

use crate::arrays::Array1;
use crate::errors::index_error;
use crate::threads;

/// An exact index of ``(fingerprint, handle)`` entries: every search returns exactly the
/// entries within the distance. ``max_distance`` is the largest distance it answers (default
/// 3); ``capacity`` (expected entries, default 2**20) and ``memory_budget`` (bytes, default
/// 8 GiB) choose the layout.
#[pyclass(module = "neardup", frozen)]
pub struct HammingIndex {
    inner: RwLock<Index>,
}

impl HammingIndex {
    fn read(&self) -> RwLockReadGuard<'_, Index> {
        self.inner.read().unwrap_or_else(|e| e.into_inner())
    }
    fn write(&self) -> RwLockWriteGuard<'_, Index> {
        self.inner.write().unwrap_or_else(|e| e.into_inner())
    }
}

#[pymethods]
impl HammingIndex {
    #[new]
    #[pyo3(signature = (max_distance = 3, capacity = 1 << 20, memory_budget = 8 << 30))]
    fn new(max_distance: u32, capacity: u64, memory_budget: u64) -> PyResult<Self> {
        let layout =
            Layout::plan(capacity.max(1), max_distance, memory_budget).map_err(index_error)?;
        Ok(HammingIndex {
            inner: RwLock::new(Index::new(layout)),
        })
    }

    /// Adds one entry.
    fn insert(&self, py: Python<'_>, fingerprint: u64, handle: u32) -> PyResult<()> {
        py.allow_threads(|| self.write().insert(fingerprint, handle))
            .map_err(index_error)
    }

    /// Adds many entries: ``fingerprints`` (``uint64``) with ``handles`` (``uint32``, default
    /// ``0, 1, 2, …`` after the current length).
    #[pyo3(signature = (fingerprints, handles = None))]
    fn insert_many(
        &self,
        py: Python<'_>,
        fingerprints: PyReadonlyArray1<'_, u64>,
        handles: Option<PyReadonlyArray1<'_, u32>>,
    ) -> PyResult<()> {
        let (fps, hs) = entries_of(fingerprints, handles)?;
        py.allow_threads(|| {
            let mut ix = self.write();
            let base = ix.len() as u32;
            for (i, &f) in fps.iter().enumerate() {
                let h = hs.as_ref().map_or(base + i as u32, |h| h[i]);
                ix.insert(f, h)?;
            }
            ix.flush();
            Ok(())
        })
        .map_err(index_error)
    }

    /// Removes one entry; False when it was not there.
    fn remove(&self, py: Python<'_>, fingerprint: u64, handle: u32) -> bool {
        py.allow_threads(|| self.write().remove(fingerprint, handle))
    }

    /// The entries within distance ``k`` (default: ``max_distance``) of ``fingerprint``, as
    /// ``(handle, distance)`` pairs, nearest first (then by handle).
    #[pyo3(signature = (fingerprint, k = None))]
    fn search(&self, py: Python<'_>, fingerprint: u64, k: Option<u32>) -> PyResult<Vec<(u32, u8)>> {
        let ms = py
            .allow_threads(|| {
                let ix = self.read();
                ix.search(fingerprint, k.unwrap_or(ix.max_distance()))
            })
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
        let r = threads::run(py, threads, || {
            let ix = self.read();
            ix.search_batch(&qs, k.unwrap_or(ix.max_distance()))
        })?
        .map_err(index_error)?;
        Ok(match_arrays(py, r))
    }

    /// The largest distance the index answers.
    #[getter]
    fn max_distance(&self) -> u32 {
        self.read().max_distance()
    }

    /// The layout's name (e.g. ``m4``).
    #[getter]
    fn layout(&self) -> String {
        self.read().layout().name()
    }

    fn __len__(&self) -> usize {
        self.read().len()
    }

    fn __repr__(&self) -> String {
        let ix = self.read();
        format!(
            "HammingIndex(len={}, max_distance={}, layout={})",
            ix.len(),
            ix.max_distance(),
            ix.layout().name()
        )
    }
}

/// One query's matches as Python sees them: ``(handle, distance)``, nearest first, then by
/// handle.
pub(crate) fn match_pairs(mut ms: Vec<Match>) -> Vec<(u32, u8)> {
    ms.sort_unstable_by_key(|m| (m.distance, m.handle));
    ms.into_iter().map(|m| (m.handle, m.distance)).collect()
}

/// Many queries' matches as three arrays, ``(query, handle, distance)``, one row per match, by
/// query, each query's nearest first.
pub(crate) fn match_arrays<'py>(
    py: Python<'py>,
    results: Vec<Vec<Match>>,
) -> (Array1<'py, u32>, Array1<'py, u32>, Array1<'py, u8>) {
    let (mut q, mut h, mut d) = (Vec::new(), Vec::new(), Vec::new());
    for (i, ms) in results.into_iter().enumerate() {
        for (handle, distance) in match_pairs(ms) {
            q.push(i as u32);
            h.push(handle);
            d.push(distance);
        }
    }
    (
        PyArray1::from_vec(py, q),
        PyArray1::from_vec(py, h),
        PyArray1::from_vec(py, d),
    )
}

/// ``fingerprints`` and, when given, ``handles`` as vectors: one handle per fingerprint, or a
/// ``ValueError`` that says so.
pub(crate) fn entries_of(
    fingerprints: PyReadonlyArray1<'_, u64>,
    handles: Option<PyReadonlyArray1<'_, u32>>,
) -> PyResult<(Vec<u64>, Option<Vec<u32>>)> {
    let fps: Vec<u64> = fingerprints.as_array().iter().copied().collect();
    let hs: Option<Vec<u32>> = handles.map(|h| h.as_array().iter().copied().collect());
    if let Some(h) = &hs {
        if h.len() != fps.len() {
            return Err(pyo3::exceptions::PyValueError::new_err(format!(
                "{} handles for {} fingerprints; pass one handle per fingerprint",
                h.len(),
                fps.len()
            )));
        }
    }
    Ok((fps, hs))
}
