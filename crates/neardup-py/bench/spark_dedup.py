"""Throughput of neardup.spark.dedup on a local Spark, stage by stage, against the command.

    python crates/neardup-py/bench/spark_dedup.py CORPUS.jsonl [MORE.jsonl …] \\
        [--master local[2]] [--partitions 8] [--neardup target-own/release/neardup]

The JSONL files are concatenated (in the order given) into a folder of `--partitions` Parquet
files with the 0-based input position `pos`, outside the timing. Timed: `dedup(df, position_col="pos")` (its stages,
from `metrics=`) and writing the deduplicated rows (`keep`) to Parquet. The command is timed on
the same files with `dedup --method minhash --linkage components --no-template-veto`, and the
two results are checked to agree (clusters, evidence). MB/s counts the JSONL bytes.
"""

from __future__ import annotations

import argparse
import atexit
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("corpus", nargs="+", type=Path)
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--partitions", type=int, default=8, help="input partitions and shuffle partitions")
    ap.add_argument("--neardup", type=Path, default=Path("target-own/release/neardup"))
    ap.add_argument("--threads", type=int, default=2, help="threads of the command")
    ap.add_argument(
        "--replicas", type=int, default=1,
        help="append R-1 near-copies of the corpus (copy r of a document ends with ' (r)'), "
        "written to one JSONL file that both contenders read",
    )
    ap.add_argument("--minhash-bits", type=int, default=None,
                    help="bits kept of each signature entry, in both (default: the detector's, 8)")
    ap.add_argument("--conf", action="append", default=[], metavar="KEY=VALUE",
                    help="a Spark setting (repeatable), e.g. spark.shuffle.compress=false")
    args = ap.parse_args()
    bits = [] if args.minhash_bits is None else ["--minhash-bits", str(args.minhash_bits)]
    options = {} if args.minhash_bits is None else {"bits": args.minhash_bits}

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    from neardup import spark as nspark

    docs = [json.loads(line) for p in args.corpus for line in p.read_text(encoding="utf-8").splitlines() if line.strip()]
    work = Path(tempfile.mkdtemp(prefix="neardup-spark-bench-"))
    atexit.register(shutil.rmtree, work, True)  # ~1.5 times the input: never left behind
    inputs = list(args.corpus)
    if args.replicas > 1:
        docs = docs + [
            {"id": f"{d.get('id', i + 1)}~{r}", "text": f"{d['text']} ({r})"}
            for r in range(1, args.replicas) for i, d in enumerate(docs)
        ]
        inputs = [work / "replicated.jsonl"]
        inputs[0].write_text("".join(json.dumps(d, ensure_ascii=False) + "\n" for d in docs), encoding="utf-8")
    nbytes = sum(p.stat().st_size for p in inputs)
    table = pa.table(
        {
            "pos": pa.array(range(len(docs)), pa.int64()),
            "id": [str(d.get("id", i + 1)) for i, d in enumerate(docs)],
            "text": [d["text"] for d in docs],
        }
    )
    (work / "in").mkdir()
    step = -(-len(docs) // args.partitions)
    for k in range(args.partitions):  # a Parquet folder, one file a partition
        pq.write_table(table.slice(k * step, step), work / "in" / f"part-{k:05d}.parquet")
    print(f"{len(docs)} documents, {nbytes / 1e6:.1f} MB of JSONL ({', '.join(p.name for p in args.corpus)}{f', {args.replicas} replicas' if args.replicas > 1 else ''})")

    started = time.perf_counter()
    out = subprocess.run(
        [str(args.neardup), "dedup", "--method", "minhash", "--linkage", "components", "--no-template-veto",
         "-q", "--threads", str(args.threads), *bits, *map(str, inputs)],
        check=True, capture_output=True, text=True,
    ).stdout
    cli_seconds = time.perf_counter() - started
    cli = [json.loads(line) for line in out.splitlines()]
    print(f"command: {cli_seconds:.2f} s, {nbytes / 1e6 / cli_seconds:.2f} MB/s")

    builder = (
        SparkSession.builder.master(args.master)
        .config("spark.sql.shuffle.partitions", str(args.partitions))
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.execution.arrow.maxRecordsPerBatch", "1000")
        .config("spark.driver.memory", "2g")
        .config("spark.sql.files.maxPartitionBytes", str(max(1 << 20, nbytes // args.partitions)))
    )
    for setting in args.conf:  # after the defaults, so they can be overridden
        key, sep, value = setting.partition("=")
        if not sep:
            ap.error(f"--conf {setting!r}: write KEY=VALUE")
        builder = builder.config(key, value)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    for run in ("warm-up", "measured"):  # the first run warms the JVM and the Python workers
        df = spark.read.parquet(str(work / "in"))
        metrics: dict = {}
        started = time.perf_counter()
        result = nspark.dedup(df, position_col="pos", metrics=metrics, **options)
        dedup_seconds = time.perf_counter() - started
        result.where("keep").drop(*nspark.OUTPUT_COLUMNS).write.mode("overwrite").parquet(str(work / "out"))
        total = time.perf_counter() - started
        if run == "warm-up":
            continue
        print(f"spark {args.master}: {total:.2f} s, {nbytes / 1e6 / total:.2f} MB/s "
              f"(dedup {dedup_seconds:.2f} s, writing the kept rows {total - dedup_seconds:.2f} s); "
              f"command / spark time: {total / cli_seconds:.2f}x")
        for k, v in metrics.items():
            print(f"  {k}: {v:.2f}" if isinstance(v, float) else f"  {k}: {v}")
        rows = result.orderBy("pos").select("cluster", "matched", "similarity").collect()
        agree = all(r["cluster"] == c["cluster"] and r["matched"] == c["matched"]
                    and r["similarity"] == c.get("similarity") for r, c in zip(rows, cli))
        print(f"  equal to the command: {agree and len(rows) == len(cli)}")
    spark.stop()


if __name__ == "__main__":
    main()
