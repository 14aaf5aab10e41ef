//! The inner loop: xor + popcount over contiguous residuals, with an AVX2 build chosen at run time.
use std::ops::ControlFlow;

const W: usize = 32;

/// Calls `f(i, distance)` for each `i` with `popcount((top[i] << 16 | bot[i]) ^ q) <= thr`.
#[inline]
pub(crate) fn scan<F>(top: &[u32], bot: &[u16], q: u64, thr: u32, f: &mut F) -> ControlFlow<()>
where
    F: FnMut(usize, u32) -> ControlFlow<()>,
{
    #[cfg(target_arch = "x86_64")]
    {
        if top.len() >= W
            && std::is_x86_feature_detected!("avx2")
            && std::is_x86_feature_detected!("popcnt")
        {
            // SAFETY: the CPU supports the features the function is compiled for.
            return unsafe { scan_avx2(top, bot, q, thr, f) };
        }
    }
    scan_generic(top, bot, q, thr, f)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,popcnt")]
unsafe fn scan_avx2<F>(top: &[u32], bot: &[u16], q: u64, thr: u32, f: &mut F) -> ControlFlow<()>
where
    F: FnMut(usize, u32) -> ControlFlow<()>,
{
    scan_generic(top, bot, q, thr, f)
}

/// Two-stage filter: the 32-bit `top` array (residual bits 16..47) is scanned first with
/// xor + popcount (vectorised); only entries whose `top` part is already within `thr` (about one
/// in a million random entries for `thr = 3`) have their 16-bit `bot` part read.
#[inline(always)]
fn scan_generic<F>(top: &[u32], bot: &[u16], q: u64, thr: u32, f: &mut F) -> ControlFlow<()>
where
    F: FnMut(usize, u32) -> ControlFlow<()>,
{
    let n = top.len();
    let bot = &bot[..n];
    let qt = (q >> 16) as u32;
    let qb = q as u16;
    let mut base = 0;
    while base + W <= n {
        let t = &top[base..base + W];
        let mut cnt = [0u8; W];
        for j in 0..W {
            cnt[j] = (t[j] ^ qt).count_ones() as u8;
        }
        let mut hit = 0u32;
        for (j, &c) in cnt.iter().enumerate() {
            hit |= ((c as u32 <= thr) as u32) << j;
        }
        while hit != 0 {
            let j = hit.trailing_zeros() as usize;
            hit &= hit - 1;
            let c = cnt[j] as u32 + (bot[base + j] ^ qb).count_ones();
            if c <= thr {
                f(base + j, c)?;
            }
        }
        base += W;
    }
    for i in base..n {
        let c = ((((top[i] as u64) << 16) | bot[i] as u64) ^ q).count_ones();
        if c <= thr {
            f(i, c)?;
        }
    }
    ControlFlow::Continue(())
}
