"""Connected components of the confirmed pairs: on one task by the library's union-find, or
distributed by large-star/small-star rounds (Kiveris et al., "Connected Components in
MapReduce and Beyond", 2014) written with DataFrame operations. Both give every node that is
not its component's smallest the component's smallest node."""

from __future__ import annotations

from typing import Iterator, List

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

from .. import components

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
