//! Scale measurement: build, single-thread and parallel queries, bytes per fingerprint and
//! all pairs over N synthetic fingerprints (uniform + 2% near-duplicates at distance 0–3 + 1% at
//! 4–6), each result checked against a linear scan on a sample.
//!
//! ```text
//! cargo run --release -p neardup-index --example scale -- 50000000 [--layouts m4,auto,lean] [--queries 2000000] [--k 3] [--budget-gib 6] [--no-pairs]
//!     [--write-fps FILE] [--write-queries FILE]   # also act as the generator for the CLI
//! ```
//!
//! `--layouts none` skips the index measurements; `lean` is the [`LeanIndex`] (k <= 3).
use neardup_index::random::{corpus, flip_bits, SplitMix64};
use neardup_index::{
    all_pairs, hamming, lean_estimate, linear_search, HammingIndex, Layout, LeanIndex, Match,
};
use std::ops::ControlFlow;
use std::time::Instant;

/// What the measurements ask of an index: the block tables and the lean index alike.
trait Searcher {
    fn search(&self, q: u64, k: u32) -> Vec<Match>;
    fn count(&self, q: u64, k: u32) -> usize;
    fn search_batch(&self, qs: &[u64], k: u32) -> Vec<Vec<Match>>;
    fn find_any(&self, q: u64, k: u32) -> bool;
    fn heap_bytes(&self) -> usize;
}

macro_rules! searcher {
    ($t:ty) => {
        impl Searcher for $t {
            fn search(&self, q: u64, k: u32) -> Vec<Match> {
                <$t>::search(self, q, k).unwrap()
            }
            fn count(&self, q: u64, k: u32) -> usize {
                let mut n = 0;
                let _ = <$t>::search_with(self, q, k, |_| {
                    n += 1;
                    ControlFlow::Continue(())
                })
                .unwrap();
                n
            }
            fn search_batch(&self, qs: &[u64], k: u32) -> Vec<Vec<Match>> {
                <$t>::search_batch(self, qs, k).unwrap()
            }
            fn find_any(&self, q: u64, k: u32) -> bool {
                <$t>::find_any(self, q, k).unwrap().is_some()
            }
            fn heap_bytes(&self) -> usize {
                <$t>::heap_bytes(self)
            }
        }
    };
}
searcher!(HammingIndex);
searcher!(LeanIndex);

fn vm_hwm() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("VmHWM:"))
                .and_then(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
        })
        .map_or(0, |kb| kb * 1024)
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut n: usize = 10_000_000;
    let mut layouts = "m4,auto".to_string();
    let mut nq: usize = 2_000_000;
    let mut k: u32 = 3;
    let mut budget_gib: f64 = 6.0;
    let mut pairs = true;
    let mut write_fps: Option<String> = None;
    let mut write_queries: Option<String> = None;
    let mut i = 0;
    while i < args.len() {
        let next = |i: usize| args.get(i + 1).cloned().unwrap_or_default();
        match args[i].as_str() {
            "--layouts" => {
                layouts = next(i);
                i += 1;
            }
            "--queries" => {
                nq = next(i).parse().expect("--queries N");
                i += 1;
            }
            "--k" => {
                k = next(i).parse().expect("--k K");
                i += 1;
            }
            "--budget-gib" => {
                budget_gib = next(i).parse().expect("--budget-gib G");
                i += 1;
            }
            "--no-pairs" => pairs = false,
            "--write-fps" => {
                write_fps = Some(next(i));
                i += 1;
            }
            "--write-queries" => {
                write_queries = Some(next(i));
                i += 1;
            }
            a => n = a.parse().expect("N"),
        }
        i += 1;
    }
    let budget = (budget_gib * (1u64 << 30) as f64) as u64;
    let t = Instant::now();
    let fps = corpus(n, 42);
    println!("generate n={n}: {:.2}s", t.elapsed().as_secs_f64());
    let mut rng = SplitMix64::new(7);
    let queries: Vec<u64> = (0..nq)
        .map(|i| {
            if i % 2 == 0 {
                let d = rng.below(k as u64 + 1) as u32;
                flip_bits(fps[rng.below(n as u64) as usize], d, &mut rng)
            } else {
                rng.next()
            }
        })
        .collect();
    if let Some(p) = &write_fps {
        neardup_index::fpfile::write(p.as_ref(), &fps, neardup_index::fpfile::Format::Auto)
            .unwrap();
        println!("wrote {n} fingerprints to {p}");
    }
    if let Some(p) = &write_queries {
        neardup_index::fpfile::write(p.as_ref(), &queries, neardup_index::fpfile::Format::Auto)
            .unwrap();
        println!("wrote {nq} queries to {p}");
    }
    let sample: Vec<u64> = queries
        .iter()
        .step_by((nq / 100).max(1))
        .copied()
        .take(100)
        .collect();
    let entries_sample_check = |index: &dyn Searcher| {
        use rayon::prelude::*;
        let want: Vec<Vec<(u32, u8)>> = sample
            .iter()
            .map(|&q| {
                let mut v: Vec<(u32, u8)> = fps
                    .par_iter()
                    .enumerate()
                    .filter_map(|(i, &f)| {
                        let d = hamming(f, q);
                        (d <= k).then_some((i as u32, d as u8))
                    })
                    .collect();
                v.sort_unstable();
                v
            })
            .collect();
        for (q, w) in sample.iter().zip(&want) {
            let got: Vec<(u32, u8)> = index
                .search(*q, k)
                .iter()
                .map(|m| (m.handle, m.distance))
                .collect();
            assert_eq!(&got, w, "query {q:016x}");
        }
        want.iter().map(Vec::len).sum::<usize>()
    };
    let _ = linear_search; // the reference for the tests; here a parallel scan of `fps` is used
    for name in layouts.split(',').filter(|&l| l != "none" && !l.is_empty()) {
        let t = Instant::now();
        let index: Box<dyn Searcher> = if name == "lean" {
            let (est_ns, est_bytes) = lean_estimate(n as u64, k);
            println!(
                "layout lean (2 tables, one-bit query flips): planner estimate {est_ns:.0} ns/query, {:.2} GiB",
                est_bytes as f64 / (1u64 << 30) as f64
            );
            Box::new(LeanIndex::from_fingerprints(&fps).unwrap())
        } else {
            let layout = if name == "auto" {
                Layout::plan(n as u64, k, budget).unwrap()
            } else {
                Layout::from_name(name).unwrap()
            };
            let (est_ns, est_bytes) = layout.estimate_index(n as u64, k);
            println!(
                "layout {} ({} tables, min key {} bits): planner estimate {:.0} ns/query, {:.2} GiB",
                layout,
                layout.tables(),
                layout.min_key_bits(),
                est_ns,
                est_bytes as f64 / (1u64 << 30) as f64
            );
            Box::new(HammingIndex::from_fingerprints(layout, &fps).unwrap())
        };
        let build = t.elapsed().as_secs_f64();
        let bytes = index.heap_bytes();
        println!(
            "  build {build:.2}s, heap {:.2} GiB = {:.1} bytes/fingerprint, VmHWM {:.2} GiB",
            bytes as f64 / (1u64 << 30) as f64,
            bytes as f64 / n as f64,
            vm_hwm() as f64 / (1u64 << 30) as f64
        );
        let matches = entries_sample_check(&*index);
        println!("  100 sample queries identical to linear scan ({matches} matches)");
        // single thread
        let single = nq.min(500_000);
        let t = Instant::now();
        let mut found = 0usize;
        for &q in &queries[..single] {
            found += index.count(q, k);
        }
        let s1 = t.elapsed().as_secs_f64();
        println!(
            "  single thread: {:.0} queries/s = {:.2} µs a query ({found} matches in {single} queries)",
            single as f64 / s1,
            s1 * 1e6 / single as f64
        );
        let t = Instant::now();
        let res = index.search_batch(&queries, k);
        let s2 = t.elapsed().as_secs_f64();
        let total: usize = res.iter().map(Vec::len).sum();
        println!(
            "  search_batch on {} threads: {:.0} queries/s ({total} matches in {nq} queries)",
            rayon::current_num_threads(),
            nq as f64 / s2
        );
        drop(res);
        // early exit ("first match")
        let t = Instant::now();
        let mut hits = 0usize;
        for &q in &queries[..single] {
            if index.find_any(q, k) {
                hits += 1;
            }
        }
        println!(
            "  find_any single thread: {:.0} queries/s ({hits} hits)",
            single as f64 / t.elapsed().as_secs_f64()
        );
        drop(index);
    }
    if pairs {
        let layout = Layout::plan_self_join(n as u64, k).unwrap();
        let t = Instant::now();
        let p = all_pairs(&fps, k).unwrap();
        let s = t.elapsed().as_secs_f64();
        println!(
            "all_pairs layout {layout}: {s:.2}s, {} pairs, VmHWM {:.2} GiB",
            p.len(),
            vm_hwm() as f64 / (1u64 << 30) as f64
        );
        // check a sample of positions against a linear scan
        use rayon::prelude::*;
        for &i in [0usize, n / 3, n / 2, n - 1]
            .iter()
            .chain((1..40).map(|j| j * (n / 40)).collect::<Vec<_>>().iter())
        {
            let mut want: Vec<(u32, u32, u8)> = fps
                .par_iter()
                .enumerate()
                .filter(|&(j, &f)| j != i && hamming(f, fps[i]) <= k)
                .map(|(j, &f)| {
                    (
                        (i.min(j)) as u32,
                        (i.max(j)) as u32,
                        hamming(f, fps[i]) as u8,
                    )
                })
                .collect();
            want.sort_unstable();
            let got: Vec<(u32, u32, u8)> = p
                .par_iter()
                .filter(|e| e.0 as usize == i || e.1 as usize == i)
                .copied()
                .collect();
            assert_eq!(got, want, "pairs of position {i}");
        }
        println!("  pairs of 43 sample positions identical to linear scan");
    }
    println!(
        "peak VmHWM {:.2} GiB",
        vm_hwm() as f64 / (1u64 << 30) as f64
    );
}
