//! CLI tests for `neardup pairs` and `neardup search`.
use crate::util::run;
use neardup_index::fpfile::{self, Format};
use neardup_index::{linear_all_pairs, linear_search};

fn tsv(out: &[u8]) -> Vec<(u64, u64, u8)> {
    String::from_utf8(out.to_vec())
        .unwrap()
        .lines()
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            assert_eq!(f.len(), 3, "line {l:?}");
            (
                f[0].parse().unwrap(),
                f[1].parse().unwrap(),
                f[2].parse().unwrap(),
            )
        })
        .collect()
}

fn summary(stderr: &[u8]) -> serde_json::Value {
    let s = String::from_utf8_lossy(stderr);
    let line = s
        .lines()
        .last()
        .unwrap_or_else(|| panic!("no summary in {s:?}"));
    serde_json::from_str(line).unwrap_or_else(|e| panic!("summary {line:?}: {e}"))
}

fn data() -> Vec<u64> {
    neardup_index::random::corpus(3000, 11)
}

#[test]
fn pairs_matches_brute_force_for_layouts_and_formats() {
    let dir = tempfile::tempdir().unwrap();
    let fps = data();
    let bin = dir.path().join("c.fps");
    let hex = dir.path().join("c.txt");
    fpfile::write(&bin, &fps, Format::Raw).unwrap();
    fpfile::write(&hex, &fps, Format::Hex).unwrap();
    for (file, layout, k) in [
        (&bin, "auto", 3u32),
        (&hex, "m4", 3),
        (&bin, "m5x2", 2),
        (&bin, "auto", 6),
        (&hex, "auto", 0),
    ] {
        let o = run(
            &[
                "pairs",
                file.to_str().unwrap(),
                "--distance",
                &k.to_string(),
                "--layout",
                layout,
            ],
            None,
        );
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let want: Vec<(u64, u64, u8)> = linear_all_pairs(&fps, k)
            .into_iter()
            .map(|(i, j, d)| (i as u64, j as u64, d))
            .collect();
        assert!(!want.is_empty());
        assert_eq!(tsv(&o.stdout), want, "layout {layout} k {k}");
        let s = summary(&o.stderr);
        assert_eq!(s["n"], 3000);
        assert_eq!(s["k"], k);
        assert_eq!(s["pairs"], want.len());
        for key in [
            "layout",
            "build_seconds",
            "query_seconds",
            "queries_per_second",
            "peak_memory_bytes",
            "queries",
        ] {
            assert!(s.get(key).is_some(), "missing {key} in {s}");
        }
    }
}

#[test]
fn pairs_to_output_file() {
    let dir = tempfile::tempdir().unwrap();
    let fps = data();
    let bin = dir.path().join("c.bin");
    fpfile::write(&bin, &fps, Format::Raw).unwrap();
    let out = dir.path().join("pairs.tsv");
    let o = run(
        &["pairs", bin.to_str().unwrap(), "-o", out.to_str().unwrap()],
        None,
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(o.stdout.is_empty());
    assert_eq!(
        tsv(&std::fs::read(&out).unwrap()).len(),
        linear_all_pairs(&fps, 3).len()
    );
}

#[test]
fn search_matches_brute_force() {
    let dir = tempfile::tempdir().unwrap();
    let fps = data();
    let mut rng = neardup_index::random::SplitMix64::new(5);
    let queries: Vec<u64> = (0..400)
        .map(|i| {
            if i % 2 == 0 {
                neardup_index::random::flip_bits(
                    fps[rng.below(3000) as usize],
                    (i % 5) as u32,
                    &mut rng,
                )
            } else {
                rng.next()
            }
        })
        .collect();
    let db = dir.path().join("db.fps");
    let q = dir.path().join("q.hex");
    fpfile::write(&db, &fps, Format::Raw).unwrap();
    fpfile::write(&q, &queries, Format::Hex).unwrap();
    let entries: Vec<(u64, u32)> = fps
        .iter()
        .enumerate()
        .map(|(i, &f)| (f, i as u32))
        .collect();
    // (k, --layout, --memory-budget-mib, the layout chosen): 1 MiB holds the lean index of
    // 3,000 fingerprints (~0.6 MiB) but not the smallest block layout (~1.2 MiB).
    for (k, layout, budget, chosen) in [
        (3u32, "auto", "6144", "m4"),
        (2, "m4", "6144", "m4"),
        (4, "auto", "6144", "m5"),
        (3, "lean", "6144", "lean"),
        (1, "lean", "6144", "lean"),
        (3, "auto", "1", "lean"),
    ] {
        let out = dir.path().join("hits.tsv");
        let o = run(
            &[
                "search",
                db.to_str().unwrap(),
                "--queries",
                q.to_str().unwrap(),
                "-k",
                &k.to_string(),
                "--layout",
                layout,
                "--memory-budget-mib",
                budget,
                "--output",
                out.to_str().unwrap(),
            ],
            None,
        );
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        let mut want = Vec::new();
        for (qi, &qf) in queries.iter().enumerate() {
            for m in linear_search(&entries, qf, k) {
                want.push((qi as u64, m.handle as u64, m.distance));
            }
        }
        assert!(want.len() > 50, "{}", want.len());
        assert_eq!(
            tsv(&std::fs::read(&out).unwrap()),
            want,
            "k {k} layout {layout}"
        );
        let s = summary(&o.stderr);
        assert_eq!(s["queries"], 400);
        assert_eq!(s["n"], 3000);
        assert_eq!(s["matches"], want.len());
        assert!(s["build_seconds"].is_number() && s["queries_per_second"].is_number());
        assert_eq!(s["layout"], chosen, "k {k} layout {layout}");
        if budget == "1" {
            let why = s["plan"].as_str().unwrap();
            assert!(why.contains("no block layout fits"), "{why}");
        }
    }
}

/// Runs `args`, which must be refused (exit 2) with a message holding every one of `needles`.
fn refused(args: &[&str], needles: &[&str]) {
    let o = run(args, None);
    assert_eq!(o.status.code(), Some(2), "{args:?}");
    let e = String::from_utf8_lossy(&o.stderr);
    for n in needles {
        assert!(e.contains(n), "{args:?}: no `{n}` in {e}");
    }
}

#[test]
fn bad_inputs_give_clear_errors() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("odd.bin");
    std::fs::write(&bad, [1u8; 12]).unwrap();
    let hex = dir.path().join("q.txt");
    std::fs::write(&hex, "00ff\n12zz\n").unwrap();
    let good = dir.path().join("db.fps");
    fpfile::write(&good, &data(), Format::Raw).unwrap();
    let missing = dir.path().join("missing.fps");
    let (bad, hex, good, missing) = (
        bad.to_str().unwrap(),
        hex.to_str().unwrap(),
        good.to_str().unwrap(),
        missing.to_str().unwrap(),
    );
    refused(&["pairs", bad], &["odd.bin", "12", "multiple of 8"]);
    refused(&["search", good, "--queries", hex], &["q.txt:2", "hex"]);
    refused(
        &["pairs", good, "--distance", "4", "--layout", "m4"],
        &["at most 3", "--layout auto"],
    );
    refused(
        &["search", good, "--queries", good, "-k", "64"],
        &["0 to 63"],
    );
    refused(
        &[
            "search",
            good,
            "--queries",
            good,
            "-k",
            "4",
            "--layout",
            "lean",
        ],
        &["--layout lean", "at most 3"],
    );
    refused(&["pairs", good, "--layout", "q7"], &["m5x2"]);
    refused(&["pairs", missing], &["missing.fps"]);
}

#[test]
fn help_has_examples() {
    for cmd in ["pairs", "search"] {
        let o = run(&[cmd, "--help"], None);
        assert!(o.status.success());
        let h = String::from_utf8_lossy(&o.stdout);
        assert!(h.contains("Examples:") && h.contains("--distance"), "{h}");
    }
}

#[test]
fn empty_files_work() {
    let dir = tempfile::tempdir().unwrap();
    let empty = dir.path().join("e.fps");
    std::fs::write(&empty, b"").unwrap();
    let o = run(&["pairs", empty.to_str().unwrap()], None);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert!(o.stdout.is_empty());
    let o = run(
        &[
            "search",
            empty.to_str().unwrap(),
            "--queries",
            empty.to_str().unwrap(),
        ],
        None,
    );
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    assert_eq!(summary(&o.stderr)["matches"], 0);
}
