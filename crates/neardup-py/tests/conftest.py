"""Shared fixtures: the `neardup` command (for parity with the CLI) and test corpora."""

from __future__ import annotations

import json
import os
import random
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
SAMPLE = REPO / "crates" / "neardup-cli" / "examples" / "sample.jsonl"


def _find_binary() -> Path:
    env = os.environ.get("NEARDUP_BIN")
    if env:
        return Path(env)
    found = [
        REPO / d / p / "neardup"
        for d in ("target", "target-own")
        for p in ("debug", "release")
        if (REPO / d / p / "neardup").is_file()
    ]
    if not found:
        pytest.fail(
            "the `neardup` binary is needed for the parity tests: build it (cargo build -p neardup-cli) "
            "or set NEARDUP_BIN"
        )
    return max(found, key=lambda p: p.stat().st_mtime)


@pytest.fixture(scope="session")
def neardup_bin() -> Path:
    return _find_binary()


@pytest.fixture(scope="session")
def run_cli(neardup_bin: Path):
    """Runs `neardup <args>` and returns its standard output's JSON lines."""

    def run(*args: str) -> list[dict]:
        out = subprocess.run(
            [str(neardup_bin), *args], check=True, capture_output=True, text=True
        ).stdout
        return [json.loads(line) for line in out.splitlines() if line.strip()]

    return run


@pytest.fixture(scope="session")
def sample() -> list[dict]:
    return [json.loads(line) for line in SAMPLE.read_text(encoding="utf-8").splitlines() if line.strip()]


WORDS = (
    "river stone market winter garden letter window silver morning harbor village lantern "
    "mountain engine paper forest bridge candle orchard thunder ribbon meadow copper tower "
    "sparrow violin desert island carpet anchor saddle pillow mirror basket comet ladder "
    "的 我们 城市 新闻 时间 发展 经济 学校 道路 预算 会议 政府 计划 市场 文化 历史"
).split()


def planted(n_base: int = 120, seed: int = 7) -> list[dict]:
    """Documents with planted near-duplicates (word edits, shuffled lines, exact copies,
    short texts), deterministic."""
    rng = random.Random(seed)
    docs: list[dict] = []
    for b in range(n_base):
        length = rng.choice([6, 12, 40, 90, 200])
        words = [rng.choice(WORDS) for _ in range(length)]
        base = " ".join(words)
        docs.append({"id": f"b{b}", "text": base})
        for c in range(rng.randrange(0, 3)):
            w = list(words)
            for _ in range(max(1, len(w) // 15)):
                w[rng.randrange(len(w))] = rng.choice(WORDS)
            text = " ".join(w)
            if rng.random() < 0.2:
                text = base.upper()
            docs.append({"id": f"b{b}c{c}", "text": text})
    docs.append({"id": "empty", "text": "  ... ---  "})
    rng.shuffle(docs)
    return docs


@pytest.fixture(scope="session")
def corpus() -> list[dict]:
    return planted()


@pytest.fixture()
def corpus_file(tmp_path: Path, corpus: list[dict]) -> Path:
    p = tmp_path / "corpus.jsonl"
    p.write_text("".join(json.dumps(d, ensure_ascii=False) + "\n" for d in corpus), encoding="utf-8")
    return p
