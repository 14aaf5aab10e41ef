"""Every call that works releases the GIL: another Python thread runs while it works."""

from __future__ import annotations

import threading

import neardup
from conftest import planted


def _other_thread_progresses_during(work) -> tuple[int, bool]:
    """Runs `work` in a thread; meanwhile this thread counts to a large number. Returns the
    count and whether `work` was still running when the count was complete (impossible if
    `work` held the GIL for its whole call)."""
    started = threading.Event()
    result = {}

    def worker():
        started.set()
        result["value"] = work()

    t = threading.Thread(target=worker)
    t.start()
    started.wait()
    n = 0
    while t.is_alive() and n < 200_000:
        n += 1
    still_running = t.is_alive()
    t.join()
    assert result["value"] is not None
    return n, still_running


def test_dedup_releases_the_gil():
    texts = [d["text"] for d in planted(n_base=6000, seed=11)] * 2
    n, running = _other_thread_progresses_during(lambda: neardup.dedup(texts, threads=1))
    assert n == 200_000 and running


def test_minhash_sketch_releases_the_gil():
    texts = [d["text"] for d in planted(n_base=6000, seed=12)] * 3
    mh = neardup.MinHash()
    n, running = _other_thread_progresses_during(lambda: mh.sketch(texts, threads=1))
    assert n == 200_000 and running
