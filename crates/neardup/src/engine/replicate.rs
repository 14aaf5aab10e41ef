//! Replication: several engines that share one ordered log (e.g. a Redis Stream) answer as one.
//!
//! The format is the engine's own log record ([`super::records`]): an instance that decides a
//! document unique publishes [`PreparedDoc::record`]; every other instance applies the
//! records it has not seen, in log order, with [`Engine::apply_records`] — inserts are stored
//! without being checked again (the publisher checked them against the same prefix of the
//! log), removals remove. Instances that have applied the same prefix hold the same documents
//! with the same arrival order, so they give the same answers.
//!
//! The protocol that makes the shared log a single decider (append only if nothing was
//! appended since the instance's last applied record; otherwise catch up and decide again)
//! belongs to the log's owner, e.g. `neardup-redis`'s stream backend.

use super::records::{self, Record};
use super::{sketch, Engine, EngineError, Key, PreparedDoc, Result};

impl PreparedDoc {
    /// The replication record of this document stored with `timestamp_ms` (the
    /// [`Outcome::timestamp_ms`](super::Outcome::timestamp_ms) its decision gave it): the
    /// bytes of the engine's own log record, which [`Engine::apply_records`] applies on
    /// another instance with the same configuration.
    pub fn record(&self, timestamp_ms: i64) -> Vec<u8> {
        match &self.key {
            Key::Fingerprint(fp) => records::encode_insert(*fp, timestamp_ms, &self.id),
            Key::Sketch(s) => {
                let mut blob = Vec::new();
                sketch::encode(s, &mut blob);
                records::encode_sketch_insert(timestamp_ms, &self.id, &blob)
            }
        }
    }
}

/// The replication record of removing `id`.
pub fn remove_record(id: &str) -> Vec<u8> {
    records::encode_remove(id)
}

impl Engine {
    /// Applies records published by another instance with the same configuration, in log
    /// order: stored documents are inserted without being checked, removals remove. Returns
    /// how many records were applied.
    ///
    /// # Errors
    /// [`EngineError::Corrupt`] for a record this engine cannot decode (another format or
    /// detector: every instance sharing a log must have the same configuration);
    /// [`EngineError::Store`] / [`EngineError::Unavailable`] when the local log refuses it.
    pub fn apply_records<R: AsRef<[u8]>>(&self, recs: &[R]) -> Result<usize> {
        let corrupt = |reason: String| EngineError::Corrupt {
            dir: self.shared.dir.clone(),
            reason: format!("replicated record: {reason}"),
        };
        let mut inserts: Vec<(String, Key, Option<i64>)> = Vec::new();
        let flush = |inserts: &mut Vec<(String, Key, Option<i64>)>| -> Result<()> {
            if inserts.is_empty() {
                return Ok(());
            }
            for r in self.decide_many(std::mem::take(inserts), true).wait() {
                r?;
            }
            Ok(())
        };
        for rec in recs {
            match records::decode(rec.as_ref()).map_err(corrupt)? {
                Record::Insert { fp, ts, id } if self.shared.auto.is_none() => {
                    inserts.push((id.to_string(), Key::Fingerprint(fp), Some(ts)));
                }
                Record::Sketch { ts, id, sketch: b } if self.shared.auto.is_some() => {
                    let s = sketch::decode(b).map_err(corrupt)?;
                    inserts.push((id.to_string(), Key::Sketch(Box::new(s)), Some(ts)));
                }
                Record::Remove { id } => {
                    flush(&mut inserts)?;
                    self.remove(id)?;
                }
                Record::Lines { ts, keys, back } if self.shared.auto.is_some() => {
                    flush(&mut inserts)?;
                    self.count_lines(ts, &keys, back)?;
                }
                other => {
                    return Err(corrupt(format!(
                        "a {} record does not fit the `{}` detector",
                        match other {
                            Record::Insert { .. } => "simhash insert",
                            Record::Sketch { .. } => "sketch insert",
                            Record::Floor { .. } => "max-docs floor",
                            Record::Remove { .. } => "remove",
                            Record::Lines { .. } => "counted lines",
                        },
                        self.shared.cfg.detector.name()
                    )))
                }
            }
        }
        flush(&mut inserts)?;
        Ok(recs.len())
    }

    /// Takes back out the lines counted by `recs`, records of
    /// [`PreparedDoc::lines_record`] that this instance applied by deciding but that the
    /// shared log refused (the decisions are taken again after catching up). Other records
    /// are ignored.
    ///
    /// # Errors
    /// As [`apply_records`](Self::apply_records).
    pub fn take_back_lines<R: AsRef<[u8]>>(&self, recs: &[R]) -> Result<()> {
        for rec in recs {
            if let Ok(Record::Lines {
                ts,
                keys,
                back: false,
            }) = records::decode(rec.as_ref())
            {
                self.count_lines(ts, &keys, true)?;
            }
        }
        Ok(())
    }

    /// Counts (or with `back` takes back out) a duplicate's lines, logged first; nothing when
    /// its time segment has left the window.
    fn count_lines(&self, ts: i64, keys: &[u64], back: bool) -> Result<()> {
        let sh = &*self.shared;
        sh.check_writable()?;
        let _decider = super::lock(&sh.decide);
        let live = {
            let inner = sh.read();
            !sh.segment_dead(sh.segment_of(ts), sh.horizon(&inner))
        };
        if !live || keys.is_empty() {
            return Ok(());
        }
        if let Err(e) = sh.store.append(&records::encode_lines(ts, keys, back)) {
            return Err(sh.fail(e));
        }
        sh.write()
            .observe(sh.segment_of(ts), keys, back, &sh.head_layout);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::super::{Decision, Doc, EngineConfig, EngineDetector, ManualClock, SyncMode};
    use super::*;
    use crate::{FingerprintConfig, Fingerprinter};

    fn open(dir: &std::path::Path, detector: EngineDetector) -> Engine {
        let cfg = EngineConfig {
            detector,
            sync: SyncMode::None,
            maintenance_interval: None,
            ..EngineConfig::default()
        };
        let fp = Fingerprinter::new(FingerprintConfig::default()).unwrap();
        Engine::open(dir, fp, cfg, Arc::new(ManualClock::new(1_700_000_000_000))).unwrap()
    }

    #[test]
    fn an_instance_applying_the_records_answers_alike() {
        let (da, db) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let a = open(da.path(), EngineDetector::default());
        let b = open(db.path(), EngineDetector::default());
        let texts = [
            "the lighthouse keeper wrote every evening about the ships that passed the cape",
            "a recipe for bread asks for flour, water, salt and a great deal of patience",
            "the lighthouse keeper wrote every evening about the ships that passed the cape!",
        ];
        let docs: Vec<PreparedDoc> = texts
            .iter()
            .enumerate()
            .map(|(i, t)| a.prepare(Doc::text(format!("d{i}"), *t)).unwrap())
            .collect();
        let answers = a.decide(docs.clone()).wait();
        let mut recs: Vec<Vec<u8>> = docs
            .iter()
            .zip(&answers)
            .filter_map(|(d, o)| {
                let o = o.as_ref().unwrap();
                o.stored.then(|| d.record(o.timestamp_ms))
            })
            .collect();
        assert_eq!(recs.len(), 2);
        recs.push(remove_record("d1"));
        assert_eq!(b.apply_records(&recs).unwrap(), 3);
        assert_eq!(
            b.get("d0").unwrap().timestamp_ms,
            a.get("d0").unwrap().timestamp_ms
        );
        assert!(b.get("d1").is_none());
        // B now answers what A answers for the copy.
        let copy = Doc::text("x", texts[2]);
        let on_b = b.check_and_insert(copy).unwrap().decision;
        assert!(
            matches!(on_b, Decision::Duplicate { ref of, .. } if of == "d0"),
            "{on_b:?}"
        );
    }

    #[test]
    fn records_of_another_detector_are_refused() {
        let (da, db) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let auto = open(da.path(), EngineDetector::default());
        let simhash = open(db.path(), EngineDetector::Simhash);
        let d = auto
            .prepare(Doc::text(
                "a",
                "a sentence long enough to be sketched by the detector",
            ))
            .unwrap();
        let err = simhash
            .apply_records(&[d.record(1)])
            .unwrap_err()
            .to_string();
        assert!(err.contains("does not fit the `simhash` detector"), "{err}");
        let err = auto
            .apply_records(&[b"garbage".to_vec()])
            .unwrap_err()
            .to_string();
        assert!(err.contains("replicated record"), "{err}");
    }
}
