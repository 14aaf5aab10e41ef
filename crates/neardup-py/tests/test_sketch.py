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
