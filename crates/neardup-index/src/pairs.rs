//! All pairs within distance `k` in one set (self-join), table by table.
use crate::error::Result;
use crate::index::check_len;
use crate::layout::Layout;
use rayon::prelude::*;

/// Every pair `(i, j, distance)` with `i < j` positions in `fps` and `hamming(fps[i], fps[j]) <= k`,
/// sorted. The layout is chosen by [`Layout::plan_self_join`].
///
/// # Errors
/// [`crate::Error::DistanceTooLarge`] if `k >= 64`, [`crate::Error::TooManyEntries`] for 2^32 or
/// more fingerprints.
pub fn all_pairs(fps: &[u64], k: u32) -> Result<Vec<(u32, u32, u8)>> {
    let layout = Layout::plan_self_join(fps.len() as u64, k)?;
    all_pairs_with(fps, &layout, k)
}

/// [`all_pairs`] with an explicit layout. For each table (one at a time, so memory is about
/// 16 bytes per fingerprint beyond the input), the permuted fingerprints are sorted; pairs within
/// each group sharing the key are compared and reported from their canonical table only.
///
/// # Errors
/// [`crate::Error::DistanceTooLarge`] if `k > layout.max_distance()`,
/// [`crate::Error::TooManyEntries`] for 2^32 or more fingerprints.
pub fn all_pairs_with(fps: &[u64], layout: &Layout, k: u32) -> Result<Vec<(u32, u32, u8)>> {
    layout.check_distance(k)?;
    check_len(fps.len())?;
    let kb = layout.key_blocks() as u32;
    let masks = layout.original_block_masks();
    let mut out: Vec<(u32, u32, u8)> = Vec::new();
    let mut v: Vec<(u64, u32)> = Vec::new();
    for s in layout.specs() {
        if s.max_block >= kb + k {
            continue;
        }
        v.clear();
        v.par_extend(
            fps.par_iter()
                .enumerate()
                .map(|(i, &f)| (s.permute(f), i as u32)),
        );
        v.par_sort_unstable();
        let shift = 64 - s.key_bits;
        let key = |p: u64| if shift >= 64 { 0 } else { p >> shift };
        // Split into chunks that start at group boundaries.
        let parts = (rayon::current_num_threads() * 64).max(1);
        let mut starts = vec![0usize];
        for c in 1..parts {
            let mut i = v.len() * c / parts;
            if i <= *starts.last().unwrap_or(&0) {
                continue;
            }
            while i < v.len() && i > 0 && key(v[i].0) == key(v[i - 1].0) {
                i += 1;
            }
            if i < v.len() && i > *starts.last().unwrap_or(&0) {
                starts.push(i);
            }
        }
        starts.push(v.len());
        let found: Vec<Vec<(u32, u32, u8)>> = starts
            .par_windows(2)
            .map(|w| {
                let mut res = Vec::new();
                let chunk = &v[w[0]..w[1]];
                let mut g = 0;
                while g < chunk.len() {
                    let kg = key(chunk[g].0);
                    let mut e = g + 1;
                    while e < chunk.len() && key(chunk[e].0) == kg {
                        e += 1;
                    }
                    let group = &chunk[g..e];
                    for (x, &(pa, ia)) in group.iter().enumerate() {
                        for &(pb, ib) in &group[x + 1..] {
                            let dist = (pa ^ pb).count_ones();
                            if dist <= k {
                                let diff = fps[ia as usize] ^ fps[ib as usize];
                                if layout.canonical_key_set(&masks, diff) == s.key_set {
                                    res.push((ia.min(ib), ia.max(ib), dist as u8));
                                }
                            }
                        }
                    }
                    g = e;
                }
                res
            })
            .collect();
        for f in found {
            out.extend(f);
        }
    }
    drop(v);
    out.par_sort_unstable();
    Ok(out)
}
