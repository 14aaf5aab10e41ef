//! The engine's answers as every face shows them: the JSON bodies of `neardup serve`
//! (`POST /v1/documents`, `POST /v1/query`, `GET /v1/documents/{id}`), which the Python
//! `Engine` returns as dicts. One rendering, so the faces cannot drift apart.
//!
//! Fingerprints are 16 lower-case hex digits and timestamps Unix seconds (a float); the fields
//! stand in the alphabetical order of their keys, the order of every JSON body of the service.
//!
//! ```
//! use neardup::engine::{Decision, Outcome, OutcomeJson, Stage};
//! let o = Outcome {
//!     fingerprint: Some(0xab),
//!     decision: Decision::Duplicate {
//!         of: "a".into(),
//!         distance: Some(2),
//!         similarity: None,
//!         stage: Stage::Simhash,
//!     },
//!     stored: false,
//!     timestamp_ms: 1_700_000_000_500,
//! };
//! assert_eq!(
//!     serde_json::to_string(&OutcomeJson::new("b".into(), o)).unwrap(),
//!     r#"{"distance":2,"duplicate_of":"a","fingerprint":"00000000000000ab","id":"b","similarity":null,"stage":"simhash","status":"duplicate","stored":false,"timestamp":1700000000.5}"#
//! );
//! ```

use serde::Serialize;

use super::types::{Decision, DocInfo, Hit, Outcome, QueryResult, Stage};
use crate::fingerprint::to_hex;

/// Milliseconds since the epoch as Unix seconds.
fn seconds(timestamp_ms: i64) -> f64 {
    timestamp_ms as f64 / 1000.0
}

/// `"unique"` or `"duplicate"`.
fn status(duplicate: bool) -> &'static str {
    if duplicate {
        "duplicate"
    } else {
        "unique"
    }
}

/// The answer to one checked document ([`Outcome`] with the document's id).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct OutcomeJson {
    /// Hamming distance to `duplicate_of` (simhash, exact).
    pub distance: Option<u32>,
    /// The id of the strongest live near-duplicate (`null`: unique).
    pub duplicate_of: Option<String>,
    /// The document's simhash (simhash detector only).
    pub fingerprint: Option<String>,
    /// The document's id.
    pub id: String,
    /// Similarity to `duplicate_of` (MinHash, short path, exact).
    pub similarity: Option<f64>,
    /// The stage that matched `duplicate_of`.
    pub stage: Option<Stage>,
    /// `"unique"` or `"duplicate"`.
    pub status: &'static str,
    /// Whether the document was stored.
    pub stored: bool,
    /// The timestamp used (Unix seconds).
    pub timestamp: f64,
}

impl OutcomeJson {
    /// The answer to document `id`, decided as `outcome`.
    pub fn new(id: String, outcome: Outcome) -> OutcomeJson {
        let (duplicate_of, distance, similarity, stage) = match outcome.decision {
            Decision::Unique => (None, None, None, None),
            Decision::Duplicate {
                of,
                distance,
                similarity,
                stage,
            } => (Some(of), distance, similarity, Some(stage)),
        };
        OutcomeJson {
            distance,
            status: status(duplicate_of.is_some()),
            duplicate_of,
            fingerprint: outcome.fingerprint.map(to_hex),
            id,
            similarity,
            stage,
            stored: outcome.stored,
            timestamp: seconds(outcome.timestamp_ms),
        }
    }
}

/// The answer to a query ([`QueryResult`]): the strongest hit's evidence, then every hit.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct QueryJson {
    /// Hamming distance to the strongest hit.
    pub distance: Option<u32>,
    /// The strongest hit's id (`null`: none).
    pub duplicate_of: Option<String>,
    /// The query's simhash (simhash detector only).
    pub fingerprint: Option<String>,
    /// Every live near-duplicate, strongest first.
    pub matches: Vec<HitJson>,
    /// Similarity to the strongest hit.
    pub similarity: Option<f64>,
    /// The stage that matched the strongest hit.
    pub stage: Option<Stage>,
    /// `"unique"` (no hit) or `"duplicate"`.
    pub status: &'static str,
}

impl From<&QueryResult> for QueryJson {
    fn from(q: &QueryResult) -> QueryJson {
        let best = q.hits.first();
        QueryJson {
            distance: best.and_then(|h| h.distance),
            duplicate_of: best.map(|h| h.id.clone()),
            fingerprint: q.fingerprint.map(to_hex),
            matches: q.hits.iter().map(HitJson::from).collect(),
            similarity: best.and_then(|h| h.similarity),
            stage: best.map(|h| h.stage),
            status: status(best.is_some()),
        }
    }
}

/// One stored document near a query ([`Hit`]).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HitJson {
    /// Hamming distance to the query.
    pub distance: Option<u32>,
    /// Its fingerprint (simhash detector only).
    pub fingerprint: Option<String>,
    /// Its id.
    pub id: String,
    /// Similarity to the query.
    pub similarity: Option<f64>,
    /// The stage that matched.
    pub stage: Stage,
    /// Its timestamp (Unix seconds).
    pub timestamp: f64,
}

impl From<&Hit> for HitJson {
    fn from(h: &Hit) -> HitJson {
        HitJson {
            distance: h.distance,
            fingerprint: h.fingerprint.map(to_hex),
            id: h.id.clone(),
            similarity: h.similarity,
            stage: h.stage,
            timestamp: seconds(h.timestamp_ms),
        }
    }
}

/// A stored document ([`DocInfo`]).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DocInfoJson {
    /// Its fingerprint (simhash detector only).
    pub fingerprint: Option<String>,
    /// Its id.
    pub id: String,
    /// Its timestamp (Unix seconds).
    pub timestamp: f64,
}

impl From<DocInfo> for DocInfoJson {
    fn from(d: DocInfo) -> DocInfoJson {
        DocInfoJson {
            fingerprint: d.fingerprint.map(to_hex),
            id: d.id,
            timestamp: seconds(d.timestamp_ms),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_query_answers_with_its_strongest_hit_first() {
        let hit = |id: &str, distance| Hit {
            id: id.into(),
            fingerprint: Some(1),
            distance: Some(distance),
            similarity: None,
            stage: Stage::Simhash,
            timestamp_ms: 2500,
        };
        let q = QueryResult {
            fingerprint: Some(0xff),
            hits: vec![hit("a", 1), hit("b", 3)],
        };
        assert_eq!(
            serde_json::to_value(QueryJson::from(&q)).unwrap(),
            serde_json::json!({
                "distance": 1, "duplicate_of": "a", "fingerprint": "00000000000000ff",
                "similarity": null, "stage": "simhash", "status": "duplicate",
                "matches": [
                    {"distance": 1, "fingerprint": "0000000000000001", "id": "a",
                     "similarity": null, "stage": "simhash", "timestamp": 2.5},
                    {"distance": 3, "fingerprint": "0000000000000001", "id": "b",
                     "similarity": null, "stage": "simhash", "timestamp": 2.5},
                ],
            })
        );
        let none = QueryJson::from(&QueryResult {
            fingerprint: None,
            hits: vec![],
        });
        assert_eq!(
            serde_json::to_string(&none).unwrap(),
            r#"{"distance":null,"duplicate_of":null,"fingerprint":null,"matches":[],"similarity":null,"stage":null,"status":"unique"}"#
        );
    }

    #[test]
    fn a_stored_document_has_id_fingerprint_and_seconds() {
        let d = DocInfo {
            id: "x".into(),
            fingerprint: None,
            timestamp_ms: -1500,
        };
        assert_eq!(
            serde_json::to_string(&DocInfoJson::from(d)).unwrap(),
            r#"{"fingerprint":null,"id":"x","timestamp":-1.5}"#
        );
    }
}
