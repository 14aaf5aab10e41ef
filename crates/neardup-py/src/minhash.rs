//! `MinHash`: signatures, LSH band keys and pair confirmation of the library's MinHash detector
//! (the long path of `auto` and `--method minhash`), in bulk as numpy arrays — the calls a
//! distributed job makes per batch of texts.

use std::collections::HashMap;

use numpy::{
    PyArray1, PyArray2, PyArrayMethods, PyReadonlyArray1, PyReadonlyArray2, PyUntypedArrayMethods,
};
use pyo3::prelude::*;
use pyo3::pybacked::PyBackedStr;
use pyo3::types::PyDict;
use rayon::prelude::*;

use neardup::detect::Detector;
use neardup::minhash::{MinHashDetector, MinHashDetectorOptions, Shingles};
use neardup::sketch::lsh::band_key;

use crate::arrays::{Array1, Array2, Pair};
use crate::errors::{config, lib_error};
use crate::options::Options;
use crate::texts::at;
use crate::threads;

/// Signatures, band keys and validity of a batch, row after row.
type Flat = (Vec<u32>, Vec<u64>, Vec<bool>);

/// What :meth:`MinHash.sketch` returns: signatures, band keys, validity.
type Sketches<'py> = (Array2<'py, u32>, Array2<'py, u64>, Array1<'py, bool>);

/// What :meth:`MinHash.bucket_pairs` returns: the pairs' two rows, similarity, confirmation
/// and bucket size.
type BucketPairs<'py> = (
    Array1<'py, u32>,
    Array1<'py, u32>,
    Array1<'py, f64>,
    Array1<'py, bool>,
    Array1<'py, u32>,
);

/// Offsets of texts in a UTF-8 buffer, as Arrow's `string` (32-bit) or `large_string` (64-bit).
#[derive(FromPyObject)]
enum Offsets<'py> {
    I32(PyReadonlyArray1<'py, i32>),
    I64(PyReadonlyArray1<'py, i64>),
}

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
    ) -> PyResult<Sketches<'py>> {
        let texts: Vec<&str> = texts.iter().map(|t| &**t).collect();
        self.sketch_all(py, &texts, threads)
    }

    /// :meth:`sketch` of texts laid out as Arrow's ``string`` / ``large_string`` arrays are:
    /// ``data`` (a ``numpy.uint8`` array) holds them one after the other in UTF-8, text ``i``
    /// is ``data[offsets[i]:offsets[i + 1]]`` (``offsets``: ``n + 1`` ``numpy.int32`` or
    /// ``numpy.int64`` values, ascending). Nothing is copied into Python strings, so a batch
    /// read as Arrow (``np.frombuffer(array.buffers()[2], np.uint8)``) is sketched where it
    /// lies. ``ValueError`` names the first text whose offsets are out of order or out of
    /// ``data``, or whose bytes are not UTF-8.
    #[pyo3(signature = (data, offsets, *, threads = 0))]
    fn sketch_utf8<'py>(
        &self,
        py: Python<'py>,
        data: PyReadonlyArray1<'py, u8>,
        offsets: Offsets<'py>,
        threads: usize,
    ) -> PyResult<Sketches<'py>> {
        let data = data.as_slice()?;
        let bounds: Vec<i64> = match &offsets {
            Offsets::I32(o) => o.as_array().iter().map(|&x| i64::from(x)).collect(),
            Offsets::I64(o) => o.as_array().iter().copied().collect(),
        };
        let mut texts = Vec::with_capacity(bounds.len().saturating_sub(1));
        for (i, w) in bounds.windows(2).enumerate() {
            let (a, b) = (w[0], w[1]);
            if a < 0 || b < a || b as u64 > data.len() as u64 {
                return Err(pyo3::exceptions::PyValueError::new_err(format!(
                    "text {i}: offsets {a}..{b} are not a range inside data ({} bytes); pass \
                     n + 1 ascending offsets into data",
                    data.len()
                )));
            }
            let t = std::str::from_utf8(&data[a as usize..b as usize]).map_err(|e| {
                pyo3::exceptions::PyValueError::new_err(format!(
                    "text {i}: not UTF-8 ({e}); neardup reads UTF-8 text"
                ))
            })?;
            texts.push(t);
        }
        self.sketch_all(py, &texts, threads)
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

    /// The candidate pairs of LSH buckets, each found once and confirmed as :meth:`verify`
    /// confirms — the work of a partition of a distributed job that groups nodes by band key.
    /// Row ``i`` is one node's entry in one bucket: its band ``bands[i]`` (``int32``), its key
    /// in that band ``keys[i]`` (``int64``, the band key's bits), its rank ``ranks[i]``
    /// (``int64``) in the document order (a node's rows share its rank) and its signature
    /// ``signatures[i]``. Every two nodes of a bucket (rows of one band and key) are a
    /// candidate pair, reported only from the lowest band in which their keys agree (computed
    /// from their signatures), so a pair that shares several buckets is reported once however
    /// the buckets are spread over partitions.
    ///
    /// With ``collapse_identical``, nodes whose signatures are identical are paired with the
    /// earliest of them only, and only that earliest one with the bucket's other nodes:
    /// identical signatures share every bucket and estimate similarity 1, so the graph keeps
    /// its components and every node its most similar earlier node (ties to the earliest),
    /// while ``n`` copies cost ``n - 1`` pairs instead of ``n(n-1)/2``. The bucket size then
    /// counts distinct signatures.
    ///
    /// Returns ``(first, second, similarity, duplicate, bucket)``: the rows of the earlier
    /// and the later node (``numpy.uint32``), the estimated Jaccard similarity, whether it
    /// reaches the threshold, and the size of the bucket the pair was found in.
    /// ``ValueError`` when the arrays differ in length or a band is out of range.
    #[pyo3(signature = (bands, keys, ranks, signatures, *, collapse_identical = false))]
    fn bucket_pairs<'py>(
        &self,
        py: Python<'py>,
        bands: PyReadonlyArray1<'py, i32>,
        keys: PyReadonlyArray1<'py, i64>,
        ranks: PyReadonlyArray1<'py, i64>,
        signatures: PyReadonlyArray2<'py, u32>,
        collapse_identical: bool,
    ) -> PyResult<BucketPairs<'py>> {
        let sigs = self.rows(&signatures, "signatures")?;
        let p = self.num_perm();
        let (b, r) = self.det.params();
        let n = sigs.len() / p.max(1);
        let bands = bands.as_array().to_vec();
        let keys = keys.as_array().to_vec();
        let ranks = ranks.as_array().to_vec();
        if bands.len() != n || keys.len() != n || ranks.len() != n {
            return Err(pyo3::exceptions::PyValueError::new_err(format!(
                "{n} signatures, {} bands, {} keys and {} ranks; pass one of each a row",
                bands.len(),
                keys.len(),
                ranks.len()
            )));
        }
        if let Some(i) = bands.iter().position(|&x| x < 0 || x as usize >= b) {
            return Err(pyo3::exceptions::PyValueError::new_err(format!(
                "row {i}: band {} is not one of this MinHash's 0 … {}",
                bands[i],
                b - 1
            )));
        }
        let det = &self.det;
        let found = py.allow_threads(|| {
            let mut order: Vec<u32> = (0..n as u32).collect();
            order.sort_unstable_by_key(|&i| {
                (bands[i as usize], keys[i as usize], ranks[i as usize])
            });
            let same_bucket = |x: u32, y: u32| {
                bands[x as usize] == bands[y as usize] && keys[x as usize] == keys[y as usize]
            };
            let mut found = (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
            let (mut lower, mut earliest) = (Vec::<u64>::new(), Vec::<usize>::new());
            let mut start = 0;
            while start < n {
                let mut end = start + 1;
                while end < n && same_bucket(order[start], order[end]) {
                    end += 1;
                }
                let bucket = &order[start..end];
                let band = bands[bucket[0] as usize] as usize;
                if bucket.len() < 2 {
                    start = end;
                    continue; // most rows are alone in their bucket
                }
                let sig = |x: u32| &sigs[x as usize * p..(x as usize + 1) * p];
                // The keys of the bands below this one, row after row: a pair whose keys
                // agree in one of them is reported from there.
                lower.clear();
                for &x in bucket {
                    let s = sig(x);
                    lower.extend((0..band).map(|j| band_key(s, j, r)));
                }
                let lower_of = |at: usize| &lower[at * band..(at + 1) * band];
                // Each row's earliest row of identical signature (itself when it is the
                // first; rows are in rank order).
                earliest.clear();
                if collapse_identical {
                    if bucket.len() <= 64 {
                        for at in 0..bucket.len() {
                            let s = sig(bucket[at]);
                            let e = (0..at).find(|&e| earliest[e] == e && sig(bucket[e]) == s);
                            earliest.push(e.unwrap_or(at));
                        }
                    } else {
                        let mut first: HashMap<&[u32], usize> = HashMap::new();
                        earliest.extend(
                            (0..bucket.len()).map(|at| *first.entry(sig(bucket[at])).or_insert(at)),
                        );
                    }
                } else {
                    earliest.extend(0..bucket.len());
                }
                let size = earliest
                    .iter()
                    .enumerate()
                    .filter(|&(at, &e)| at == e)
                    .count();
                for (at, &x) in bucket.iter().enumerate() {
                    if earliest[at] != at {
                        continue; // a copy is paired with its earliest identical node only
                    }
                    let x = x as usize;
                    for (at_y, &y) in bucket.iter().enumerate().skip(at + 1) {
                        let y = y as usize;
                        if ranks[x] == ranks[y] {
                            continue; // one node's rows
                        }
                        if earliest[at_y] != at_y && earliest[at_y] != at {
                            continue;
                        }
                        if lower_of(at).iter().zip(lower_of(at_y)).any(|(u, v)| u == v) {
                            continue; // reported from a lower band
                        }
                        let (sim, dup) = det.confirm_signatures(
                            &sigs[x * p..(x + 1) * p],
                            &sigs[y * p..(y + 1) * p],
                        );
                        found.0.push(x as u32);
                        found.1.push(y as u32);
                        found.2.push(sim);
                        found.3.push(dup);
                        found.4.push(size as u32);
                    }
                }
                start = end;
            }
            found
        });
        Ok((
            PyArray1::from_vec(py, found.0),
            PyArray1::from_vec(py, found.1),
            PyArray1::from_vec(py, found.2),
            PyArray1::from_vec(py, found.3),
            PyArray1::from_vec(py, found.4),
        ))
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
    /// Signatures, band keys and validity of `texts`, sketched on `threads` workers.
    fn sketch_all<'py>(
        &self,
        py: Python<'py>,
        texts: &[&str],
        threads: usize,
    ) -> PyResult<Sketches<'py>> {
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
