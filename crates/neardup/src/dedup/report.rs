//! What a deduplication found, in numbers: the cluster statistics of a [`Clustering`] (or a
//! [`SpilledClustering`], read back in two passes)
//! ([`Report`]) and the summary of a whole batch run ([`RunSummary`]: the JSON of
//! `neardup dedup --report`, and the lines the command prints on standard error).
//!
//! ```
//! use neardup::dedup::{dedup, Keep, RunFacts};
//! use neardup::detect::SimhashDetector;
//! use neardup::{FingerprintConfig, Fingerprinter};
//! let fp = Fingerprinter::new(FingerprintConfig::default()).unwrap();
//! let docs = [
//!     "the quick brown fox jumps over the lazy dog, again and again",
//!     "something else entirely, about ice cream and summer evenings",
//!     "The quick brown fox jumps over the lazy dog, again and again!",
//! ];
//! let clustering = dedup(SimhashDetector::new(fp, 3).unwrap(), &docs, Keep::First).unwrap();
//! let facts = RunFacts { distance: 3, bytes: 180, seconds: 0.5, ..RunFacts::default() };
//! let summary = clustering.summary(10, facts, |d| format!("doc-{d}").into());
//! assert_eq!((summary.documents, summary.duplicates, summary.clusters), (3, 1, 2));
//! assert_eq!(summary.largest[0].sample_ids, ["doc-0", "doc-2"]);
//! let json = serde_json::to_value(&summary).unwrap();
//! assert_eq!(json["size_distribution"][1], serde_json::json!({"size": "2", "clusters": 1}));
//! let human = summary.to_string(); // what `neardup dedup` prints on standard error
//! assert!(human.starts_with("cluster sizes: 1×1 2×1\nlargest clusters:\n  cluster 0 (2 docs): \"doc-0\", \"doc-2\"\n"));
//! ```

use std::fmt;

use serde::Serialize;
use serde_json::Value;

use super::spill::SpilledClustering;
use super::{Assignment, Clustering, Keep, SharedClusters};

/// One cluster in a [`Report`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ClusterSummary {
    /// The cluster number (its first document).
    pub cluster: u32,
    /// Number of documents.
    pub size: u32,
    /// Up to ten member documents, in input order.
    pub sample: Vec<u32>,
}

/// Cluster statistics.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Report {
    /// The detector's name.
    pub method: String,
    /// Documents.
    pub documents: u64,
    /// Documents with a `duplicate_of`.
    pub duplicates: u64,
    /// Empty documents (own cluster, kept).
    pub empty: u64,
    /// Clusters, singletons included.
    pub clusters: u64,
    /// Clusters of two or more documents.
    pub clusters_with_duplicates: u64,
    /// `(label, clusters)` by size: `1`, `2`, `3-4`, `5-8`, … (powers of two).
    pub size_distribution: Vec<(String, u64)>,
    /// The largest clusters (size descending, then cluster number).
    pub largest: Vec<ClusterSummary>,
}

/// What a [`RunSummary`] holds besides the clustering: the settings in force and what the run
/// read and took.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct RunFacts {
    /// The Hamming distance in force (the simhash detectors').
    pub distance: u32,
    /// The Jaccard threshold in force (MinHash, and `auto` on long texts).
    pub threshold: f64,
    /// Bad input records counted and skipped.
    pub bad_skipped: u64,
    /// Input bytes read (decompressed).
    pub bytes: u64,
    /// Wall-clock seconds of the run.
    pub seconds: f64,
}

/// The summary of a batch dedup run: cluster statistics ([`Report`]), the settings in force
/// and the throughput. Serialised, it is the JSON object `neardup dedup --report` writes; its
/// [`Display`](fmt::Display) is the few lines the command prints on standard error.
///
/// The fields stand in the alphabetical order of their JSON keys, the order of the report.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunSummary {
    /// Bad input records counted and skipped.
    pub bad_skipped: u64,
    /// Input bytes read (decompressed).
    pub bytes: u64,
    /// Clusters, singletons included.
    pub clusters: u64,
    /// Clusters of two or more documents.
    pub clusters_with_duplicates: u64,
    /// The Hamming distance in force.
    pub distance: u32,
    /// Documents.
    pub documents: u64,
    /// Documents with a `duplicate_of`.
    pub duplicates: u64,
    /// Empty documents (own cluster, kept).
    pub empty: u64,
    /// Which document of a cluster is kept (`"first"`, `"longest"`).
    pub keep: Keep,
    /// Documents kept on arrival in a cluster that already had a kept document
    /// ([`Clustering::shared_clusters`]; only under [`Linkage::Components`](super::Linkage)).
    pub kept_sharing_a_cluster: u64,
    /// The largest clusters (size descending, then cluster number).
    pub largest: Vec<LargestCluster>,
    /// Throughput: `bytes` / 10⁶ / `seconds`.
    pub mb_per_s: f64,
    /// The detector's name.
    pub method: String,
    /// Wall-clock seconds of the run.
    pub seconds: f64,
    /// Clusters by size: `1`, `2`, `3-4`, `5-8`, … (powers of two); sizes without a cluster
    /// are left out.
    pub size_distribution: Vec<SizeCount>,
    /// Worker threads of the rayon pool the summary was made on.
    pub threads: usize,
    /// The Jaccard threshold in force.
    pub threshold: f64,
}

/// How many clusters a [`RunSummary`] counts of one size class.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct SizeCount {
    /// Clusters of this size.
    pub clusters: u64,
    /// The size class: `1`, `2`, `3-4`, `5-8`, ….
    pub size: String,
}

/// One of the largest clusters in a [`RunSummary`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LargestCluster {
    /// The cluster number (its first document).
    pub cluster: u32,
    /// The ids of up to ten member documents, in input order.
    pub sample_ids: Vec<Value>,
    /// Number of documents.
    pub size: u32,
}

/// One pass over a run's assignments in input order, calling `f(document, assignment)`.
pub(crate) type Pass<'a, E> = &'a mut dyn FnMut(&mut dyn FnMut(u32, &Assignment)) -> Result<(), E>;

/// The statistics of `n` documents with the `top` largest clusters, from two passes over their
/// assignments; also how many kept documents share a cluster with an earlier kept one.
pub(crate) fn report_of<E>(
    method: &str,
    keep: Keep,
    n: usize,
    top: usize,
    pass: Pass<'_, E>,
) -> Result<(Report, u64), E> {
    let mut sizes = vec![0u32; n];
    let (mut duplicates, mut empty) = (0u64, 0u64);
    let mut shared = SharedClusters::new(n, keep);
    let mut sharing = 0u64;
    pass(&mut |i, o| {
        sizes[o.cluster as usize] += 1;
        duplicates += u64::from(o.duplicate_of.is_some());
        empty += u64::from(o.empty);
        sharing += u64::from(shared.next(i, o).is_some());
    })?;
    drop(shared);
    let mut hist: Vec<u64> = Vec::new();
    let mut clusters = 0u64;
    let mut multi = 0u64;
    for &s in sizes.iter().filter(|&&s| s > 0) {
        clusters += 1;
        if s > 1 {
            multi += 1;
        }
        let b = (32 - (s - 1).leading_zeros()) as usize; // 1→0, 2→1, 3-4→2, 5-8→3
        if hist.len() <= b {
            hist.resize(b + 1, 0);
        }
        hist[b] += 1;
    }
    let size_distribution = hist
        .iter()
        .enumerate()
        .filter(|(_, &c)| c > 0)
        .map(|(b, &c)| {
            let label = match b {
                0 => "1".to_string(),
                1 => "2".to_string(),
                _ => format!("{}-{}", (1u64 << (b - 1)) + 1, 1u64 << b),
            };
            (label, c)
        })
        .collect();
    let mut big: Vec<(u32, u32)> = sizes
        .iter()
        .enumerate()
        .filter(|(_, &s)| s > 1)
        .map(|(c, &s)| (s, c as u32))
        .collect();
    drop(sizes);
    big.sort_unstable_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    big.truncate(top);
    let mut largest: Vec<ClusterSummary> = big
        .iter()
        .map(|&(size, cluster)| ClusterSummary {
            cluster,
            size,
            sample: Vec::new(),
        })
        .collect();
    if !largest.is_empty() {
        let want: rustc_hash::FxHashMap<u32, usize> = largest
            .iter()
            .enumerate()
            .map(|(i, c)| (c.cluster, i))
            .collect();
        pass(&mut |i, o| {
            if let Some(&j) = want.get(&o.cluster) {
                if largest[j].sample.len() < 10 {
                    largest[j].sample.push(i);
                }
            }
        })?;
    }
    let report = Report {
        method: method.to_string(),
        documents: n as u64,
        duplicates,
        empty,
        clusters,
        clusters_with_duplicates: multi,
        size_distribution,
        largest,
    };
    Ok((report, sharing))
}

/// The run summary of a report.
pub(crate) fn summary_of(
    r: Report,
    keep: Keep,
    kept_sharing_a_cluster: u64,
    facts: RunFacts,
    id: impl Fn(u32) -> Value,
) -> RunSummary {
    RunSummary {
        bad_skipped: facts.bad_skipped,
        bytes: facts.bytes,
        clusters: r.clusters,
        clusters_with_duplicates: r.clusters_with_duplicates,
        distance: facts.distance,
        documents: r.documents,
        duplicates: r.duplicates,
        empty: r.empty,
        keep,
        kept_sharing_a_cluster,
        largest: r
            .largest
            .into_iter()
            .map(|l| LargestCluster {
                cluster: l.cluster,
                sample_ids: l.sample.into_iter().map(&id).collect(),
                size: l.size,
            })
            .collect(),
        mb_per_s: facts.bytes as f64 / 1e6 / facts.seconds.max(1e-9),
        method: r.method,
        seconds: facts.seconds,
        size_distribution: r
            .size_distribution
            .into_iter()
            .map(|(size, clusters)| SizeCount { clusters, size })
            .collect(),
        threads: rayon::current_num_threads(),
        threshold: facts.threshold,
    }
}

impl Clustering {
    fn report_and_sharing(&self, top: usize) -> (Report, u64) {
        let outcomes = &self.outcomes;
        let mut pass = |f: &mut dyn FnMut(u32, &Assignment)| {
            for (i, o) in outcomes.iter().enumerate() {
                f(i as u32, o);
            }
            Ok::<(), std::convert::Infallible>(())
        };
        match report_of(&self.method, self.keep, outcomes.len(), top, &mut pass) {
            Ok(r) => r,
            Err(never) => match never {},
        }
    }

    /// Statistics with the `top` largest clusters.
    pub fn report(&self, top: usize) -> Report {
        self.report_and_sharing(top).0
    }

    /// The run summary with the `top` largest clusters; `id(d)` is the id of document `d`
    /// (0-based input position) as the run's outputs name it.
    pub fn summary(&self, top: usize, facts: RunFacts, id: impl Fn(u32) -> Value) -> RunSummary {
        let (r, sharing) = self.report_and_sharing(top);
        summary_of(r, self.keep, sharing, facts, id)
    }
}

impl SpilledClustering {
    fn report_and_sharing(&self, top: usize) -> crate::Result<(Report, u64)> {
        let mut pass = |f: &mut dyn FnMut(u32, &Assignment)| {
            for (i, o) in self.outcomes().enumerate() {
                f(i as u32, &o?);
            }
            Ok(())
        };
        report_of(self.method(), self.keep(), self.len(), top, &mut pass)
    }

    /// Statistics with the `top` largest clusters.
    ///
    /// # Errors
    /// [`crate::Error::Spill`] if the outcome file cannot be read.
    pub fn report(&self, top: usize) -> crate::Result<Report> {
        Ok(self.report_and_sharing(top)?.0)
    }

    /// The run summary with the `top` largest clusters; `id(d)` names document `d`.
    ///
    /// # Errors
    /// [`crate::Error::Spill`] if the outcome file cannot be read.
    pub fn summary(
        &self,
        top: usize,
        facts: RunFacts,
        id: impl Fn(u32) -> Value,
    ) -> crate::Result<RunSummary> {
        let (r, sharing) = self.report_and_sharing(top)?;
        Ok(summary_of(r, self.keep(), sharing, facts, id))
    }
}

/// The lines `neardup dedup` prints on standard error: cluster sizes, the largest clusters
/// with their sample ids, and one line of totals and throughput.
impl fmt::Display for RunSummary {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("cluster sizes:")?;
        for d in &self.size_distribution {
            write!(f, " {}×{}", d.size, d.clusters)?;
        }
        writeln!(f)?;
        if !self.largest.is_empty() {
            writeln!(f, "largest clusters:")?;
            for l in &self.largest {
                let ids: Vec<String> = l.sample_ids.iter().map(Value::to_string).collect();
                writeln!(
                    f,
                    "  cluster {} ({} docs): {}",
                    l.cluster,
                    l.size,
                    ids.join(", ")
                )?;
            }
        }
        writeln!(
            f,
            "dedup: {} documents, {} duplicates, {} clusters ({} with duplicates), {} empty, {} bad skipped; {:.1} MB in {:.2} s = {:.1} MB/s ({}, {} threads)",
            self.documents,
            self.duplicates,
            self.clusters,
            self.clusters_with_duplicates,
            self.empty,
            self.bad_skipped,
            self.bytes as f64 / 1e6,
            self.seconds,
            self.mb_per_s,
            self.method,
            self.threads,
        )
    }
}
