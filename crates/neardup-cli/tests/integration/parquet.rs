//! Parquet input: a text column by name or nested path, ids from a column or the row, `--kept`
//! rows with every column, directories of shards, and bad files named with their row.
use std::path::Path;
use std::sync::Arc;

use arrow_array::{ArrayRef, Int64Array, RecordBatch, StringArray, StructArray};
use arrow_schema::{DataType, Field, Fields};
use parquet::arrow::ArrowWriter;

use crate::util::{json_lines as lines, run};

const ARTICLE: &str = "The harbour authority announced on Tuesday that the northern pier will close for repairs after engineers found that its wooden supports had rotted through decades of exposure to salt water.";
const OTHER: &str = "A storm closed the mountain pass for three days last winter and cut off the villages beyond it, so that the school stayed shut and the bakery ran out of flour before the ploughs came.";

/// Writes `texts` (a `None` is a null text) as a Parquet file with columns `id` (int64, when
/// `ids`), `text`, `lang`, `meta` (a struct holding `body`, the same text) and `note` (null).
fn write(path: &Path, texts: &[Option<&str>], ids: bool) {
    let text: ArrayRef = Arc::new(StringArray::from(texts.to_vec()));
    let lang: ArrayRef = Arc::new(StringArray::from(vec!["en"; texts.len()]));
    let note: ArrayRef = Arc::new(StringArray::from(vec![None::<&str>; texts.len()]));
    let body = Field::new("body", DataType::Utf8, true);
    let meta: ArrayRef = Arc::new(StructArray::new(
        Fields::from(vec![body]),
        vec![text.clone()],
        None,
    ));
    let mut cols: Vec<(&str, ArrayRef)> = Vec::new();
    if ids {
        let id: ArrayRef = Arc::new(Int64Array::from_iter_values(
            (0..texts.len() as i64).map(|i| 100 + i),
        ));
        cols.push(("id", id));
    }
    cols.extend([
        ("text", text),
        ("lang", lang),
        ("meta", meta),
        ("note", note),
    ]);
    let batch = RecordBatch::try_from_iter(cols).unwrap();
    let mut w =
        ArrowWriter::try_new(std::fs::File::create(path).unwrap(), batch.schema(), None).unwrap();
    w.write(&batch).unwrap();
    w.close().unwrap();
}

fn copy() -> String {
    ARTICLE.replace("Tuesday", "Wednesday")
}

#[test]
fn parquet_rows_are_documents_with_ids_from_their_column() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("crawl.parquet");
    let c = copy();
    write(&file, &[Some(ARTICLE), Some(OTHER), Some(&c)], true);
    let kept = dir.path().join("kept.jsonl");
    let o = run(
        &[
            "dedup",
            "-q",
            "--provenance",
            file.to_str().unwrap(),
            "--kept",
            kept.to_str().unwrap(),
        ],
        None,
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let d = lines(&o.stdout);
    assert_eq!(d.len(), 3);
    assert_eq!(d[0]["id"], 100);
    assert!(d[1]["duplicate_of"].is_null());
    assert_eq!(d[2]["duplicate_of"], 100);
    assert_eq!(d[2]["line"], 3, "provenance names the 1-based row");
    // Kept rows keep every column.
    let k = lines(&std::fs::read(&kept).unwrap());
    assert_eq!(k.len(), 2);
    assert_eq!(k[0]["id"], 100);
    assert_eq!(k[0]["lang"], "en");
    assert_eq!(k[0]["meta"]["body"], ARTICLE);
    assert!(
        k[0]["note"].is_null() && k[0].get("note").is_some(),
        "{}",
        k[0]
    );
    assert_eq!(k[1]["text"], OTHER);

    // A nested text column by its path; the same decisions.
    let o = run(
        &[
            "dedup",
            "-q",
            "--text-field",
            "meta.body",
            file.to_str().unwrap(),
        ],
        None,
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(lines(&o.stdout)[2]["duplicate_of"], 100);
}

#[test]
fn a_directory_of_parquet_and_jsonl_shards_is_read_in_path_order() {
    let dir = tempfile::tempdir().unwrap();
    write(&dir.path().join("a.parquet"), &[Some(ARTICLE)], false);
    std::fs::write(
        dir.path().join("b.jsonl"),
        serde_json::json!({ "id": "j1", "text": OTHER }).to_string() + "\n",
    )
    .unwrap();
    let c = copy();
    write(&dir.path().join("c.parquet"), &[Some(&c)], false);
    let o = run(&["dedup", "-q", dir.path().to_str().unwrap()], None);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let d = lines(&o.stdout);
    let a = format!("{}:1", dir.path().join("a.parquet").display());
    assert_eq!(d[0]["id"], a.as_str(), "no id column: FILE:ROW");
    assert_eq!(d[1]["id"], "j1");
    assert_eq!(d[2]["duplicate_of"], a.as_str());
}

#[test]
fn bad_parquet_input_names_the_file_the_row_and_the_fix() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("x.parquet");
    write(&file, &[Some(ARTICLE), None, Some(OTHER)], true);
    let f = file.to_str().unwrap();
    // No such column: the columns there are listed.
    let o = run(&["dedup", "-q", "--text-field", "body", f], None);
    assert!(!o.status.success());
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(
        e.contains("no column `body`") && e.contains("text, lang, meta, note"),
        "{e}"
    );
    // A null text stops the run at its row, or is skipped and counted.
    let o = run(&["dedup", "-q", f], None);
    assert!(!o.status.success());
    let e = String::from_utf8_lossy(&o.stderr);
    assert!(e.contains(&format!("{f}:2")) && e.contains("null"), "{e}");
    let o = run(&["dedup", "-q", "--skip-bad", f], None);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(lines(&o.stdout).len(), 2);
    // Not Parquet at all, though named so.
    let fake = dir.path().join("fake.parquet");
    std::fs::write(&fake, "{\"id\":1,\"text\":\"hello\"}\n").unwrap();
    let o = run(&["dedup", "-q", fake.to_str().unwrap()], None);
    assert!(!o.status.success());
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("not a readable Parquet file"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    // Standard input cannot be Parquet.
    let bytes = std::fs::read(&file).unwrap();
    let o = run(&["dedup", "-q", "--format", "parquet"], Some(&bytes));
    assert!(!o.status.success());
    assert!(String::from_utf8_lossy(&o.stderr).contains("standard input"));
}
