//! The planner's choice between the block tables ([`HammingIndex`] with a [`Layout`]) and the
//! [`LeanIndex`], with the reason it gives, and [`PlannedIndex`], the index it builds.
//!
//! [`plan_index`] compares the fastest block layout that fits the memory budget
//! ([`Layout::plan`]) with the lean index (for distances up to [`LEAN_MAX_DISTANCE`]) by their
//! cost models ([`Layout::estimate_index`], [`crate::lean_estimate`]) and keeps the faster of
//! those that fit; when nothing fits, whichever needs the least memory. The lean index wins past
//! about 40 M entries, where the block tables' slots grow long, and wherever they do not fit.
//!
//! # Example
//! ```
//! use neardup_index::{plan_index, IndexChoice};
//! // 50 M fingerprints in 1 GiB: the smallest block layout needs ~1.9 GiB.
//! let plan = plan_index(50_000_000, 3, 1 << 30).unwrap();
//! assert!(matches!(plan.choice, IndexChoice::Lean));
//! assert!(plan.reason.contains("no block layout fits"));
//! let plan = plan_index(1_000_000, 3, 1 << 30).unwrap();
//! assert!(matches!(plan.choice, IndexChoice::Tables(_)));
//! ```
use crate::error::Result;
use crate::index::{HammingIndex, Match};
use crate::layout::Layout;
use crate::lean::{lean_estimate, LeanIndex, LEAN_MAX_DISTANCE};
use std::ops::ControlFlow;

/// Which index a [`Plan`] builds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum IndexChoice {
    /// Block tables with this layout.
    Tables(Layout),
    /// The lean index (distances up to 3).
    Lean,
}

impl IndexChoice {
    /// `lean`, or the layout's name (`m4`, `m5x2`, ...).
    pub fn name(&self) -> String {
        match self {
            IndexChoice::Tables(l) => l.name(),
            IndexChoice::Lean => "lean".into(),
        }
    }

    /// Number of tables a query probes.
    pub fn tables(&self) -> usize {
        match self {
            IndexChoice::Tables(l) => l.tables(),
            IndexChoice::Lean => 2,
        }
    }

    /// Estimated nanoseconds per query at distance `k` and heap bytes for `n` entries.
    pub fn estimate(&self, n: u64, k: u32) -> (f64, u64) {
        match self {
            IndexChoice::Tables(l) => l.estimate_index(n, k),
            IndexChoice::Lean => lean_estimate(n, k),
        }
    }
}

/// The planner's choice and why.
#[derive(Clone, Debug)]
pub struct Plan {
    /// What to build.
    pub choice: IndexChoice,
    /// One sentence: the budget, what fits it and the estimates compared.
    pub reason: String,
}

fn gib(bytes: u64) -> String {
    format!("{:.2} GiB", bytes as f64 / (1u64 << 30) as f64)
}

/// Chooses the index for `n` entries answering distances up to `k` within about
/// `memory_budget_bytes` of heap: the faster by the cost models of the block layout
/// [`Layout::plan`] picks and of the lean index, among those that fit; when nothing fits, the
/// one that needs the least memory. The reason names both estimates.
///
/// # Errors
/// [`crate::Error::DistanceTooLarge`] if `k >= 64`.
pub fn plan_index(n: u64, k: u32, memory_budget_bytes: u64) -> Result<Plan> {
    let layout = Layout::plan(n, k, memory_budget_bytes)?;
    let (t_ns, t_bytes) = layout.estimate_index(n, k);
    let budget = gib(memory_budget_bytes);
    let tables = |reason: String| {
        Ok(Plan {
            choice: IndexChoice::Tables(layout.clone()),
            reason,
        })
    };
    let lean = |reason: String| {
        Ok(Plan {
            choice: IndexChoice::Lean,
            reason,
        })
    };
    let t_fits = t_bytes <= memory_budget_bytes;
    if k > LEAN_MAX_DISTANCE {
        return tables(if t_fits {
            format!(
                "{layout}: the fastest block layout within the {budget} budget (estimated {t_ns:.0} ns a query, {})",
                gib(t_bytes)
            )
        } else {
            format!(
                "{layout}: no layout fits the {budget} budget; {layout} needs the least memory ({}); the lean index answers distances up to {LEAN_MAX_DISTANCE} only",
                gib(t_bytes)
            )
        });
    }
    let (l_ns, l_bytes) = lean_estimate(n, k);
    let l_fits = l_bytes <= memory_budget_bytes;
    let both = format!(
        "{layout} estimated {t_ns:.0} ns a query in {}, lean {l_ns:.0} ns in {}",
        gib(t_bytes),
        gib(l_bytes)
    );
    match (t_fits, l_fits) {
        (true, true) if t_ns <= l_ns => tables(format!(
            "{layout}: the fastest within the {budget} budget ({both})"
        )),
        (true, true) => lean(format!(
            "lean: the fastest within the {budget} budget ({both})"
        )),
        (true, false) => tables(format!(
            "{layout}: the only index within the {budget} budget ({both})"
        )),
        (false, true) => lean(format!(
            "lean: no block layout fits the {budget} budget; the lean index does (two tables and one-bit query flips; {both})"
        )),
        (false, false) if l_bytes < t_bytes => lean(format!(
            "lean: nothing fits the {budget} budget; the lean index needs the least memory ({both})"
        )),
        (false, false) => tables(format!(
            "{layout}: nothing fits the {budget} budget; {layout} needs the least memory ({both})"
        )),
    }
}

/// An index built from a [`Plan`]: the block tables or the lean index, searched alike.
#[derive(Clone, Debug)]
pub enum PlannedIndex {
    /// Block tables.
    Tables(HammingIndex),
    /// The lean index.
    Lean(LeanIndex),
}

impl PlannedIndex {
    /// Builds `choice` over `fps`, each fingerprint's handle its position.
    ///
    /// # Errors
    /// [`crate::Error::TooManyEntries`] past [`crate::MAX_ENTRIES`].
    pub fn from_fingerprints(choice: &IndexChoice, fps: &[u64]) -> Result<PlannedIndex> {
        Ok(match choice {
            IndexChoice::Tables(l) => {
                PlannedIndex::Tables(HammingIndex::from_fingerprints(l.clone(), fps)?)
            }
            IndexChoice::Lean => PlannedIndex::Lean(LeanIndex::from_fingerprints(fps)?),
        })
    }

    /// Every entry within distance `k` of `q`, sorted by handle, then fingerprint.
    ///
    /// # Errors
    /// [`crate::Error::DistanceTooLarge`] past the index's largest distance.
    pub fn search(&self, q: u64, k: u32) -> Result<Vec<Match>> {
        match self {
            PlannedIndex::Tables(i) => i.search(q, k),
            PlannedIndex::Lean(i) => i.search(q, k),
        }
    }

    /// [`search`](Self::search) of each query, in parallel; large batches of the lean index are
    /// searched table by table in sorted order ([`LeanIndex::search_batch`]).
    ///
    /// # Errors
    /// [`crate::Error::DistanceTooLarge`] past the index's largest distance.
    pub fn search_batch(&self, queries: &[u64], k: u32) -> Result<Vec<Vec<Match>>> {
        match self {
            PlannedIndex::Tables(i) => i.search_batch(queries, k),
            PlannedIndex::Lean(i) => i.search_batch(queries, k),
        }
    }

    /// Calls `f` for every entry within distance `k` of `q` until it returns `Break`.
    ///
    /// # Errors
    /// [`crate::Error::DistanceTooLarge`] past the index's largest distance.
    pub fn search_with<F>(&self, q: u64, k: u32, f: F) -> Result<ControlFlow<()>>
    where
        F: FnMut(Match) -> ControlFlow<()>,
    {
        match self {
            PlannedIndex::Tables(i) => i.search_with(q, k, f),
            PlannedIndex::Lean(i) => i.search_with(q, k, f),
        }
    }

    /// Heap bytes held by the index.
    pub fn heap_bytes(&self) -> usize {
        match self {
            PlannedIndex::Tables(i) => i.heap_bytes(),
            PlannedIndex::Lean(i) => i.heap_bytes(),
        }
    }
}
