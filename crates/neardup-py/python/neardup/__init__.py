"""neardup: near-duplicate text detection (the Python face of the Rust library).

Sketches (:class:`Fingerprinter`, :func:`simhash`, :class:`MinHash`), batch dedup
(:func:`dedup`, the decisions of ``neardup dedup``), streaming dedup (:class:`Deduper`, the
online rule of ``neardup serve``), the exact Hamming index (:class:`HammingIndex`; built once
and in about 15.5 bytes a fingerprint, :class:`LeanIndex`), the durable
engine (:class:`Engine`) and a client of the HTTP service (:class:`Client`). Every call that
works releases the GIL.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Union

from . import _neardup
from ._neardup import (
    Decision,
    Deduper,
    Engine,
    Fingerprinter,
    HammingIndex,
    LeanIndex,
    Match,
    MinHash,
    components,
    hamming,
)
from .client import Client
from .errors import (
    ConfigError,
    ConfigMismatchError,
    EmptyDocumentError,
    EngineError,
    NeardupError,
    ServiceError,
)

__version__: str = _neardup.__version__

_FINGERPRINT_OPTIONS = (
    "features",
    "char_ngram",
    "word_ngram",
    "top_n",
    "idf",
    "stopwords",
    "html",
    "nfkc",
    "lowercase",
    "fold_traditional",
)


def simhash(texts: Union[str, Iterable[str]], *, threads: int = 0, **options: Any) -> Any:
    """The 64-bit simhash of a text (an ``int``) or of a list of texts (a ``numpy.uint64``
    array), with the fingerprint options of ``neardup fingerprint`` (see :class:`Fingerprinter`).
    """
    fp = Fingerprinter(**options)
    if not isinstance(texts, str) and not isinstance(texts, list):
        texts = list(texts)
    return fp.simhash(texts, threads=threads)


def minhash(texts: Iterable[str], *, threads: int = 0, **options: Any) -> Any:
    """MinHash sketches of a list of texts: ``(signatures, band_keys, valid)`` (see
    :meth:`MinHash.sketch`)."""
    return MinHash(**options).sketch(list(texts), threads=threads)


def _documents(docs: Iterable[Any], text_key: str, id_key: str) -> tuple[list[str], list[Any]]:
    texts: list[str] = []
    ids: list[Any] = []
    for i, d in enumerate(docs):
        if isinstance(d, str):
            texts.append(d)
            ids.append(i)
        elif isinstance(d, Mapping):
            try:
                t = d[text_key]
            except KeyError:
                raise ValueError(
                    f"document {i} has no {text_key!r} field; pass text_key= to name the text field"
                ) from None
            if not isinstance(t, str):
                raise TypeError(f"document {i}: field {text_key!r} is {type(t).__name__}, not str")
            texts.append(t)
            ids.append(d.get(id_key, i))
        else:
            raise TypeError(
                f"document {i} is {type(d).__name__}; pass str texts or mappings with a {text_key!r} field"
            )
    return texts, ids


def dedup(
    docs: Iterable[Union[str, Mapping[str, Any]]],
    text_key: str = "text",
    id_key: str = "id",
    **options: Any,
) -> list[Decision]:
    """Deduplicates documents as ``neardup dedup`` does; returns one :class:`Decision` per
    document, in input order.

    ``docs``: texts, or mappings with the text under ``text_key`` and an id under ``id_key``
    (default: the document's 0-based position). Options, with the command's defaults:
    ``method`` (``auto``, ``simhash``, ``minhash``, ``imatch``, ``exact``, ``short``),
    ``threshold`` (Jaccard, minhash and auto, 0.6), ``distance`` (Hamming, simhash, 3),
    ``template_veto`` (True), ``linkage`` (``online`` or ``components``), ``keep``
    (``first`` or ``longest``), ``threads`` (0: one per core) and the fingerprint options of
    :class:`Fingerprinter`.
    """
    texts, ids = _documents(docs, text_key, id_key)
    return _neardup.dedup_texts(texts, ids, options)


__all__ = [
    "Client",
    "ConfigError",
    "ConfigMismatchError",
    "Decision",
    "Deduper",
    "EmptyDocumentError",
    "Engine",
    "EngineError",
    "Fingerprinter",
    "HammingIndex",
    "LeanIndex",
    "Match",
    "MinHash",
    "NeardupError",
    "ServiceError",
    "components",
    "dedup",
    "hamming",
    "minhash",
    "simhash",
]
