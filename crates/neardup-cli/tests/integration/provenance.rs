//! Decisions say why: --removed with reasons, --provenance, and kept documents that share a
//! cluster under --keep first.
use std::path::Path;

use serde_json::Value;

use crate::util::run;

fn read_lines(p: &Path) -> Vec<Value> {
    crate::util::json_lines(&std::fs::read(p).unwrap())
}

/// `neardup dedup ARGS` on the BRIDGE documents: its decision lines.
fn dedup_bridge(args: &[&str]) -> Vec<Value> {
    let mut all = vec!["dedup", "-q", "--method", "short"];
    all.extend_from_slice(args);
    let o = run(&all, Some(BRIDGE.as_bytes()));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    crate::util::json_lines(&o.stdout)
}

/// A and B are apart; C, read last, is near both and joins their clusters.
const BRIDGE: &str =
    "{\"id\":\"A\",\"text\":\"the quick brown fox jumps over the lazy dog near the river bank\"}\n\
{\"id\":\"B\",\"text\":\"the quick brown cat leaps over the tired cow near the river side\"}\n\
{\"id\":\"C\",\"text\":\"the quick brown cat leaps over the lazy dog near the river bank\"}\n";

#[test]
fn removed_lists_each_removed_document_with_its_reason_and_provenance() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("in.jsonl");
    std::fs::write(&input, BRIDGE).unwrap();
    let removed = dir.path().join("removed.jsonl");
    let out = dir.path().join("out.jsonl");
    let o = run(
        &[
            "dedup",
            "-q",
            "--method",
            "short",
            "--provenance",
            "--removed",
            removed.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
            input.to_str().unwrap(),
        ],
        None,
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let r = read_lines(&removed);
    assert_eq!(r.len(), 1);
    assert_eq!(r[0]["id"], "C");
    assert_eq!(r[0]["duplicate_of"], "A");
    assert_eq!(r[0]["matched"], "A");
    assert!(r[0]["similarity"].as_f64().unwrap() >= 0.8);
    assert!(
        r[0]["reason"].as_str().unwrap().contains("similarity"),
        "{}",
        r[0]
    );
    assert_eq!(r[0]["file"], input.to_str().unwrap());
    assert_eq!(r[0]["line"], 3);
    let d = read_lines(&out);
    assert_eq!(d[1]["line"], 2);
    assert_eq!(d[0]["file"], input.to_str().unwrap());
}

#[test]
fn keep_first_marks_a_kept_document_whose_cluster_was_bridged() {
    // The default (online) rule: C joins the cluster of its strongest match; A and B stay
    // apart, one kept document each.
    let d = dedup_bridge(&[]);
    assert_eq!(d[0]["duplicate_of"], Value::Null);
    assert_eq!(d[1]["duplicate_of"], Value::Null);
    assert_ne!(d[0]["cluster"], d[1]["cluster"]);
    let kept_of_c = if d[2]["duplicate_of"] == "A" { 0 } else { 1 };
    assert_eq!(d[2]["cluster"], d[kept_of_c]["cluster"]);
    assert_eq!(d[2]["stage"], "short");
    assert!(d.iter().all(|l| l.get("shares_cluster_with").is_none()));
    // Single linkage: C bridges A and B into one cluster holding two kept documents.
    let d = dedup_bridge(&["--linkage", "components"]);
    // A and B were both kept on arrival; C joined them into one cluster.
    assert_eq!(d[0]["duplicate_of"], Value::Null);
    assert_eq!(d[1]["duplicate_of"], Value::Null);
    assert_eq!(d[0]["cluster"], d[1]["cluster"]);
    assert_eq!(d[1]["shares_cluster_with"], "A");
    assert!(d[0].get("shares_cluster_with").is_none());
    // --keep longest keeps one per cluster and never marks.
    let o = run(
        &[
            "dedup",
            "-q",
            "--method",
            "short",
            "--linkage",
            "components",
            "--keep",
            "longest",
        ],
        Some(BRIDGE.as_bytes()),
    );
    let s = String::from_utf8_lossy(&o.stdout);
    assert!(!s.contains("shares_cluster_with"), "{s}");
    assert_eq!(s.matches("\"duplicate_of\":null").count(), 1, "{s}");
}

/// Unique documents once left out `similarity` and `stage`, and `--removed` lines left out
/// `distance`: a reader building a table from the first line lost columns.
#[test]
fn every_decision_line_and_removed_line_has_every_field() {
    let dir = tempfile::tempdir().unwrap();
    let removed = dir.path().join("removed.jsonl");
    let d = dedup_bridge(&["--removed", removed.to_str().unwrap()]);
    let keys = |v: &Value| {
        let mut k: Vec<String> = v.as_object().unwrap().keys().cloned().collect();
        k.sort();
        k
    };
    assert_eq!(d.len(), 3);
    assert!(d[0]["duplicate_of"].is_null() && d[2]["duplicate_of"] == "A");
    for line in &d {
        assert_eq!(keys(line), crate::util::DECISION_FIELDS, "{line}");
    }
    assert!(d[0]["stage"].is_null() && d[0]["similarity"].is_null());
    let r = read_lines(&removed);
    assert_eq!(r.len(), 1);
    assert!(r[0]["distance"].is_null(), "{}", r[0]);
    assert_eq!(r[0]["stage"], "short");
}
