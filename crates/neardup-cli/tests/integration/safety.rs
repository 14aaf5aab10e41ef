//! Outputs never destroy inputs: same-file refusal, outputs opened before the run, `-o -`,
//! and a closed pipe ends the run quietly.
use std::path::Path;
use std::process::{Command, Stdio};

use crate::util::{bin, run};

fn err(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

const CORPUS: &str =
    "{\"id\":1,\"text\":\"the quick brown fox jumps over the lazy dog\",\"lang\":\"en\"}\n\
{\"id\":2,\"text\":\"the quick brown fox jumps over the lazy dog!\",\"lang\":\"en\"}\n\
{\"id\":3,\"text\":\"a wholly different line about the spring weather\",\"lang\":\"en\"}\n";

fn corpus(dir: &Path, name: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, CORPUS).unwrap();
    p.display().to_string()
}

#[test]
fn kept_same_as_input_is_refused_and_input_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let victim = corpus(dir.path(), "victim.jsonl");
    let o = run(&["dedup", "-q", &victim, "--kept", &victim], None);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), CORPUS);
    let e = err(&o);
    assert!(
        e.contains("--kept") && e.contains("is the input file") && e.contains("another file"),
        "{e}"
    );
    assert!(o.stdout.is_empty());
}

#[test]
fn every_output_flag_same_as_an_input_is_refused_even_inside_a_directory() {
    let dir = tempfile::tempdir().unwrap();
    let shards = dir.path().join("shards");
    std::fs::create_dir(&shards).unwrap();
    let shard = corpus(&shards, "part-0.jsonl");
    let other = dir.path().join("other.jsonl");
    std::fs::write(&other, "keep me\n").unwrap();
    for flag in ["-o", "--kept", "--report", "--removed"] {
        let o = run(
            &["dedup", "-q", shards.to_str().unwrap(), flag, &shard],
            None,
        );
        assert_eq!(o.status.code(), Some(2), "{flag}");
        assert!(err(&o).contains(&shard), "{flag}: {}", err(&o));
        assert_eq!(std::fs::read_to_string(&shard).unwrap(), CORPUS, "{flag}");
    }
    // A hard link is the same file under another name.
    let link = dir.path().join("link.jsonl");
    std::fs::hard_link(&shard, &link).unwrap();
    let o = run(&["dedup", "-q", &shard, "-o", link.to_str().unwrap()], None);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(std::fs::read_to_string(&shard).unwrap(), CORPUS);
    // Two outputs on one file, and two on standard output.
    let o = run(
        &[
            "dedup",
            "-q",
            &shard,
            "-o",
            other.to_str().unwrap(),
            "--kept",
            other.to_str().unwrap(),
        ],
        None,
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(err(&o).contains("same file"), "{}", err(&o));
    assert_eq!(std::fs::read_to_string(&other).unwrap(), "keep me\n");
    let o = run(&["dedup", "-q", &shard, "--kept", "-"], None);
    assert_eq!(o.status.code(), Some(2));
    assert!(err(&o).contains("standard output"), "{}", err(&o));
}

#[test]
fn output_same_as_the_file_on_stdin_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let victim = corpus(dir.path(), "victim.jsonl");
    let o = Command::new(bin())
        .args(["dedup", "-q", "-o", &victim])
        .stdin(Stdio::from(std::fs::File::open(&victim).unwrap()))
        .output()
        .unwrap();
    assert_eq!(o.status.code(), Some(2));
    assert!(err(&o).contains("standard input"), "{}", err(&o));
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), CORPUS);
}

#[test]
fn bad_report_path_fails_before_the_run_and_truncates_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let input = corpus(dir.path(), "in.jsonl");
    let out = dir.path().join("out.jsonl");
    std::fs::write(&out, "previous results\n").unwrap();
    let kept = dir.path().join("kept.jsonl");
    let o = run(
        &[
            "dedup",
            "-q",
            &input,
            "-o",
            out.to_str().unwrap(),
            "--kept",
            kept.to_str().unwrap(),
            "--report",
            "/nonexistent-dir/report.json",
        ],
        None,
    );
    assert_eq!(o.status.code(), Some(2));
    let e = err(&o);
    assert!(
        e.contains("--report") && e.contains("/nonexistent-dir/report.json"),
        "{e}"
    );
    assert_eq!(std::fs::read_to_string(&out).unwrap(), "previous results\n");
    assert!(
        !kept.exists(),
        "a file created for the failed run is left behind"
    );
}

#[test]
fn dash_output_is_standard_output_not_a_file_named_dash() {
    let dir = tempfile::tempdir().unwrap();
    let input = corpus(dir.path(), "in.jsonl");
    let o = Command::new(bin())
        .args(["dedup", "-q", "-o", "-", &input])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", err(&o));
    assert_eq!(String::from_utf8_lossy(&o.stdout).lines().count(), 3);
    assert!(!dir.path().join("-").exists());
    // pairs too.
    let fps = dir.path().join("fps.hex");
    std::fs::write(&fps, "0000000000000000\n0000000000000001\n").unwrap();
    let o = Command::new(bin())
        .args(["pairs", "-q", "-o", "-", fps.to_str().unwrap()])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", err(&o));
    assert_eq!(String::from_utf8_lossy(&o.stdout), "0\t1\t1\n");
    assert!(!dir.path().join("-").exists());
}

#[test]
fn pairs_output_same_as_its_fingerprint_file_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let fps = dir.path().join("fps.hex");
    std::fs::write(&fps, "0000000000000000\n0000000000000001\n").unwrap();
    let f = fps.to_str().unwrap();
    let o = run(&["pairs", f, "-o", f], None);
    assert_eq!(o.status.code(), Some(2));
    assert_eq!(
        std::fs::read_to_string(&fps).unwrap(),
        "0000000000000000\n0000000000000001\n"
    );
}

#[test]
fn broken_pipe_on_stdout_exits_quietly_with_zero() {
    use std::io::{BufRead, BufReader};
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("big.txt");
    let text: String = (0..30_000)
        .map(|i| format!("line number {i} of a long input\n"))
        .collect();
    std::fs::write(&p, text).unwrap();
    for args in [
        vec!["fingerprint", "--format", "lines", p.to_str().unwrap()],
        // exact: the lines differ only in their numbers, which near-duplicate detectors
        // would compare pairwise (slow in a debug build).
        vec![
            "dedup",
            "-q",
            "--method",
            "exact",
            "--format",
            "lines",
            p.to_str().unwrap(),
        ],
    ] {
        let mut child = Command::new(bin())
            .args(&args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut first = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut first)
            .unwrap(); // `| head -1`: the reader goes away after one line
        assert!(!first.is_empty());
        let o = child.wait_with_output().unwrap();
        assert_eq!(o.status.code(), Some(0), "{args:?}: {}", err(&o));
        assert!(o.stderr.is_empty(), "{args:?}: {}", err(&o));
    }
}

/// Regression: `-o /dev/null` failed with "cannot truncate: Invalid argument" (a device has no
/// length to cut).
#[test]
fn output_to_a_device_is_written_not_truncated() {
    let o = crate::util::run(
        &["dedup", "-q", "-o", "/dev/null"],
        Some(b"{\"id\":\"a\",\"text\":\"the cat sat on the mat\"}\n"),
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

/// Regression: `cat corpus.jsonl | neardup dedup --kept corpus.jsonl` truncated the corpus
/// while `cat` was still reading it (a pipe says nothing of the file behind it), so the run
/// read a cut corpus and the corpus was lost. Outputs are now written under a temporary name
/// and renamed over their target only after the input has ended.
#[test]
fn kept_over_a_file_piped_to_standard_input_is_replaced_only_after_it_was_read() {
    let dir = tempfile::tempdir().unwrap();
    // Larger than what a pipe and `cat` hold (~200 KB), so that `cat` is still writing when
    // the outputs are opened; random words, so that no document is another's near-duplicate.
    let mut big = String::new();
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    for i in 0..4_000 {
        let words: Vec<String> = (0..12)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (0..6)
                    .map(|k| (b'a' + ((x >> (k * 5)) % 26) as u8) as char)
                    .collect()
            })
            .collect();
        big.push_str(&format!(
            "{{\"id\":{i},\"text\":\"{}\"}}\n",
            words.join(" ")
        ));
    }
    let corpus = dir.path().join("corpus.jsonl");
    std::fs::write(&corpus, &big).unwrap();
    let script = format!(
        "cat '{c}' | '{b}' dedup -q --kept '{c}' -o /dev/null",
        c = corpus.display(),
        b = bin().display()
    );
    let o = Command::new("sh").arg("-c").arg(&script).output().unwrap();
    assert!(o.status.success(), "{}", err(&o));
    // Every document is its own: the kept documents are the whole corpus, line for line.
    assert_eq!(std::fs::read_to_string(&corpus).unwrap(), big);
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(left, ["corpus.jsonl"], "temporary files left behind");
}

/// A run that fails (bad input) leaves every output file as it was and no temporary file.
#[test]
fn a_failed_run_leaves_existing_outputs_as_they_were() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.jsonl");
    std::fs::write(&bad, "{\"id\":1,\"text\":\"hello there\"}\n{not json\n").unwrap();
    let outs: Vec<_> = ["kept.jsonl", "out.tsv", "report.json", "removed.jsonl"]
        .iter()
        .map(|n| {
            let p = dir.path().join(n);
            std::fs::write(&p, format!("previous {n}\n")).unwrap();
            p
        })
        .collect();
    let s = |i: usize| outs[i].to_str().unwrap();
    let o = run(
        &[
            "dedup",
            "-q",
            bad.to_str().unwrap(),
            "--kept",
            s(0),
            "-o",
            s(1),
            "--report",
            s(2),
            "--removed",
            s(3),
        ],
        None,
    );
    assert_eq!(o.status.code(), Some(2));
    assert!(err(&o).contains("malformed JSON"), "{}", err(&o));
    for p in &outs {
        let n = p.file_name().unwrap().to_string_lossy();
        assert_eq!(
            std::fs::read_to_string(p).unwrap(),
            format!("previous {n}\n")
        );
    }
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 5);
}

/// A replaced output keeps its permissions, and an output named through a symbolic link
/// replaces the file the link points to, not the link.
#[cfg(unix)]
#[test]
fn a_replaced_output_keeps_its_mode_and_its_symbolic_link() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let input = corpus(dir.path(), "in.jsonl");
    let real = dir.path().join("kept.jsonl");
    std::fs::write(&real, "old\n").unwrap();
    std::fs::set_permissions(&real, std::fs::Permissions::from_mode(0o640)).unwrap();
    let link = dir.path().join("link.jsonl");
    std::os::unix::fs::symlink(&real, &link).unwrap();
    let o = run(
        &[
            "dedup",
            "-q",
            &input,
            "--kept",
            link.to_str().unwrap(),
            "-o",
            "/dev/null",
        ],
        None,
    );
    assert!(o.status.success(), "{}", err(&o));
    assert!(std::fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    let kept = std::fs::read_to_string(&real).unwrap();
    assert_eq!(kept.lines().count(), 2, "{kept}");
    let mode = std::fs::metadata(&real).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o640);
}

/// Several outputs may go to /dev/null (a device is no file to protect).
#[test]
fn several_outputs_to_dev_null_are_accepted() {
    let o = run(
        &[
            "dedup",
            "-q",
            "-o",
            "/dev/null",
            "--kept",
            "/dev/null",
            "--removed",
            "/dev/null",
        ],
        Some(CORPUS.as_bytes()),
    );
    assert!(o.status.success(), "{}", err(&o));
}
