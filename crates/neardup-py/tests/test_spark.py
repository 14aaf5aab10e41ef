"""neardup.spark on a real local Spark (local[2], from the pyspark package): the decisions of
`neardup dedup --method minhash --linkage components --no-template-veto` whatever the
partitioning, on a planted set built from the bundled fixtures (always) and on a real corpus
(when /work/shared/corpora or $NEARDUP_CORPORA exists). Spark missing is a failure, not a skip:
scripts/test-python installs pyspark and a Java runtime."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

import neardup
from neardup import spark as nspark

from conftest import REPO, planted

FIXTURES = REPO / "crates" / "neardup" / "tests" / "fixtures"
CORPORA = Path(os.environ.get("NEARDUP_CORPORA", "/work/shared/corpora"))
MINHASH = ("--method", "minhash", "--linkage", "components", "--no-template-veto", "-q")


@pytest.fixture(scope="session")
def spark():
    # Executors run this interpreter (it has neardup installed).
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    s = (
        SparkSession.builder.master("local[2]")
        .appName("neardup-tests")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.default.parallelism", "2")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.execution.arrow.maxRecordsPerBatch", "512")
        .config("spark.driver.memory", "1g")
        .getOrCreate()
    )
    s.sparkContext.setLogLevel("ERROR")
    yield s
    s.stop()


def _windows(tokens: list[str], size: int, step: int, sep: str) -> list[str]:
    return [sep.join(tokens[i : i + size]) for i in range(0, max(1, len(tokens) - size + 1), step)]


def _drift(text: str, rng: random.Random, steps: int, sep: str) -> list[str]:
    """A chain of copies, each a few tokens away from the one before: its ends are far apart,
    its neighbours near (single linkage joins the chain)."""
    tokens = text.split() if sep else list(text)
    out = []
    for _ in range(steps):
        tokens = list(tokens)
        for _ in range(max(1, len(tokens) // 12)):
            tokens[rng.randrange(len(tokens))] = rng.choice(tokens)
        out.append(sep.join(tokens))
    return out


def spark_planted(seed: int = 11) -> list[dict]:
    """Documents with planted near-duplicates from the bundled fixtures (overlapping windows of
    Moby-Dick and of 三国演义 chapter 1, drifting chains, exact copies, empty texts) and the
    suite's planted set, shuffled deterministically. Ids are unique strings."""
    rng = random.Random(seed)
    moby = (FIXTURES / "moby_dick_excerpt.txt").read_text(encoding="utf-8").split()
    sanguo = [c for c in (FIXTURES / "sanguo_ch1.txt").read_text(encoding="utf-8") if not c.isspace()]
    texts: list[str] = []
    for w in _windows(moby, 60, 9, " "):
        texts.append(w)
        if rng.random() < 0.3:
            texts.extend(_drift(w, rng, 5, " "))
    for w in _windows(sanguo, 160, 23, ""):
        texts.append(w)
        if rng.random() < 0.3:
            texts.extend(_drift(w, rng, 5, ""))
    for t in list(texts[::7]):
        texts.append(t)  # exact copies
    texts += ["", "  ... ---  ", "!!!"]
    docs = [{"id": f"f{i}", "text": t} for i, t in enumerate(texts)]
    docs += [dict(d, id=f"p-{d['id']}") for d in planted(n_base=60, seed=3)]
    rng.shuffle(docs)
    return docs


def _write_jsonl(path: Path, docs: list[dict]) -> Path:
    path.write_text("".join(json.dumps(d, ensure_ascii=False) + "\n" for d in docs), encoding="utf-8")
    return path


def _frame(spark: SparkSession, docs: list[dict], partitions: int):
    """The documents with their 0-based input position `pos`, in `partitions` partitions."""
    df = spark.createDataFrame(
        [(i, d["id"], d["text"]) for i, d in enumerate(docs)], "pos long, id string, text string"
    )
    return df.repartition(partitions) if partitions > 1 else df.coalesce(1)


def _by_position(result, key: str = "pos") -> list[dict[str, Any]]:
    return [r.asDict() for r in result.orderBy(key).collect()]


def assert_equals_cli(rows: list[dict], cli: list[dict], keep: str = "first") -> None:
    """Every decision the command takes, row by row (rows and cli in input order)."""
    assert len(rows) == len(cli)
    ids = [c["id"] for c in cli]
    for i, (r, c) in enumerate(zip(rows, cli)):
        where = f"document {i} ({c['id']!r}): spark {r} vs cli {c}"
        assert r["id"] == c["id"], where
        assert r["empty"] == (c.get("skipped") == "empty"), where
        assert r["cluster"] == c["cluster"], where
        assert r["matched"] == c["matched"], where
        assert r["similarity"] == c.get("similarity"), where
        if keep == "first":
            # one kept document a cluster, its first; the command's kept-on-arrival documents
            # are those without an earlier match
            assert r["keep"] == (r["cluster"] == i), where
            assert r["duplicate_of"] == (None if r["keep"] else ids[r["cluster"]]), where
            assert (c["duplicate_of"] is None) == (r["matched"] is None), where
            if c["duplicate_of"] is None and not r["keep"]:
                assert c.get("shares_cluster_with") == ids[r["cluster"]], where
        else:
            assert r["duplicate_of"] == c["duplicate_of"], where
            assert r["keep"] == (c["duplicate_of"] is None), where


@pytest.fixture(scope="module")
def planted_docs() -> list[dict]:
    return spark_planted()


@pytest.fixture(scope="module")
def planted_cli(tmp_path_factory, planted_docs, run_cli) -> list[dict]:
    path = _write_jsonl(tmp_path_factory.mktemp("spark") / "planted.jsonl", planted_docs)
    return run_cli("dedup", *MINHASH, str(path))


def test_planted_set_is_hard(planted_docs, planted_cli):
    """The planted set exercises what the equality below has to get right."""
    sizes: dict[int, int] = {}
    for c in planted_cli:
        sizes[c["cluster"]] = sizes.get(c["cluster"], 0) + 1
    assert sum(1 for s in sizes.values() if s >= 5) >= 5  # chains and window runs
    assert sum(1 for c in planted_cli if c.get("shares_cluster_with")) >= 3  # bridged clusters
    assert sum(1 for c in planted_cli if c.get("skipped") == "empty") >= 3
    assert sum(1 for c in planted_cli if c.get("similarity") == 1.0) >= 20  # exact copies
    assert len(planted_docs) > 400


@pytest.mark.parametrize("partitions, one_task", [(1, True), (3, True), (7, True), (3, False), (7, False)])
def test_planted_equals_cli_whatever_the_partitioning(spark, planted_docs, planted_cli, partitions, one_task):
    """The command's decisions with the components formed on one task (union-find) and by
    the distributed large-star/small-star rounds alike."""
    df = _frame(spark, planted_docs, partitions)
    metrics: dict = {}
    limit = {} if one_task else {"max_edges_on_one_task": 0}
    out = nspark.dedup(df, position_col="pos", metrics=metrics, **limit)
    assert out.columns == ["pos", "id", "text", *nspark.OUTPUT_COLUMNS]
    assert_equals_cli(_by_position(out), planted_cli)
    assert metrics["documents"] == len(planted_docs)
    assert metrics["confirmed_pairs"] > 0
    assert (metrics["component_rounds"] == 0) == one_task
    assert metrics["distinct_signatures"] < metrics["documents"] - metrics["empty"]


def test_exact_copies_reduced_past_the_held_rows_equal_cli(spark, planted_docs, planted_cli, monkeypatch):
    """A candidates task that holds more than _HOLD_ROWS rows reduces exact copies to their
    earliest node (so a bucket of many copies costs their names, not their rows): the same
    decisions as the command."""
    monkeypatch.setattr(nspark, "_HOLD_ROWS", 40)  # read on the driver, shipped with the function
    out = nspark.dedup(_frame(spark, planted_docs, 3), position_col="pos")
    assert_equals_cli(_by_position(out), planted_cli)


def test_bucket_tasks_reducing_copies_find_the_same_pairs(planted_docs):
    """The candidates stage's function without Spark: bucket rows (string nodes, exact copies
    spread over many batches in random order) give the same pairs whether the task reduces
    what it holds once, many times or never."""
    import pyarrow as pa

    docs = planted_docs + [dict(d, id=d["id"] + "~copy") for d in planted_docs[::2]]
    mh = neardup.MinHash()
    sigs, keys, valid = mh.sketch([d["text"] for d in docs])
    rows = [(i, band) for i in range(len(docs)) if valid[i] for band in range(keys.shape[1])]
    random.Random(11).shuffle(rows)
    entry = sigs.astype(np.uint8)  # 8-bit entries, as the sketch stage ships them
    batches = [
        pa.RecordBatch.from_arrays(
            [
                pa.array([docs[i]["id"] for i, _ in chunk]),
                pa.array([entry[i].tobytes() for i, _ in chunk], pa.binary()),
                pa.array([b for _, b in chunk], pa.int32()),
                pa.array([int(keys[i, b]) for i, b in chunk], pa.uint64()).cast(pa.int64(), safe=False),
            ],
            names=["node", "sig", "band", "key"],
        )
        for chunk in (rows[at : at + 97] for at in range(0, len(rows), 97))
    ]

    def pairs(hold_rows):
        run = nspark._bucket_partitions({"threshold": 0.6, "num_perm": 128}, hold_rows)
        out = pa.Table.from_batches(list(run(iter(batches)))).to_pylist()
        found = {(r["a"], r["b"]): (r["similarity"], r["confirmed"], r["copy"], None if r["copy"] else r["k"]) for r in out}
        assert len(found) == len(out), "a pair reported twice"
        return found

    whole = pairs(len(rows) + 1)
    assert sum(v[2] for v in whole.values()) > 100  # many exact copies
    assert pairs(500) == whole  # reduced many times
    assert pairs(len(rows) // 2) == whole  # reduced once


def test_keep_longest_equals_cli(spark, planted_docs, tmp_path, run_cli):
    cli = run_cli("dedup", *MINHASH, "--keep", "longest", str(_write_jsonl(tmp_path / "p.jsonl", planted_docs)))
    out = nspark.dedup(_frame(spark, planted_docs, 3), position_col="pos", keep="longest")
    rows = _by_position(out)
    assert_equals_cli(rows, cli, keep="longest")
    assert any(r["keep"] and r["cluster"] != r["pos"] for r in rows)  # not always the first


@pytest.mark.parametrize("limit", [{}, {"max_edges_on_one_task": 0}])
def test_ids_order_the_documents_without_position_col(spark, tmp_path, run_cli, sample, limit):
    """Without position_col the documents are taken in id order (strings, here, in the
    components stage too): the command on the input sorted by id decides the same."""
    docs = sorted(sample + [dict(d, id=d["id"] + "-copy") for d in sample[::3]], key=lambda d: d["id"])
    cli = run_cli("dedup", *MINHASH, str(_write_jsonl(tmp_path / "s.jsonl", docs)))
    rng = random.Random(5)
    shuffled = list(docs)
    rng.shuffle(shuffled)
    df = spark.createDataFrame([(d["id"], d["text"]) for d in shuffled], "id string, text string").repartition(3)
    out = nspark.dedup(df, **limit)
    assert out.columns == ["id", "text", *nspark.OUTPUT_COLUMNS]
    rows = [r.asDict() for r in out.orderBy("id").collect()]
    ids = [d["id"] for d in docs]
    for r in rows:
        r["cluster"] = ids.index(r["cluster"])  # ids → positions, as the command numbers them
    assert_equals_cli(rows, cli)
    assert sum(not r["keep"] for r in rows) >= len(sample[::3])


def test_cluster_report_matches_the_command(spark, planted_docs, tmp_path, neardup_bin):
    path = _write_jsonl(tmp_path / "p.jsonl", planted_docs)
    report = tmp_path / "report.json"
    subprocess.run(
        [str(neardup_bin), "dedup", *MINHASH, "--report", str(report), "-o", str(tmp_path / "d.jsonl"), str(path)],
        check=True,
    )
    cli = json.loads(report.read_text(encoding="utf-8"))
    result = nspark.dedup(_frame(spark, planted_docs, 3), position_col="pos")
    mine = nspark.cluster_report(result, position_col="pos")  # the top 10, as the command
    for key in ("documents", "empty", "clusters", "clusters_with_duplicates", "size_distribution"):
        assert mine[key] == cli[key], key
    assert mine["largest"] == [{k: c[k] for k in ("cluster", "size", "sample_ids")} for c in cli["largest"]]
    assert mine["duplicates"] == cli["duplicates"] + cli["kept_sharing_a_cluster"]


@pytest.mark.skipif(not CORPORA.is_dir(), reason="no development corpora here (/work/shared/corpora)")
def test_real_corpus_equals_cli(spark, run_cli):
    path = CORPORA / "en_debian_docs.jsonl"
    docs = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    cli = run_cli("dedup", *MINHASH, str(path))
    df = spark.createDataFrame(
        [(i, str(d["id"]), d["text"]) for i, d in enumerate(docs)], "pos long, id string, text string"
    ).repartition(3)
    rows = _by_position(nspark.dedup(df, position_col="pos"))
    for c in cli:
        c["id"] = str(c["id"])
    assert_equals_cli(rows, cli)
    assert sum(not r["keep"] for r in rows) > 50


def test_empty_frame(spark):
    df = spark.createDataFrame([], "id long, text string")
    assert nspark.dedup(df).count() == 0


# ---- bad input: a clear exception naming the column and the fix


def test_missing_column(spark):
    df = spark.createDataFrame([(1, "a b c")], "id long, body string")
    with pytest.raises(ValueError, match=r"text column 'text' is not in the DataFrame.*text_col="):
        nspark.dedup(df)
    with pytest.raises(ValueError, match=r"id column 'doc' is not in the DataFrame.*id_col="):
        nspark.dedup(df, text_col="body", id_col="doc")
    with pytest.raises(ValueError, match=r"position column 'line' is not in the DataFrame"):
        nspark.dedup(df, text_col="body", position_col="line")


def test_non_string_text(spark):
    df = spark.createDataFrame([(1, 3)], "id long, text long")
    with pytest.raises(TypeError, match=r"text column 'text' is bigint, not string; cast it"):
        nspark.dedup(df)
    df = spark.createDataFrame([([1], "x")], "id array<int>, text string")
    with pytest.raises(TypeError, match=r"id column 'id' is array<int>"):
        nspark.dedup(df)


def test_null_ids_texts_and_repeated_ids(spark):
    schema = T.StructType([T.StructField("id", T.StringType()), T.StructField("text", T.StringType())])
    with pytest.raises(ValueError, match=r"id column 'id' has 1 null value"):
        nspark.dedup(spark.createDataFrame([("a", "x y z"), (None, "x y z")], schema))
    with pytest.raises(ValueError, match=r"text column 'text' has 1 null value.*fill them"):
        nspark.dedup(spark.createDataFrame([("a", "x y z"), ("b", None)], schema))
    with pytest.raises(ValueError, match=r"id column 'id' is not unique \('a' appears 2 times\).*position_col="):
        nspark.dedup(spark.createDataFrame([("a", "x y z"), ("a", "x y w")], schema))
    df = spark.createDataFrame([("a", "x y z", 0), ("a", "x y w", 0)], "id string, text string, line int")
    with pytest.raises(ValueError, match=r"position column 'line' is not unique"):
        nspark.dedup(df, position_col="line")


def test_bad_options(spark):
    df = spark.createDataFrame([("a", "x y z")], "id string, text string")
    with pytest.raises(neardup.ConfigError, match="threshold"):
        nspark.dedup(df, threshold=1.5)
    with pytest.raises(ValueError, match=r"keep='last'"):
        nspark.dedup(df, keep="last")
    with pytest.raises(ValueError, match=r"max_edges_on_one_task=-1: pass a count of edges"):
        nspark.dedup(df, max_edges_on_one_task=-1)
    with pytest.raises(ValueError, match=r"already has column\(s\) 'cluster'"):
        nspark.dedup(df.withColumn("cluster", F.lit(1)))
    with pytest.raises(ValueError, match=r"pass the result of neardup.spark.dedup"):
        nspark.cluster_report(df)
