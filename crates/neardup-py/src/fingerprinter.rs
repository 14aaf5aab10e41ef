//! `Fingerprinter`: text → 64-bit simhash and exact digests, with the CLI's fingerprint options.

use numpy::{PyArray1, PyArray2, PyArrayMethods};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use rayon::prelude::*;

use neardup::detect::Detector;
use neardup::exact::ExactDetector;

use crate::arrays::Pair;
use crate::errors::lib_error;
use crate::options::Options;
use crate::texts::{at, Texts};
use crate::threads;

/// Turns text into 64-bit simhash fingerprints (docs/fingerprint-spec.md) with one fixed
/// configuration: the options of ``neardup fingerprint`` (``features``, ``char_ngram``,
/// ``word_ngram``, ``top_n``, ``idf``, ``stopwords``, ``html``, ``nfkc``, ``lowercase``, ``fold_traditional``) and
/// its defaults.
#[pyclass(module = "neardup", frozen)]
pub struct Fingerprinter {
    pub inner: neardup::Fingerprinter,
}

#[pymethods]
impl Fingerprinter {
    #[new]
    #[pyo3(signature = (**options))]
    fn new(py: Python<'_>, options: Option<&Bound<'_, PyDict>>) -> PyResult<Self> {
        let o = Options::new(py, options)?;
        let inner = o.fingerprinter()?;
        o.finish(&[])?;
        Ok(Fingerprinter { inner })
    }

    /// The simhash of a text (an ``int``), or of a list of texts (a ``numpy.uint64`` array).
    /// Raises ``EmptyDocumentError`` (naming the document) when nothing is left of a text after
    /// normalisation; :meth:`fingerprint_batch` marks such texts instead.
    #[pyo3(signature = (texts, *, threads = 0))]
    fn simhash<'py>(&self, py: Python<'py>, texts: Texts, threads: usize) -> PyResult<PyObject> {
        match texts {
            Texts::One(t) => {
                let r = py.allow_threads(|| self.inner.simhash(&t));
                Ok(r.map_err(lib_error)?.into_pyobject(py)?.into_any().unbind())
            }
            Texts::Many(v) => {
                let fp = &self.inner;
                let r: Result<Vec<u64>, (usize, neardup::Error)> =
                    threads::run(py, threads, || {
                        v.par_iter()
                            .enumerate()
                            .map(|(i, t)| fp.simhash(t).map_err(|e| (i, e)))
                            .collect()
                    })?;
                let fps = r.map_err(|(i, e)| at(i, e))?;
                Ok(PyArray1::from_vec(py, fps).into_any().unbind())
            }
        }
    }

    /// Simhashes of a list of texts and which of them have one: ``(fingerprints, valid)``, a
    /// ``numpy.uint64`` array (0 where the text was empty after normalisation) and a
    /// ``numpy.bool_`` array.
    #[pyo3(signature = (texts, *, threads = 0))]
    fn fingerprint_batch<'py>(
        &self,
        py: Python<'py>,
        texts: Vec<pyo3::pybacked::PyBackedStr>,
        threads: usize,
    ) -> PyResult<Pair<'py, u64, bool>> {
        let fp = &self.inner;
        let r: Vec<Result<u64, neardup::Error>> = threads::run(py, threads, || {
            texts.par_iter().map(|t| fp.simhash(t)).collect()
        })?;
        let mut fps = Vec::with_capacity(r.len());
        let mut valid = Vec::with_capacity(r.len());
        for (i, x) in r.into_iter().enumerate() {
            match x {
                Ok(f) => {
                    fps.push(f);
                    valid.push(true);
                }
                Err(neardup::Error::EmptyDocument { .. }) => {
                    fps.push(0);
                    valid.push(false);
                }
                Err(e) => return Err(at(i, e)),
            }
        }
        Ok((PyArray1::from_vec(py, fps), PyArray1::from_vec(py, valid)))
    }

    /// The exact digest (XXH3-128 of the normalised text, what the ``exact`` stage compares) of
    /// a text (an ``int``), or of a list of texts (an ``(n, 2)`` ``numpy.uint64`` array of the
    /// high and low halves). Raises ``EmptyDocumentError`` for a text with no letter or digit.
    #[pyo3(signature = (texts, *, threads = 0))]
    fn exact_digest(&self, py: Python<'_>, texts: Texts, threads: usize) -> PyResult<PyObject> {
        let det = ExactDetector::new(self.inner.clone());
        match texts {
            Texts::One(t) => {
                let d = py.allow_threads(|| det.sketch(&t)).map_err(lib_error)?;
                Ok(d.into_pyobject(py)?.into_any().unbind())
            }
            Texts::Many(v) => {
                let n = v.len();
                let r: Result<Vec<u128>, (usize, neardup::Error)> =
                    threads::run(py, threads, || {
                        v.par_iter()
                            .enumerate()
                            .map(|(i, t)| det.sketch(t).map_err(|e| (i, e)))
                            .collect()
                    })?;
                let ds = r.map_err(|(i, e)| at(i, e))?;
                let flat: Vec<u64> = ds
                    .iter()
                    .flat_map(|d| [(d >> 64) as u64, *d as u64])
                    .collect();
                let a: Bound<'_, PyArray2<u64>> = PyArray1::from_vec(py, flat).reshape([n, 2])?;
                Ok(a.into_any().unbind())
            }
        }
    }

    /// The text after normalisation (what every sketch is computed from).
    fn normalize(&self, py: Python<'_>, text: &str) -> String {
        py.allow_threads(|| self.inner.normalize(text))
    }

    /// A 64-bit digest of everything that determines the fingerprint.
    #[getter]
    fn config_id(&self) -> u64 {
        self.inner.config_id()
    }

    /// A canonical JSON description of everything that determines the fingerprint.
    #[getter]
    fn descriptor(&self) -> &str {
        self.inner.descriptor()
    }

    fn __repr__(&self) -> String {
        format!("Fingerprinter(config_id={:016x})", self.inner.config_id())
    }
}

/// The Hamming distance between two 64-bit fingerprints.
#[pyfunction]
pub fn hamming(a: u64, b: u64) -> u32 {
    neardup::hamming(a, b)
}
