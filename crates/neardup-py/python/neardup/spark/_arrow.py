"""What the executors run: the sketch and candidates stages' functions over Arrow batches
(``mapInArrow``), and the conversions between Arrow buffers and the binding's numpy arrays.
Each is pure: the same rows give the same output on any executor."""

from __future__ import annotations

from typing import Any, Dict, Iterator, List

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .. import MinHash
from ._columns import _CHARS, _ID, _KEYS, _NULL, _POS, _SIG, _VALID

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
            is_copy = cols[3]
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
