//! `neardup eval`: make, score (hand-computed), sweep.
use std::path::PathBuf;

use serde_json::Value;

use crate::util::run;

fn fixture(name: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/dedup")
        .join(name)
        .display()
        .to_string()
}

/// `neardup eval make` of the mixed fixture with `seed` and `extra` flags into `out`.
fn make_set(seed: &str, extra: &[&str], out: &std::path::Path) -> std::process::Output {
    let fix = fixture("mixed.jsonl");
    let mut args = vec!["eval", "make", &fix, "--seed", seed];
    args.extend_from_slice(extra);
    args.extend(["--output", out.to_str().unwrap()]);
    run(&args, None)
}

#[test]
fn score_matches_hand_computed_pairs() {
    let dir = tempfile::tempdir().unwrap();
    let set = dir.path().join("set.jsonl");
    let pred = dir.path().join("pred.jsonl");
    // Truth: {d0, d1} (edit, long), {d2, d3} (mirror, short), {d4} (negative, short).
    let doc = |id: &str, group: u32, kind: &str, of: Option<&str>, bucket: &str| {
        serde_json::json!({"id": id, "text": "x", "group": group, "kind": kind, "of": of, "source": "t#1", "bucket": bucket}).to_string()
    };
    std::fs::write(
        &set,
        [
            doc("d0", 0, "original", None, "long"),
            doc("d1", 0, "edit", Some("d0"), "long"),
            doc("d2", 1, "original", None, "short"),
            doc("d3", 1, "mirror", Some("d2"), "short"),
            doc("d4", 2, "negative", None, "short"),
        ]
        .join("\n")
            + "\n",
    )
    .unwrap();
    // Prediction: {d0, d1}, {d2, d3, d4}.
    std::fs::write(
        &pred,
        "{\"id\":\"d0\",\"cluster\":0}\n{\"id\":\"d1\",\"cluster\":0}\n{\"id\":\"d2\",\"cluster\":2}\n{\"id\":\"d3\",\"cluster\":2}\n{\"id\":\"d4\",\"cluster\":2}\n",
    )
    .unwrap();
    let json = dir.path().join("s.json");
    let o = run(
        &[
            "eval",
            "score",
            set.to_str().unwrap(),
            pred.to_str().unwrap(),
            "--json",
            json.to_str().unwrap(),
        ],
        None,
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let s: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    // Predicted pairs: (d0,d1) (d2,d3) (d2,d4) (d3,d4) = 4; true: (d0,d1) (d2,d3) = 2; correct 2.
    assert_eq!(s["overall"]["predicted_pairs"], 4);
    assert_eq!(s["overall"]["true_pairs"], 2);
    assert_eq!(s["overall"]["correct_pairs"], 2);
    assert_eq!(s["overall"]["precision"], 0.5);
    assert_eq!(s["overall"]["recall"], 1.0);
    let row = |list: &str, kind: &str, bucket: &str| -> Value {
        s[list]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["kind"] == kind && r["bucket"] == bucket)
            .cloned()
            .unwrap()
    };
    // mirror: pairs (d2,d3) true & predicted, (d3,d4) predicted → P 1/2, R 1.
    let m = row("by_kind", "mirror", "all");
    assert_eq!(
        (m["precision"].as_f64(), m["recall"].as_f64()),
        (Some(0.5), Some(1.0))
    );
    // negative: (d2,d4), (d3,d4) predicted, none true → P 0, R undefined.
    let n = row("by_kind", "negative", "all");
    assert_eq!(n["precision"], 0.0);
    assert_eq!(n["recall"], Value::Null);
    assert_eq!(n["f1"], Value::Null);
    // buckets: long has (d0,d1) only → 1/1; short has 3 predicted, 1 true.
    assert_eq!(row("by_bucket", "all", "long")["precision"], 1.0);
    let sh = row("by_bucket", "all", "short");
    assert_eq!(
        (sh["predicted_pairs"].as_u64(), sh["correct_pairs"].as_u64()),
        (Some(3), Some(1))
    );
    let table = String::from_utf8(o.stdout).unwrap();
    assert!(table.lines().nth(1).unwrap().starts_with("all"), "{table}");

    // A document missing from the prediction is an error naming it.
    std::fs::write(&pred, "{\"id\":\"d0\",\"cluster\":0}\n").unwrap();
    let o = run(
        &[
            "eval",
            "score",
            set.to_str().unwrap(),
            pred.to_str().unwrap(),
        ],
        None,
    );
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("d1"));
}

#[test]
fn make_dedup_score_and_sweep_end_to_end() {
    let dir = tempfile::tempdir().unwrap();
    let set = dir.path().join("set.jsonl");
    let set2 = dir.path().join("set2.jsonl");
    let make = |out: &PathBuf| make_set("5", &[], out);
    let o = make(&set);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(make(&set2).status.success());
    // Deterministic for a seed.
    assert_eq!(std::fs::read(&set).unwrap(), std::fs::read(&set2).unwrap());
    let docs = crate::util::json_lines(&std::fs::read(&set).unwrap());
    assert!(!docs.is_empty());
    for d in &docs {
        for f in ["id", "text", "group", "kind", "of", "source", "bucket"] {
            assert!(d.get(f).is_some(), "{f} missing in {d}");
        }
    }
    // The fixture's own copies are left out as natural near-duplicates of earlier sources.
    assert!(docs
        .iter()
        .all(|d| !d["source"].as_str().unwrap().contains("copy")));

    let out = dir.path().join("out.jsonl");
    let o = run(
        &[
            "dedup",
            "-q",
            "-o",
            out.to_str().unwrap(),
            set.to_str().unwrap(),
        ],
        None,
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let o = run(
        &[
            "eval",
            "score",
            set.to_str().unwrap(),
            out.to_str().unwrap(),
        ],
        None,
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));

    let chart = dir.path().join("pr.svg");
    let json = dir.path().join("sweep.json");
    let o = run(
        &[
            "eval",
            "sweep",
            set.to_str().unwrap(),
            "--k",
            "0..4",
            "--chart",
            chart.to_str().unwrap(),
            "--json",
            json.to_str().unwrap(),
        ],
        None,
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let table = String::from_utf8(o.stdout).unwrap();
    assert_eq!(table.lines().count(), 6, "{table}");
    let svg = std::fs::read_to_string(&chart).unwrap();
    assert!(svg.starts_with("<svg") && svg.contains("polyline"));
    let points: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(points.as_array().unwrap().len(), 5);
    // Recall never falls as k grows (clusters only merge).
    let recalls: Vec<f64> = points
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|p| p["scores"]["overall"]["recall"].as_f64())
        .collect();
    assert!(recalls.windows(2).all(|w| w[0] <= w[1]), "{recalls:?}");
    let o = run(
        &["eval", "sweep", set.to_str().unwrap(), "--k", "5..2"],
        None,
    );
    assert!(!o.status.success());
}

/// `eval make --kinds repost,quote --copies 3 --negative-percent 0`: only those kinds are
/// planted, several copies per group, no template negatives; a repost holds its original.
#[test]
fn make_plants_the_chosen_kinds_and_copies() {
    let dir = tempfile::tempdir().unwrap();
    let set = dir.path().join("set.jsonl");
    let o = make_set(
        "3",
        &[
            "--kinds",
            "repost,quote",
            "--copies",
            "3",
            "--negative-percent",
            "0",
        ],
        &set,
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let docs = crate::util::json_lines(&std::fs::read(&set).unwrap());
    let by_id: std::collections::HashMap<&str, &Value> = docs
        .iter()
        .map(|d| (d["id"].as_str().unwrap(), d))
        .collect();
    let mut planted = 0;
    for d in &docs {
        let kind = d["kind"].as_str().unwrap();
        assert!(
            ["unique", "original", "repost", "quote"].contains(&kind),
            "{d}"
        );
        if kind == "repost" {
            let of = by_id[d["of"].as_str().unwrap()];
            let original = of["text"].as_str().unwrap().trim();
            assert!(d["text"].as_str().unwrap().contains(original), "{d}");
        }
        planted += usize::from(kind == "repost" || kind == "quote");
    }
    let originals = docs.iter().filter(|d| d["kind"] == "original").count();
    assert!(
        originals > 0 && planted >= originals,
        "{planted} / {originals}"
    );
}

/// `eval score`'s scores of `neardup dedup <flags> set` (written under `dir`).
fn dedup_scores(dir: &std::path::Path, set: &str, flags: &[&str]) -> Value {
    let out = dir.join("out.jsonl");
    let mut args = vec!["dedup", "-q", "-o", out.to_str().unwrap(), set];
    args.extend_from_slice(flags);
    let o = run(&args, None);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let scored = dir.join("scores.json");
    let o = run(
        &[
            "eval",
            "score",
            set,
            out.to_str().unwrap(),
            "--json",
            scored.to_str().unwrap(),
        ],
        None,
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    serde_json::from_str(&std::fs::read_to_string(&scored).unwrap()).unwrap()
}

/// `eval sweep` over the default detector's threshold decides as `neardup dedup` does: at 0.5
/// (dedup's default) and at 0.7 (`dedup --threshold 0.7`) its scores are those of `eval score`
/// on dedup's output; `--k` and `--threshold` are refused together, and a bad threshold names
/// the range.
#[test]
fn threshold_sweep_scores_what_dedup_decides() {
    let dir = tempfile::tempdir().unwrap();
    let set = dir.path().join("set.jsonl");
    let o = make_set("3", &[], &set);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let set = set.to_str().unwrap();
    let json = dir.path().join("sweep.json");
    let o = run(
        &[
            "eval",
            "sweep",
            set,
            "--threshold",
            "0.5,0.7",
            "--json",
            json.to_str().unwrap(),
        ],
        None,
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let table = String::from_utf8(o.stdout).unwrap();
    assert!(table.starts_with("   t"), "{table}");
    assert_eq!(table.lines().count(), 3, "{table}");
    let points: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let points = points.as_array().unwrap();
    assert_eq!(points.len(), 2);
    for (p, flags) in points.iter().zip([&[][..], &["--threshold", "0.7"][..]]) {
        assert_eq!(
            p["scores"],
            dedup_scores(dir.path(), set, flags),
            "{flags:?}"
        );
        assert!(p.get("k").is_none());
    }
    assert!(points[0]["scores"]["overall"]["recall"].as_f64().unwrap() > 0.0);

    let o = run(
        &["eval", "sweep", set, "--k", "0..2", "--threshold", "0.5"],
        None,
    );
    assert!(!o.status.success());
    let o = run(&["eval", "sweep", set, "--threshold", "1.5"], None);
    assert!(!o.status.success());
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("(0, 1]"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// `eval sweep --minhash-char-ngram` / `--minhash-word-ngram` decide as `neardup dedup` with
/// the same shingle size does (5 and 3 are dedup's defaults, 3 and 2 other sizes); the size
/// flags are refused with a threshold sweep, out of range, and by `dedup --method simhash`.
#[test]
fn ngram_sweep_scores_what_dedup_decides() {
    let dir = tempfile::tempdir().unwrap();
    let set = dir.path().join("set.jsonl");
    let o = make_set("3", &[], &set);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let set = set.to_str().unwrap();
    for (knob, values, dedup_flag) in [
        ("--minhash-char-ngram", "5,3", "--minhash-char-ngram"),
        ("--minhash-word-ngram", "3,2", "--minhash-word-ngram"),
    ] {
        let json = dir.path().join("sweep.json");
        let o = run(
            &[
                "eval",
                "sweep",
                set,
                knob,
                values,
                "--json",
                json.to_str().unwrap(),
            ],
            None,
        );
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let table = String::from_utf8(o.stdout).unwrap();
        assert!(table.starts_with("   n"), "{table}");
        let points: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
        let points = points.as_array().unwrap();
        assert_eq!(points.len(), 2);
        for (p, n) in points.iter().zip(values.split(',')) {
            assert_eq!(
                p["scores"],
                dedup_scores(dir.path(), set, &[dedup_flag, n]),
                "{knob} {n}"
            );
            assert!(p["ngram"].is_object(), "{p}");
        }
    }
    let o = run(
        &[
            "eval",
            "sweep",
            set,
            "--minhash-char-ngram",
            "3,5",
            "--threshold",
            "0.5",
        ],
        None,
    );
    assert!(!o.status.success());
    let o = run(&["eval", "sweep", set, "--minhash-char-ngram", "0,3"], None);
    assert!(!o.status.success());
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("1 to 64"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    let o = run(
        &[
            "dedup",
            set,
            "--method",
            "simhash",
            "--minhash-char-ngram",
            "4",
        ],
        None,
    );
    assert!(!o.status.success());
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("--method minhash or auto"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}
