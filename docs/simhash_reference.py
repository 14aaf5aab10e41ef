#!/usr/bin/env python3
"""Independent reference for steps 3-4 of docs/fingerprint-spec.md (chars and words methods on
already-normalised text). Needs `pip install xxhash`. Prints the spec's test vectors."""
from collections import Counter
import xxhash


def simhash(features):
    v = [0] * 64
    for text, w in features.items():
        h = xxhash.xxh3_64_intdigest(text.encode("utf-8"), seed=0)
        for b in range(64):
            v[b] += w if (h >> b) & 1 else -w
    return sum(1 << b for b in range(64) if v[b] > 0)


def chars(text, n=3):
    kept = [c for c in text if c.isalnum()]
    if len(kept) <= n:
        return Counter(["".join(kept)]) if kept else Counter()
    return Counter("".join(kept[i:i + n]) for i in range(len(kept) - n + 1))


if __name__ == "__main__":
    print("%016x" % simhash(Counter("the cat sat on the mat".split())))  # cb10034311d3346d
    print("%016x" % simhash(chars("今天纽约的天气真好啊，京华大酒店的张尧经理吃了一只北京烤鸭。")))  # 0281bf9d0106d709
