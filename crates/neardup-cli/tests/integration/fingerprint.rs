//! CLI tests for `neardup fingerprint` and `neardup compare`.

use crate::util::run;

fn stdout(o: &std::process::Output) -> String {
    String::from_utf8(o.stdout.clone()).unwrap()
}
fn stderr(o: &std::process::Output) -> String {
    String::from_utf8(o.stderr.clone()).unwrap()
}

#[test]
fn lines_from_stdin_one_fingerprint_per_line() {
    let o = run(
        &["fingerprint"],
        Some(b"the cat sat on the mat\nthe cat sat on a mat\n"),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), "cb10034311d3346d\nc25422821196042f\n");
}

#[test]
fn jsonl_with_custom_fields_and_missing_ids() {
    let input = "{\"url\":\"a\",\"body\":\"the cat sat on the mat\"}\n\n{\"body\":\"你妈妈喊你回家吃饭哦，回家罗回家罗\"}\n";
    let o = run(
        &[
            "fingerprint",
            "--format",
            "jsonl",
            "--id-field",
            "url",
            "--text-field",
            "body",
        ],
        Some(input.as_bytes()),
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let out = crate::util::json_lines(&o.stdout);
    assert_eq!(
        out[0],
        serde_json::json!({"id": "a", "simhash": "cb10034311d3346d"})
    );
    // The second object is on line 3 (1-based, as in error messages) of the input.
    assert_eq!(
        out[1],
        serde_json::json!({"id": 3, "simhash": "d57724fa8ff02f2c"})
    );
}

#[test]
fn whole_files_print_hex_and_name() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.html");
    std::fs::write(&a, "<p>the cat sat on the mat</p><script>var x;</script>").unwrap();
    let o = run(&["fingerprint", a.to_str().unwrap()], None);
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o), format!("cb10034311d3346d  {}\n", a.display()));
}

#[test]
fn same_output_with_one_or_two_threads() {
    let text: String = (0..300)
        .map(|i| {
            format!(
                "{{\"id\":{i},\"text\":\"document number {i} about {} things\"}}\n",
                i % 7
            )
        })
        .collect();
    let a = run(
        &["fingerprint", "--format", "jsonl", "--threads", "1"],
        Some(text.as_bytes()),
    );
    let b = run(
        &["fingerprint", "--format", "jsonl", "--threads", "2"],
        Some(text.as_bytes()),
    );
    assert!(a.status.success() && b.status.success());
    assert_eq!(stdout(&a), stdout(&b));
    assert_eq!(stdout(&a).lines().count(), 300);
}

#[test]
fn regression_malformed_json_names_line_and_fix() {
    let o = run(
        &["fingerprint", "--format", "jsonl"],
        Some(b"{\"id\":1,\"text\":\"ok\"}\n{\"id\":2,\"text\":\n"),
    );
    assert!(!o.status.success());
    let e = stderr(&o);
    assert!(
        e.contains("<stdin>:2") && e.contains("malformed JSON") && e.contains("--skip-bad"),
        "{e}"
    );
    let o = run(
        &["fingerprint", "--format", "jsonl", "--skip-bad"],
        Some(b"{\"id\":1,\"text\":\"ok\"}\n{\"id\":2,\"text\":\n"),
    );
    assert!(o.status.success());
    assert_eq!(stdout(&o).lines().count(), 1);
    assert!(stderr(&o).contains("1 bad input line"));
}

#[test]
fn regression_invalid_utf8_names_line() {
    let o = run(&["fingerprint"], Some(b"fine line\nbad \xff\xfe line\n"));
    assert!(!o.status.success());
    let e = stderr(&o);
    assert!(
        e.contains("<stdin>:2") && e.contains("invalid UTF-8") && e.contains("iconv"),
        "{e}"
    );
}

#[test]
fn empty_documents_are_counted_and_the_run_finishes() {
    // The default leaves them out, counts them, and goes on to the end.
    let o = run(&["fingerprint"], Some(b"text\n\nmore text here\n!!!\n"));
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(stdout(&o).lines().count(), 2);
    assert!(
        stderr(&o)
            .contains("2 of 4 documents were empty after normalisation and have no fingerprint"),
        "{}",
        stderr(&o)
    );
    // --empty mark keeps output lines aligned with input lines.
    let o = run(&["fingerprint", "--empty", "mark"], Some(b"text\n\n"));
    assert!(o.status.success());
    assert_eq!(stdout(&o).lines().nth(1), Some("-"));
    let o = run(
        &["fingerprint", "--format", "jsonl", "--empty", "mark"],
        Some(b"{\"id\":\"e\",\"text\":\" \"}\n{\"id\":\"f\",\"text\":\"x\"}\n"),
    );
    assert_eq!(
        stdout(&o).lines().next(),
        Some("{\"id\":\"e\",\"simhash\":null}")
    );
    // The old --skip-empty still marks, with a deprecation warning.
    let o = run(&["fingerprint", "--skip-empty"], Some(b"text\n\n"));
    assert!(o.status.success());
    assert_eq!(stdout(&o).lines().nth(1), Some("-"));
    assert!(stderr(&o).contains("deprecated"), "{}", stderr(&o));
    // --empty fail stops at the first one, naming it.
    let o = run(&["fingerprint", "--empty", "fail"], Some(b"text\n\n"));
    assert!(!o.status.success());
    assert!(stderr(&o).contains("<stdin>:2"), "{}", stderr(&o));
}

#[test]
fn nothing_fingerprinted_is_an_error() {
    let o = run(
        &["fingerprint", "--format", "jsonl"],
        Some(b"{\"id\":1,\"text\":\"  \"}\n"),
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("nothing was fingerprinted"),
        "{}",
        stderr(&o)
    );
    assert!(stdout(&o).is_empty());
    let o = run(&["fingerprint"], Some(b""));
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("no documents"), "{}", stderr(&o));
}

#[test]
fn wrong_field_type_and_missing_field() {
    let o = run(
        &["fingerprint", "--format", "jsonl"],
        Some(b"{\"id\":1,\"text\":5}\n"),
    );
    assert!(stderr(&o).contains("`text` is a number"), "{}", stderr(&o));
    let o = run(
        &["fingerprint", "--format", "jsonl"],
        Some(b"{\"id\":1,\"body\":\"x\"}\n"),
    );
    assert!(
        stderr(&o).contains("--text-field") && stderr(&o).contains("body"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn bad_options_are_explained() {
    let o = run(&["fingerprint", "--char-ngram", "0"], Some(b"x\n"));
    assert!(!o.status.success());
    assert!(stderr(&o).contains("char_ngram"), "{}", stderr(&o));
    let o = run(&["fingerprint", "--features", "bogus"], Some(b"x\n"));
    assert!(
        stderr(&o).contains("auto, jieba, chars or words"),
        "{}",
        stderr(&o)
    );
    let o = run(&["fingerprint", "/nonexistent/file.txt"], None);
    assert!(
        stderr(&o).contains("/nonexistent/file.txt"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn compare_prints_distance_and_explains() {
    let o = run(
        &[
            "compare",
            "--text",
            "你妈妈喊你回家吃饭哦，回家罗回家罗",
            "你妈妈叫你回家吃饭啦，回家罗回家罗",
            "--explain",
        ],
        None,
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let s = stdout(&o);
    assert!(
        s.contains("distance 0") && s.contains("near-duplicates"),
        "{s}"
    );
    assert!(s.contains("\"回家\""), "{s}");
    let o = run(
        &[
            "compare",
            "--text",
            "the cat sat on the mat",
            "we all scream for ice cream",
        ],
        None,
    );
    assert!(stdout(&o).contains("different"), "{}", stdout(&o));
    let o = run(&["compare", "missing-a.txt", "missing-b.txt"], None);
    assert!(
        !o.status.success() && stderr(&o).contains("--text"),
        "{}",
        stderr(&o)
    );
}

/// Regression: `compare` answered with simhash at k = 3 ("different") for pairs that dedup
/// merges (README's cat/mat example); it now decides with dedup's detector and names the stage.
#[test]
fn compare_decides_as_dedup_and_names_the_stage() {
    let o = run(
        &[
            "compare",
            "--text",
            "the cat sat on the mat",
            "the cat sat on a mat",
        ],
        None,
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let s = stdout(&o);
    assert!(s.starts_with("near-duplicates  (stage short"), "{s}");
    let long = "The committee met on Tuesday to discuss the budget for next year, and after a long debate the members agreed to raise the funds for the new library by ten percent. ".repeat(3);
    let edited = long.replacen("Tuesday", "Monday", 1);
    let o = run(&["compare", "--text", &long, &edited], None);
    let s = stdout(&o);
    assert!(
        s.starts_with("near-duplicates  (stage minhash: Jaccard estimate"),
        "{s}"
    );
    // A repost: the shorter text lies inside the other (the containment relation).
    let post = "今天终于把那本三国演义读完了，诸葛亮真是太令人佩服了";
    let repost = format!("//@小明同学: 转发微博 {post}");
    let o = run(&["compare", "--text", post, &repost], None);
    let s = stdout(&o);
    assert!(
        s.starts_with("near-duplicates  (stage containment: "),
        "{s}"
    );
    assert!(
        s.contains("  contain: the shorter text aligns inside the other at 1.000"),
        "{s}"
    );
    assert!(!s.contains("  quote:"), "{s}");
    // A quote: part of the post after an attribution; compare says which characters were
    // left out and what share occurs verbatim.
    let longer = format!("{post}，下个月打算再读一遍水浒传");
    let quote = format!("小明同学说：“{post}”");
    let o = run(&["compare", "--text", &longer, &quote], None);
    let s = stdout(&o);
    assert!(
        s.starts_with("near-duplicates  (stage containment: a quote: the shorter text lies verbatim inside the other once 5 characters at one edge are left out, share 0.833)"),
        "{s}"
    );
    assert!(
        s.contains("  quote:   without 5 characters at one edge (an attribution) it occurs verbatim: share 0.833 (at most 0.2 of it left out)"),
        "{s}"
    );
    let o = run(&["compare", "--text", &long, &long.to_uppercase()], None);
    assert!(
        stdout(&o).starts_with("near-duplicates  (stage exact"),
        "{}",
        stdout(&o)
    );
    // The flags of the other detector are refused, not ignored.
    let o = run(
        &["compare", "--text", "a b", "a c", "--distance", "5"],
        None,
    );
    assert!(
        !o.status.success() && stderr(&o).contains("--method simhash"),
        "{}",
        stderr(&o)
    );
    let o = run(
        &[
            "compare",
            "--method",
            "simhash",
            "--text",
            "a b",
            "a c",
            "--threshold",
            "0.5",
        ],
        None,
    );
    assert!(!o.status.success(), "{}", stderr(&o));
}

/// Regression: a mixed page and its excerpt on either side of the script cut (30 % Han) were
/// "different" with a Jaccard estimate of 0 (their signatures were of different shingles);
/// `compare` now finds them and says that the second was cut the other way.
#[test]
fn compare_finds_a_pair_on_either_side_of_the_script_cut_and_says_so() {
    let fixture = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../neardup/tests/fixtures/sanguo_ch1.txt");
    let paras: Vec<String> = std::fs::read_to_string(fixture)
        .unwrap()
        .split('\n')
        .map(|p| p.chars().take(40).collect::<String>())
        .filter(|p| p.chars().count() == 40)
        .take(12)
        .collect();
    let code = "mount -t overlay overlay -o lowerdir=/path/to/old upperdir=/path/to/new workdir=/path/to/work";
    let page: String = paras.iter().map(|p| format!("{p}\n{code}\n")).collect();
    let excerpt = format!(
        "{code}\n{code}\n{}",
        paras[2..]
            .iter()
            .map(|p| format!("{p}\n{code}\n"))
            .collect::<String>()
    );
    let o = run(&["compare", "--text", &page, &excerpt], None);
    assert!(o.status.success(), "{}", stderr(&o));
    let s = stdout(&o);
    assert!(s.starts_with("near-duplicates  (stage minhash"), "{s}");
    assert!(s.contains("either side of the script cut"), "{s}");
}
