//! Helpers shared by the CLI integration tests.
#![allow(dead_code)]
use std::path::PathBuf;
use std::process::{Command, Output};

/// Path of the built `neardup` binary.
pub fn bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_neardup"))
}

/// Runs `neardup` with `args` and optional stdin, returning its output.
pub fn run(args: &[&str], stdin: Option<&[u8]>) -> Output {
    use std::io::Write;
    let mut cmd = Command::new(bin());
    cmd.args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = cmd.spawn().expect("spawn neardup");
    // Feed stdin from a thread so a large output cannot deadlock against a full pipe; a
    // child that exits early (an error) closes its stdin, which is not a test failure.
    let mut si = child.stdin.take().unwrap();
    let data = stdin.map(|d| d.to_vec());
    let writer = std::thread::spawn(move || {
        if let Some(data) = data {
            let _ = si.write_all(&data);
        }
    });
    let out = child.wait_with_output().expect("wait neardup");
    writer.join().unwrap();
    out
}

/// The JSON values of every line of `bytes` (a command's output, a JSONL file).
pub fn json_lines(bytes: &[u8]) -> Vec<serde_json::Value> {
    String::from_utf8_lossy(bytes)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// The fields of every `neardup dedup` decision line, sorted (serde_json's key order).
pub const DECISION_FIELDS: [&str; 7] = [
    "cluster",
    "distance",
    "duplicate_of",
    "id",
    "matched",
    "similarity",
    "stage",
];
