"""Short-text sets searched against a large background of short lines (docs/quality.md, "The
short path's candidate cap at scale").

Every distinct line of 30–140 characters of the corpora of one split is collected; 4,000 of
them (shuffled, seed 7) are the sources of a planted set (`neardup eval make`, every kind, up
to three copies a source, no template negatives), the rest are the background. The background
comes first in `<split>_all.jsonl`, then the set, so every planted document is searched among
all the background's lines. Score with `neardup eval score <split>_set.jsonl <dedup output>`
(the background's documents are not in the set and are not scored).

    python3 bench/short_lines_background.py OUT_DIR [CORPORA]
    neardup eval make OUT_DIR/dev_src.jsonl --seed 1 --max-sources 4000 --min-chars 30 \\
        --kinds mirror,reformat,ads,counters,edit,excerpt,repost,quote --copies 3 \\
        --negative-percent 0 -o OUT_DIR/dev_set.jsonl
    cat OUT_DIR/dev_bg.jsonl OUT_DIR/dev_set.jsonl > OUT_DIR/dev_all.jsonl   # and `ho`
"""

import json
import os
import random
import re
import sys

SPLITS = {
    "dev": ["zh_debian_docs", "en_debian_docs", "zh_linux_kernel_docs_zh_CN", "en_sotu"],
    "ho": [
        "zh_fortunes",
        "zh_sanguo_yanyi",
        "zh_linux_kernel_docs_zh_TW",
        "en_moby_dick",
        "en_shakespeare_milton",
    ],
}


def main():
    out = sys.argv[1]
    corpora = sys.argv[2] if len(sys.argv) > 2 else "../shared/corpora"
    os.makedirs(out, exist_ok=True)
    for name, files in SPLITS.items():
        seen, lines = set(), []
        for c in files:
            for doc in open(os.path.join(corpora, c + ".jsonl"), encoding="utf-8"):
                for line in re.split(r"\n+", json.loads(doc)["text"]):
                    line = line.strip()
                    if 30 <= len(line) <= 140 and line not in seen:
                        seen.add(line)
                        lines.append(line)
        random.Random(7).shuffle(lines)
        for part, rows, prefix in (("src", lines[:4000], "src"), ("bg", lines[4000:], "bg")):
            with open(os.path.join(out, f"{name}_{part}.jsonl"), "w", encoding="utf-8") as f:
                for i, t in enumerate(rows):
                    f.write(json.dumps({"id": f"{prefix}{i}", "text": t}, ensure_ascii=False) + "\n")
        print(f"{name}: {len(lines)} distinct lines, {len(lines) - 4000} in the background")


if __name__ == "__main__":
    main()
