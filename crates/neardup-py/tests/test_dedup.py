"""Batch dedup: the decisions of `neardup dedup`, option for option."""

from __future__ import annotations

import pytest

import neardup
from conftest import SAMPLE

CASES = [
    ([], {}),
    (["--method", "simhash"], {"method": "simhash"}),
    (["--method", "simhash", "--distance", "6"], {"method": "simhash", "distance": 6}),
    (["--method", "minhash", "--threshold", "0.5"], {"method": "minhash", "threshold": 0.5}),
    (["--method", "imatch"], {"method": "imatch"}),
    (["--method", "exact"], {"method": "exact"}),
    (["--method", "short"], {"method": "short"}),
    (["--no-template-veto"], {"template_veto": False}),
    (["--linkage", "components"], {"linkage": "components"}),
    (["--keep", "longest"], {"keep": "longest"}),
    (["--threshold", "0.8", "--features", "chars"], {"threshold": 0.8, "features": "chars"}),
    (["--minhash-char-ngram", "3"], {"minhash_char_ngram": 3}),
    (["--method", "minhash", "--minhash-word-ngram", "2"], {"method": "minhash", "minhash_word_ngram": 2}),
    (["--minhash-bits", "32"], {"minhash_bits": 32}),
    (["--method", "minhash", "--minhash-bits", "16"], {"method": "minhash", "minhash_bits": 16}),
    (["--quote-edge", "0"], {"quote_edge": 0.0}),
    (["--method", "short", "--quote-edge", "0.3"], {"method": "short", "quote_edge": 0.3}),
    (["--no-passages"], {"passages": False}),
]


@pytest.mark.parametrize("flags,options", CASES)
def test_dedup_equals_cli_on_sample(run_cli, sample, flags, options):
    cli = run_cli("dedup", "-q", *flags, str(SAMPLE))
    mine = [d.to_dict() for d in neardup.dedup(sample, **options)]
    assert mine == cli


@pytest.mark.parametrize("flags,options", CASES)
def test_dedup_equals_cli_on_planted_corpus(run_cli, corpus, corpus_file, flags, options):
    cli = run_cli("dedup", "-q", *flags, str(corpus_file))
    mine = [d.to_dict() for d in neardup.dedup(corpus, threads=2, **options)]
    assert mine == cli
    assert sum(d["duplicate_of"] is not None for d in cli) > 0 or options.get("method") == "exact"


def test_sample_has_duplicates_with_evidence(sample):
    ds = neardup.dedup(sample)
    dups = [d for d in ds if d.is_duplicate]
    assert dups, "the sample holds near-duplicates"
    for d in dups:
        assert d.stage in {"exact", "short", "minhash"}
        assert d.similarity is not None and 0 < d.similarity <= 1
        kept = ds[d.duplicate_of_index]
        assert kept.id == d.duplicate_of and not kept.is_duplicate
        assert d.cluster == kept.cluster


def test_texts_keys_and_default_ids():
    ds = neardup.dedup(["the cat sat on the mat today", "the cat sat on the mat today!", "..."])
    assert [d.id for d in ds] == [0, 1, 2]
    assert ds[1].duplicate_of == 0 and ds[1].stage == "short"
    assert ds[2].empty and ds[2].to_dict()["skipped"] == "empty"
    docs = [{"url": "a", "body": "one two three four"}, {"url": "b", "body": "one two three four"}]
    ds = neardup.dedup(docs, text_key="body", id_key="url")
    assert ds[1].duplicate_of == "a"
    assert neardup.dedup(iter(docs), text_key="body", id_key="url")[1].duplicate_of == "a"


ARTICLE = (
    "话说天下大势，分久必合，合久必分。周末七国分争，并入于秦。及秦灭之后，楚、汉分争，又并入于汉。"
    "汉朝自高祖斩白蛇而起义，一统天下，后来光武中兴，传至献帝，遂分为三国。推其致乱之由，殆始于桓、灵二帝。"
    "桓帝禁锢善类，崇信宦官。及桓帝崩，灵帝即位，大将军窦武、太傅陈蕃共相辅佐。"
    "时有宦官曹节等弄权，窦武、陈蕃谋诛之，机事不密，反为所害，中涓自此愈横。"
)
QUOTE = "罗贯中说：“推其致乱之由，殆始于桓、灵二帝。桓帝禁锢善类，崇信宦官。”"


def test_quote_of_a_long_text_is_found_by_its_sentences():
    ds = neardup.dedup([ARTICLE, QUOTE])
    assert ds[1].duplicate_of == 0 and ds[1].stage == "passage"
    assert ds[1].similarity == pytest.approx(23 / 27)
    assert neardup.dedup([ARTICLE, QUOTE], passages=False)[1].duplicate_of is None


def test_same_result_at_any_thread_count(corpus):
    one = [d.to_dict() for d in neardup.dedup(corpus, threads=1)]
    two = [d.to_dict() for d in neardup.dedup(corpus, threads=2)]
    assert one == two
