//! The run summary of `neardup dedup`: JSON for `--report`, a few lines for standard error.

use neardup::dedup::Clustering;
use serde_json::Value;

use super::write::Records;
use super::Args;

/// The run summary (`--report`, and the human report from it).
pub fn full(
    c: &Clustering,
    records: &Records,
    args: &Args,
    bad: u64,
    shared_clusters: usize,
    bytes: u64,
    seconds: f64,
) -> Value {
    let r = c.report(args.top);
    let largest: Vec<Value> = r
        .largest
        .iter()
        .map(|l| {
            serde_json::json!({
                "cluster": l.cluster,
                "size": l.size,
                "sample_ids": l.sample.iter().map(|&d| records.list[d as usize].id.clone()).collect::<Vec<_>>(),
            })
        })
        .collect();
    let dist: Vec<Value> = r
        .size_distribution
        .iter()
        .map(|(label, n)| serde_json::json!({"size": label, "clusters": n}))
        .collect();
    serde_json::json!({
        "method": r.method,
        "distance": args.distance(),
        "threshold": args.threshold(),
        "keep": args.keep,
        "documents": r.documents,
        "duplicates": r.duplicates,
        "empty": r.empty,
        "bad_skipped": bad,
        "kept_sharing_a_cluster": shared_clusters,
        "clusters": r.clusters,
        "clusters_with_duplicates": r.clusters_with_duplicates,
        "size_distribution": dist,
        "largest": largest,
        "bytes": bytes,
        "seconds": seconds,
        "mb_per_s": bytes as f64 / 1e6 / seconds.max(1e-9),
        "threads": rayon::current_num_threads(),
    })
}
/// The report on standard error.
pub fn human(r: &Value) -> String {
    let mut s = String::new();
    if let Some(dist) = r["size_distribution"].as_array() {
        s.push_str("cluster sizes:");
        for d in dist {
            s.push_str(&format!(
                " {}×{}",
                d["size"].as_str().unwrap_or("?"),
                d["clusters"]
            ));
        }
        s.push('\n');
    }
    if let Some(largest) = r["largest"].as_array().filter(|l| !l.is_empty()) {
        s.push_str("largest clusters:\n");
        for l in largest {
            let ids: Vec<String> = l["sample_ids"]
                .as_array()
                .map(|a| a.iter().map(Value::to_string).collect())
                .unwrap_or_default();
            s.push_str(&format!(
                "  cluster {} ({} docs): {}\n",
                l["cluster"],
                l["size"],
                ids.join(", ")
            ));
        }
    }
    s.push_str(&format!(
        "dedup: {} documents, {} duplicates, {} clusters ({} with duplicates), {} empty, {} bad skipped; {:.1} MB in {:.2} s = {:.1} MB/s ({}, {} threads)\n",
        r["documents"],
        r["duplicates"],
        r["clusters"],
        r["clusters_with_duplicates"],
        r["empty"],
        r["bad_skipped"],
        r["bytes"].as_f64().unwrap_or(0.0) / 1e6,
        r["seconds"].as_f64().unwrap_or(0.0),
        r["mb_per_s"].as_f64().unwrap_or(0.0),
        r["method"].as_str().unwrap_or(""),
        r["threads"],
    ));
    s
}
