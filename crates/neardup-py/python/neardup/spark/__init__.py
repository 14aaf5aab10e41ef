"""Near-duplicate clusters of a PySpark DataFrame, computed on Spark (not on the driver).

:func:`dedup` gives every row the decision of ``neardup dedup --method minhash --linkage
components --no-template-veto`` on the same documents in the same order: the same clusters, the
same evidence (``matched``, ``similarity``), the same kept document per cluster under
``keep="longest"``. The work is distributed; the driver only sees counts.

Stages (each materialised once; ``metrics=`` receives their wall times and sizes):

1. **sketch** — per Arrow batch (``mapInArrow``), :meth:`neardup.MinHash.sketch_utf8` on the
   texts where Arrow holds them: the signature (``num_perm`` entries of ``bits`` bits, kept as
   ``bits / 8 · num_perm`` bytes: 128 by default), the LSH band keys and whether anything was
   left of the text after normalisation. Pure, so any executor and any partitioning give the
   same arrays. The job that computes (and caches) them also checks the input: null ids,
   positions or texts and repeated positions raise here, naming the column.
2. **candidates** — each document's row in every band, ``(band, key, node, signature)``,
   partitioned by band key (one shuffle); in each partition,
   :meth:`neardup.MinHash.bucket_pairs` pairs every two nodes of a bucket and confirms them
   with the detector's own confirmation (estimated Jaccard ≥ threshold), reporting a pair only
   from the lowest band its two nodes share, so each is counted and confirmed once however
   many bands they share. Confirmed pairs are the edges of the near-duplicate graph.
   Documents with identical signatures are paired with the earliest of them only
   (``collapse_identical``). This is exact, not a heuristic: identical signatures share every
   band key (so they are candidates of each other) and estimate Jaccard 1 (so they are
   confirmed), and any third document is a candidate of, and confirmed against, all of them
   or none; so ``n`` exact copies cost ``n - 1`` pairs, not ``n(n-1)/2``. (A bucket of ``k``
   *distinct* signatures still yields ``k(k-1)/2`` pairs: confirmation is not transitive, so
   no pair of a bucket can be skipped without changing the graph;
   ``metrics["largest_bucket"]`` reports the most distinct signatures of a bucket a pair was
   found in.) The shuffle carries each document's signature once a band (18 × 128 bytes by
   default), in at least ``spark.sql.shuffle.partitions`` partitions and enough that none
   holds more than a million rows (a task's Python worker holds its partition: ~150 MB).
   A task that holds more (one bucket can hold any number of exact copies) reduces exact
   copies to their earliest node as it reads: a copy then costs its node's name, not its row.
3. **components** — connected components: on one task, by union-find in memory
   (:func:`neardup.components`), when at most ``max_edges_on_one_task`` pairs were confirmed
   (10 million by default); else by alternating *large-star* and *small-star* rounds (Kiveris
   et al., "Connected Components in MapReduce and Beyond", 2014), written with DataFrame
   operations, until the edges form stars around each component's smallest node.
4. **assemble** — cluster, kept document and evidence per row, joined back to the input.

Order. The command decides documents in input order; here the order is ``position_col`` when
given (unique, non-null), else ``id_col`` (then ids must be unique). The order must be data,
not an accident of partitioning (``monotonically_increasing_id`` changes with it), so the
result is the same however the DataFrame is partitioned.

Columns added:

* ``cluster`` — the position (``position_col``, else the id) of the cluster's first document:
  the command numbers clusters by the first document's 0-based input position, which this is
  when ``position_col`` holds that position.
* ``keep`` — True for one document per cluster: the first (``keep="first"``) or the longest in
  characters, ties to the earliest (``keep="longest"``). Filter on it to deduplicate.
* ``duplicate_of`` — the id of the cluster's kept document; null for the kept document.
* ``matched``, ``similarity`` — the evidence, as the command prints it: among the earlier
  documents the detector confirms as near-duplicates, the most similar (ties to the earliest),
  and the estimated Jaccard similarity; null when there is none.
* ``empty`` — nothing was left of the text after normalisation: its own cluster, kept, never
  matched (as in the command).

Under ``keep="first"`` the command keeps *on arrival* every document that had no earlier
near-duplicate, so a later document that bridges two clusters leaves two kept documents in one
cluster (it prints the later one with ``shares_cluster_with``). Here ``keep`` is one document a
cluster, the cluster's first; the command's kept-on-arrival documents are exactly the rows with
``matched`` null.
"""

from __future__ import annotations

import time
from typing import Any, Dict, Optional

from pyspark import StorageLevel
from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from .. import MinHash
from ._arrow import _bucket_partitions, _sketch_partitions
from ._columns import (
    _CHARS,
    _ID,
    _KEYS,
    _NULL,
    _POS,
    _SIG,
    _TEXT,
    _VALID,
    OUTPUT_COLUMNS,
    _check_columns,
    _check_sketches,
)
from ._components import _components, _one_task_components
from ._report import cluster_report

__all__ = ["dedup", "cluster_report", "OUTPUT_COLUMNS"]

#: Bucket rows (a node's signature and key in one band) a candidates partition holds at most.
_BUCKET_ROWS = 1_000_000
#: Rows a candidates task holds before it reduces exact copies to their earliest node.
_HOLD_ROWS = _BUCKET_ROWS


def _persist(df: DataFrame) -> tuple[DataFrame, int]:
    df = df.persist(StorageLevel.MEMORY_AND_DISK)
    return df, df.count()


def dedup(
    df: DataFrame,
    text_col: str = "text",
    id_col: str = "id",
    *,
    position_col: Optional[str] = None,
    threshold: float = 0.6,
    num_perm: int = 128,
    keep: str = "first",
    max_edges_on_one_task: int = 10_000_000,
    metrics: Optional[Dict[str, Any]] = None,
    **options: Any,
) -> DataFrame:
    """``df`` with the columns ``duplicate_of``, ``cluster``, ``keep``, ``matched``,
    ``similarity`` and ``empty`` (see the module's documentation): the decisions of
    ``neardup dedup --method minhash --linkage components --no-template-veto --keep KEEP`` on
    the documents taken in ``position_col`` order (else ``id_col`` order).

    ``threshold``, ``num_perm`` and ``options`` (``shingles``, ``seed``, ``bits`` and the normalisation
    options of :class:`neardup.Fingerprinter`) configure :class:`neardup.MinHash`. ``metrics``,
    when a dict, receives each stage's wall seconds and the sizes of its tables.

    ``max_edges_on_one_task``: when at most this many pairs are confirmed (a document
    identical to an earlier one counts one), one task forms the clusters in memory (union-find; about 50 bytes an edge in its Python worker); above it,
    large-star/small-star rounds on the cluster do (``metrics["component_rounds"]``: 0 for the
    single task). Both give the same clusters.

    Raises ``ValueError``/``TypeError`` naming the column for a missing or mistyped column, null
    texts, ids or positions, and ids (without ``position_col``) or positions that repeat;
    :class:`neardup.ConfigError` for bad MinHash options. Intermediate tables are persisted
    while they are built; the returned DataFrame is the input joined with a persisted result
    table.
    """
    if keep not in ("first", "longest"):
        raise ValueError(f"keep={keep!r}: use 'first' or 'longest'")
    if isinstance(max_edges_on_one_task, bool) or not isinstance(max_edges_on_one_task, int) or max_edges_on_one_task < 0:
        raise ValueError(
            f"max_edges_on_one_task={max_edges_on_one_task!r}: pass a count of edges, 0 or more "
            f"(0: always the distributed rounds)"
        )
    id_type, pos_type = _check_columns(df, text_col, id_col, position_col)
    mh_options = dict(options, threshold=threshold, num_perm=num_perm)
    mh = MinHash(**mh_options)  # ConfigError here, on the driver, for bad options
    m: Dict[str, Any] = metrics if metrics is not None else {}
    clock = time.perf_counter()

    def lap(stage: str) -> None:
        nonlocal clock
        now = time.perf_counter()
        m[f"{stage}_seconds"] = now - clock
        clock = now

    # 1. sketch; the job that computes (and caches) the sketches also checks the input
    pos = position_col or id_col
    source = df.select(
        F.col(pos).alias(_POS), F.col(id_col).alias(_ID), F.col(text_col).alias(_TEXT)
    )
    sketch_schema = T.StructType(
        [
            T.StructField(_POS, pos_type, True),  # nulls are refused by _check_sketches
            T.StructField(_ID, id_type, True),
            T.StructField(_SIG, T.BinaryType(), False),
            T.StructField(_KEYS, T.ArrayType(T.LongType(), False), False),
            T.StructField(_VALID, T.BooleanType(), False),
            T.StructField(_CHARS, T.IntegerType(), False),
            T.StructField(_NULL, T.BooleanType(), False),
        ]
    )
    docs = source.mapInArrow(_sketch_partitions(mh_options, keep == "longest"), sketch_schema).persist(
        StorageLevel.MEMORY_AND_DISK
    )
    try:
        m["documents"], m["empty"] = _check_sketches(docs, text_col, id_col, position_col)
    except ValueError:
        docs.unpersist()
        raise
    m["bands"], m["rows"] = mh.params
    lap("sketch")

    # 2. candidates, confirmed: every document's row in each band, grouped by band key (one
    # shuffle); each bucket's pairs found and confirmed where the bucket lies, each pair once
    # (from the lowest band its two nodes share). Documents with identical signatures are
    # paired with the earliest of them only (bucket_pairs' collapse_identical): identical
    # signatures share every band key (candidates of each other) and estimate Jaccard 1 ≥
    # threshold (confirmed), so they are one component; a third document is a candidate of,
    # and confirmed against, all of them or none; and the command's evidence for a later copy
    # is its earliest identical document (similarity 1, the maximum, ties to the earliest).
    # So n exact copies cost n - 1 pairs, not n(n-1)/2.
    # A partition's rows are held at once by its Python worker: at most ~_BUCKET_ROWS of them
    # (~150 bytes each), however large the input.
    try:
        shuffle = int(df.sparkSession.conf.get("spark.sql.shuffle.partitions") or 200)
    except ValueError:  # a setting such as "auto"
        shuffle = 200
    parts = max(shuffle, -(-(m["documents"] - m["empty"]) * m["bands"] // _BUCKET_ROWS))
    rows = (
        docs.where(F.col(_VALID))
        .select(F.col(_POS).alias("node"), _SIG, F.posexplode(_KEYS).alias("band", "key"))
        .repartition(parts, "band", "key")
    )
    pair_schema = T.StructType(
        [
            T.StructField("a", pos_type, False),
            T.StructField("b", pos_type, False),
            T.StructField("similarity", T.DoubleType(), False),
            T.StructField("confirmed", T.BooleanType(), False),
            T.StructField("k", T.IntegerType(), False),
            T.StructField("copy", T.BooleanType(), False),
        ]
    )
    pairs = rows.mapInArrow(_bucket_partitions(mh_options, _HOLD_ROWS), pair_schema).persist(StorageLevel.MEMORY_AND_DISK)
    sizes = pairs.agg(
        F.count(F.lit(1)).alias("pairs"),
        F.sum(F.col("confirmed").cast("long")).alias("confirmed"),
        F.sum(F.col("copy").cast("long")).alias("copies"),
        F.max(F.when(~F.col("copy"), F.col("k"))).alias("largest"),
    ).collect()[0]
    copies = int(sizes["copies"] or 0)  # one pair for each document identical to an earlier one
    m["distinct_signatures"] = m["documents"] - m["empty"] - copies
    m["candidate_pairs"] = int(sizes["pairs"]) - copies  # between distinct signatures
    m["largest_bucket"] = int(sizes["largest"] or 0)
    m["confirmed_pairs"] = int(sizes["confirmed"] or 0) - copies
    edges = pairs.where(F.col("confirmed")).select("a", "b", "similarity")
    lap("candidates")

    # 3. components over the documents
    linked = edges.select(F.col("b").alias("u"), F.col("a").alias("v"))
    if m["confirmed_pairs"] + copies <= max_edges_on_one_task:
        root_schema = T.StructType(
            [T.StructField("u", pos_type, False), T.StructField("root", pos_type, False)]
        )
        roots, _ = _persist(linked.coalesce(1).mapInArrow(_one_task_components(), root_schema))
        m["component_rounds"] = 0
    else:
        roots, m["component_rounds"] = _components(linked)
    lap("components")

    # 4. per document: cluster, evidence, kept document
    best = edges.groupBy(F.col("b").alias(_POS)).agg(
        F.min(F.struct((-F.col("similarity")).alias("s"), F.col("a").alias("a"))).alias("best")
    )
    valid, me = F.col(_VALID), F.col(_POS)
    res = (
        docs.select(_POS, _ID, _VALID, _CHARS)
        .join(roots.withColumnRenamed("u", _POS), _POS, "left")
        .join(best, _POS, "left")
        .select(
            me,
            F.col(_ID),
            F.col(_CHARS),
            (~valid).alias("empty"),
            F.coalesce(F.col("root"), me).alias("cluster"),
            F.col("best.a").alias("matched_pos"),
            (-F.col("best.s")).alias("similarity"),
        )
    )
    if keep == "first":
        keeper = F.col("cluster")
    else:
        longest_first = F.struct((-F.col(_CHARS)).alias("c"), me.alias("p"))
        keeper = F.min(longest_first).over(Window.partitionBy("cluster")).getField("p")
    res = res.withColumn("keeper", keeper).withColumn("keep", me == F.col("keeper"))
    if position_col is None:
        res = res.withColumn("duplicate_of", F.when(~F.col("keep"), F.col("keeper"))).withColumn(
            "matched", F.col("matched_pos")
        )
    else:
        ids = docs.select(F.col(_POS).alias("__nd_k"), F.col(_ID).alias("__nd_v"))
        res = (
            res.join(ids.withColumnRenamed("__nd_k", "keeper"), "keeper", "left")
            .withColumn("duplicate_of", F.when(~F.col("keep"), F.col("__nd_v")))
            .drop("__nd_v")
            .join(ids.withColumnRenamed("__nd_k", "matched_pos"), "matched_pos", "left")
            .withColumnRenamed("__nd_v", "matched")
        )
    res, _ = _persist(res.select(F.col(_POS).alias(pos), *OUTPUT_COLUMNS))
    for t in (docs, pairs, roots):
        t.unpersist()
    lap("assemble")
    out = df.join(res, on=pos, how="inner")
    return out.select(*df.columns, *OUTPUT_COLUMNS)
