"""The durable engine: decisions, queries, removal, and durability across reopen."""

from __future__ import annotations

import time

import pytest

import neardup

TEXT = "the committee approved the budget for new roads and schools after a long debate in the council"


def test_decides_like_the_deduper_and_survives_reopen(tmp_path, corpus):
    data = tmp_path / "data"
    with neardup.Engine(data) as e:
        answers = [e.check_and_insert(str(d["id"]), d["text"]) for d in corpus if d["id"] != "empty"]
        stats = e.stats()
    streamed = neardup.Deduper()
    expected = [streamed.check_and_add(d["text"], str(d["id"])) for d in corpus if d["id"] != "empty"]
    assert [a["duplicate_of"] for a in answers] == [x.duplicate_of for x in expected]
    assert [a["stage"] for a in answers] == [x.stage for x in expected]
    kept = [a["id"] for a in answers if a["status"] == "unique"]
    assert all(a["stored"] for a in answers if a["status"] == "unique")
    assert stats["documents"] == len(kept)

    with neardup.Engine(data) as e:
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
