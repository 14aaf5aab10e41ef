//! `Deduper`: streaming deduplication under the online rule — the library's [`Deduper`] with
//! [`Linkage::Kept`], one document (or one batch) at a time, as `neardup serve` decides.
//!
//! [`Deduper`]: neardup::dedup::Deduper
//! [`Linkage::Kept`]: neardup::dedup::Linkage::Kept

use std::sync::{Mutex, MutexGuard};

use pyo3::prelude::*;
use pyo3::pybacked::PyBackedStr;
use pyo3::types::PyDict;

use neardup::dedup::{Assignment, Linkage};
use neardup::detect::Verdict;

use crate::decision::{Decision, Ids};
use crate::errors::lib_error;
use crate::options::Options;
use crate::spec::{take_spec, SPEC_OPTIONS};
use crate::stream::{self, Stream};
use crate::texts::at;
use crate::threads;

struct Inner {
    stream: Box<dyn Stream>,
    /// Ids given by the caller (None: the index is the id).
    ids: Vec<Option<PyObject>>,
}

struct Held<'a>(&'a [Option<PyObject>]);

impl Ids for Held<'_> {
    fn id(&self, py: Python<'_>, i: u32) -> PyObject {
        match &self.0[i as usize] {
            Some(id) => id.clone_ref(py),
            None => i.into_pyobject(py).expect("an int").into_any().unbind(),
        }
    }
}

/// Streaming deduplication under the online rule: only kept documents are indexed, and a
/// document with a near-duplicate among them is a duplicate of the strongest match — the
/// decisions ``dedup(..., template_veto=False)`` and ``neardup serve --no-template-veto`` take
/// on the same documents in the same order.
///
/// Options: those of :func:`dedup` but ``linkage`` and ``keep`` (``method``, ``threshold``,
/// ``distance``, ``template_veto`` — default False here: the veto learns which lines repeat
/// from the batches it sees —, ``threads`` and the fingerprint options).
///
/// Safe to share between threads: calls are serialised, with the GIL released.
#[pyclass(module = "neardup", frozen)]
pub struct Deduper {
    inner: Mutex<Inner>,
    threads: usize,
}

/// The strongest indexed near-duplicate of a text (see :meth:`Deduper.check`).
#[pyclass(module = "neardup", frozen, get_all)]
pub struct Match {
    /// Its id.
    pub id: PyObject,
    /// Its position (0-based, in the order documents were added).
    pub index: u32,
    /// Hamming distance (fingerprint methods).
    pub distance: Option<u32>,
    /// Similarity (set and text methods).
    pub similarity: Option<f64>,
    /// The stage that matched.
    pub stage: &'static str,
}

#[pymethods]
impl Match {
    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        Ok(format!(
            "Match(id={}, index={}, stage={:?}, similarity={}, distance={})",
            self.id.bind(py).repr()?,
            self.index,
            self.stage,
            self.similarity.map_or("None".into(), |s| s.to_string()),
            self.distance.map_or("None".into(), |d| d.to_string())
        ))
    }
}

fn lock(m: &Mutex<Inner>) -> MutexGuard<'_, Inner> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Deduper {
    fn decisions(&self, py: Python<'_>, first: usize, outcomes: &[Assignment]) -> Vec<Decision> {
        let g = lock(&self.inner);
        let ids = Held(&g.ids);
        outcomes
            .iter()
            .enumerate()
            .map(|(i, o)| Decision::new(py, &ids, (first + i) as u32, o, None))
            .collect()
    }
}

#[pymethods]
impl Deduper {
    #[new]
    #[pyo3(signature = (**options))]
    fn new(py: Python<'_>, options: Option<&Bound<'_, PyDict>>) -> PyResult<Self> {
        let o = Options::new(py, options)?;
        let spec = take_spec(&o, false)?;
        let threads = o.take::<usize>("threads")?.unwrap_or(0);
        let fp = o.fingerprinter()?;
        let mut accepted = SPEC_OPTIONS.to_vec();
        accepted.push("threads");
        o.finish(&accepted)?;
        let stream = py
            .allow_threads(|| stream::build(&spec, &fp, Linkage::Kept))
            .map_err(lib_error)?;
        Ok(Deduper {
            inner: Mutex::new(Inner {
                stream,
                ids: Vec::new(),
            }),
            threads,
        })
    }

    /// The strongest indexed near-duplicate of ``text`` (a :class:`Match`), or None — what
    /// :meth:`check_and_add` would decide, without adding the text. An empty text (nothing
    /// left after normalisation) has none.
    fn check(&self, py: Python<'_>, text: PyBackedStr) -> PyResult<Option<Match>> {
        let v: neardup::Result<Option<Verdict>> =
            py.allow_threads(|| lock(&self.inner).stream.check(&text));
        let Some(v) = v.map_err(lib_error)? else {
            return Ok(None);
        };
        let g = lock(&self.inner);
        Ok(Some(Match {
            id: Held(&g.ids).id(py, v.of),
            index: v.of,
            distance: v.distance,
            similarity: v.similarity,
            stage: v.stage.as_str(),
        }))
    }

    /// Adds ``text`` as kept without checking it (e.g. a reference set); returns its index.
    /// ``id`` defaults to the index.
    #[pyo3(signature = (text, id = None))]
    fn add(&self, py: Python<'_>, text: PyBackedStr, id: Option<PyObject>) -> PyResult<u32> {
        let r = py.allow_threads(|| {
            let mut g = lock(&self.inner);
            let i = g.stream.len();
            g.stream.add(&text)?;
            g.ids.push(id);
            Ok::<u32, neardup::Error>(i as u32)
        });
        r.map_err(lib_error)
    }

    /// Checks ``text`` and adds it when it is kept; returns the :class:`Decision`. ``id``
    /// defaults to the index.
    #[pyo3(signature = (text, id = None))]
    fn check_and_add(
        &self,
        py: Python<'_>,
        text: PyBackedStr,
        id: Option<PyObject>,
    ) -> PyResult<Decision> {
        let mut d = self.many(py, vec![text], vec![id])?;
        Ok(d.remove(0))
    }

    /// :meth:`check_and_add` for a batch: the texts are sketched in parallel and decided in
    /// order (with ``template_veto=True`` the veto observes the batch first, as one batch of
    /// :func:`dedup`). ``ids`` default to the indexes.
    #[pyo3(signature = (texts, ids = None))]
    fn check_and_add_many(
        &self,
        py: Python<'_>,
        texts: Vec<PyBackedStr>,
        ids: Option<Vec<PyObject>>,
    ) -> PyResult<Vec<Decision>> {
        if let Some(ids) = &ids {
            if ids.len() != texts.len() {
                return Err(pyo3::exceptions::PyValueError::new_err(format!(
                    "{} ids for {} texts; pass one id per text",
                    ids.len(),
                    texts.len()
                )));
            }
        }
        let ids: Vec<Option<PyObject>> = match ids {
            Some(v) => v.into_iter().map(Some).collect(),
            None => (0..texts.len()).map(|_| None).collect(),
        };
        self.many(py, texts, ids)
    }

    /// Documents decided or added so far.
    fn __len__(&self, py: Python<'_>) -> usize {
        py.allow_threads(|| lock(&self.inner).stream.len())
    }
}

impl Deduper {
    fn many(
        &self,
        py: Python<'_>,
        texts: Vec<PyBackedStr>,
        ids: Vec<Option<PyObject>>,
    ) -> PyResult<Vec<Decision>> {
        let refs: Vec<&str> = texts.iter().map(|t| &**t).collect();
        let r = threads::run(py, self.threads, || {
            let mut g = lock(&self.inner);
            let first = g.stream.len();
            let out = g.stream.push(&refs);
            if out.is_ok() {
                g.ids.extend(ids);
            }
            out.map(|o| (first, o))
        })?;
        let (first, outcomes) = r.map_err(|e| at(e.doc as usize, e.source))?;
        Ok(self.decisions(py, first, &outcomes))
    }
}
