//! `neardup dedup --memory-budget-mib`: the same outputs as the in-memory run of `--method
//! minhash --no-template-veto` (decisions, removed, kept, report; both linkages, both keep
//! rules, provenance) while its band keys go through files; settings it cannot honour are
//! refused with what to add. And `--temp-dir`, where every run spills the short path's texts.

use std::path::Path;

use crate::util::run;

const SETTINGS: &[&str] = &["dedup", "--method", "minhash", "--no-template-veto"];

/// About 9,000 documents (more band keys than 2 MiB, half of the smallest budget, holds):
/// families of a base text with exact copies, edited copies and strangers.
fn corpus(path: &Path) {
    use std::fmt::Write;
    let words = [
        "river", "stone", "light", "cloud", "market", "winter", "paper", "signal", "garden",
        "engine", "silver", "harbor", "letter", "morning", "forest", "window", "copper", "meadow",
    ];
    let mut out = String::new();
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    for family in 0..3000u64 {
        let base: Vec<&str> = (0..30)
            .map(|_| words[(next() % words.len() as u64) as usize])
            .collect();
        for copy in 0..3 {
            let mut w = base.clone();
            if copy == 2 {
                let at = (next() % 30) as usize;
                w[at] = words[(next() % words.len() as u64) as usize];
            }
            let text = format!("{family} {}", w.join(" "));
            writeln!(out, r#"{{"id":"f{family}-{copy}","text":"{text}"}}"#).unwrap();
        }
    }
    std::fs::write(path, out).unwrap();
}

fn ok(args: &[&str]) -> std::process::Output {
    let o = run(args, None);
    assert!(
        o.status.success(),
        "neardup {args:?} failed: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    o
}

#[test]
fn spilled_run_writes_what_the_in_memory_run_writes() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("corpus.jsonl");
    corpus(&input);
    let spill = dir.path().join("spill");
    std::fs::create_dir(&spill).unwrap();
    let input = input.to_str().unwrap();
    for (linkage, keep) in [
        ("online", "first"),
        ("online", "longest"),
        ("components", "first"),
        ("components", "longest"),
    ] {
        let mut files = Vec::new();
        for budget in [None, Some("4")] {
            let tag = budget.unwrap_or("memory");
            let f = |name: &str| dir.path().join(format!("{linkage}-{keep}-{tag}.{name}"));
            let (kept, removed, report) = (f("kept"), f("removed"), f("report"));
            let mut args: Vec<&str> = SETTINGS.to_vec();
            let paths = [
                kept.to_str().unwrap().to_string(),
                removed.to_str().unwrap().to_string(),
                report.to_str().unwrap().to_string(),
            ];
            args.extend([
                "--linkage",
                linkage,
                "--keep",
                keep,
                "--provenance",
                "--kept",
                &paths[0],
                "--removed",
                &paths[1],
                "--report",
                &paths[2],
                input,
            ]);
            if let Some(b) = budget {
                args.extend(["--memory-budget-mib", b, "--temp-dir"]);
                args.push(spill.to_str().unwrap());
            }
            let o = ok(&args);
            let err = String::from_utf8_lossy(&o.stderr).to_string();
            if budget.is_some() {
                // The band keys did not fit in the budget: runs were written.
                let mb: f64 = err
                    .split("spilled: ")
                    .nth(1)
                    .and_then(|s| s.split(" MB").next())
                    .and_then(|s| s.parse().ok())
                    .unwrap_or_else(|| panic!("{err}"));
                assert!(mb > 0.0, "{err}");
            }
            let mut report: serde_json::Value =
                serde_json::from_slice(&std::fs::read(&report).unwrap()).unwrap();
            for volatile in ["seconds", "mb_per_s"] {
                report.as_object_mut().unwrap().remove(volatile);
            }
            files.push((
                o.stdout,
                std::fs::read(&kept).unwrap(),
                std::fs::read(&removed).unwrap(),
                report,
            ));
        }
        let (memory, spilled) = (&files[0], &files[1]);
        let how = format!("{linkage}, keep {keep}");
        assert!(memory.0 == spilled.0, "decisions differ ({how})");
        assert!(memory.1 == spilled.1, "kept documents differ ({how})");
        assert!(memory.2 == spilled.2, "removed documents differ ({how})");
        assert_eq!(memory.3, spilled.3, "reports differ ({how})");
        // Something was found: each family's exact copy at least.
        assert!(
            memory.3["duplicates"].as_u64().unwrap() >= 3000,
            "{}",
            memory.3
        );
    }
    // Nothing is left in the spill directory.
    assert_eq!(std::fs::read_dir(&spill).unwrap().count(), 0);
}

#[test]
fn memory_budget_refuses_settings_it_cannot_honour() {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("c.jsonl");
    std::fs::write(&input, "{\"id\":1,\"text\":\"a b c d e f g\"}\n").unwrap();
    let input = input.to_str().unwrap();
    // The default detector: the message names the flags to add.
    let o = run(&["dedup", "--memory-budget-mib", "64", input], None);
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("--method minhash --no-template-veto"), "{err}");
    // --kept from standard input cannot be read twice.
    let mut args = SETTINGS.to_vec();
    args.extend(["--memory-budget-mib", "64", "--kept", "k.jsonl"]);
    let o = run(&args, Some(b"{\"id\":1,\"text\":\"a b c d e f g\"}\n"));
    assert!(!o.status.success());
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("standard input"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    // A spill directory that does not exist is named, and an existing output is left as it
    // was (the spill files are made before any output is opened).
    let mut args = SETTINGS.to_vec();
    let missing = dir.path().join("no-such-dir");
    let missing = missing.to_str().unwrap();
    let out = dir.path().join("decisions.jsonl");
    std::fs::write(&out, "an earlier run's decisions\n").unwrap();
    let out_s = out.to_str().unwrap().to_string();
    args.extend([
        "--memory-budget-mib",
        "64",
        "--temp-dir",
        missing,
        "-o",
        &out_s,
        input,
    ]);
    let o = run(&args, None);
    assert!(!o.status.success());
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("no-such-dir"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert_eq!(
        std::fs::read_to_string(&out).unwrap(),
        "an earlier run's decisions\n"
    );
    // Below the smallest budget.
    let mut args = SETTINGS.to_vec();
    args.extend(["--memory-budget-mib", "2", input]);
    assert!(!run(&args, None).status.success());
}

/// Every run keeps the short path's texts in a spill file of `--temp-dir` ($TMPDIR by
/// default): the same decisions wherever it is, and a directory where no file can be made is
/// refused by name before any output is touched.
#[test]
fn temp_dir_holds_the_short_texts_of_any_run() {
    let dir = tempfile::tempdir().unwrap();
    let sample = concat!(env!("CARGO_MANIFEST_DIR"), "/examples/sample.jsonl");
    let default = ok(&["dedup", "-q", sample]);
    let spill = dir.path().to_str().unwrap();
    let there = ok(&["dedup", "-q", "--temp-dir", spill, sample]);
    assert_eq!(there.stdout, default.stdout);
    let lines = String::from_utf8_lossy(&default.stdout);
    assert!(lines.contains(r#""stage":"short""#), "{lines}");
    // Nothing is left behind: the spill files are anonymous.
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);

    let missing = dir.path().join("no-such-dir");
    let out = dir.path().join("decisions.jsonl");
    std::fs::write(&out, "an earlier run's decisions\n").unwrap();
    let o = run(
        &[
            "dedup",
            "--temp-dir",
            missing.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
            sample,
        ],
        None,
    );
    assert!(!o.status.success());
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains("no-such-dir") && err.contains("--temp-dir"),
        "{err}"
    );
    assert_eq!(
        std::fs::read_to_string(&out).unwrap(),
        "an earlier run's decisions\n"
    );
}
