//! Ids that repeat in a run's input. `duplicate_of`, `matched` and the report name documents
//! by id, so a repeated id (the same shard read twice, ids unique only within each file) makes
//! them ambiguous; the run says so once, at its end, and how to tell the documents apart. (Not
//! under `--memory-budget-mib`, whose memory per document is bounded: a set of every id is not.)

use std::collections::HashSet;

use neardup::hash::{xxh3_128, FastBuild};
use serde_json::Value;

use crate::input::InputDoc;

/// The ids seen so far (a 128-bit hash of each) and those seen again.
#[derive(Default)]
pub struct RepeatedIds {
    seen: HashSet<u128, FastBuild>,
    repeats: u64,
    /// The first repeat: its id and where it was read.
    first: Option<(Value, String)>,
}

impl RepeatedIds {
    /// Notes `d`'s id.
    pub fn see(&mut self, d: &InputDoc) {
        let key = match &d.id {
            Value::String(s) => xxh3_128(s.as_bytes()),
            // Numbers and other values by their JSON, apart from the strings that spell them.
            other => xxh3_128(format!("\u{0}{other}").as_bytes()),
        };
        if !self.seen.insert(key) {
            self.repeats += 1;
            if self.first.is_none() {
                self.first = Some((d.id.clone(), d.origin()));
            }
        }
    }

    /// The warning for the repeats, if any: how many, the first, and what to do.
    pub fn warning(&self, provenance: bool) -> Option<String> {
        let (id, at) = self.first.as_ref()?;
        let what = if self.repeats == 1 {
            "1 document repeats an id".to_string()
        } else {
            format!("{} documents repeat an id", self.repeats)
        };
        let fix = if provenance {
            "each decision carries its file and line (--provenance), and `cluster` tells which \
             of them a duplicate joined"
        } else {
            "pass --provenance to add each document's file and line (`cluster` then tells which \
             of them a duplicate joined), or give every document its own id (--id-field)"
        };
        Some(format!(
            "warning: {what} read before (first: {id} at {at}); `duplicate_of`, `matched` and the \
             report name documents by id, so those ids are ambiguous: {fix}"
        ))
    }
}
