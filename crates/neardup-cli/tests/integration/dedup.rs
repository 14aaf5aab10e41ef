//! `neardup dedup`: schema, formats, order independence, bad input, --kept, --keep longest.
use std::path::PathBuf;

use serde_json::Value;

use crate::util::{json_lines as lines, run};

fn fixture(name: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/dedup")
        .join(name)
        .display()
        .to_string()
}

fn ok(args: &[&str], stdin: Option<&[u8]>) -> Vec<Value> {
    let o = run(args, stdin);
    assert!(
        o.status.success(),
        "neardup {args:?} failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    lines(&o.stdout)
}

/// `(id, duplicate_of)` of each output line.
fn pairs(v: &[Value]) -> Vec<(String, Value)> {
    v.iter()
        .map(|l| {
            (
                l["id"].as_str().unwrap_or_default().to_string(),
                l["duplicate_of"].clone(),
            )
        })
        .collect()
}

#[test]
fn jsonl_known_duplicates_and_hard_negatives() {
    let out = ok(
        &[
            "dedup",
            "-q",
            "--method",
            "simhash",
            &fixture("mixed.jsonl"),
        ],
        None,
    );
    let ids: Vec<&str> = out.iter().map(|l| l["id"].as_str().unwrap()).collect();
    assert_eq!(
        ids,
        [
            "zh-1",
            "en-1",
            "zh-2",
            "zh-1-copy",
            "en-2",
            "zh-neg-1",
            "en-1-copy",
            "zh-neg-2",
            "en-neg-1",
            "en-neg-2",
            "empty"
        ]
    );
    for l in &out {
        let id = l["id"].as_str().unwrap();
        match id {
            "zh-1-copy" => {
                assert_eq!(l["duplicate_of"], "zh-1");
                assert_eq!(l["cluster"], 0);
                assert_eq!(l["matched"], "zh-1");
                assert!(l["distance"].as_u64().unwrap() <= 3);
            }
            "en-1-copy" => {
                assert_eq!(l["duplicate_of"], "en-1");
                assert_eq!(l["cluster"], 1);
            }
            _ => {
                // Every other document, the hard negatives included, is kept and alone.
                assert_eq!(l["duplicate_of"], Value::Null, "{id}");
                assert_eq!(l["distance"], Value::Null, "{id}");
                let pos = ids.iter().position(|x| *x == id).unwrap();
                assert_eq!(l["cluster"], pos, "{id}");
            }
        }
    }
    // Exact schema.
    let keys = |l: &Value| -> Vec<String> { l.as_object().unwrap().keys().cloned().collect() };
    let mut want = crate::util::DECISION_FIELDS.to_vec();
    assert_eq!(keys(&out[0]), want);
    want.push("skipped");
    want.sort();
    assert_eq!(keys(&out[10]), want);
    assert_eq!(out[10]["skipped"], "empty");
}

#[test]
fn default_auto_method_finds_the_same_groups() {
    let out = ok(&["dedup", "-q", &fixture("mixed.jsonl")], None);
    for l in &out {
        let id = l["id"].as_str().unwrap();
        let want = match id {
            "zh-1-copy" => Value::from("zh-1"),
            "en-1-copy" => Value::from("en-1"),
            _ => Value::Null,
        };
        assert_eq!(l["duplicate_of"], want, "{id}");
        if !want.is_null() {
            // Set methods report a similarity instead of a Hamming distance.
            assert!(l["similarity"].as_f64().unwrap() >= 0.5, "{l}");
        }
    }
}

#[test]
fn raw_output_field_order() {
    let o = run(
        &[
            "dedup",
            "-q",
            "--method",
            "simhash",
            &fixture("mixed.jsonl"),
        ],
        None,
    );
    let s = String::from_utf8(o.stdout).unwrap();
    assert_eq!(
        s.lines().nth(3).unwrap(),
        r#"{"id":"zh-1-copy","duplicate_of":"zh-1","cluster":0,"distance":0,"matched":"zh-1","similarity":null,"stage":"simhash"}"#
    );
}

#[test]
fn thread_count_does_not_change_output() {
    let one = run(
        &["dedup", "-q", "--threads", "1", &fixture("mixed.jsonl")],
        None,
    );
    let two = run(
        &["dedup", "-q", "--threads", "2", &fixture("mixed.jsonl")],
        None,
    );
    let four = run(
        &["dedup", "-q", "--threads", "4", &fixture("mixed.jsonl")],
        None,
    );
    assert!(one.status.success());
    assert_eq!(one.stdout, two.stdout);
    assert_eq!(one.stdout, four.stdout);
}

#[test]
fn stdin_lines_and_directory_formats() {
    // Standard input, sniffed as JSONL.
    let data = std::fs::read(fixture("mixed.jsonl")).unwrap();
    let from_stdin = run(&["dedup", "-q"], Some(&data));
    let from_file = run(&["dedup", "-q", &fixture("mixed.jsonl")], None);
    assert_eq!(from_stdin.stdout, from_file.stdout);

    // One document a line: ids are 1-based line numbers, as in error messages.
    let out = ok(
        &["dedup", "-q", "--format", "lines", &fixture("lines.txt")],
        None,
    );
    let dup: Vec<Value> = out.iter().map(|l| l["duplicate_of"].clone()).collect();
    assert_eq!(
        dup,
        [
            Value::Null,
            Value::Null,
            1.into(),
            Value::Null,
            4.into(),
            Value::Null
        ]
    );
    assert_eq!(out[4]["id"], 5);

    // A directory of .txt and .html files: ids are relative paths; the HTML copy is found.
    let out = ok(&["dedup", "-q", &fixture("pages")], None);
    assert_eq!(
        pairs(&out),
        [
            ("a.txt".to_string(), Value::Null),
            ("b.html".to_string(), Value::from("a.txt")),
            ("c.txt".to_string(), Value::Null)
        ]
    );
}

#[test]
fn field_names_and_missing_ids() {
    let input = "{\"body\": \"the quick brown fox jumps over the lazy dog near the river bank\"}\n\
                 {\"url\": \"u2\", \"body\": \"The quick brown fox jumps over the lazy dog near the river bank!\"}\n";
    let out = ok(
        &["dedup", "-q", "--id-field", "url", "--text-field", "body"],
        Some(input.as_bytes()),
    );
    // Ids without a field are 1-based line numbers, like the lines errors name.
    assert_eq!(out[0]["id"], 1);
    assert_eq!(out[1]["id"], "u2");
    assert_eq!(out[1]["duplicate_of"], 1);
}

#[test]
fn malformed_json_names_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("bad.jsonl");
    std::fs::write(&p, "{\"id\": 1, \"text\": \"one document here\"}\n{\"id\": 2, \"text\": \n{\"id\": 3, \"text\": \"three\"}\n").unwrap();
    let path = p.display().to_string();
    let o = run(&["dedup", "-q", &path], None);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains(&format!("{path}:2")), "{err}");
    assert!(err.contains("malformed JSON"), "{err}");
    assert!(err.contains("--skip-bad"), "{err}");

    let rep = dir.path().join("report.json");
    let o = run(
        &[
            "dedup",
            "--skip-bad",
            "--report",
            rep.to_str().unwrap(),
            &path,
        ],
        None,
    );
    assert!(o.status.success());
    let out = lines(&o.stdout);
    assert_eq!(out.len(), 2);
    assert_eq!(out[1]["id"], 3);
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains(&format!("skipped {path}:2")), "{err}");
    assert!(err.contains("1 bad skipped"), "{err}");
    let r: Value = serde_json::from_str(&std::fs::read_to_string(rep).unwrap()).unwrap();
    assert_eq!(r["bad_skipped"], 1);
    assert_eq!(r["documents"], 2);
}

#[test]
fn invalid_utf8_names_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("latin1.txt");
    std::fs::write(&p, b"a first line of text\ncaf\xe9 au lait\nthird line\n").unwrap();
    let path = p.display().to_string();
    let o = run(&["dedup", "-q", "--format", "lines", &path], None);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains(&format!("{path}:2")) && err.contains("UTF-8"),
        "{err}"
    );
    let o = run(
        &["dedup", "-q", "--skip-bad", "--format", "lines", &path],
        None,
    );
    assert!(o.status.success());
    assert_eq!(lines(&o.stdout).len(), 2);
}

#[test]
fn kept_writes_original_lines_and_report_has_clusters() {
    let dir = tempfile::tempdir().unwrap();
    let kept = dir.path().join("kept.jsonl");
    let rep = dir.path().join("r.json");
    let out = dir.path().join("out.jsonl");
    let o = run(
        &[
            "dedup",
            "--output",
            out.to_str().unwrap(),
            "--kept",
            kept.to_str().unwrap(),
            "--report",
            rep.to_str().unwrap(),
            &fixture("mixed.jsonl"),
        ],
        None,
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(o.stdout.is_empty());
    let original = std::fs::read_to_string(fixture("mixed.jsonl")).unwrap();
    let want: Vec<&str> = original
        .lines()
        .filter(|l| !l.contains("-copy\""))
        .collect();
    let got = std::fs::read_to_string(&kept).unwrap();
    assert_eq!(got.lines().collect::<Vec<_>>(), want);
    assert_eq!(lines(&std::fs::read(&out).unwrap()).len(), 11);
    let r: Value = serde_json::from_str(&std::fs::read_to_string(rep).unwrap()).unwrap();
    assert_eq!(r["documents"], 11);
    assert_eq!(r["duplicates"], 2);
    assert_eq!(r["clusters"], 9);
    assert_eq!(r["clusters_with_duplicates"], 2);
    assert_eq!(r["empty"], 1);
    assert_eq!(
        r["largest"][0]["sample_ids"],
        serde_json::json!(["zh-1", "zh-1-copy"])
    );
    assert_eq!(
        r["size_distribution"],
        serde_json::json!([{"size": "1", "clusters": 7}, {"size": "2", "clusters": 2}])
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("11 documents, 2 duplicates, 9 clusters") && err.contains("MB/s"),
        "{err}"
    );
}

#[test]
fn keep_longest_points_at_the_longest() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("in.jsonl");
    let short = "the quick brown fox jumps over the lazy dog near the river bank today";
    let long = "the quick brown fox jumps over the lazy dog near the river bank today!!!";
    std::fs::write(
        &p,
        format!("{{\"id\":\"s\",\"text\":\"{short}\"}}\n{{\"id\":\"l\",\"text\":\"{long}\"}}\n"),
    )
    .unwrap();
    let kept = dir.path().join("kept.jsonl");
    let out = ok(
        &[
            "dedup",
            "-q",
            "--keep",
            "longest",
            "--kept",
            kept.to_str().unwrap(),
            p.to_str().unwrap(),
        ],
        None,
    );
    assert_eq!(out[0]["duplicate_of"], "l");
    assert_eq!(out[1]["duplicate_of"], Value::Null);
    assert_eq!(out[0]["cluster"], 0);
    assert_eq!(out[1]["cluster"], 0);
    let got = std::fs::read_to_string(&kept).unwrap();
    assert_eq!(got, format!("{{\"id\":\"l\",\"text\":\"{long}\"}}\n"));
    // Standard input cannot be read twice.
    let o = run(
        &[
            "dedup",
            "--keep",
            "longest",
            "--kept",
            kept.to_str().unwrap(),
        ],
        Some(b"x\n"),
    );
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("standard input"));
}

#[test]
fn unknown_method_is_a_clear_error() {
    let o = run(
        &["dedup", "--method", "nosuch", &fixture("mixed.jsonl")],
        None,
    );
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("nosuch") && err.contains("simhash"), "{err}");
}

/// A repost (a forwarding marker and an attribution added to a short post) is a duplicate of
/// the post by the containment relation, and the output says so; the plain edit-distance
/// stage alone (the same post without the relation) would not link them.
#[test]
fn reposts_are_duplicates_by_containment() {
    let input = "{\"id\":\"post\",\"text\":\"今天终于把那本三国演义读完了，诸葛亮真是太令人佩服了\"}\n\
                 {\"id\":\"repost\",\"text\":\"//@小明同学: 转发微博 好文，收藏了。今天终于把那本三国演义读完了，诸葛亮真是太令人佩服了\"}\n\
                 {\"id\":\"other\",\"text\":\"明天我们一起去江边散步吧，听说那里的风景非常好看\"}\n";
    let out = ok(&["dedup", "-q"], Some(input.as_bytes()));
    assert_eq!(
        pairs(&out),
        [
            ("post".to_string(), Value::Null),
            ("repost".to_string(), Value::from("post")),
            ("other".to_string(), Value::Null),
        ]
    );
    assert_eq!(out[1]["stage"], "containment", "{}", out[1]);
    assert_eq!(out[1]["similarity"].as_f64(), Some(1.0), "{}", out[1]);
}

/// A quote of two sentences of a long article, after an attribution, is the article's
/// duplicate by its sentences (stage `passage`, the share of its letters found as its
/// similarity), and `--removed` says why; with `--no-passages` it is kept, and the flag with
/// another method is refused.
#[test]
fn quotes_of_long_texts_are_found_by_their_sentences() {
    let article = "话说天下大势，分久必合，合久必分。周末七国分争，并入于秦。及秦灭之后，楚、汉分争，\
                   又并入于汉。汉朝自高祖斩白蛇而起义，一统天下，后来光武中兴，传至献帝，遂分为三国。\
                   推其致乱之由，殆始于桓、灵二帝。桓帝禁锢善类，崇信宦官。及桓帝崩，灵帝即位，\
                   大将军窦武、太傅陈蕃共相辅佐。时有宦官曹节等弄权，窦武、陈蕃谋诛之，机事不密，\
                   反为所害，中涓自此愈横。";
    let quote = "罗贯中说：“推其致乱之由，殆始于桓、灵二帝。桓帝禁锢善类，崇信宦官。”";
    let input = format!(
        "{{\"id\":\"article\",\"text\":\"{article}\"}}\n{{\"id\":\"quote\",\"text\":\"{quote}\"}}\n"
    );
    let dir = tempfile::tempdir().unwrap();
    let removed = dir.path().join("removed.jsonl");
    let out = ok(
        &["dedup", "-q", "--removed", removed.to_str().unwrap()],
        Some(input.as_bytes()),
    );
    assert_eq!(out[1]["duplicate_of"], "article", "{}", out[1]);
    assert_eq!(out[1]["stage"], "passage", "{}", out[1]);
    // 4 of the quote's 27 letters are its attribution.
    let sim = out[1]["similarity"].as_f64().unwrap();
    assert!((sim - 23.0 / 27.0).abs() < 1e-9, "{}", out[1]);
    let why = std::fs::read_to_string(&removed).unwrap();
    assert!(
        why.contains("a quote: its sentences (85 % of its letters)"),
        "{why}"
    );
    let off = ok(&["dedup", "-q", "--no-passages"], Some(input.as_bytes()));
    assert_eq!(off[1]["duplicate_of"], Value::Null, "{}", off[1]);
    let o = run(
        &["dedup", "-q", "--method", "minhash", "--no-passages"],
        Some(input.as_bytes()),
    );
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(!o.status.success(), "{e}");
    assert!(
        e.contains("--no-passages") && e.contains("drop the flag"),
        "{e}"
    );
}

/// A quote (part of a post with an attribution before it) is a duplicate of the post by
/// containment, with the share of it that occurs verbatim as its similarity; with
/// `--quote-edge 0` the attribution counts against it and the two are apart.
#[test]
fn quotes_with_an_attribution_are_duplicates_unless_the_edge_is_off() {
    let input = "{\"id\":\"post\",\"text\":\"今天终于把那本三国演义读完了，诸葛亮真是太令人佩服了，下个月打算再读一遍水浒传\"}\n\
                 {\"id\":\"quote\",\"text\":\"小明同学说：“今天终于把那本三国演义读完了，诸葛亮真是太令人佩服了”\"}\n";
    let out = ok(&["dedup", "-q"], Some(input.as_bytes()));
    assert_eq!(out[1]["duplicate_of"], "post", "{}", out[1]);
    assert_eq!(out[1]["stage"], "containment", "{}", out[1]);
    // 5 of the quote's 30 letters are its attribution.
    let sim = out[1]["similarity"].as_f64().unwrap();
    assert!((sim - (1.0 - 5.0 / 30.0)).abs() < 1e-9, "{}", out[1]);
    let off = ok(
        &["dedup", "-q", "--quote-edge", "0"],
        Some(input.as_bytes()),
    );
    assert_eq!(off[1]["duplicate_of"], Value::Null, "{}", off[1]);
}

/// Regression (found by hand: the same shard read twice): repeated ids made `duplicate_of`
/// ambiguous without a word. The run still succeeds with the same decisions, and says how many
/// documents repeat an id, the first, and how to tell them apart; unique ids say nothing.
#[test]
fn repeated_ids_are_reported_once_with_the_way_to_tell_them_apart() {
    let doc = |id: &str, text: &str| format!("{{\"id\":\"{id}\",\"text\":\"{text}\"}}\n");
    let fox = "the quick brown fox jumps over the lazy dog again and again";
    let input = [
        doc("a", fox),
        doc(
            "a",
            "completely different text about space travel and rockets",
        ),
        doc("b", fox),
    ]
    .concat();
    let o = run(&["dedup", "-q", "-"], Some(input.as_bytes()));
    assert!(o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("1 document repeats an id read before (first: \"a\" at <stdin>:2)")
            && err.contains("--provenance"),
        "{err}"
    );
    let out = lines(&o.stdout);
    assert_eq!(out.len(), 3);
    assert_eq!(out[2]["duplicate_of"], "a");
    let o = run(
        &["dedup", "-q", "--provenance", "-"],
        Some(input.as_bytes()),
    );
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("`cluster` tells which"), "{err}");
    let out = lines(&o.stdout);
    assert_eq!(
        (&out[2]["line"], &out[2]["cluster"]),
        (&Value::from(3), &out[0]["cluster"])
    );
    let unique = [doc("a", fox), doc("b", fox)].concat();
    let o = run(&["dedup", "-q", "-"], Some(unique.as_bytes()));
    assert!(
        o.status.success() && o.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}
