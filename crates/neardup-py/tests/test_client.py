"""The HTTP client against a real `neardup serve`: the same answers as the in-process engine."""

from __future__ import annotations

import socket
import subprocess
import time

import pytest

import neardup

TEXT = "the committee approved the budget for new roads and schools after a long debate in the council"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture()
def service(neardup_bin, tmp_path):
    port = free_port()
    p = subprocess.Popen(
        [str(neardup_bin), "serve", "--data-dir", str(tmp_path / "srv"), "--addr", f"127.0.0.1:{port}", "--sync", "none"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    client = neardup.Client(f"http://127.0.0.1:{port}")
    for _ in range(300):
        if client.healthy() or p.poll() is not None:
            break
        time.sleep(0.05)
    if not client.healthy():
        p.kill()
        pytest.fail(f"neardup serve did not come up: {p.stderr.read().decode(errors='replace')}")
    yield client
    p.terminate()
    p.wait(timeout=30)


def test_client_answers_as_the_engine(service, tmp_path, corpus):
    docs = [d for d in corpus if d["id"] != "empty"][:80]
    with neardup.Engine(tmp_path / "local", sync="none") as e:
        local = [e.check_and_insert(d["id"], d["text"]) for d in docs]
    remote = [service.check_and_insert(d["id"], d["text"]) for d in docs]
    keys = ("id", "status", "duplicate_of", "stage", "similarity", "distance", "stored")
    assert [{k: r[k] for k in keys} for r in remote] == [{k: r[k] for k in keys} for r in local]
    kept = next(r["id"] for r in remote if r["status"] == "unique")
    assert service.get(kept)["id"] == kept
    assert service.query(TEXT)["status"] == "unique"
    batch = service.check_and_insert_many([{"id": "x1", "text": TEXT}, {"id": "x2", "text": TEXT.upper()}])
    assert [b["status"] for b in batch] == ["unique", "duplicate"]
    assert service.remove("x1") and not service.remove("x1")
    assert service.get("x1") is None
    assert service.stats()["documents"] >= 1


def test_client_raises_service_errors(service):
    with pytest.raises(neardup.ServiceError) as e:
        service.check_and_insert("", TEXT)
    assert e.value.status == 422 and "id" in e.value.message
