"""FAISS's exact binary multi-hash index on the fingerprints `neardup search` reads, for the
comparison in docs/performance.md.

    python -m venv .venv-faiss && .venv-faiss/bin/pip install faiss-cpu numpy
    cargo run --release -p neardup-index --example scale -- 50000000 --layouts lean --no-pairs \
        --queries 4000000 --write-fps /tmp/fps50m.bin --write-queries /tmp/q4m.bin
    .venv-faiss/bin/python crates/neardup-index/bench/faiss_multihash.py /tmp/fps50m.bin /tmp/q4m.bin 100000

`IndexBinaryMultiHash(64, 2, 32)` with one flip finds every fingerprint within distance 3 (two
fingerprints within 3 agree on one 32-bit half up to one bit), as the lean index does; one
thread; `range_search(..., 4)` returns distances below 4. Prints the queries per second and the
number of matches, which must equal `neardup search`'s lines for the same queries.
"""
import resource
import sys
import time

import faiss
import numpy as np

fps = np.fromfile(sys.argv[1], dtype="<u8")
queries = np.fromfile(sys.argv[2], dtype="<u8")[: int(sys.argv[3])]
faiss.omp_set_num_threads(1)
t = time.time()
index = faiss.IndexBinaryMultiHash(64, 2, 32)
index.nflip = 1
index.add(fps.view(np.uint8).reshape(-1, 8))
print(f"build {time.time() - t:.1f} s, {index.ntotal} fingerprints", flush=True)
print(f"peak memory {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20:.2f} GiB", flush=True)
qb = queries.view(np.uint8).reshape(-1, 8)
for _ in range(2):
    t = time.time()
    lims, _, found = index.range_search(qb, 4)
    dt = time.time() - t
    print(
        f"range_search, one thread: {len(queries) / dt:.0f} queries/s = "
        f"{dt / len(queries) * 1e6:.2f} us a query, {len(found)} matches",
        flush=True,
    )
