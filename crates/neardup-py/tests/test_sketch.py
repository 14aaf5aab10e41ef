"""Sketches: parity with `neardup fingerprint`, bulk arrays, MinHash bands and confirmation."""

from __future__ import annotations

import numpy as np
import pytest

import neardup
from conftest import SAMPLE

FINGERPRINT_CASES = [
    ([], {}),
    (["--features", "chars", "--char-ngram", "4"], {"features": "chars", "char_ngram": 4}),
    (["--features", "words", "--word-ngram", "2"], {"features": "words", "word_ngram": 2}),
    (["--features", "jieba", "--top-n", "auto"], {"features": "jieba", "top_n": "auto"}),
    (["--keep-case", "--no-nfkc", "--html", "never"], {"lowercase": False, "nfkc": False, "html": "never"}),
    (["--keep-traditional"], {"fold_traditional": False}),
]


@pytest.mark.parametrize("flags,options", FINGERPRINT_CASES)
def test_simhash_equals_cli_fingerprint(run_cli, sample, corpus_file, corpus, flags, options):
    for path, docs in ((SAMPLE, sample), (corpus_file, corpus)):
        cli = {d["id"]: d["simhash"] for d in run_cli("fingerprint", "-q", "--format", "jsonl", *flags, str(path))}
        fp = neardup.Fingerprinter(**options)
        fps, valid = fp.fingerprint_batch([d["text"] for d in docs])
        assert fps.dtype == np.uint64
        mine = {d["id"]: f"{int(f):016x}" for d, f, ok in zip(docs, fps, valid) if ok}
        assert mine == cli
        assert len(cli) > 30


def test_simhash_scalar_list_and_module_function_agree(sample):
    texts = [d["text"] for d in sample]
    arr = neardup.simhash(texts, features="chars")
    assert isinstance(arr, np.ndarray) and arr.shape == (len(texts),)
    fp = neardup.Fingerprinter(features="chars")
    assert [fp.simhash(t) for t in texts] == [int(x) for x in arr]
    assert fp.simhash(iter(texts[:3])).tolist() == arr[:3].tolist()


def test_bulk_simhash_names_the_empty_document():
    with pytest.raises(neardup.EmptyDocumentError, match="document 1: empty document"):
        neardup.simhash(["some text here", " ... ", "more text"])
    fps, valid = neardup.Fingerprinter().fingerprint_batch(["some text here", " ... "])
    assert valid.tolist() == [True, False] and fps[1] == 0


def test_hamming_and_near_copies():
    fp = neardup.Fingerprinter()
    a = fp.simhash("the quick brown fox jumps over the lazy dog, again and again")
    b = fp.simhash("The quick brown fox jumps over the lazy dog, again and again!")
    c = fp.simhash("we all scream for ice cream in the summer evenings")
    assert neardup.hamming(a, b) < neardup.hamming(a, c)
    assert neardup.hamming(a, a) == 0


def test_traditional_characters_are_folded_unless_kept():
    simplified = "今天纽约的天气真好啊，京华大酒店的张尧经理吃了一只北京烤鸭。"
    traditional = "今天紐約的天氣真好啊，京華大酒店的張堯經理吃了一隻北京烤鴨。"
    fp = neardup.Fingerprinter()
    assert fp.normalize(traditional) == fp.normalize(simplified)
    assert fp.simhash(traditional) == fp.simhash(simplified)
    kept = neardup.Fingerprinter(fold_traditional=False)
    assert kept.normalize(traditional) != kept.normalize(simplified)
    assert kept.config_id != fp.config_id and "fold_traditional" not in kept.descriptor
    # The same text in the two scripts is one document to `dedup`, two with the step off.
    assert [d.duplicate_of for d in neardup.dedup([simplified, traditional])] == [None, 0]
    assert [d.duplicate_of for d in neardup.dedup([simplified, traditional], fold_traditional=False)] == [None, None]


def test_exact_digest_sees_through_normalisation():
    fp = neardup.Fingerprinter()
    d = fp.exact_digest(["<p>The  Cat sat</p>", "the cat sat", "the dog sat"])
    assert d.shape == (3, 2) and d.dtype == np.uint64
    assert d[0].tolist() == d[1].tolist() and d[0].tolist() != d[2].tolist()
    one = fp.exact_digest("the cat sat")
    assert one == (int(d[1][0]) << 64) | int(d[1][1])
    assert fp.normalize("<p>The  Cat sat</p>") == "the cat sat"


def test_minhash_arrays_bands_and_confirmation(corpus):
    texts = [d["text"] for d in corpus]
    mh = neardup.MinHash(threshold=0.6)
    bands, rows = mh.params
    sigs, keys, valid = mh.sketch(texts, threads=2)
    assert sigs.dtype == np.uint32 and sigs.shape == (len(texts), mh.num_perm)
    assert keys.dtype == np.uint64 and keys.shape == (len(texts), bands)
    assert valid.sum() == len(texts) - 1  # the planted empty document
    assert (mh.band_keys(sigs[valid]) == keys[valid]).all()
    # Same result as a single-threaded run and as the module function.
    sigs1, keys1, valid1 = neardup.minhash(texts, threads=1, threshold=0.6)
    assert (sigs1 == sigs).all() and (keys1 == keys).all() and (valid1 == valid).all()
    # verify() confirms exactly what dedup(method="minhash") confirmed, with the same similarity.
    decisions = neardup.dedup(corpus, method="minhash", template_veto=False, linkage="components")
    pairs = [(d.index, d.matched_index, d.similarity) for d in decisions if d.matched_index is not None]
    assert len(pairs) > 20
    a = np.stack([sigs[i] for i, _, _ in pairs])
    b = np.stack([sigs[j] for _, j, _ in pairs])
    sim, dup = mh.verify(a, b)
    assert dup.all()
    assert sim.tolist() == [s for _, _, s in pairs]
    # A pair of unrelated texts is not confirmed.
    other = mh.sketch(["completely unrelated words about a violin and a comet over the desert island tonight"])[0]
    s2, d2 = mh.verify(a[:1], other)
    assert not d2[0] and s2[0] < 0.6


def _utf8_layout(texts, offset_type):
    """Texts as Arrow lays out a string array: UTF-8 bytes one after the other, n + 1 offsets."""
    raw = [t.encode("utf-8") for t in texts]
    offsets = np.zeros(len(raw) + 1, dtype=offset_type)
    offsets[1:] = np.cumsum([len(r) for r in raw])
    return np.frombuffer(b"".join(raw), dtype=np.uint8), offsets


@pytest.mark.parametrize("offset_type", [np.int32, np.int64])
def test_minhash_sketch_utf8_equals_sketch(corpus, offset_type):
    texts = [d["text"] for d in corpus] + ["", "青山依旧在，几度夕阳红。"]
    mh = neardup.MinHash()
    data, offsets = _utf8_layout(texts, offset_type)
    got = mh.sketch_utf8(data, offsets, threads=2)
    want = mh.sketch(texts, threads=2)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and (g == w).all()
    assert not got[2][-2]  # the empty text
    # a slice of the buffers: texts 3..9
    part = mh.sketch_utf8(data, offsets[3:10])
    assert (part[0] == want[0][3:9]).all()
    assert mh.sketch_utf8(data, offsets[:1])[0].shape == (0, mh.num_perm)


def test_minhash_sketch_utf8_names_bad_offsets_and_bytes():
    mh = neardup.MinHash()
    data, offsets = _utf8_layout(["ab", "cd", "ef"], np.int64)
    with pytest.raises(ValueError, match=r"text 1: offsets 2..9 are not a range inside data \(6 bytes\)"):
        mh.sketch_utf8(data, np.array([0, 2, 9, 6], dtype=np.int64))
    with pytest.raises(ValueError, match=r"text 0: offsets 4..2"):
        mh.sketch_utf8(data, np.array([4, 2], dtype=np.int64))
    bad = np.frombuffer("好".encode("utf-8")[:2] + b"xy", dtype=np.uint8)
    with pytest.raises(ValueError, match=r"text 0: not UTF-8"):
        mh.sketch_utf8(bad, np.array([0, 4], dtype=np.int32))


def test_bucket_pairs_are_every_candidate_pair_once(corpus):
    """Bucket rows spread over partitions at random: the pairs reported are exactly the pairs
    sharing a band key (brute force), each once, confirmed as verify() confirms them."""
    texts = [d["text"] for d in corpus]
    texts += [t + " (copy)" for t in texts[::2]] + [t[: len(t) * 3 // 4] for t in texts[1::3]]
    mh = neardup.MinHash()
    sigs, keys, valid = mh.sketch(texts)
    nodes = np.flatnonzero(valid)
    bands = keys.shape[1]
    want = {
        (int(i), int(j))
        for x, i in enumerate(nodes)
        for j in nodes[x + 1 :]
        if (keys[i] == keys[j]).any()
    }
    assert len(want) > 50
    rows = [(int(i), band, int(keys[i, band])) for i in nodes for band in range(bands)]
    rng = np.random.default_rng(3)
    rng.shuffle(rows)
    got = {}
    for part in range(3):  # a bucket's rows all in one partition, as a shuffle by key puts them
        mine = [r for r in rows if hash((r[1], r[2])) % 3 == part]
        node = np.array([r[0] for r in mine], dtype=np.int64)
        first, second, sim, dup, k = mh.bucket_pairs(
            np.array([r[1] for r in mine], dtype=np.int32),
            np.array([r[2] for r in mine], dtype=np.uint64).view(np.int64),
            node * 7,  # any ranks in document order
            sigs[node],
        )
        for f, s_, x, d, size in zip(first, second, sim, dup, k):
            pair = (int(node[f]), int(node[s_]))
            assert pair not in got, f"{pair} reported twice"
            got[pair] = (float(x), bool(d))
            assert size >= 2
    assert set(got) == want
    a = np.stack([sigs[i] for i, _ in sorted(got)])
    b = np.stack([sigs[j] for _, j in sorted(got)])
    sim, dup = mh.verify(a, b)
    assert [got[p] for p in sorted(got)] == list(zip(sim.tolist(), dup.tolist()))
    assert 0 < dup.sum() < len(dup)
    with pytest.raises(ValueError, match=r"row 0: band 18 is not one of this MinHash's 0 … 17"):
        mh.bucket_pairs(np.array([18], np.int32), np.zeros(1, np.int64), np.zeros(1, np.int64), sigs[:1])
    with pytest.raises(ValueError, match=r"1 signatures, 2 bands"):
        mh.bucket_pairs(np.zeros(2, np.int32), np.zeros(1, np.int64), np.zeros(1, np.int64), sigs[:1])


def test_bucket_pairs_collapse_identical_signatures_keeps_components_and_evidence(corpus):
    """With exact copies among the rows, collapse_identical reports each copy once, paired with
    its earliest identical node, and pairs only the earliest ones otherwise; the components and
    every node's most similar earlier confirmed node are those of all the pairs."""
    texts = [d["text"] for d in corpus]
    texts += [t + " (copy)" for t in texts[::2]] + texts[::3] + texts[::3]  # exact copies
    texts += [texts[1]] * 70  # a bucket of more than 64 rows (found by hashing, not by scanning)
    mh = neardup.MinHash()
    sigs, keys, valid = mh.sketch(texts)
    nodes = np.flatnonzero(valid)
    bands = keys.shape[1]
    rows = [(int(i), band, int(keys[i, band])) for i in nodes for band in range(bands)]
    rng = np.random.default_rng(5)
    rng.shuffle(rows)

    def run(collapse):
        got = {}
        for part in range(3):
            mine = [r for r in rows if hash((r[1], r[2])) % 3 == part]
            node = np.array([r[0] for r in mine], dtype=np.int64)
            first, second, sim, dup, _ = mh.bucket_pairs(
                np.array([r[1] for r in mine], dtype=np.int32),
                np.array([r[2] for r in mine], dtype=np.uint64).view(np.int64),
                node,
                sigs[node],
                collapse_identical=collapse,
            )
            for f, s_, x, d in zip(first, second, sim, dup):
                pair = (int(node[f]), int(node[s_]))
                assert pair not in got, f"{pair} reported twice"
                got[pair] = (float(x), bool(d))
        return got

    every, collapsed = run(False), run(True)
    earliest = {}
    for i in nodes:
        earliest.setdefault(sigs[i].tobytes(), int(i))
    copies = {int(i): earliest[sigs[i].tobytes()] for i in nodes if earliest[sigs[i].tobytes()] != i}
    assert len(copies) > 20
    want = {p: v for p, v in every.items() if p[0] not in copies and p[1] not in copies}
    want.update({(r, c): (1.0, True) for c, r in copies.items()})
    assert collapsed == want
    assert len(collapsed) < len(every)

    def clusters_and_evidence(pairs):
        n = len(texts)
        confirmed = [p for p, (_, d) in pairs.items() if d]
        roots = neardup.components(
            n, np.array([b for _, b in confirmed], np.int64), np.array([a for a, _ in confirmed], np.int64)
        )
        best = {}
        for (a, b), (s_, d) in pairs.items():
            if d:
                best[b] = min(best.get(b, (2.0, n)), (-s_, a))
        return roots.tolist(), best

    assert clusters_and_evidence(collapsed) == clusters_and_evidence(every)


def test_components_are_smallest_members():
    a = np.array([3, 5, 4, 6], dtype=np.int64)
    b = np.array([0, 3, 2, 6], dtype=np.int64)
    roots = neardup.components(7, a, b)
    assert roots.dtype == np.uint32
    assert roots.tolist() == [0, 1, 2, 0, 2, 0, 6]
    assert neardup.components(0, a[:0], b[:0]).tolist() == []
    with pytest.raises(ValueError, match=r"edge 1 \(5, 3\) names a node outside 0 … 4"):
        neardup.components(5, a, b)
    with pytest.raises(ValueError, match="a has 4 edges and b has 3"):
        neardup.components(7, a, b[:3])


def test_minhash_bad_shapes_are_value_errors():
    mh = neardup.MinHash(num_perm=64)
    with pytest.raises(ValueError, match="num_perm = 64"):
        mh.verify(np.zeros((2, 128), np.uint32), np.zeros((2, 128), np.uint32))
    with pytest.raises(ValueError, match="2 rows and b has 3"):
        mh.verify(np.zeros((2, 64), np.uint32), np.zeros((3, 64), np.uint32))
    with pytest.raises(neardup.ConfigError, match="num_perm = 0"):
        neardup.MinHash(num_perm=0)


def test_minhash_schemes_give_the_spec_vectors():
    # docs/fingerprint-spec.md, "MinHash v2" (the default) and "MinHash v1".
    # The spec's vectors are of 32-bit entries; the detector keeps 8 bits of each by default
    # (b-bit MinHash), the low ones.
    text = ["the quick brown fox jumps over the lazy dog"]
    full = [2400092844, 2585675447, 4048994095, 3718869077]
    v2, _, _ = neardup.MinHash(bits=32).sketch(text)
    assert list(v2[0, :4]) == full
    v2_8, _, _ = neardup.MinHash().sketch(text)
    assert list(v2_8[0, :4]) == [v & 0xFF for v in full]
    v2_16, _, _ = neardup.MinHash(bits=16).sketch(text)
    assert list(v2_16[0, :4]) == [v & 0xFFFF for v in full]
    zh = ["你妈妈喊你回家吃饭哦,回家罗回家罗"]
    v3, _, _ = neardup.MinHash(scheme="code_point_sketch", bits=32).sketch(zh)
    assert list(v3[0, :4]) == [1575877143, 4074045402, 3460110966, 3706690065]
    v2_zh, _, _ = neardup.MinHash(scheme="v2", bits=32).sketch(zh)
    assert list(v2_zh[0, :4]) == [1254281, 1070732289, 2104578583, 1799894271]
    v1, _, _ = neardup.MinHash(scheme="permutations", bits=32).sketch(text)
    assert list(v1[0, :4]) == [188007184, 87496179, 332125748, 160807149]
    with pytest.raises(neardup.ConfigError, match="scheme"):
        neardup.MinHash(scheme="three_permutations")
    with pytest.raises(neardup.ConfigError, match="minhash bits = 12"):
        neardup.MinHash(bits=12)
