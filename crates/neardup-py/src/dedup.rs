//! `dedup`: batch deduplication as `neardup dedup` decides it — the same detector factory
//! ([`DetectorSpec`]), the same batches, the same linkage and keep rules.

use pyo3::prelude::*;
use pyo3::pybacked::PyBackedStr;
use pyo3::types::PyDict;

use neardup::dedup::{Keep, Linkage};

use crate::decision::Decision;
use crate::errors::config;
use crate::options::Options;
use crate::spec::{take_spec, SPEC_OPTIONS};
use crate::texts::at;
use crate::{stream, threads};

/// Takes `linkage` ("online", the default, or "components").
pub fn take_linkage(o: &Options<'_>) -> PyResult<Linkage> {
    match o.take::<String>("linkage")?.as_deref() {
        None | Some("online") => Ok(Linkage::Kept),
        Some("components") => Ok(Linkage::Components),
        Some(l) => Err(config(format!(
            "option `linkage` = {l:?}: use \"online\" or \"components\""
        ))),
    }
}

/// The decisions about `texts` (ids: `ids`, one per text), as ``neardup dedup`` takes them.
#[pyfunction]
#[pyo3(signature = (texts, ids, options = None))]
pub fn dedup_texts(
    py: Python<'_>,
    texts: Vec<PyBackedStr>,
    ids: Vec<PyObject>,
    options: Option<&Bound<'_, PyDict>>,
) -> PyResult<Vec<Decision>> {
    if ids.len() != texts.len() {
        return Err(pyo3::exceptions::PyValueError::new_err(format!(
            "{} ids for {} texts; pass one id per text",
            ids.len(),
            texts.len()
        )));
    }
    let o = Options::new(py, options)?;
    let spec = take_spec(&o, true)?;
    let linkage = take_linkage(&o)?;
    let keep = match o.take::<String>("keep")? {
        None => Keep::First,
        Some(k) => k
            .parse()
            .map_err(|e: neardup::Error| config(e.to_string()))?,
    };
    let threads = o.take::<usize>("threads")?.unwrap_or(0);
    let fp = o.fingerprinter()?;
    let mut accepted = SPEC_OPTIONS.to_vec();
    accepted.extend(["linkage", "keep", "threads"]);
    o.finish(&accepted)?;
    let refs: Vec<&str> = texts.iter().map(|t| &**t).collect();
    let r = threads::run(py, threads, || {
        let s = stream::build(&spec, &fp, linkage).map_err(|e| (None, e))?;
        stream::dedup(s, &refs, keep).map_err(|e| (Some(e.doc as usize), e.source))
    })?;
    let clustering = r.map_err(|(doc, e)| match doc {
        Some(i) => at(i, e),
        None => crate::errors::lib_error(e),
    })?;
    let shares = clustering.shared_clusters();
    Ok(clustering
        .outcomes
        .iter()
        .enumerate()
        .map(|(i, o)| Decision::new(py, &ids, i as u32, o, shares[i]))
        .collect())
}
