//! README's first command and its library example, run as written, so the README cannot rot.
//!
//! `examples/sample.jsonl` holds 33 paragraphs of `crates/neardup/tests/fixtures/`
//! (三国演义 chapter 1, Moby-Dick chapter 1) and six planted near-duplicates, each placed a few
//! documents after its original.
use std::collections::BTreeMap;
use std::path::PathBuf;

use crate::util::run;

fn manifest_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn readme() -> String {
    std::fs::read_to_string(manifest_dir().join("../../README.md")).expect("read README.md")
}

/// The planted near-duplicates: (copy, original, stage that finds it).
const PLANTED: [(&str, &str, &str); 6] = [
    ("sanguo-03-edit", "sanguo-03", "short"), // short poem line, one character replaced
    ("sanguo-12-reformatted", "sanguo-12", "short"), // half-width punctuation, line breaks
    ("sanguo-20-edit", "sanguo-20", "short"), // one character replaced (171 characters)
    ("moby-03-ad", "moby-03", "minhash"),     // an advertisement line inserted
    ("moby-04-copy", "moby-04", "exact"),     // an exact copy
    ("moby-07-reformatted", "moby-07", "minhash"), // re-wrapped, upper case, dashes
];

#[test]
fn readme_first_command_finds_the_planted_clusters() {
    let readme = readme();
    assert!(
        readme.contains("cargo run --release -- dedup crates/neardup-cli/examples/sample.jsonl"),
        "README's first command changed; update this test with it"
    );
    let sample = manifest_dir().join("examples/sample.jsonl");
    let out = run(&["dedup", sample.to_str().unwrap()], None);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stdout = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 39, "one line per document");

    let mut duplicates = BTreeMap::new();
    for line in &lines {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        if let Some(of) = v["duplicate_of"].as_str() {
            let id = v["id"].as_str().unwrap().to_string();
            duplicates.insert(
                id,
                (of.to_string(), v["stage"].as_str().unwrap().to_string()),
            );
            // README shows every duplicate line verbatim.
            assert!(
                readme.contains(line),
                "README does not show this output line of its first command:\n{line}"
            );
        }
    }
    let planted: BTreeMap<String, (String, String)> = PLANTED
        .iter()
        .map(|(c, o, s)| (c.to_string(), (o.to_string(), s.to_string())))
        .collect();
    assert_eq!(
        duplicates, planted,
        "exactly the planted pairs, by the stages README shows"
    );

    // The report on standard error, as README shows it.
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("39 documents, 6 duplicates, 33 clusters (6 with duplicates)"),
        "{stderr}"
    );
}

/// README "Use it as a library": its lines, each checked to be in README, then run.
const LIBRARY_EXAMPLE: [&str; 8] = [
    "use neardup::dedup::{dedup, Keep};",
    "use neardup::policy::{AutoDetector, PolicyOptions};",
    "use neardup::{FingerprintConfig, Fingerprinter};",
    "let fp = Fingerprinter::new(FingerprintConfig::default()).unwrap();",
    "let detector = AutoDetector::new(fp, PolicyOptions::default()).unwrap();",
    r#"let docs = ["青山依旧在，几度夕阳红。", "Call me Ishmael.", "青山依旧在，几度斜阳红。"];"#,
    "let result = dedup(detector, &docs, Keep::First).unwrap();",
    "assert_eq!(result.outcomes[2].duplicate_of, Some(0)); // found by the short-text path",
];

#[test]
fn readme_library_example() {
    let readme = readme();
    for line in LIBRARY_EXAMPLE {
        assert!(
            readme.contains(line),
            "README's library example changed: {line}"
        );
    }

    // The same lines as code:
    use neardup::dedup::{dedup, Keep};
    use neardup::policy::{AutoDetector, PolicyOptions};
    use neardup::{FingerprintConfig, Fingerprinter};
    let fp = Fingerprinter::new(FingerprintConfig::default()).unwrap();
    let detector = AutoDetector::new(fp, PolicyOptions::default()).unwrap();
    let docs = [
        "青山依旧在，几度夕阳红。",
        "Call me Ishmael.",
        "青山依旧在，几度斜阳红。",
    ];
    let result = dedup(detector, &docs, Keep::First).unwrap();
    assert_eq!(result.outcomes[2].duplicate_of, Some(0)); // found by the short-text path

    assert_eq!(result.outcomes[2].stage.unwrap().as_str(), "short");
    assert_eq!(result.outcomes[1].duplicate_of, None);
}
