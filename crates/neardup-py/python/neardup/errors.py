"""The exceptions neardup raises. Every message is the library's own: what went wrong and how to
fix it.

``NeardupError`` is the base of them all. The errors about bad input are also ``ValueError`` s, so
code that already catches ``ValueError`` keeps working.
"""

from __future__ import annotations


class NeardupError(Exception):
    """Base class of every neardup error."""


class ConfigError(NeardupError, ValueError):
    """An option is out of range or inconsistent; the message names it and the accepted values."""


class EmptyDocumentError(NeardupError, ValueError):
    """Nothing was left of a document after normalisation (no letter or digit): it has no sketch."""


class EngineError(NeardupError):
    """The durable engine failed (I/O, a lock held by another process, corrupt state, shut down)."""


class ConfigMismatchError(EngineError, ValueError):
    """The data directory was written with another configuration."""


class ServiceError(NeardupError):
    """The HTTP service answered with an error (``status`` and ``code`` say which)."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(f"{status} {code}: {message}")
        self.status = status
        self.code = code
        self.message = message


__all__ = [
    "NeardupError",
    "ConfigError",
    "EmptyDocumentError",
    "EngineError",
    "ConfigMismatchError",
    "ServiceError",
]
