"""A large corpus for `neardup dedup --memory-budget-mib` (docs/performance.md, "Bounded memory").

Every document of the corpora in CORPORA (default ../shared/corpora) is cut into ~2 KB pieces at
line ends; the pieces are written COPIES times: the first time as they are, later times half as
exact copies and half with one to four characters changed (a tenth of those with a line added).
Deterministic (seed 7).

    python3 bench/spill_corpus.py 28 big.jsonl [CORPORA]
"""

import glob
import json
import os
import random
import sys


def pieces(corpora):
    out = []
    for f in sorted(glob.glob(os.path.join(corpora, "*.jsonl"))):
        if os.path.basename(f).startswith("pairs_"):
            continue
        for line in open(f, encoding="utf-8"):
            cur, n = [], 0
            for para in json.loads(line).get("text", "").split("\n"):
                cur.append(para)
                n += len(para.encode())
                if n >= 2048:
                    out.append("\n".join(cur))
                    cur, n = [], 0
            if cur and n > 200:
                out.append("\n".join(cur))
    return out


def main():
    copies, path = int(sys.argv[1]), sys.argv[2]
    corpora = sys.argv[3] if len(sys.argv) > 3 else "../shared/corpora"
    random.seed(7)
    chunks = pieces(corpora)
    docs = 0
    with open(path, "w", encoding="utf-8") as out:
        for c in range(copies):
            for k, t in enumerate(chunks):
                r = random.random()
                if c > 0 and r < 0.5:
                    s = list(t)
                    for _ in range(random.randint(1, 4)):
                        p = random.randrange(len(s))
                        s[p] = random.choice("abcdefxyz的了是")
                    t = "".join(s)
                    if r < 0.1:
                        t += "\nforwarded, copy %d" % c
                out.write(json.dumps({"id": f"c{c}-{k}", "text": t}, ensure_ascii=False) + "\n")
                docs += 1
    print(f"{len(chunks)} pieces, {docs} documents", file=sys.stderr)


if __name__ == "__main__":
    main()
