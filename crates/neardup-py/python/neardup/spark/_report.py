"""Cluster statistics of a :func:`neardup.spark.dedup` result, shaped like ``neardup dedup
--report``."""

from __future__ import annotations

from typing import Any, Dict, List, Optional

from pyspark.sql import DataFrame, Window
from pyspark.sql import functions as F

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
