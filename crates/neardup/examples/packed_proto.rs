use neardup::features::is_word_char;
use neardup::minhash::{fold32, MinHashOptions, MinHasher};
use neardup::{FingerprintConfig, Fingerprinter};
use std::time::Instant;

#[inline(always)]
fn mix128(h: u128) -> u64 {
    let lo = (h as u64) ^ 0x9E37_79B1_85EB_CA87;
    let hi = ((h >> 64) as u64) ^ 0xC2B2_AE3D_27D4_EB4F;
    let m = (lo as u128) * (hi as u128);
    let mut r = (m as u64) ^ ((m >> 64) as u64);
    r ^= r >> 37;
    r = r.wrapping_mul(0x1656_6791_9E37_79F9);
    r ^ (r >> 32)
}

fn packed_keys(text: &str, n: usize, keys: &mut Vec<u32>) {
    let bytes = text.as_bytes();
    let mask: u128 = (1u128 << (21 * n)) - 1;
    let (mut i, mut h, mut count) = (0usize, 0u128, 0usize);
    while let Some(&b) = bytes.get(i) {
        let cp: u32;
        if b < 0x80 {
            i += 1;
            if !b.is_ascii_alphanumeric() {
                continue;
            }
            cp = b as u32;
        } else if let Some(&[b0, b1, b2]) = bytes.get(i..i + 3).and_then(|c| c.first_chunk()) {
            if (0xE5..=0xE9).contains(&b0) || (b0 == 0xE4 && b1 >= 0xB8) {
                cp = ((b0 as u32 & 0x0F) << 12) | ((b1 as u32 & 0x3F) << 6) | (b2 as u32 & 0x3F);
                i += 3;
            } else {
                let c = text[i..].chars().next().unwrap();
                i += c.len_utf8();
                if !is_word_char(c) {
                    continue;
                }
                cp = c as u32;
            }
        } else {
            let c = text[i..].chars().next().unwrap();
            i += c.len_utf8();
            if !is_word_char(c) {
                continue;
            }
            cp = c as u32;
        }
        h = ((h << 21) | cp as u128) & mask;
        count += 1;
        if count >= n {
            keys.push(fold32(mix128(h)));
        }
    }
    if count > 0 && count < n {
        keys.push(fold32(mix128(h)));
    }
}

fn main() {
    let path = std::env::args().nth(1).unwrap();
    let fp = Fingerprinter::new(FingerprintConfig::default()).unwrap();
    let texts: Vec<String> = std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter_map(|v| v["text"].as_str().map(|t| fp.normalize(t)))
        .collect();
    let bytes: usize = texts.iter().map(|t| t.len()).sum();
    let mh = MinHasher::new(&MinHashOptions::default()).unwrap();
    for _ in 0..3 {
        let t = Instant::now();
        let mut s = 0u64;
        for x in &texts {
            if let Some(sig) = mh.signature_normalized(x) {
                s += sig[0] as u64;
            }
        }
        let a = t.elapsed().as_secs_f64();
        let t = Instant::now();
        let mut keys = Vec::new();
        let mut s2 = 0u64;
        for x in &texts {
            keys.clear();
            packed_keys(x, 5, &mut keys);
            if !keys.is_empty() {
                s2 += mh.signature_of_keys(&keys)[0] as u64;
            }
        }
        let b = t.elapsed().as_secs_f64();
        let t = Instant::now();
        let mut s3 = 0usize;
        for x in &texts {
            keys.clear();
            packed_keys(x, 5, &mut keys);
            s3 += keys.len();
        }
        let c = t.elapsed().as_secs_f64();
        println!(
            "current {:.0} MB/s; packed keys + sketch {:.0} MB/s; packed keys alone {:.0} MB/s ({s} {s2} {s3})",
            bytes as f64 / a / 1e6,
            bytes as f64 / b / 1e6,
            bytes as f64 / c / 1e6
        );
    }
}
