"""neardup's Python `dedup` against the MinHash LSH peers on PyPI (rensa, datasketch, gaoya),
on one planted near-duplicate set, in one process: docs/s on one core and pairwise F1.

    python crates/neardup-py/bench/peers.py SET.jsonl [--runs 5] [--threshold 0.6]

SET.jsonl is a set made by `neardup eval make` (fields id, text, group). Every contender
decides with the online rule — in input order, a document with a confirmed near-duplicate among
the kept ones is a duplicate of the earliest, otherwise it is kept and indexed — at the same
Jaccard threshold and 128 permutations, single-threaded. The peers get the shingles neardup's
MinHash uses by default (word 3-grams, or character 5-grams of Han-heavy text, lower-cased),
built in Python, and confirm LSH candidates by their estimated Jaccard, as neardup does. Time is
measured from the texts to the decisions (shingling included). A true pair is two documents of
one planted group; a predicted pair two documents of one cluster. The set's hard negatives share
a long page template: plain MinHash LSH (the peers, and neardup with template_veto=False) joins
them, which costs precision; neardup's default template veto refuses those matches.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import statistics
import sys
import time
from collections import Counter
from typing import Callable

NUM_PERM = 128
WORD = re.compile(r"\w+", re.UNICODE)


def is_han(c: str) -> bool:
    return "\u4e00" <= c <= "\u9fff" or "\u3400" <= c <= "\u4dbf"


def shingles(text: str) -> list[str]:
    t = text.lower()
    head = t[:2000]
    han = sum(1 for c in head if is_han(c))
    latin = sum(1 for c in head if c.isascii() and c.isalpha())
    if han * 3 > latin:
        chars = [c for c in t if c.isalnum()]
        s = "".join(chars)
        return list({s[i : i + 5] for i in range(max(1, len(s) - 4))}) if s else []
    words = WORD.findall(t)
    if len(words) < 3:
        return [" ".join(words)] if words else []
    return list({" ".join(words[i : i + 3]) for i in range(len(words) - 2)})


def f1(groups: list[str], clusters: list[int]) -> tuple[float, float, float]:
    def pairs(c: Counter) -> int:
        return sum(n * (n - 1) // 2 for n in c.values())

    true = pairs(Counter(groups))
    pred = pairs(Counter(clusters))
    tp = pairs(Counter(zip(groups, clusters)))
    p = tp / pred if pred else 1.0
    r = tp / true if true else 1.0
    return p, r, (2 * p * r / (p + r) if p + r else 0.0)


def neardup_dedup(**options) -> Callable[[list[str]], list[int]]:
    import neardup

    def run(texts: list[str]) -> list[int]:
        return [d.cluster for d in neardup.dedup(texts, threads=1, **options)]

    return run


def online(make_sig, make_lsh, threshold: float) -> Callable[[list[str]], list[int]]:
    """The online rule over a peer's MinHash and LSH (query, confirm, insert when kept)."""

    def run(texts: list[str]) -> list[int]:
        lsh = make_lsh()
        sigs: dict[int, object] = {}
        cluster: list[int] = []
        for i, t in enumerate(texts):
            sh = shingles(t)
            if not sh:
                cluster.append(i)
                continue
            m = make_sig(sh)
            best = None
            for c in lsh.query(m):
                c = int(c)
                if m.jaccard(sigs[c]) >= threshold and (best is None or c < best):
                    best = c
            if best is None:
                lsh.insert(i, m)
                sigs[i] = m
                cluster.append(i)
            else:
                cluster.append(best)
        return cluster

    return run


def rensa_online(threshold: float):
    import rensa

    def sig(sh):
        m = rensa.RMinHash(num_perm=NUM_PERM, seed=42)
        m.update(sh)
        return m

    return online(sig, lambda: rensa.RMinHashLSH(threshold=threshold, num_perm=NUM_PERM, num_bands=16), threshold)


def datasketch_online(threshold: float):
    import datasketch

    def sig(sh):
        m = datasketch.MinHash(num_perm=NUM_PERM)
        m.update_batch([s.encode() for s in sh])
        return m

    class Lsh:
        def __init__(self):
            self.lsh = datasketch.MinHashLSH(threshold=threshold, num_perm=NUM_PERM)

        def insert(self, i, m):
            self.lsh.insert(i, m)

        def query(self, m):
            return self.lsh.query(m)

    return online(sig, Lsh, threshold)


def gaoya_online(threshold: float):
    """gaoya's index shingles itself (one analyzer per index); texts are passed pre-shingled
    as space-joined tokens so that it hashes the same shingles as the others."""
    import gaoya

    def run(texts: list[str]) -> list[int]:
        index = gaoya.minhash.MinHashStringIndex(
            hash_size=32, jaccard_threshold=threshold, num_bands=16, band_size=8,
            analyzer="word", lowercase=False,
        )
        cluster: list[int] = []
        for i, t in enumerate(texts):
            sh = shingles(t)
            if not sh:
                cluster.append(i)
                continue
            doc = " ".join(s.replace(" ", "_") for s in sh)
            found = index.query(doc)
            if found:
                cluster.append(min(int(x) for x in found))
            else:
                index.insert_document(i, doc)
                cluster.append(i)
        return cluster

    return run


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("set")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--threshold", type=float, default=0.6)
    ap.add_argument("--skip", nargs="*", default=[], help="contenders to leave out")
    a = ap.parse_args()
    docs = [json.loads(line) for line in open(a.set, encoding="utf-8") if line.strip()]
    texts = [d["text"] for d in docs]
    groups = [str(d["group"]) for d in docs]
    mb = sum(len(t.encode()) for t in texts) / 1e6
    t = a.threshold
    contenders: dict[str, Callable[[list[str]], list[int]]] = {
        "neardup dedup (method=minhash)": neardup_dedup(method="minhash", threshold=t),
        "neardup dedup (method=minhash, template_veto=False)": neardup_dedup(
            method="minhash", threshold=t, template_veto=False
        ),
        "neardup dedup (auto, default)": neardup_dedup(threshold=t),
        "rensa RMinHash + RMinHashLSH": rensa_online(t),
        "datasketch MinHash + MinHashLSH": datasketch_online(t),
        "gaoya MinHashStringIndex": gaoya_online(t),
    }
    contenders = {k: v for k, v in contenders.items() if not any(s in k for s in a.skip)}
    times: dict[str, list[float]] = {k: [] for k in contenders}
    scores = {}
    for _ in range(a.runs):
        for name, run in contenders.items():  # interleaved: every run sees the same load
            t0 = time.perf_counter()
            clusters = run(texts)
            times[name].append(time.perf_counter() - t0)
            scores[name] = f1(groups, clusters)
    import importlib.metadata as md

    def version(p: str) -> str:
        try:
            return md.version(p)
        except md.PackageNotFoundError:
            return "?"

    print(f"set: {a.set}: {len(docs)} documents, {mb:.1f} MB; threshold {t}, {NUM_PERM} permutations, "
          f"median of {a.runs} interleaved runs, one thread")
    print(f"machine: {platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
          f"load average {os.getloadavg()[0]:.2f} at the end; Python {sys.version.split()[0]}")
    print(f"versions: neardup {version('neardup')}, rensa {version('rensa')}, "
          f"datasketch {version('datasketch')}, gaoya {version('gaoya')}")
    base = statistics.median(times.get("rensa RMinHash + RMinHashLSH", [float("nan")]))
    print()
    print("| contender | docs/s (1 core) | MB/s | × rensa | precision | recall | F1 |")
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for name in contenders:
        m = statistics.median(times[name])
        p, r, f = scores[name]
        print(f"| {name} | {len(docs) / m:,.0f} | {mb / m:.1f} | {base / m:.1f} | {p:.3f} | {r:.3f} | {f:.3f} |")


if __name__ == "__main__":
    main()
