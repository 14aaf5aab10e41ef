//! One vocabulary across commands, and flags that would do nothing are refused.
use crate::util::run;

fn err(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

const DOCS: &[u8] = b"{\"id\":1,\"text\":\"the quick brown fox jumps over the lazy dog\"}\n";

#[test]
fn distance_under_the_default_detector_is_refused() {
    let o = run(&["dedup", "-q", "--distance", "20"], Some(DOCS));
    assert_eq!(o.status.code(), Some(2));
    let e = err(&o);
    assert!(
        e.contains("--distance") && e.contains("--method simhash") && e.contains("--threshold"),
        "{e}"
    );
    assert!(o.stdout.is_empty());
    // Accepted where it is used.
    let o = run(
        &["dedup", "-q", "--method", "simhash", "-k", "20"],
        Some(DOCS),
    );
    assert!(o.status.success(), "{}", err(&o));
}

#[test]
fn threshold_with_simhash_is_refused() {
    let o = run(
        &["dedup", "-q", "--method", "simhash", "--threshold", "0.5"],
        Some(DOCS),
    );
    assert_eq!(o.status.code(), Some(2));
    let e = err(&o);
    assert!(
        e.contains("--threshold") && e.contains("--method simhash"),
        "{e}"
    );
    let o = run(&["dedup", "-q", "--threshold", "0.5"], Some(DOCS));
    assert!(o.status.success(), "{}", err(&o));
}

#[test]
fn out_of_range_distance_and_threshold_say_the_range_not_rust() {
    let o = run(
        &["dedup", "--method", "simhash", "--distance", "99"],
        Some(DOCS),
    );
    assert_eq!(o.status.code(), Some(2));
    let e = err(&o);
    assert!(e.contains("0..=63") && !e.contains("::"), "{e}");
    let o = run(
        &["compare", "--text", "a b", "a c", "--distance", "99"],
        None,
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(err(&o).contains("0..=63"), "{}", err(&o));
    let o = run(&["dedup", "--threshold", "1.5"], Some(DOCS));
    assert_eq!(o.status.code(), Some(2));
    assert!(err(&o).contains("strictly between 0 and 1"), "{}", err(&o));
}

#[test]
fn features_names_the_feature_method_in_every_command() {
    let fp = |args: &[&str]| {
        let o = run(args, Some(b"the cat sat on the mat\n"));
        assert!(o.status.success(), "{args:?}: {}", err(&o));
        (String::from_utf8_lossy(&o.stdout).into_owned(), err(&o))
    };
    let (chars, _) = fp(&["fingerprint", "--features", "chars"]);
    let (words, _) = fp(&["fingerprint", "--features", "words"]);
    assert_ne!(chars, words);
    // The old spelling still works, with a deprecation warning.
    let (old, warning) = fp(&["fingerprint", "--method", "chars"]);
    assert_eq!(old, chars);
    assert!(
        warning.contains("deprecated") && warning.contains("--features"),
        "{warning}"
    );
    let o = run(
        &[
            "compare",
            "--method",
            "simhash",
            "--features",
            "chars",
            "--text",
            "the cat",
            "the cat",
        ],
        None,
    );
    assert!(o.status.success(), "{}", err(&o));
    assert!(String::from_utf8_lossy(&o.stdout).contains("(chars)"));
    let o = run(
        &["dedup", "-q", "--features", "chars", "--method", "simhash"],
        Some(DOCS),
    );
    assert!(o.status.success(), "{}", err(&o));
    // In dedup --method is the detector.
    let o = run(&["dedup", "-q", "--method", "chars"], Some(DOCS));
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn q_means_quiet_everywhere_and_search_queries_is_long_only() {
    let dir = tempfile::tempdir().unwrap();
    let fps = dir.path().join("fps.hex");
    std::fs::write(&fps, "0000000000000000\n0000000000000003\n").unwrap();
    let f = fps.to_str().unwrap();
    let o = run(&["search", f, "--queries", f, "-q"], None);
    assert!(o.status.success(), "{}", err(&o));
    assert!(o.stderr.is_empty(), "{}", err(&o));
    assert_eq!(String::from_utf8_lossy(&o.stdout).lines().count(), 4);
    let o = run(&["pairs", f, "-q"], None);
    assert!(o.status.success() && o.stderr.is_empty(), "{}", err(&o));
    let o = run(&["fingerprint", "-q"], Some(b"text\n\n"));
    assert!(o.status.success() && o.stderr.is_empty(), "{}", err(&o));
}

/// `--minhash-bits` sets the MinHash detector's signature entries: the README sample's ad copy
/// is matched either way, its similarity estimated from 8-bit entries (chance agreement
/// discounted) or from 32-bit ones (the plain fraction of equal entries); other widths, and
/// detectors without MinHash, are refused.
#[test]
fn minhash_bits_sets_the_signature_entries_and_is_refused_where_unused() {
    let sample = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/sample.jsonl");
    let similarity = |bits: &str| {
        let o = run(
            &["dedup", sample.to_str().unwrap(), "--minhash-bits", bits],
            None,
        );
        assert!(o.status.success(), "{}", err(&o));
        let line = String::from_utf8(o.stdout)
            .unwrap()
            .lines()
            .find(|l| l.contains("\"moby-03-ad\""))
            .map(str::to_owned)
            .unwrap();
        let v: serde_json::Value = serde_json::from_str(&line).unwrap();
        assert_eq!(v["duplicate_of"], "moby-03", "{line}");
        v["similarity"].as_f64().unwrap()
    };
    let (b8, b32) = (similarity("8"), similarity("32"));
    assert_eq!(b32, 106.0 / 128.0);
    assert_eq!(b8, (106.0 / 128.0 - 1.0 / 256.0) / (1.0 - 1.0 / 256.0));
    let o = run(&["dedup", "-q", "--minhash-bits", "12"], Some(DOCS));
    assert_eq!(o.status.code(), Some(2));
    assert!(err(&o).contains("--minhash-bits"), "{}", err(&o));
    let o = run(
        &["dedup", "-q", "--method", "simhash", "--minhash-bits", "8"],
        Some(DOCS),
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(
        err(&o).contains("--minhash-bits") && err(&o).contains("--method minhash or auto"),
        "{}",
        err(&o)
    );
    let o = run(
        &["dedup", "-q", "--method", "exact", "--minhash-scheme", "v2"],
        Some(DOCS),
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(err(&o).contains("--minhash-scheme"), "{}", err(&o));
}
