from collections.abc import Iterable, Mapping, Sequence
from os import PathLike
from typing import Any, Literal, Optional, TypedDict, Union, overload

import numpy as np
import numpy.typing as npt

from .client import Client as Client
from .errors import (
    ConfigError as ConfigError,
    ConfigMismatchError as ConfigMismatchError,
    EmptyDocumentError as EmptyDocumentError,
    EngineError as EngineError,
    NeardupError as NeardupError,
    ServiceError as ServiceError,
)

__version__: str

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

Features = Literal["auto", "jieba", "chars", "words"]
Method = Literal["auto", "simhash", "minhash", "imatch", "exact", "short"]
Stage = Literal["exact", "short", "containment", "passage", "minhash", "simhash", "imatch", "id"]

class FingerprintOptions(TypedDict, total=False):
    features: Features
    char_ngram: int
    word_ngram: int
    top_n: Union[int, Literal["all", "auto"]]
    idf: Union[str, PathLike[str]]
    stopwords: Union[str, PathLike[str]]
    html: Literal["auto", "always", "never"]
    nfkc: bool
    lowercase: bool
    fold_traditional: bool

class Fingerprinter:
    """64-bit simhash fingerprints with the options of `neardup fingerprint`."""

    def __init__(
        self,
        *,
        features: Features = "auto",
        char_ngram: int = 3,
        word_ngram: int = 1,
        top_n: Union[int, Literal["all", "auto"]] = "all",
        idf: Optional[Union[str, PathLike[str]]] = None,
        stopwords: Optional[Union[str, PathLike[str]]] = None,
        html: Literal["auto", "always", "never"] = "auto",
        nfkc: bool = True,
        lowercase: bool = True,
        fold_traditional: bool = True,
    ) -> None: ...
    @overload
    def simhash(self, texts: str, *, threads: int = 0) -> int: ...
    @overload
    def simhash(self, texts: Sequence[str], *, threads: int = 0) -> npt.NDArray[np.uint64]: ...
    def fingerprint_batch(
        self, texts: Sequence[str], *, threads: int = 0
    ) -> tuple[npt.NDArray[np.uint64], npt.NDArray[np.bool_]]: ...
    @overload
    def exact_digest(self, texts: str, *, threads: int = 0) -> int: ...
    @overload
    def exact_digest(self, texts: Sequence[str], *, threads: int = 0) -> npt.NDArray[np.uint64]: ...
    def normalize(self, text: str) -> str: ...
    @property
    def config_id(self) -> int: ...
    @property
    def descriptor(self) -> str: ...

class MinHash:
    """Signatures, band keys and pair confirmation of the library's MinHash detector."""

    def __init__(
        self,
        *,
        threshold: float = 0.6,
        num_perm: int = 128,
        shingles: Literal["auto", "chars", "words"] = "auto",
        seed: int = 1,
        scheme: Literal["code_point_sketch", "similarity_sketch", "permutations", "v3", "v2", "v1"] = "code_point_sketch",
        bits: Literal[8, 16, 32] = 8,
        html: Literal["auto", "always", "never"] = "auto",
        nfkc: bool = True,
        lowercase: bool = True,
        fold_traditional: bool = True,
    ) -> None: ...
    @property
    def params(self) -> tuple[int, int]: ...
    @property
    def num_perm(self) -> int: ...
    @property
    def bits(self) -> int: ...
    @property
    def threshold(self) -> float: ...
    def sketch(
        self, texts: Sequence[str], *, threads: int = 0
    ) -> tuple[npt.NDArray[np.uint32], npt.NDArray[np.uint64], npt.NDArray[np.bool_]]: ...
    def sketch_utf8(
        self,
        data: npt.NDArray[np.uint8],
        offsets: Union[npt.NDArray[np.int32], npt.NDArray[np.int64]],
        *,
        threads: int = 0,
    ) -> tuple[npt.NDArray[np.uint32], npt.NDArray[np.uint64], npt.NDArray[np.bool_]]: ...
    def band_keys(self, signatures: npt.NDArray[np.uint32]) -> npt.NDArray[np.uint64]: ...
    def bucket_pairs(
        self,
        bands: npt.NDArray[np.int32],
        keys: npt.NDArray[np.int64],
        ranks: npt.NDArray[np.int64],
        signatures: npt.NDArray[np.uint32],
        *,
        collapse_identical: bool = ...,
    ) -> tuple[
        npt.NDArray[np.uint32], npt.NDArray[np.uint32], npt.NDArray[np.float64], npt.NDArray[np.bool_], npt.NDArray[np.uint32]
    ]: ...
    def verify(
        self, a: npt.NDArray[np.uint32], b: npt.NDArray[np.uint32]
    ) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.bool_]]: ...

class Decision:
    """The decision about one document: the fields of a `neardup dedup` output line."""

    index: int
    id: Any
    duplicate_of: Optional[Any]
    duplicate_of_index: Optional[int]
    cluster: int
    matched: Optional[Any]
    matched_index: Optional[int]
    distance: Optional[int]
    similarity: Optional[float]
    stage: Optional[Stage]
    empty: bool
    shares_cluster_with: Optional[Any]
    @property
    def is_duplicate(self) -> bool: ...
    def to_dict(self) -> dict[str, Any]: ...

class Match:
    """The strongest indexed near-duplicate of a text (`Deduper.check`)."""

    id: Any
    index: int
    distance: Optional[int]
    similarity: Optional[float]
    stage: Stage

class Deduper:
    """Streaming dedup under the online rule (the decisions of `neardup serve`)."""

    def __init__(
        self,
        *,
        method: Method = "auto",
        threshold: Optional[float] = None,
        distance: Optional[int] = None,
        template_veto: bool = False,
        minhash_char_ngram: Optional[int] = None,
        minhash_word_ngram: Optional[int] = None,
        minhash_bits: Optional[Literal[8, 16, 32]] = None,
        minhash_scheme: Optional[Literal["v3", "v2", "v1"]] = None,
        quote_edge: Optional[float] = None,
        passages: Optional[bool] = None,
        threads: int = 0,
        **fingerprint_options: Any,
    ) -> None: ...
    def check(self, text: str) -> Optional[Match]: ...
    def add(self, text: str, id: Any = None) -> int: ...
    def check_and_add(self, text: str, id: Any = None) -> Decision: ...
    def check_and_add_many(self, texts: Sequence[str], ids: Optional[Sequence[Any]] = None) -> list[Decision]: ...
    def __len__(self) -> int: ...

class HammingIndex:
    """Exact search of 64-bit fingerprints within a Hamming distance."""

    def __init__(self, max_distance: int = 3, capacity: int = 1 << 20, memory_budget: int = 8 << 30) -> None: ...
    def insert(self, fingerprint: int, handle: int) -> None: ...
    def insert_many(
        self, fingerprints: npt.NDArray[np.uint64], handles: Optional[npt.NDArray[np.uint32]] = None
    ) -> None: ...
    def remove(self, fingerprint: int, handle: int) -> bool: ...
    def search(self, fingerprint: int, k: Optional[int] = None) -> list[tuple[int, int]]: ...
    def search_many(
        self, fingerprints: npt.NDArray[np.uint64], k: Optional[int] = None, *, threads: int = 0
    ) -> tuple[npt.NDArray[np.uint32], npt.NDArray[np.uint32], npt.NDArray[np.uint8]]: ...
    @property
    def max_distance(self) -> int: ...
    @property
    def layout(self) -> str: ...
    def __len__(self) -> int: ...

class LeanIndex:
    """Exact search within Hamming distance 3, built once, in about 15.5 bytes per fingerprint."""

    def __init__(
        self, fingerprints: npt.NDArray[np.uint64], handles: Optional[npt.NDArray[np.uint32]] = None
    ) -> None: ...
    def search(self, fingerprint: int, k: Optional[int] = None) -> list[tuple[int, int]]: ...
    def search_many(
        self, fingerprints: npt.NDArray[np.uint64], k: Optional[int] = None, *, threads: int = 0
    ) -> tuple[npt.NDArray[np.uint32], npt.NDArray[np.uint32], npt.NDArray[np.uint8]]: ...
    @property
    def max_distance(self) -> int: ...
    @property
    def nbytes(self) -> int: ...
    def __len__(self) -> int: ...

class Engine:
    """The durable online engine over a data directory (`neardup serve` without HTTP)."""

    def __init__(
        self,
        path: Union[str, PathLike[str]],
        *,
        method: Literal["auto", "simhash"] = "auto",
        distance: Optional[int] = None,
        template_veto: Optional[bool] = None,
        template_own_lines: Optional[bool] = None,
        template_text_lines: Optional[bool] = None,
        template_by_content: Optional[bool] = None,
        passages: Optional[bool] = None,
        retention: Optional[float] = None,
        segments: Optional[int] = None,
        max_docs: Optional[int] = None,
        sync: Literal["always", "batch", "none"] = "always",
        sync_interval: Optional[float] = None,
        snapshot_interval: Optional[float] = None,
        **fingerprint_options: Any,
    ) -> None: ...
    def check_and_insert(
        self,
        id: str,
        text: Optional[str] = None,
        *,
        fingerprint: Optional[Union[int, str]] = None,
        timestamp: Optional[float] = None,
    ) -> dict[str, Any]: ...
    def check_and_insert_many(self, docs: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]: ...
    def query(self, text: Optional[str] = None, *, fingerprint: Optional[Union[int, str]] = None) -> dict[str, Any]: ...
    def get(self, id: str) -> Optional[dict[str, Any]]: ...
    def remove(self, id: str) -> bool: ...
    def stats(self) -> dict[str, Any]: ...
    def snapshot(self) -> None: ...
    def shutdown(self) -> None: ...
    def __enter__(self) -> "Engine": ...
    def __exit__(self, *args: object) -> bool: ...

def hamming(a: int, b: int) -> int: ...
def components(n: int, a: npt.NDArray[np.int64], b: npt.NDArray[np.int64]) -> npt.NDArray[np.uint32]: ...
@overload
def simhash(texts: str, *, threads: int = 0, **options: Any) -> int: ...
@overload
def simhash(texts: Iterable[str], *, threads: int = 0, **options: Any) -> npt.NDArray[np.uint64]: ...
def minhash(
    texts: Iterable[str], *, threads: int = 0, **options: Any
) -> tuple[npt.NDArray[np.uint32], npt.NDArray[np.uint64], npt.NDArray[np.bool_]]: ...
def dedup(
    docs: Iterable[Union[str, Mapping[str, Any]]],
    text_key: str = "text",
    id_key: str = "id",
    *,
    method: Method = "auto",
    threshold: Optional[float] = None,
    distance: Optional[int] = None,
    template_veto: bool = True,
    minhash_char_ngram: Optional[int] = None,
    minhash_word_ngram: Optional[int] = None,
    minhash_bits: Optional[Literal[8, 16, 32]] = None,
    minhash_scheme: Optional[Literal["v3", "v2", "v1"]] = None,
    quote_edge: Optional[float] = None,
    passages: Optional[bool] = None,
    linkage: Literal["online", "components"] = "online",
    keep: Literal["first", "longest"] = "first",
    threads: int = 0,
    **fingerprint_options: Any,
) -> list[Decision]: ...
