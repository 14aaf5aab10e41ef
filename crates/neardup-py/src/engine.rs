//! `Engine`: the durable online engine (`neardup serve` without HTTP) — a data directory,
//! check-and-insert, query, get, remove. Answers have the shape of the HTTP service's JSON.

use std::sync::{Arc, RwLock};
use std::time::Duration;

use pyo3::prelude::*;
use pyo3::types::PyDict;

use neardup::engine::{
    Content, Doc, DocInfoJson, Engine as Inner, EngineConfig, EngineDetector, OutcomeJson,
    QueryJson, SyncMode, SystemClock,
};
use neardup::fingerprint::parse_hex;
use neardup::template_veto::TemplateVetoOptions;

use crate::errors::{config, engine_error, lib_error};
use crate::options::Options;

/// The durable engine over data directory ``path`` (created when missing): every unique
/// document is logged before it is acknowledged, and a reopened engine holds everything
/// acknowledged. Options, with the defaults of ``neardup serve``: ``method`` (``auto`` or
/// ``simhash``), ``distance`` (simhash only), ``template_veto`` (``True``),
/// ``template_own_lines`` (``True``; ``False`` opens a directory written before a template
/// page's own lines repeated by its copies made its distinct part, as ``neardup serve
/// --no-template-own-lines``), ``template_by_content`` (``False``; ``True`` judges the
/// first pages of a new template by content, as ``neardup serve --template-by-content``),
/// ``template_text_lines`` (``True``; ``False`` reads the lines of HTML pages from their
/// markup and opens a directory written before they were read from their text, as ``neardup
/// serve --template-markup-lines``),
/// ``passages`` (``True``; ``False`` opens a directory written before long texts were indexed
/// by their sentences, as ``neardup serve --no-passages``),
/// ``retention`` (seconds, default 2 days),
/// ``segments`` (8), ``max_docs``, ``sync`` (``always``, ``batch``, ``none``),
/// ``sync_interval`` (seconds, for ``batch``), ``snapshot_interval`` (seconds), and the
/// fingerprint options of :class:`Fingerprinter`. Settings that change answers are recorded
/// in the directory; reopening with others raises ``ConfigMismatchError``.
///
/// Thread-safe; a context manager (``with Engine(path) as e: ...`` shuts it down).
#[pyclass(module = "neardup", frozen)]
pub struct Engine {
    /// None once shut down (dropping the engine releases the data directory's lock).
    inner: RwLock<Option<Inner>>,
}

impl Engine {
    /// Runs `f` on the open engine, with the GIL released.
    fn with<R: Send>(&self, py: Python<'_>, f: impl FnOnce(&Inner) -> R + Send) -> PyResult<R> {
        py.allow_threads(|| {
            let g = self.inner.read().unwrap_or_else(|e| e.into_inner());
            g.as_ref().map(f)
        })
        .ok_or_else(|| {
            crate::errors::raise(
                "EngineError",
                "the engine is shut down; open the data directory again".into(),
            )
        })
    }
}

fn secs(what: &str, s: f64) -> PyResult<Duration> {
    Duration::try_from_secs_f64(s).map_err(|_| {
        config(format!(
            "`{what}` = {s}: use a non-negative number of seconds"
        ))
    })
}

fn timestamp(t: Option<f64>) -> PyResult<Option<i64>> {
    match t {
        None => Ok(None),
        Some(t) if t.is_finite() && t.abs() <= 1e11 => Ok(Some((t * 1000.0).round() as i64)),
        Some(t) => Err(pyo3::exceptions::PyValueError::new_err(format!(
            "`timestamp` must be Unix seconds (a finite number, |t| <= 1e11), got {t}"
        ))),
    }
}

/// Text or fingerprint (an int or 1 to 16 hex digits), exactly one.
fn content(text: Option<String>, fingerprint: Option<&Bound<'_, PyAny>>) -> PyResult<Content> {
    match (text, fingerprint) {
        (Some(t), None) => Ok(Content::Text(t)),
        (None, Some(f)) => {
            let fp = match f.extract::<u64>() {
                Ok(v) => v,
                Err(_) => parse_hex(&f.extract::<String>().map_err(|_| {
                    pyo3::exceptions::PyValueError::new_err(
                        "`fingerprint` must be an int or 1 to 16 hex digits",
                    )
                })?)
                .map_err(lib_error)?,
            };
            Ok(Content::Fingerprint(fp))
        }
        (Some(_), Some(_)) => Err(pyo3::exceptions::PyValueError::new_err(
            "pass either `text` or `fingerprint`, not both",
        )),
        (None, None) => Err(pyo3::exceptions::PyValueError::new_err(
            "missing `text` (or `fingerprint`)",
        )),
    }
}

/// `value` as Python objects (dicts, lists, str, int, float, bool, None) through its JSON: the
/// bodies of the HTTP service, as the library renders them.
fn to_py<'py>(py: Python<'py>, value: &impl serde::Serialize) -> PyResult<Bound<'py, PyAny>> {
    let json = serde_json::to_string(value)
        .map_err(|e| crate::errors::raise("EngineError", e.to_string()))?;
    py.import("json")?.call_method1("loads", (json,))
}

#[pymethods]
impl Engine {
    #[new]
    #[pyo3(signature = (path, **options))]
    fn new(
        py: Python<'_>,
        path: std::path::PathBuf,
        options: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Self> {
        let o = Options::new(py, options)?;
        let d = EngineConfig::default();
        let veto = o.take::<bool>("template_veto")?;
        let detector = match o.take::<String>("method")?.as_deref() {
            None | Some("auto") => EngineDetector::auto(veto.unwrap_or(true)),
            Some("simhash") => EngineDetector::Simhash,
            Some(m) => {
                return Err(config(format!(
                    "option `method` = {m:?}: use \"auto\" or \"simhash\""
                )))
            }
        };
        let passages = o.take::<bool>("passages")?;
        if passages.is_some() && detector == EngineDetector::Simhash {
            return Err(config(
                "`passages` applies to method=\"auto\" (quotes of long texts); method=\"simhash\" has none",
            ));
        }
        let detector = match detector {
            EngineDetector::Auto(mut p) if passages == Some(false) => {
                p.passages = None;
                EngineDetector::Auto(p)
            }
            d => d,
        };
        let own_lines = o.take::<bool>("template_own_lines")?;
        if own_lines.is_some() && (detector == EngineDetector::Simhash || veto == Some(false)) {
            return Err(config(
                "`template_own_lines` applies to method=\"auto\" with the template veto, which is off here",
            ));
        }
        let text_lines = o.take::<bool>("template_text_lines")?;
        if text_lines.is_some() && (detector == EngineDetector::Simhash || veto == Some(false)) {
            return Err(config(
                "`template_text_lines` applies to method=\"auto\" with the template veto, which is off here",
            ));
        }
        let by_content = o.take::<bool>("template_by_content")?;
        if by_content == Some(true) && (detector == EngineDetector::Simhash || veto == Some(false))
        {
            return Err(config(
                "`template_by_content` applies to method=\"auto\" with the template veto, which is off here",
            ));
        }
        let distance = o.take::<u32>("distance")?;
        if distance.is_some() && detector != EngineDetector::Simhash {
            return Err(config(
                "`distance` is the Hamming distance of method=\"simhash\"; the auto detector decides long texts by MinHash similarity",
            ));
        }
        if veto.is_some() && detector == EngineDetector::Simhash {
            return Err(config(
                "`template_veto` applies to method=\"auto\"; method=\"simhash\" has no template veto",
            ));
        }
        let sync_interval = match o.take::<f64>("sync_interval")? {
            Some(s) => secs("sync_interval", s)?,
            None => Duration::from_millis(100),
        };
        let sync = match o.take::<String>("sync")?.as_deref() {
            None | Some("always") => SyncMode::Always,
            Some("batch") => SyncMode::Batch {
                interval: sync_interval,
            },
            Some("none") => SyncMode::None,
            Some(s) => {
                return Err(config(format!(
                    "option `sync` = {s:?}: use always, batch or none"
                )))
            }
        };
        let cfg = EngineConfig {
            template_veto: if veto.unwrap_or(true) {
                d.template_veto.clone().map(|v| TemplateVetoOptions {
                    own_repeated_lines: own_lines.unwrap_or(v.own_repeated_lines),
                    by_content: by_content.unwrap_or(v.by_content),
                    text_lines: text_lines.unwrap_or(v.text_lines),
                    ..v
                })
            } else {
                None
            },
            detector,
            distance: distance.unwrap_or(d.distance),
            retention: match o.take::<f64>("retention")? {
                Some(s) => secs("retention", s)?,
                None => d.retention,
            },
            segments: o.take::<u32>("segments")?.unwrap_or(d.segments),
            max_docs: o.take::<u64>("max_docs")?,
            sync,
            snapshot_interval: match o.take::<f64>("snapshot_interval")? {
                Some(s) => Some(secs("snapshot_interval", s)?),
                None => d.snapshot_interval,
            },
            ..d
        };
        let fp = o.fingerprinter()?;
        o.finish(&[
            "method",
            "distance",
            "template_veto",
            "template_own_lines",
            "template_text_lines",
            "template_by_content",
            "passages",
            "retention",
            "segments",
            "max_docs",
            "sync",
            "sync_interval",
            "snapshot_interval",
        ])?;
        let inner = py
            .allow_threads(|| Inner::open(&path, fp, cfg, Arc::new(SystemClock)))
            .map_err(engine_error)?;
        Ok(Engine {
            inner: RwLock::new(Some(inner)),
        })
    }

    /// Checks a document against the stored ones and stores it when it is unique. Returns
    /// ``{"id", "status": "unique"|"duplicate", "duplicate_of", "distance", "similarity",
    /// "stage", "fingerprint", "stored", "timestamp"}`` (the HTTP service's answer).
    /// ``timestamp``: Unix seconds (default: now).
    #[pyo3(signature = (id, text = None, *, fingerprint = None, timestamp = None))]
    fn check_and_insert<'py>(
        &self,
        py: Python<'py>,
        id: String,
        text: Option<String>,
        fingerprint: Option<&Bound<'py, PyAny>>,
        timestamp: Option<f64>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let doc = Doc {
            id,
            content: content(text, fingerprint)?,
            timestamp_ms: self::timestamp(timestamp)?,
        };
        let id = doc.id.clone();
        let o = self
            .with(py, |e| e.check_and_insert(doc))?
            .map_err(engine_error)?;
        to_py(py, &OutcomeJson::new(id, o))
    }

    /// :meth:`check_and_insert` for many documents (dicts with ``id`` and ``text`` or
    /// ``fingerprint``, optionally ``timestamp``), decided in order with one log write.
    /// Raises on the first invalid document or failed decision.
    fn check_and_insert_many<'py>(
        &self,
        py: Python<'py>,
        docs: Vec<Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let mut batch = Vec::with_capacity(docs.len());
        for (i, d) in docs.iter().enumerate() {
            let id: String = match d.get_item("id")? {
                Some(v) => v.str()?.to_string(),
                None => {
                    return Err(pyo3::exceptions::PyValueError::new_err(format!(
                        "document {i}: missing `id`"
                    )))
                }
            };
            let text = d
                .get_item("text")?
                .map(|t| t.extract::<String>())
                .transpose()?;
            let fp = d.get_item("fingerprint")?;
            let ts = d
                .get_item("timestamp")?
                .map(|t| t.extract::<f64>())
                .transpose()?;
            batch.push(Doc {
                id,
                content: content(text, fp.as_ref())?,
                timestamp_ms: timestamp(ts)?,
            });
        }
        let ids: Vec<String> = batch.iter().map(|d| d.id.clone()).collect();
        let rs = self.with(py, |e| e.check_and_insert_batch(batch))?;
        let answers = rs
            .into_iter()
            .zip(ids)
            .map(|(r, id)| Ok(OutcomeJson::new(id, r.map_err(engine_error)?)))
            .collect::<PyResult<Vec<_>>>()?;
        to_py(py, &answers)
    }

    /// The stored near-duplicates of a text (or fingerprint), strongest first, without storing
    /// it: ``{"status", "duplicate_of", "distance", "similarity", "stage", "fingerprint",
    /// "matches": [...]}``.
    #[pyo3(signature = (text = None, *, fingerprint = None))]
    fn query<'py>(
        &self,
        py: Python<'py>,
        text: Option<String>,
        fingerprint: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        let c = content(text, fingerprint)?;
        let q = self.with(py, |e| e.query(&c))?.map_err(engine_error)?;
        to_py(py, &QueryJson::from(&q))
    }

    /// The stored document ``id`` (``{"id", "fingerprint", "timestamp"}``), or None.
    fn get<'py>(&self, py: Python<'py>, id: &str) -> PyResult<Option<Bound<'py, PyAny>>> {
        match self.with(py, |e| e.get(id))? {
            Some(info) => to_py(py, &DocInfoJson::from(info)).map(Some),
            None => Ok(None),
        }
    }

    /// Removes document ``id``; False when it was not stored.
    fn remove(&self, py: Python<'_>, id: &str) -> PyResult<bool> {
        self.with(py, |e| e.remove(id))?.map_err(engine_error)
    }

    /// Counters and sizes (a dict, as ``GET /v1/stats``).
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        to_py(py, &self.with(py, |e| e.stats())?)
    }

    /// Writes a snapshot now (restart replays less of the log).
    fn snapshot(&self, py: Python<'_>) -> PyResult<()> {
        self.with(py, |e| e.snapshot())?.map_err(engine_error)
    }

    /// Writes a final snapshot, stops and releases the data directory (another engine may
    /// open it). Later calls raise ``EngineError``; a second shutdown does nothing.
    fn shutdown(&self, py: Python<'_>) -> PyResult<()> {
        py.allow_threads(|| {
            let taken = self.inner.write().unwrap_or_else(|e| e.into_inner()).take();
            match taken {
                Some(e) => e.shutdown(),
                None => Ok(()),
            }
        })
        .map_err(engine_error)
    }

    fn __enter__(slf: Py<Self>) -> Py<Self> {
        slf
    }

    #[pyo3(signature = (*_args))]
    fn __exit__(&self, py: Python<'_>, _args: &Bound<'_, pyo3::types::PyTuple>) -> PyResult<bool> {
        self.shutdown(py)?;
        Ok(false)
    }
}
