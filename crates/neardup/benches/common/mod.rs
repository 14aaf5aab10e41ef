//! Shared by the benchmarks: real text from `shared/corpora` (`NEARDUP_CORPORA` or the path
//! beside the repository), or nothing when the corpora are absent (each bench then falls back
//! to its own fixture so CI never depends on them).

// Each benchmark uses its own share of these helpers.
#![allow(dead_code)]

use std::path::{Path, PathBuf};

/// Where a benchmark's preloaded engine lives: `NEARDUP_BENCH_DIR` (kept and reused by later
/// runs) or a temporary directory (deleted at the end).
pub enum BenchDir {
    Kept(PathBuf),
    Temp(tempfile::TempDir),
}

impl BenchDir {
    /// `NEARDUP_BENCH_DIR` (made if missing) or a fresh temporary directory.
    pub fn from_env() -> BenchDir {
        match std::env::var_os("NEARDUP_BENCH_DIR") {
            Some(p) => {
                std::fs::create_dir_all(&p).unwrap();
                BenchDir::Kept(PathBuf::from(p))
            }
            None => BenchDir::Temp(tempfile::tempdir().unwrap()),
        }
    }

    pub fn path(&self) -> &Path {
        match self {
            BenchDir::Kept(p) => p,
            BenchDir::Temp(t) => t.path(),
        }
    }
}

/// The corpora directory, if present.
pub fn corpora_dir() -> Option<PathBuf> {
    let p = std::env::var_os("NEARDUP_CORPORA")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/corpora")
        });
    p.is_dir().then_some(p)
}

/// Texts of at least `min_len` bytes from a corpus JSONL file, up to about `max_bytes` in all;
/// empty when the corpora are absent.
pub fn corpus_texts(file: &str, min_len: usize, max_bytes: usize) -> Vec<String> {
    let mut docs = Vec::new();
    let mut total = 0;
    let Some(s) = corpora_dir().and_then(|d| std::fs::read_to_string(d.join(file)).ok()) else {
        return docs;
    };
    for line in s.lines() {
        let v: serde_json::Value = serde_json::from_str(line).expect("corpus line is JSON");
        let t = v["text"].as_str().unwrap_or_default().to_string();
        if t.len() < min_len {
            continue;
        }
        total += t.len();
        docs.push(t);
        if total >= max_bytes {
            break;
        }
    }
    docs
}

/// The distinct lines of `min`–`max` characters (trimmed) of every corpus file, in a fixed
/// shuffled order so that neighbouring lines do not come from one page; empty without the
/// corpora. The engine benchmark's `NEARDUP_BENCH_SHORT=lines` documents and the short path's
/// realistic benchmark.
pub fn corpus_lines(min: usize, max: usize) -> Vec<String> {
    let Some(dir) = corpora_dir() else {
        return Vec::new();
    };
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            let name = p.file_name().unwrap().to_string_lossy();
            name.ends_with(".jsonl") && !name.starts_with("pairs")
        })
        .collect();
    files.sort();
    let mut seen = std::collections::HashSet::new();
    let mut lines = Vec::new();
    for f in files {
        for l in std::fs::read_to_string(&f).unwrap().lines() {
            let v: serde_json::Value = serde_json::from_str(l).expect("corpus line is JSON");
            for line in v["text"].as_str().unwrap_or_default().split('\n') {
                let line = line.trim();
                if (min..=max).contains(&line.chars().count()) && seen.insert(line.to_string()) {
                    lines.push(line.to_string());
                }
            }
        }
    }
    let mut keyed: Vec<(u64, String)> = lines
        .into_iter()
        .enumerate()
        .map(|(i, l)| (neardup::index::random::SplitMix64::new(i as u64).next(), l))
        .collect();
    keyed.sort_unstable();
    keyed.into_iter().map(|(_, l)| l).collect()
}
