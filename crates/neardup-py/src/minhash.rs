//! `MinHash`: signatures, LSH band keys and pair confirmation of the library's MinHash detector
//! (the long path of `auto` and `--method minhash`), in bulk as numpy arrays — the calls a
//! distributed job makes per batch of texts.

use numpy::{PyArray1, PyArray2, PyArrayMethods, PyReadonlyArray2, PyUntypedArrayMethods};
use pyo3::prelude::*;
use pyo3::pybacked::PyBackedStr;
use pyo3::types::PyDict;
use rayon::prelude::*;

use neardup::detect::Detector;
use neardup::minhash::{MinHashDetector, MinHashDetectorOptions, Shingles};

use crate::arrays::{Array1, Array2, Pair};
use crate::errors::{config, lib_error};
use crate::options::Options;
use crate::texts::at;
use crate::threads;

/// Signatures, band keys and validity of a batch, row after row.
type Flat = (Vec<u32>, Vec<u64>, Vec<bool>);

/// The MinHash detector's sketches and confirmation: ``threshold`` (Jaccard, default 0.6 as
/// ``neardup dedup``), ``num_perm`` (128), ``shingles`` (``auto``, ``chars``, ``words``),
/// ``seed`` (1), ``scheme`` (``code_point_sketch``, MinHash v3, the default; ``similarity_sketch``,
/// v2; ``permutations``, v1), ``bits``
/// kept of each signature entry (8, 16 or 32; the detector's default, as ``neardup dedup``), and the
/// normalisation options of :class:`Fingerprinter`. The LSH bands and
/// rows follow from the threshold (:attr:`params`).
#[pyclass(module = "neardup", frozen)]
pub struct MinHash {
    det: MinHashDetector,
}

#[pymethods]
impl MinHash {
    #[new]
    #[pyo3(signature = (**options))]
    fn new(py: Python<'_>, options: Option<&Bound<'_, PyDict>>) -> PyResult<Self> {
        let o = Options::new(py, options)?;
        let mut opts = MinHashDetectorOptions::default();
        if let Some(t) = o.take::<f64>("threshold")? {
            opts.lsh.threshold = t;
        }
        if let Some(n) = o.take::<usize>("num_perm")? {
            opts.minhash.num_perm = n;
        }
        if let Some(s) = o.take::<u64>("seed")? {
            opts.minhash.seed = s;
        }
        if let Some(s) = o.take::<String>("shingles")? {
            opts.minhash.shingles = match s.as_str() {
                "auto" => Shingles::Auto,
                "chars" => Shingles::Chars,
                "words" => Shingles::Words,
                _ => {
                    return Err(config(format!(
                        "option `shingles` = {s:?}: use auto, chars or words"
                    )))
                }
            };
        }
        if let Some(s) = o.take::<String>("scheme")? {
            opts.minhash.scheme = s
                .parse()
                .map_err(|e: neardup::Error| config(format!("option `scheme`: {e}")))?;
        }
        if let Some(b) = o.take::<u32>("bits")? {
            opts.bits = b;
        }
        let fp = o.fingerprinter()?;
        o.finish(&[
            "threshold",
            "num_perm",
            "seed",
            "shingles",
            "scheme",
            "bits",
        ])?;
        let det = MinHashDetector::new(fp, opts).map_err(lib_error)?;
        Ok(MinHash { det })
    }

    /// ``(bands, rows)`` of the LSH index.
    #[getter]
    fn params(&self) -> (usize, usize) {
        self.det.params()
    }

    /// Entries of a signature.
    #[getter]
    fn num_perm(&self) -> usize {
        self.det.hasher().num_perm()
    }

    /// Bits kept of each signature entry (8, 16 or 32): every entry is below ``2**bits``.
    #[getter]
    fn bits(&self) -> u32 {
        self.det.bits()
    }

    /// The Jaccard threshold.
    #[getter]
    fn threshold(&self) -> f64 {
        self.det.threshold()
    }

    /// Sketches of a list of texts: ``(signatures, band_keys, valid)`` — an ``(n, num_perm)``
    /// ``numpy.uint32`` array, an ``(n, bands)`` ``numpy.uint64`` array and a ``numpy.bool_``
    /// array, False (and zero rows) where nothing was left of the text after normalisation.
    /// Two texts are LSH candidates when they share a band key in the same column.
    #[pyo3(signature = (texts, *, threads = 0))]
    fn sketch<'py>(
        &self,
        py: Python<'py>,
        texts: Vec<PyBackedStr>,
        threads: usize,
    ) -> PyResult<(Array2<'py, u32>, Array2<'py, u64>, Array1<'py, bool>)> {
        let n = texts.len();
        let p = self.det.hasher().num_perm();
        let (b, _) = self.det.params();
        let det = &self.det;
        let r: Result<Flat, (usize, neardup::Error)> = threads::run(py, threads, || {
            let sketches: Vec<_> = texts.par_iter().map(|t| det.sketch(t)).collect();
            let mut sigs = Vec::with_capacity(n * p);
            let mut keys = Vec::with_capacity(n * b);
            let mut valid = Vec::with_capacity(n);
            for (i, s) in sketches.into_iter().enumerate() {
                match s {
                    Ok(s) => {
                        sigs.extend_from_slice(&s.signature);
                        keys.extend_from_slice(&s.keys);
                        valid.push(true);
                    }
                    Err(neardup::Error::EmptyDocument { .. }) => {
                        sigs.resize(sigs.len() + p, 0);
                        keys.resize(keys.len() + b, 0);
                        valid.push(false);
                    }
                    Err(e) => return Err((i, e)),
                }
            }
            Ok((sigs, keys, valid))
        })?;
        let (sigs, keys, valid) = r.map_err(|(i, e)| at(i, e))?;
        Ok((
            PyArray1::from_vec(py, sigs).reshape([n, p])?,
            PyArray1::from_vec(py, keys).reshape([n, b])?,
            PyArray1::from_vec(py, valid),
        ))
    }

    /// The band keys of signatures (an ``(n, num_perm)`` ``uint32`` array) as an
    /// ``(n, bands)`` ``numpy.uint64`` array.
    fn band_keys<'py>(
        &self,
        py: Python<'py>,
        signatures: PyReadonlyArray2<'py, u32>,
    ) -> PyResult<Bound<'py, PyArray2<u64>>> {
        let rows = self.rows(&signatures, "signatures")?;
        let (b, _) = self.det.params();
        let n = rows.len() / self.num_perm().max(1);
        let det = &self.det;
        let p = self.num_perm();
        let keys: Vec<u64> = py.allow_threads(|| {
            rows.chunks_exact(p)
                .flat_map(|s| det.band_keys(s))
                .collect()
        });
        PyArray1::from_vec(py, keys).reshape([n, b])
    }

    /// Confirms candidate pairs exactly as the detector confirms an LSH candidate: row ``i`` of
    /// ``a`` against row ``i`` of ``b`` (two ``(n, num_perm)`` ``uint32`` arrays). Returns
    /// ``(similarity, duplicate)``: the estimated Jaccard similarity (``numpy.float64``) and
    /// whether it reaches the threshold (``numpy.bool_``).
    fn verify<'py>(
        &self,
        py: Python<'py>,
        a: PyReadonlyArray2<'py, u32>,
        b: PyReadonlyArray2<'py, u32>,
    ) -> PyResult<Pair<'py, f64, bool>> {
        let ra = self.rows(&a, "a")?;
        let rb = self.rows(&b, "b")?;
        if ra.len() != rb.len() {
            return Err(pyo3::exceptions::PyValueError::new_err(format!(
                "a has {} rows and b has {}; pass one row of b per row of a",
                a.shape()[0],
                b.shape()[0]
            )));
        }
        let p = self.num_perm();
        let det = &self.det;
        let (sims, dups): (Vec<f64>, Vec<bool>) = py.allow_threads(|| {
            ra.chunks_exact(p)
                .zip(rb.chunks_exact(p))
                .map(|(x, y)| det.confirm_signatures(x, y))
                .unzip()
        });
        Ok((PyArray1::from_vec(py, sims), PyArray1::from_vec(py, dups)))
    }

    fn __repr__(&self) -> String {
        let (b, r) = self.det.params();
        format!(
            "MinHash(threshold={}, num_perm={}, bands={b}, rows={r})",
            self.det.threshold(),
            self.num_perm()
        )
    }
}

impl MinHash {
    /// The rows of a 2-D signature array, contiguous, after checking its width.
    fn rows(&self, a: &PyReadonlyArray2<'_, u32>, name: &str) -> PyResult<Vec<u32>> {
        let p = self.num_perm();
        let shape = a.shape();
        if shape[1] != p {
            return Err(pyo3::exceptions::PyValueError::new_err(format!(
                "{name} has {} columns; signatures of this MinHash have num_perm = {p}",
                shape[1]
            )));
        }
        Ok(a.as_array().iter().copied().collect())
    }
}
