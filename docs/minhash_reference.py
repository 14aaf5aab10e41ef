#!/usr/bin/env python3
"""Independent reference for MinHash v1, v2 and v3 of docs/fingerprint-spec.md (character and word
shingles of already-normalised text) and the LSH band key. Needs `pip install xxhash`. Prints the
spec's test vectors."""
import struct
import xxhash

M32, M64 = (1 << 32) - 1, (1 << 64) - 1


def splitmix64(state):
    while True:
        state = (state + 0x9E3779B97F4A7C15) & M64
        z = state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
        yield z ^ (z >> 31)


def keys(shingles):
    out = set()
    for s in shingles:
        h = xxhash.xxh3_64_intdigest(s.encode("utf-8"), seed=0)
        out.add((h ^ (h >> 32)) & M32)
    return out


def chars(text, n=5):
    kept = [c for c in text if c.isalnum()]
    if len(kept) < n:
        return ["".join(kept)] if kept else []
    return ["".join(kept[i:i + n]) for i in range(len(kept) - n + 1)]


def code_point_keys(text, n=5):
    """MinHash v3's keys of character n-grams: code points packed 21 bits each, mixed."""
    out = set()
    for g in chars(text, n):
        packed = 0
        for c in g:
            packed = (packed << 21) | ord(c)
        lo = (packed & M64) ^ 0x9E3779B185EBCA87
        hi = (packed >> 64) ^ 0xC2B2AE3D27D4EB4F
        m = lo * hi
        h = (m & M64) ^ (m >> 64)
        h ^= h >> 37
        h = (h * 0x165667919E3779F9) & M64
        h ^= h >> 32
        out.add((h ^ (h >> 32)) & M32)
    return out


def words(text, n=3):
    ws = text.split()  # enough for the ASCII vectors below
    if len(ws) < n:
        return [" ".join(ws)] if ws else []
    return [" ".join(ws[i:i + n]) for i in range(len(ws) - n + 1)]


def v1(xs, n=128, seed=1):
    rng = splitmix64(seed)
    ab = [((next(rng) & M32) | 1, next(rng) & M32) for _ in range(n)]
    return [min((a * x + b) & M32 for x in xs) for a, b in ab]


def fmix32(h):
    h ^= h >> 16
    h = (h * 0x85EBCA6B) & M32
    h ^= h >> 13
    h = (h * 0xC2B2AE35) & M32
    return h ^ (h >> 16)


def v2(xs, n=128, seed=1):
    rng = splitmix64(seed)
    keys = [next(rng) & M32 for _ in range(2 * n)]
    best = [None] * n  # (round, mix)
    for i, key in enumerate(keys):
        if i < n:
            for x in xs:
                y = fmix32(x ^ key)
                b = (y * n) >> 32
                if best[b] is None or (i, y) < best[b]:
                    best[b] = (i, y)
        elif best[i - n] is None:
            best[i - n] = (i, min(fmix32(x ^ key) for x in xs))
        if all(v is not None for v in best):
            break
    return [y ^ ((r * 0x9E3779B9) & M32) for r, y in best]


def band_key(sig, band, rows=8):
    part = sig[band * rows:(band + 1) * rows]
    return xxhash.xxh3_64_intdigest(struct.pack("<%dI" % rows, *part), seed=band)


if __name__ == "__main__":
    zh = keys(chars("你妈妈喊你回家吃饭哦,回家罗回家罗"))
    en = keys(words("the quick brown fox jumps over the lazy dog"))
    for name, f in (("v2", v2), ("v1", v1)):
        for xs in (zh, en):
            s = f(xs)
            print(name, s[:4], "%016x" % band_key(s, 0))
    # v3: v2's sketch of code-point keys (word shingles keep v2's keys).
    s = v2(code_point_keys("你妈妈喊你回家吃饭哦,回家罗回家罗"))
    print("v3", s[:4], "%016x" % band_key(s, 0))
