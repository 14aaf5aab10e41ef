"""The exact Hamming index: every search equals a brute-force scan."""

from __future__ import annotations

import numpy as np
import pytest

import neardup


def brute(fps: np.ndarray, q: int, k: int) -> list[tuple[int, int]]:
    out = [(i, neardup.hamming(int(f), q)) for i, f in enumerate(fps)]
    return sorted(((i, d) for i, d in out if d <= k), key=lambda x: (x[1], x[0]))


def test_search_equals_brute_force():
    rng = np.random.default_rng(3)
    base = rng.integers(0, 2**63, size=2000, dtype=np.uint64)
    # Plant neighbours: flip 1..4 bits of some fingerprints.
    near = base[:300].copy()
    for i in range(len(near)):
        for b in rng.choice(64, size=rng.integers(1, 5), replace=False):
            near[i] ^= np.uint64(1) << np.uint64(b)
    fps = np.concatenate([base, near])
    ix = neardup.HammingIndex(max_distance=4, capacity=len(fps))
    ix.insert_many(fps)
    assert len(ix) == len(fps) and ix.max_distance == 4
    for q in fps[:50].tolist() + near[:50].tolist():
        assert ix.search(q) == brute(fps, q, 4)
        assert ix.search(q, 2) == brute(fps, q, 2)
    qi, h, d = ix.search_many(near[:50], 3, threads=2)
    got = {}
    for a, b, c in zip(qi.tolist(), h.tolist(), d.tolist()):
        got.setdefault(a, []).append((b, c))
    for a, q in enumerate(near[:50].tolist()):
        assert got.get(a, []) == brute(fps, q, 3)


def test_insert_remove_and_bad_distance():
    ix = neardup.HammingIndex(max_distance=3)
    ix.insert(0xFF, 7)
    assert ix.search(0xFE) == [(7, 1)]
    assert ix.remove(0xFF, 7) and not ix.remove(0xFF, 7)
    assert ix.search(0xFE) == []
    with pytest.raises(neardup.ConfigError, match="distance 9 is out of range"):
        ix.search(0xFE, 9)
    with pytest.raises(ValueError, match="2 handles for 3 fingerprints"):
        ix.insert_many(np.array([1, 2, 3], np.uint64), np.array([1, 2], np.uint32))


def test_lean_index_equals_brute_force():
    rng = np.random.default_rng(5)
    base = rng.integers(0, 2**63, size=3000, dtype=np.uint64)
    near = base[:400].copy()
    for i in range(len(near)):
        for b in rng.choice(64, size=rng.integers(1, 5), replace=False):
            near[i] ^= np.uint64(1) << np.uint64(b)
    fps = np.concatenate([base, near, base[:10]])  # repeats: a multiset
    ix = neardup.LeanIndex(fps)
    assert len(ix) == len(fps) and ix.max_distance == 3 and ix.nbytes > 0
    for q in fps[:40].tolist() + near[:60].tolist():
        assert ix.search(q) == brute(fps, q, 3)
        assert ix.search(q, 1) == brute(fps, q, 1)
    qi, h, d = ix.search_many(near[:60], threads=2)
    got = {}
    for a, b, c in zip(qi.tolist(), h.tolist(), d.tolist()):
        got.setdefault(a, []).append((b, c))
    for a, q in enumerate(near[:60].tolist()):
        assert got.get(a, []) == brute(fps, q, 3)
    # Handles of one's own.
    own = neardup.LeanIndex(fps[:3], np.array([70, 80, 90], np.uint32))
    assert own.search(int(fps[1])) == [(80, 0)]


def test_large_batches_equal_one_query_at_a_time():
    # Past 16,384 queries both indexes search a batch table by table in sorted order.
    rng = np.random.default_rng(8)
    fps = rng.integers(0, 2**63, size=5000, dtype=np.uint64)
    queries = np.resize(fps, 20000).copy()
    for i in range(0, len(queries), 2):
        queries[i] ^= np.uint64(1) << np.uint64(rng.integers(0, 64))
    blocks = neardup.HammingIndex(max_distance=3, capacity=len(fps))
    blocks.insert_many(fps)
    for ix in (neardup.LeanIndex(fps), blocks):
        qi, h, d = ix.search_many(queries, threads=2)
        assert len(qi) >= len(queries)
        got = {}
        for a, b, c in zip(qi.tolist(), h.tolist(), d.tolist()):
            got.setdefault(a, []).append((b, c))
        for a in range(0, len(queries), 37):
            assert got.get(a, []) == ix.search(int(queries[a]))


def test_lean_index_errors():
    ix = neardup.LeanIndex(np.array([0xFF], np.uint64))
    with pytest.raises(neardup.ConfigError, match="distance 4 is out of range for layout lean"):
        ix.search(0xFE, 4)
    with pytest.raises(ValueError, match="2 handles for 3 fingerprints"):
        neardup.LeanIndex(np.array([1, 2, 3], np.uint64), np.array([1, 2], np.uint32))
