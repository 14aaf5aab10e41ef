//! What the CLI reads: directories of shards, gzip and zstd by content, a BOM, and runs that
//! read nothing.
use std::path::PathBuf;

use serde_json::Value;

use crate::util::run;

fn fixture(name: &str) -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/inputs")
        .join(name)
        .display()
        .to_string()
}

fn err(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn out_lines(o: &std::process::Output) -> Vec<Value> {
    crate::util::json_lines(&o.stdout)
}

#[test]
fn directory_of_jsonl_shards_plain_gzip_and_zstd_is_read_in_path_order() {
    let o = run(&["dedup", "-q", &fixture("shards")], None);
    assert!(o.status.success(), "{}", err(&o));
    let out = out_lines(&o);
    let ids: Vec<&str> = out.iter().map(|l| l["id"].as_str().unwrap()).collect();
    // a.jsonl, b.jsonl.gz, c.jsonl.zst (two zstd frames); README.md is ignored, with a warning.
    assert_eq!(ids, ["a1", "a2", "b1", "c1", "c2"]);
    assert_eq!(out[2]["duplicate_of"], "a1");
    assert_eq!(out[4]["duplicate_of"], "c1");
    assert!(err(&o).contains("README.md"), "{}", err(&o));
}

#[test]
fn gzip_is_recognised_by_content_not_name_and_on_stdin() {
    let o = run(&["dedup", "-q", &fixture("gzip-named-plain.jsonl")], None);
    assert!(o.status.success(), "{}", err(&o));
    assert_eq!(out_lines(&o)[0]["id"], "g1");
    let gz = std::fs::read(fixture("shards/b.jsonl.gz")).unwrap();
    let o = run(&["fingerprint", "--format", "jsonl"], Some(&gz));
    assert!(o.status.success(), "{}", err(&o));
    assert!(!err(&o).contains("iconv"));
    assert_eq!(out_lines(&o)[0]["id"], "b1");
}

#[test]
fn skip_bad_over_a_gzip_file_reads_it_instead_of_skipping_everything() {
    let o = run(
        &["dedup", "-q", "--skip-bad", &fixture("shards/b.jsonl.gz")],
        None,
    );
    assert!(o.status.success(), "{}", err(&o));
    assert_eq!(out_lines(&o).len(), 1);
}

#[test]
fn directory_without_readable_files_fails_saying_so() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("data.csv"), b"id,text\n1,hello\n").unwrap();
    let o = run(&["dedup", "-q", dir.path().to_str().unwrap()], None);
    assert_eq!(o.status.code(), Some(2));
    let e = err(&o);
    assert!(
        e.contains("held no .jsonl") && e.contains("data.csv"),
        "{e}"
    );
    assert!(o.stdout.is_empty());
}

#[test]
fn run_that_skips_every_document_fails_saying_so() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("bad.jsonl");
    std::fs::write(&p, "{not json\n{\"no_text\": 1}\n").unwrap();
    let o = run(&["dedup", "-q", "--skip-bad", p.to_str().unwrap()], None);
    assert_eq!(o.status.code(), Some(2));
    let e = err(&o);
    assert!(
        e.contains("every input record was bad") && e.contains("2 skipped"),
        "{e}"
    );
    // An empty input is no silent success either.
    let o = run(&["dedup", "-q"], Some(b""));
    assert_eq!(o.status.code(), Some(2));
    assert!(err(&o).contains("no documents"), "{}", err(&o));
}

#[test]
fn utf8_bom_is_not_malformed_json() {
    let o = run(
        &["dedup", "-q", "--format", "jsonl"],
        Some(b"\xef\xbb\xbf{\"id\":\"x\",\"text\":\"hello there world\"}\n"),
    );
    assert!(o.status.success(), "{}", err(&o));
    assert_eq!(out_lines(&o)[0]["id"], "x");
}

#[test]
fn unreadable_compression_names_the_file_and_the_fix() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("corpus.jsonl.bz2");
    std::fs::write(&p, b"BZh91AY&SY\x00\x00").unwrap();
    let o = run(
        &["dedup", "-q", "--format", "jsonl", p.to_str().unwrap()],
        None,
    );
    assert_eq!(o.status.code(), Some(2));
    let e = err(&o);
    assert!(
        e.contains(p.to_str().unwrap()) && e.contains("bzip2") && e.contains("bunzip2"),
        "{e}"
    );
    assert!(!e.contains("GB18030"), "{e}");
}

#[test]
fn kept_from_stdin_keeps_every_field_of_the_original_line() {
    let dir = tempfile::tempdir().unwrap();
    let kept = dir.path().join("kept.jsonl");
    let input = "{\"id\":\"a\",\"text\":\"the quick brown fox jumps over the lazy dog\",\"url\":\"http://a\",\"n\":1}\n\
                 {\"id\":\"b\",\"text\":\"the quick brown fox jumps over the lazy dog\",\"url\":\"http://b\"}\n\
                 {\"text\":\"something else entirely, about the weather\",\"meta\":{\"k\":[1,2]}}\n";
    let o = run(
        &["dedup", "-q", "--kept", kept.to_str().unwrap()],
        Some(input.as_bytes()),
    );
    assert!(o.status.success(), "{}", err(&o));
    let lines: Vec<&str> = input.lines().collect();
    assert_eq!(
        std::fs::read_to_string(&kept).unwrap(),
        format!("{}\n{}\n", lines[0], lines[2])
    );
}
