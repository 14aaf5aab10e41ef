//! `Decision`: what batch dedup and the streaming deduper decided about one document — the
//! fields of a `neardup dedup` output line.

use pyo3::prelude::*;
use pyo3::types::PyDict;

use neardup::dedup::Assignment;

/// The decision about one document (the fields of a ``neardup dedup`` output line).
///
/// ``duplicate_of`` is the id of the kept document this one is a duplicate of (None: kept);
/// ``matched`` the id of the strongest earlier match (the evidence) with its ``distance``
/// (fingerprint methods), ``similarity`` (set and text methods) and ``stage`` (``exact``,
/// ``short``, ``minhash``, ``simhash``, ``imatch``); ``cluster`` the 0-based number of the
/// cluster's first document; ``empty`` True when nothing was left after normalisation (such a
/// document is kept, in its own cluster). The ``*_index`` fields are 0-based input positions.
#[pyclass(module = "neardup", frozen, get_all)]
pub struct Decision {
    /// Input position (0-based).
    pub index: u32,
    /// The document's id.
    pub id: PyObject,
    /// The kept document's id, or None.
    pub duplicate_of: Option<PyObject>,
    /// The kept document's position.
    pub duplicate_of_index: Option<u32>,
    /// The cluster (number of its first document).
    pub cluster: u32,
    /// The strongest earlier match's id, or None.
    pub matched: Option<PyObject>,
    /// Its position.
    pub matched_index: Option<u32>,
    /// Hamming distance to the match.
    pub distance: Option<u32>,
    /// Similarity to the match.
    pub similarity: Option<f64>,
    /// The stage that matched.
    pub stage: Option<&'static str>,
    /// Nothing left after normalisation.
    pub empty: bool,
    /// Under linkage "components": id of the cluster's first kept document when this kept
    /// document shares its cluster with it.
    pub shares_cluster_with: Option<PyObject>,
}

/// The ids of documents, by position.
pub trait Ids {
    /// The id of document `i`.
    fn id(&self, py: Python<'_>, i: u32) -> PyObject;
}

impl Ids for Vec<PyObject> {
    fn id(&self, py: Python<'_>, i: u32) -> PyObject {
        self[i as usize].clone_ref(py)
    }
}

impl Decision {
    /// The decision of document `index` from the library's outcome.
    pub fn new(
        py: Python<'_>,
        ids: &dyn Ids,
        index: u32,
        o: &Assignment,
        shares: Option<u32>,
    ) -> Decision {
        Decision {
            index,
            id: ids.id(py, index),
            duplicate_of: o.duplicate_of.map(|d| ids.id(py, d)),
            duplicate_of_index: o.duplicate_of,
            cluster: o.cluster,
            matched: o.matched.map(|d| ids.id(py, d)),
            matched_index: o.matched,
            distance: o.distance,
            similarity: o.similarity,
            stage: o.stage.map(|s| s.as_str()),
            empty: o.empty,
            shares_cluster_with: shares.map(|d| ids.id(py, d)),
        }
    }
}

#[pymethods]
impl Decision {
    /// True when the document is a duplicate (not kept).
    #[getter]
    fn is_duplicate(&self) -> bool {
        self.duplicate_of_index.is_some()
    }

    /// The decision as the JSON object of a ``neardup dedup`` output line (the same keys:
    /// ``similarity`` and ``stage`` are ``None`` for a kept document).
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        d.set_item("id", &self.id)?;
        d.set_item("duplicate_of", &self.duplicate_of)?;
        d.set_item("cluster", self.cluster)?;
        d.set_item("distance", self.distance)?;
        d.set_item("matched", &self.matched)?;
        d.set_item("similarity", self.similarity)?;
        d.set_item("stage", self.stage)?;
        if self.empty {
            d.set_item("skipped", "empty")?;
        }
        if let Some(s) = &self.shares_cluster_with {
            d.set_item("shares_cluster_with", s)?;
        }
        Ok(d)
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        let r = |o: &Option<PyObject>| -> PyResult<String> {
            Ok(match o {
                Some(o) => o.bind(py).repr()?.to_string(),
                None => "None".into(),
            })
        };
        Ok(format!(
            "Decision(index={}, id={}, duplicate_of={}, cluster={}, stage={}, similarity={}, distance={})",
            self.index,
            self.id.bind(py).repr()?,
            r(&self.duplicate_of)?,
            self.cluster,
            self.stage.map_or("None".into(), |s| format!("{s:?}")),
            self.similarity.map_or("None".into(), |s| s.to_string()),
            self.distance.map_or("None".into(), |d| d.to_string())
        ))
    }
}
