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
from typing import Any, Dict, Iterator, List, Optional

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark import StorageLevel
from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F
from pyspark.sql import types as T

from . import MinHash, components

__all__ = ["dedup", "cluster_report", "OUTPUT_COLUMNS"]

#: The columns :func:`dedup` adds.
OUTPUT_COLUMNS = ("duplicate_of", "cluster", "keep", "matched", "similarity", "empty")

# Internal column names (never visible in the result).
_POS, _ID, _TEXT = "__nd_pos", "__nd_id", "__nd_text"
_SIG, _KEYS, _VALID, _CHARS = "__nd_sig", "__nd_keys", "__nd_valid", "__nd_chars"
_NULL = "__nd_null"

#: Bucket rows (a node's signature and key in one band) a candidates partition holds at most.
_BUCKET_ROWS = 1_000_000
#: Rows a candidates task holds before it reduces exact copies to their earliest node.
_HOLD_ROWS = _BUCKET_ROWS

_ORDERABLE = (T.IntegralType, T.StringType, T.DecimalType, T.DateType, T.TimestampType)


def _column_type(df: DataFrame, name: str, role: str, keyword: str) -> T.DataType:
    fields = {f.name: f.dataType for f in df.schema.fields}
    if name not in fields:
        raise ValueError(
            f"{role} column {name!r} is not in the DataFrame (columns: {', '.join(df.columns)}); "
            f"pass {keyword}= naming the {role} column"
        )
    return fields[name]


def _check_columns(
    df: DataFrame, text_col: str, id_col: str, position_col: Optional[str]
) -> tuple[T.DataType, T.DataType]:
    if not isinstance(df, DataFrame):
        raise TypeError(f"dedup takes a pyspark.sql.DataFrame, not {type(df).__name__}")
    text_type = _column_type(df, text_col, "text", "text_col")
    if not isinstance(text_type, T.StringType):
        raise TypeError(
            f"text column {text_col!r} is {text_type.simpleString()}, not string; cast it "
            f"(F.col({text_col!r}).cast('string')) or pass text_col= naming a string column"
        )
    id_type = _column_type(df, id_col, "id", "id_col")
    if not isinstance(id_type, _ORDERABLE):
        raise TypeError(
            f"id column {id_col!r} is {id_type.simpleString()}; ids must be integers, strings, "
            f"decimals, dates or timestamps: cast it or pass id_col= naming such a column"
        )
    pos_type = id_type
    if position_col is not None:
        pos_type = _column_type(df, position_col, "position", "position_col")
        if not isinstance(pos_type, _ORDERABLE):
            raise TypeError(
                f"position column {position_col!r} is {pos_type.simpleString()}; positions must "
                f"be integers (e.g. the 0-based input line), strings, decimals, dates or timestamps"
            )
    taken = [c for c in OUTPUT_COLUMNS if c in df.columns]
    if taken:
        raise ValueError(
            f"the DataFrame already has column(s) {', '.join(map(repr, taken))}, which dedup adds; "
            f"rename or drop them first"
        )
    return id_type, pos_type


def _null_texts(text_col: str, count: int) -> ValueError:
    return ValueError(
        f"text column {text_col!r} has {count} null value(s); fill them "
        f"(F.coalesce(F.col({text_col!r}), F.lit(''))) or drop those rows"
    )


def _check_sketches(sketches: DataFrame, text_col: str, id_col: str, position_col: Optional[str]) -> tuple[int, int]:
    """One job over the sketch stage's table, which it computes and caches: no null id,
    position or text, and unique positions. Returns the number of rows and of empty texts
    (nothing left after normalisation)."""

    def total(c: Column) -> Column:
        return F.sum(c.cast("long"))

    per = sketches.groupBy(_POS).agg(
        F.count(F.lit(1)).alias("n"),
        total(F.col(_ID).isNull()).alias("id_nulls"),
        total(F.col(_NULL)).alias("text_nulls"),
        total(~F.col(_VALID)).alias("empty"),
    )
    row = per.agg(
        F.coalesce(F.sum("n"), F.lit(0)).alias("rows"),
        F.coalesce(F.sum("id_nulls"), F.lit(0)).alias("id_nulls"),
        F.coalesce(F.sum(F.when(F.col(_POS).isNull(), F.col("n"))), F.lit(0)).alias("pos_nulls"),
        F.max(F.when(F.col(_POS).isNotNull() & (F.col("n") > 1), F.struct("n", _POS))).alias("dup"),
        F.coalesce(F.sum("text_nulls"), F.lit(0)).alias("text_nulls"),
        F.coalesce(F.sum("empty"), F.lit(0)).alias("empty"),
    ).collect()[0]
    if row["id_nulls"]:
        raise ValueError(
            f"id column {id_col!r} has {row['id_nulls']} null value(s); every document needs an id: "
            f"fill them or drop those rows"
        )
    if position_col is not None and row["pos_nulls"]:
        raise ValueError(
            f"position column {position_col!r} has {row['pos_nulls']} null value(s); every "
            f"document needs a position (e.g. its 0-based input line)"
        )
    if row["dup"] is not None:
        n, value = row["dup"]
        if position_col is None:
            raise ValueError(
                f"id column {id_col!r} is not unique ({value!r} appears {n} times); without "
                f"position_col the ids order the documents, so they must be unique: pass "
                f"position_col= naming a unique column (e.g. the 0-based input line)"
            )
        raise ValueError(
            f"position column {position_col!r} is not unique ({value!r} appears {n} times); "
            f"positions order the documents and must be unique"
        )
    if row["text_nulls"]:
        raise _null_texts(text_col, int(row["text_nulls"]))
    return int(row["rows"]), int(row["empty"])


_ENTRY_TYPES = {1: "u1", 2: "<u2", 4: "<u4"}


def _signature_bytes(sigs: np.ndarray, bits: int) -> bytes:
    """Signatures (an (n, num_perm) uint32 array of entries below ``2**bits``) packed as
    ``bits / 8`` bytes an entry, little endian."""
    return sigs.astype(_ENTRY_TYPES[bits // 8]).tobytes()


def _signature_rows(arr: pa.Array, num_perm: int, bits: int) -> np.ndarray:
    """An Arrow binary column of signatures (``bits / 8 · num_perm`` bytes each) as an
    (n, num_perm) uint32 array."""
    n = len(arr)
    entry = bits // 8
    width = entry * num_perm
    if n == 0:
        return np.zeros((0, num_perm), dtype=np.uint32)
    offsets_type = np.int64 if pa.types.is_large_binary(arr.type) else np.int32
    _, offsets_buf, data_buf = arr.buffers()[:3]
    offsets = np.frombuffer(offsets_buf, dtype=offsets_type)[arr.offset : arr.offset + n + 1]
    if not np.all(np.diff(offsets) == width):
        raise ValueError(f"signature column holds values that are not {width} bytes")
    data = np.frombuffer(data_buf, dtype=np.uint8)[offsets[0] : offsets[-1]]
    return data.view(_ENTRY_TYPES[entry]).reshape(n, num_perm).astype(np.uint32)


def _utf8_buffers(arr: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    """A string array's UTF-8 bytes and its ``n + 1`` offsets into them, without a copy (as
    :meth:`neardup.MinHash.sketch_utf8` takes them)."""
    if not (pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type)):
        arr = arr.cast(pa.large_string())
    large = pa.types.is_large_string(arr.type)
    _, offsets_buf, data_buf = arr.buffers()[:3]
    offsets = np.frombuffer(offsets_buf, dtype=np.int64 if large else np.int32)
    offsets = offsets[arr.offset : arr.offset + len(arr) + 1]
    data = np.frombuffer(data_buf, dtype=np.uint8) if data_buf is not None else np.zeros(0, np.uint8)
    return data, offsets


def _sketch_partitions(options: Dict[str, Any], longest: bool):
    """The sketch stage's function for ``mapInArrow``: ``(pos, id, text)`` batches in,
    ``(pos, id, sig, keys, valid, chars, null)`` batches out (``null``: the text was null). The texts are sketched where Arrow
    holds them (never converted to Python strings)."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        mh = MinHash(**options)
        p, entry = mh.num_perm, mh.bits // 8
        bands = mh.params[0]
        for batch in batches:
            n = batch.num_rows
            if n == 0:
                continue
            texts = batch.column(2)
            null = texts.is_null()
            if texts.null_count:  # sketched as empty texts; dedup refuses them after the stage
                texts = pc.fill_null(texts, "")
            sigs, keys, valid = mh.sketch_utf8(*_utf8_buffers(texts), threads=1)
            sig = pa.Array.from_buffers(
                pa.binary(),
                n,
                [None, pa.py_buffer(np.arange(n + 1, dtype=np.int32) * (entry * p)), pa.py_buffer(_signature_bytes(sigs, mh.bits))],
            )
            key_list = pa.ListArray.from_arrays(
                pa.array(np.arange(n + 1, dtype=np.int32) * bands),
                pa.array(np.ascontiguousarray(keys).view(np.int64).ravel()),
            )
            chars = pc.utf8_length(texts).cast(pa.int32()) if longest else pa.array(np.zeros(n, dtype=np.int32))
            yield pa.RecordBatch.from_arrays(
                [batch.column(0), batch.column(1), sig, key_list, pa.array(valid), chars, null],
                names=[_POS, _ID, _SIG, _KEYS, _VALID, _CHARS, _NULL],
            )

    return run


def _collapse_held(table: pa.Table) -> tuple[pa.Table, pa.Array, pa.Array]:
    """Bucket rows ``(node, sig, band, key)`` with identical signatures in a bucket reduced to
    the earliest node: the reduced rows, and each dropped band-0 row's node with the node it
    was reduced to (a copy's one pair is reported from band 0; its rows in other bands give
    no pair)."""
    schema = table.schema
    table = table.rename_columns(["node", "sig", "band", "key"])
    earliest = table.group_by(["band", "key", "sig"]).aggregate([("node", "min")])
    first = table.filter(pc.equal(table.column("band"), 0)).join(earliest, keys=["band", "key", "sig"])
    dropped = first.filter(pc.not_equal(first.column("node"), first.column("node_min")))
    reduced = pa.table(
        [earliest.column("node_min"), earliest.column("sig"), earliest.column("band"), earliest.column("key")],
        names=schema.names,
    ).cast(schema)
    return reduced, dropped.column("node").combine_chunks(), dropped.column("node_min").combine_chunks()


def _earliest(nodes: pa.Array, members: pa.Array, parents: pa.Array) -> pa.Array:
    """``nodes`` followed up ``members[i] → parents[i]`` (each member has one parent, earlier
    than it) until a node that is no member: the earliest node of each one's signature."""
    while True:
        at = pc.index_in(nodes, value_set=members)
        if at.null_count == len(at):
            return nodes
        nodes = pc.if_else(pc.is_null(at), nodes, parents.take(at))


def _bucket_partitions(options: Dict[str, Any], hold_rows: int):
    """The candidates stage's function for ``mapInArrow`` over partitions of bucket rows
    ``(node, sig, band, key)``, every row of a bucket in one partition: each candidate pair
    once, confirmed, as ``(a, b, similarity, confirmed, k, copy)``
    (:meth:`neardup.MinHash.bucket_pairs`, identical signatures collapsed; ``a`` the earlier
    node, ``k`` the bucket's distinct signatures, ``copy``: the two signatures are identical).

    The partition is held in memory. Past ``hold_rows`` rows, the rows held are reduced to one
    per bucket and signature (:func:`_collapse_held`; a copy keeps only the name of the
    node it was reduced to), so exact copies, however many land in one bucket, cost their
    node's name rather than their rows; rows of distinct signatures are kept whole."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        held: List[pa.RecordBatch] = []
        held_rows, bound = 0, hold_rows
        copies: List[pa.Array] = []  # dropped copies and the nodes they were reduced to
        reduced_to: List[pa.Array] = []
        for batch in batches:
            if not batch.num_rows:
                continue
            held.append(batch)
            held_rows += batch.num_rows
            if held_rows > bound:
                table, node, to = _collapse_held(pa.Table.from_batches(held))
                held, held_rows = table.to_batches(), table.num_rows
                copies.append(node)
                reduced_to.append(to)
                bound = max(bound, 2 * held_rows)  # rows that did not reduce are not read again soon
        if not held:
            return
        mh = MinHash(**options)
        table = pa.Table.from_batches(held)
        node, sig, band, key = (table.column(i).combine_chunks() for i in range(4))
        ranks = pc.rank(node, sort_keys="ascending", tiebreaker="dense").to_numpy().astype(np.int64)
        sigs = _signature_rows(sig, mh.num_perm, mh.bits)
        first, second, sim, dup, k = mh.bucket_pairs(
            band.to_numpy().astype(np.int32),
            key.to_numpy().astype(np.int64),
            ranks,
            sigs,
            collapse_identical=True,
        )
        a, b = node.take(pa.array(first)), node.take(pa.array(second))
        copy = (sigs[first] == sigs[second]).all(axis=1)
        cols = [pa.array(sim), pa.array(dup), pa.array(k.astype(np.int32)), pa.array(copy)]
        if copies:
            # each dropped copy paired with the earliest node of its signature: what it was
            # reduced to, followed through later reductions and the copy pairs just found
            dropped = pa.concat_arrays(copies)
            is_copy = pa.array(copy)
            members = pa.concat_arrays([dropped, b.filter(is_copy)])
            parents = pa.concat_arrays(reduced_to + [a.filter(is_copy)])
            earliest = _earliest(pa.concat_arrays(reduced_to), members, parents)
            n = len(dropped)
            a, b = pa.concat_arrays([a, earliest]), pa.concat_arrays([b, dropped])
            extra = [np.ones(n), np.ones(n, dtype=bool), np.ones(n, dtype=np.int32), np.ones(n, dtype=bool)]
            cols = [pa.concat_arrays([c, pa.array(e)]) for c, e in zip(cols, extra)]
        step = 1 << 16
        for at in range(0, len(a), step):
            yield pa.RecordBatch.from_arrays(
                [a.slice(at, step), b.slice(at, step), *(c.slice(at, step) for c in cols)],
                names=["a", "b", "similarity", "confirmed", "k", "copy"],
            )

    return run


def _persist(df: DataFrame) -> tuple[DataFrame, int]:
    df = df.persist(StorageLevel.MEMORY_AND_DISK)
    return df, df.count()


def _large_star(edges: DataFrame) -> DataFrame:
    """Large-star: every node links its larger neighbours to the smallest node of its closed
    neighbourhood. ``edges``: ``(u, v)`` with ``u > v``; the result has the same form."""
    both = edges.select(F.col("u").alias("x"), F.col("v").alias("y")).unionByName(
        edges.select(F.col("v").alias("x"), F.col("u").alias("y"))
    )
    m = F.least(F.col("x"), F.min("y").over(Window.partitionBy("x")))
    return (
        both.withColumn("m", m)
        .where(F.col("y") > F.col("x"))
        .select(F.col("y").alias("u"), F.col("m").alias("v"))
        .distinct()
    )


def _small_star(edges: DataFrame) -> DataFrame:
    """Small-star: every node links itself and its smaller neighbours to the smallest of them.
    ``edges``: ``(u, v)`` with ``u > v``; the result has the same form."""
    w = edges.withColumn("m", F.min("v").over(Window.partitionBy("u")))
    return (
        w.where(F.col("v") != F.col("m"))
        .select(F.col("v").alias("u"), F.col("m").alias("v"))
        .unionByName(w.select(F.col("u"), F.col("m").alias("v")))
        .distinct()
    )


def _components(edges: DataFrame) -> tuple[DataFrame, int]:
    """``(u, v)`` edges with ``u > v`` → ``(u, root)``: every non-smallest node of a connected
    component with the component's smallest node. Returns the table and the rounds taken.

    Each large-star and small-star round keeps the components and ends with edges ``u > v``;
    the rounds stop once the edges are stars (no node has two parents, no parent has one),
    which — since components are kept — means every node points at its component's minimum
    (the fixed point the algorithm is proved to reach)."""
    rounds = 0
    while True:
        rounds += 1
        # checkpointed (lineage cut, so the plan does not grow with the rounds) and counted
        # by the same job that checks for stars
        edges = _small_star(_large_star(edges)).localCheckpoint(eager=False)
        roles = edges.select(
            F.col("u").alias("n"), F.lit(1).alias("parents"), F.lit(False).alias("parent")
        ).unionByName(
            edges.select(F.col("v").alias("n"), F.lit(0).alias("parents"), F.lit(True).alias("parent"))
        )
        stats = (
            roles.groupBy("n")
            .agg(F.sum("parents").alias("parents"), F.max("parent").alias("parent"))
            .agg(
                F.coalesce(F.max("parents"), F.lit(0)).alias("most_parents"),
                F.count(F.when((F.col("parents") > 0) & F.col("parent"), 1)).alias("inner"),
            )
            .collect()[0]
        )
        if stats["most_parents"] <= 1 and stats["inner"] == 0:
            return edges.select("u", F.col("v").alias("root")), rounds


def _one_task_components():
    """The components stage on one task, for ``mapInArrow`` over every edge: ``(u, v)``
    batches in, ``(u, root)`` out for every node that is not its component's smallest
    (:func:`_components`' result). The nodes, of any orderable type, are numbered in their
    order, and :func:`neardup.components` (union-find) links them."""

    def run(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        us: List[pa.Array] = []
        vs: List[pa.Array] = []
        for batch in batches:
            us.append(batch.column(0))
            vs.append(batch.column(1))
        if not us or not sum(len(u) for u in us):
            return
        ends = pa.concat_arrays(us + vs)
        nodes = pc.unique(ends)
        nodes = nodes.take(pc.sort_indices(nodes))
        number = pc.index_in(ends, value_set=nodes).to_numpy().astype(np.int64)
        half = len(number) // 2
        roots = components(len(nodes), number[:half], number[half:])
        moved = np.flatnonzero(roots != np.arange(len(nodes), dtype=np.uint32))
        u, root = nodes.take(pa.array(moved)), nodes.take(pa.array(roots[moved]))
        for at in range(0, len(moved), 1 << 16):
            yield pa.RecordBatch.from_arrays([u.slice(at, 1 << 16), root.slice(at, 1 << 16)], names=["u", "root"])

    return run


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


def cluster_report(
    result: DataFrame, id_col: str = "id", *, position_col: Optional[str] = None, top: int = 10
) -> Dict[str, Any]:
    """Cluster statistics of a :func:`dedup` result, shaped like the cluster part of
    ``neardup dedup --report``: ``documents``, ``duplicates`` (rows not kept), ``empty``,
    ``clusters``, ``clusters_with_duplicates``, ``size_distribution`` (``{"size", "clusters"}``
    by size: ``1``, ``2``, ``3-4``, ``5-8``, …) and the ``largest`` clusters (``cluster``,
    ``size``, up to ten ``sample_ids`` in order; size descending, then cluster). Pass the
    ``id_col`` and ``position_col`` given to :func:`dedup`.

    ``duplicates`` counts every row with ``keep`` false; the command counts its
    kept-on-arrival documents that share a cluster separately (``kept_sharing_a_cluster``)."""
    pos = position_col or id_col
    missing = [c for c in ("cluster", "keep", "empty", id_col, pos) if c not in result.columns]
    if missing:
        raise ValueError(
            f"the DataFrame has no column(s) {', '.join(map(repr, dict.fromkeys(missing)))}; pass "
            f"the result of neardup.spark.dedup and the id_col and position_col given to it"
        )
    totals = result.agg(
        F.count(F.lit(1)).alias("documents"),
        F.sum((~F.col("keep")).cast("long")).alias("duplicates"),
        F.sum(F.col("empty").cast("long")).alias("empty"),
    ).collect()[0]
    sizes = result.groupBy("cluster").agg(F.count(F.lit(1)).alias("size")).persist()
    bucket = F.when(F.col("size") <= 1, F.lit(0)).otherwise(
        F.ceil(F.log2(F.col("size").cast("double"))).cast("int")
    )
    hist = sizes.groupBy(bucket.alias("b")).agg(F.count(F.lit(1)).alias("n")).orderBy("b").collect()
    largest = (
        sizes.where(F.col("size") > 1)
        .orderBy(F.col("size").desc(), F.col("cluster"))
        .limit(top)
        .collect()
    )
    sizes.unpersist()
    samples: Dict[Any, List[Any]] = {r["cluster"]: [] for r in largest}
    if samples:
        first = F.row_number().over(Window.partitionBy("cluster").orderBy(pos))
        for r in (
            result.where(F.col("cluster").isin(list(samples)))
            .select("cluster", pos, id_col)
            .withColumn("__nd_n", first)
            .where(F.col("__nd_n") <= 10)
            .orderBy("cluster", pos)
            .collect()
        ):
            samples[r["cluster"]].append(r[id_col])

    def label(b: int) -> str:
        return str(1 << b) if b < 2 else f"{(1 << (b - 1)) + 1}-{1 << b}"

    clusters = sum(r["n"] for r in hist)
    singles = sum(r["n"] for r in hist if r["b"] == 0)
    return {
        "documents": int(totals["documents"]),
        "duplicates": int(totals["duplicates"] or 0),
        "empty": int(totals["empty"] or 0),
        "clusters": int(clusters),
        "clusters_with_duplicates": int(clusters - singles),
        "size_distribution": [{"size": label(r["b"]), "clusters": int(r["n"])} for r in hist],
        "largest": [
            {"cluster": r["cluster"], "size": int(r["size"]), "sample_ids": samples[r["cluster"]]}
            for r in largest
        ],
    }
