//! Sorting `u32` keys (hashes, slots) in place: a least-significant-digit radix sort where it
//! beats comparison sorting, `sort_unstable` below that.
//!
//! Invariant: the result is `sort_unstable`'s (property test).

/// Sorts `v` ascending: least-significant-digit radix sort (four passes of 8 bits) past 256
/// elements, where it beats comparison sorting several times over on hashes; `sort_unstable`
/// below.
pub(crate) fn sort_u32(v: &mut Vec<u32>) {
    if v.len() <= 256 {
        v.sort_unstable();
        return;
    }
    // counts[d][b]: how many elements have byte `b` in digit `d`, from one pass.
    let mut counts = [[0usize; 256]; 4];
    for &x in v.iter() {
        for (d, c) in counts.iter_mut().enumerate() {
            c[(x >> (8 * d)) as usize & 0xFF] += 1;
        }
    }
    let mut dst = vec![0u32; v.len()];
    let mut src = std::mem::take(v);
    for (d, c) in counts.iter().enumerate() {
        // A digit where every element has the same byte leaves the order as it is.
        if c.contains(&src.len()) {
            continue;
        }
        let mut at = [0usize; 256];
        let mut sum = 0;
        for (a, &k) in at.iter_mut().zip(c) {
            *a = sum;
            sum += k;
        }
        for &x in &src {
            let b = (x >> (8 * d)) as usize & 0xFF;
            dst[at[b]] = x;
            at[b] += 1;
        }
        std::mem::swap(&mut src, &mut dst);
    }
    *v = src;
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn radix_sort_equals_sort_unstable(mut v in proptest::collection::vec(any::<u32>(), 0..2000),
                                           narrow in any::<bool>()) {
            if narrow {
                // Values sharing their high bytes: digits the sort must skip.
                v.iter_mut().for_each(|x| *x &= 0x3FF);
            }
            let mut want = v.clone();
            want.sort_unstable();
            sort_u32(&mut v);
            prop_assert_eq!(v, want);
        }
    }
}
