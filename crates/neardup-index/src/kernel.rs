//! The inner loop: xor + popcount over contiguous residuals, with an AVX2 build chosen at run time.
use std::ops::ControlFlow;

const W: usize = 32;

/// Calls `f(i, distance)` for each `i` with `popcount((hi[i] << 32 | lo[i]) ^ q) <= thr`.
#[inline]
pub(crate) fn scan<F>(lo: &[u32], hi: &[u16], q: u64, thr: u32, f: &mut F) -> ControlFlow<()>
where
    F: FnMut(usize, u32) -> ControlFlow<()>,
{
    #[cfg(target_arch = "x86_64")]
    {
        if lo.len() >= W
            && std::is_x86_feature_detected!("avx2")
            && std::is_x86_feature_detected!("popcnt")
        {
            // SAFETY: the CPU supports the features the function is compiled for.
            return unsafe { scan_avx2(lo, hi, q, thr, f) };
        }
    }
    scan_generic(lo, hi, q, thr, f)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,popcnt")]
unsafe fn scan_avx2<F>(lo: &[u32], hi: &[u16], q: u64, thr: u32, f: &mut F) -> ControlFlow<()>
where
    F: FnMut(usize, u32) -> ControlFlow<()>,
{
    scan_generic(lo, hi, q, thr, f)
}

#[inline(always)]
fn scan_generic<F>(lo: &[u32], hi: &[u16], q: u64, thr: u32, f: &mut F) -> ControlFlow<()>
where
    F: FnMut(usize, u32) -> ControlFlow<()>,
{
    let n = lo.len();
    let hi = &hi[..n];
    let mut base = 0;
    while base + W <= n {
        let l = &lo[base..base + W];
        let h = &hi[base..base + W];
        let mut cnt = [0u8; W];
        for j in 0..W {
            cnt[j] = ((((h[j] as u64) << 32) | l[j] as u64) ^ q).count_ones() as u8;
        }
        let mut hit = 0u32;
        for (j, &c) in cnt.iter().enumerate() {
            hit |= ((c as u32 <= thr) as u32) << j;
        }
        while hit != 0 {
            let j = hit.trailing_zeros() as usize;
            hit &= hit - 1;
            f(base + j, cnt[j] as u32)?;
        }
        base += W;
    }
    for i in base..n {
        let c = ((((hi[i] as u64) << 32) | lo[i] as u64) ^ q).count_ones();
        if c <= thr {
            f(i, c)?;
        }
    }
    ControlFlow::Continue(())
}
