"""Streaming dedup: one document (or batch) at a time, the same decisions as batch dedup."""

from __future__ import annotations

import pytest

import neardup


@pytest.mark.parametrize("method", ["auto", "simhash", "minhash", "exact", "short", "imatch"])
def test_one_at_a_time_equals_batch_without_veto(corpus, method):
    batch = [d.to_dict() for d in neardup.dedup(corpus, method=method, template_veto=False)]
    dd = neardup.Deduper(method=method)
    streamed = [dd.check_and_add(d["text"], d["id"]).to_dict() for d in corpus]
    assert streamed == batch
    assert len(dd) == len(corpus)


def test_batches_equal_batch_dedup_with_template_veto(corpus):
    batch = [d.to_dict() for d in neardup.dedup(corpus)]
    dd = neardup.Deduper(template_veto=True)
    out = dd.check_and_add_many([d["text"] for d in corpus], [d["id"] for d in corpus])
    assert [d.to_dict() for d in out] == batch


def test_check_answers_without_adding():
    dd = neardup.Deduper()
    text = "the committee approved the budget for new roads and schools after a long debate"
    assert dd.check(text) is None
    first = dd.check_and_add(text, "a")
    assert not first.is_duplicate and len(dd) == 1
    m = dd.check(text.upper())
    assert m is not None and m.id == "a" and m.index == 0 and m.stage == "exact"
    assert len(dd) == 1
    second = dd.check_and_add(text.upper(), "b")
    assert second.duplicate_of == "a" and second.matched == "a" and second.similarity == 1.0
    assert dd.check("...") is None


def test_add_indexes_without_checking():
    dd = neardup.Deduper()
    text = "a storm closed the mountain pass for three days last winter and the village waited"
    assert dd.add(text, "ref-1") == 0
    assert dd.add(text, "ref-2") == 1  # added as kept even though it duplicates ref-1
    d = dd.check_and_add(text)
    assert d.id == 2 and d.duplicate_of in ("ref-1", "ref-2")


def test_deduper_rejects_bad_options():
    with pytest.raises(neardup.ConfigError, match="unknown option `linkage`"):
        neardup.Deduper(linkage="components")
    with pytest.raises(neardup.ConfigError, match="unknown method `fuzzy`"):
        neardup.Deduper(method="fuzzy")
    with pytest.raises(ValueError, match="2 ids for 1 texts"):
        neardup.Deduper().check_and_add_many(["x"], ["a", "b"])
