"""The durable engine: decisions, queries, removal, and durability across reopen."""

from __future__ import annotations

import time

import pytest

import neardup

TEXT = "the committee approved the budget for new roads and schools after a long debate in the council"


def test_decides_like_the_deduper_and_survives_reopen(tmp_path, corpus):
    # Without the template veto, as the streaming Deduper's default (its veto counts lines as
    # batch dedup does, the engine's as an online index must: docs/quality.md).
    data = tmp_path / "data"
    with neardup.Engine(data, template_veto=False) as e:
        answers = [e.check_and_insert(str(d["id"]), d["text"]) for d in corpus if d["id"] != "empty"]
        stats = e.stats()
    streamed = neardup.Deduper()
    expected = [streamed.check_and_add(d["text"], str(d["id"])) for d in corpus if d["id"] != "empty"]
    assert [a["duplicate_of"] for a in answers] == [x.duplicate_of for x in expected]
    assert [a["stage"] for a in answers] == [x.stage for x in expected]
    kept = [a["id"] for a in answers if a["status"] == "unique"]
    assert all(a["stored"] for a in answers if a["status"] == "unique")
    assert stats["documents"] == len(kept)

    with neardup.Engine(data, template_veto=False) as e:
        assert e.stats()["recovered_documents"] == len(kept)
        for id in kept:
            assert e.get(id)["id"] == id
        # Every stored document is now found; a repeated id is answered by its stored id.
        q = e.query(corpus[0]["text"])
        assert q["status"] == "duplicate" and q["matches"]
        again = e.check_and_insert(kept[0], "a completely new text about violins and comets over the desert")
        assert again["status"] == "duplicate" and again["stage"] == "id"


def test_get_remove_query(tmp_path):
    with neardup.Engine(tmp_path / "d", sync="none") as e:
        now = round(time.time() - 60, 3)
        a = e.check_and_insert("a", TEXT, timestamp=now)
        assert a["status"] == "unique" and a["stored"] and a["fingerprint"] is None
        assert a["timestamp"] == now and e.get("a")["timestamp"] == now
        # Older than the retention window (2 days): answered, not stored.
        old = e.check_and_insert("old", "an old text about the harbor and the lantern", timestamp=now - 3 * 86400)
        assert old["status"] == "unique" and not old["stored"]
        b = e.check_and_insert("b", TEXT.upper())
        assert b["status"] == "duplicate" and b["duplicate_of"] == "a" and not b["stored"]
        assert e.get("b") is None
        assert e.query(TEXT)["duplicate_of"] == "a"
        assert e.remove("a") and not e.remove("a")
        assert e.query(TEXT)["status"] == "unique"
        many = e.check_and_insert_many([{"id": "c", "text": TEXT}, {"id": "d", "text": TEXT + "."}])
        assert [m["status"] for m in many] == ["unique", "duplicate"]


def test_simhash_engine_takes_fingerprints(tmp_path):
    fp = neardup.simhash(TEXT)
    with neardup.Engine(tmp_path / "s", method="simhash", distance=3) as e:
        assert e.check_and_insert("x", fingerprint=fp)["fingerprint"] == f"{fp:016x}"
        assert e.check_and_insert("y", fingerprint=f"{fp ^ 1:x}")["duplicate_of"] == "x"
        assert e.check_and_insert("z", TEXT)["distance"] == 0


def test_engine_errors(tmp_path):
    data = tmp_path / "e"
    neardup.Engine(data).shutdown()
    with pytest.raises(neardup.ConfigMismatchError, match="different configuration"):
        neardup.Engine(data, method="simhash")
    e = neardup.Engine(tmp_path / "f")
    with pytest.raises(ValueError, match="needs the document's text"):
        e.check_and_insert("x", fingerprint=1)
    with pytest.raises(neardup.EmptyDocumentError, match="empty document"):
        e.check_and_insert("x", " ... ")
    with pytest.raises(ValueError, match="invalid document id"):
        e.check_and_insert("", TEXT)
    with pytest.raises(ValueError, match="either `text` or `fingerprint`"):
        e.query(TEXT, fingerprint=1)
    e.shutdown()
    with pytest.raises(neardup.EngineError, match="shut down"):
        e.check_and_insert("y", TEXT)
    e.shutdown()  # twice is harmless
    with pytest.raises(neardup.ConfigError, match="distance"):
        neardup.Engine(tmp_path / "g", distance=2)


TEMPLATE = (
    "Editor's note: the views expressed in this article are the author's own.\n"
    "Copyright: no part of this article may be reproduced without written permission.\n"
    "Follow us to receive a daily selection of articles and exclusive material.\n"
)


def test_engine_template_veto_is_on_by_default_and_can_be_turned_off(tmp_path):
    # Short different bodies under one long template: matched on the template alone
    # without the veto, kept apart with it (the default, as `neardup dedup`).
    import random

    rng = random.Random(7)
    word = lambda: "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(3, 8)))
    bodies = [" ".join(word() for _ in range(5)) for _ in range(12)]
    docs = [{"id": f"p{i}", "text": f"{b}\n{TEMPLATE}"} for i, b in enumerate(bodies)]
    with neardup.Engine(tmp_path / "veto", sync="none") as e:
        vetoed = e.check_and_insert_many(docs)
    with neardup.Engine(tmp_path / "plain", sync="none", template_veto=False) as e:
        plain = e.check_and_insert_many(docs)
    dup = lambda answers: sum(a["status"] == "duplicate" for a in answers)
    assert dup(vetoed) == 0
    assert dup(plain) > 0
    with pytest.raises(neardup.ConfigMismatchError, match="template_veto"):
        neardup.Engine(tmp_path / "veto", template_veto=False)
    # A directory written without the own-lines rule (as before it), or judging by content,
    # opens only so, and the setting is named.
    for name, option, stored in [
        ("old", {"template_own_lines": False}, "own_repeated_lines: stored false"),
        ("content", {"template_by_content": True}, "by_content: stored true"),
        ("markup", {"template_text_lines": False}, "text_lines: stored false"),
    ]:
        with neardup.Engine(tmp_path / name, sync="none", **option) as e:
            e.check_and_insert_many(docs)
        with pytest.raises(neardup.ConfigMismatchError, match=stored):
            neardup.Engine(tmp_path / name)
        with neardup.Engine(tmp_path / name, **option) as e:
            assert e.check_and_insert("p0", docs[0]["text"])["status"] == "duplicate"
    with pytest.raises(neardup.ConfigError, match="template_own_lines"):
        neardup.Engine(tmp_path / "t", template_veto=False, template_own_lines=False)
    with pytest.raises(neardup.ConfigError, match="template_by_content"):
        neardup.Engine(tmp_path / "t", template_veto=False, template_by_content=True)
    with pytest.raises(neardup.ConfigError, match="template_text_lines"):
        neardup.Engine(tmp_path / "t", template_veto=False, template_text_lines=False)
    with pytest.raises(neardup.ConfigError, match="template_veto"):
        neardup.Engine(tmp_path / "s", method="simhash", template_veto=True)


def test_engine_finds_quotes_of_long_texts_across_reopen(tmp_path):
    # As `neardup dedup`: a quote of two sentences of a stored article is its duplicate
    # (stage "passage"), also after a reopen; a directory written without passages opens only
    # so, and the setting is named.
    from test_dedup import ARTICLE, QUOTE

    with neardup.Engine(tmp_path / "on", sync="none") as e:
        assert e.check_and_insert("article", ARTICLE)["status"] == "unique"
    with neardup.Engine(tmp_path / "on", sync="none") as e:
        a = e.check_and_insert("quote", QUOTE)
        assert (a["duplicate_of"], a["stage"]) == ("article", "passage")
    with neardup.Engine(tmp_path / "off", sync="none", passages=False) as e:
        e.check_and_insert("article", ARTICLE)
        assert e.check_and_insert("quote", QUOTE)["status"] == "unique"
    with pytest.raises(neardup.ConfigMismatchError, match="passages: stored null"):
        neardup.Engine(tmp_path / "off")
    with pytest.raises(neardup.ConfigError, match="passages"):
        neardup.Engine(tmp_path / "s", method="simhash", passages=False)
