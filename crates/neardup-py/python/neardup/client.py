"""A small client of the HTTP service (``neardup serve``; routes in its OpenAPI spec,
``GET /openapi.yaml``), on the standard library's ``urllib``. Answers are the service's JSON
bodies, the same dicts :class:`neardup.Engine` returns."""

from __future__ import annotations

import json
import urllib.error
import urllib.parse
import urllib.request
from typing import Any, Optional, Union

from .errors import ServiceError


class Client:
    """A client of ``neardup serve`` at ``url`` (e.g. ``http://127.0.0.1:8080``), with the
    bearer ``token`` when the service requires one."""

    def __init__(self, url: str, token: Optional[str] = None, timeout: float = 30.0) -> None:
        self.url = url.rstrip("/")
        self.token = token
        self.timeout = timeout

    def _call(self, method: str, path: str, body: Any = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.url + path, data=data, method=method)
        if data is not None:
            req.add_header("Content-Type", "application/json")
        if self.token:
            req.add_header("Authorization", f"Bearer {self.token}")
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as r:
                return json.loads(r.read() or b"null")
        except urllib.error.HTTPError as e:
            raw = e.read()
            try:
                err = json.loads(raw)["error"]
                code, message = err.get("code", "error"), err.get("message", "")
            except (ValueError, KeyError, TypeError):
                code, message = "error", raw.decode(errors="replace")
            raise ServiceError(e.code, code, message) from None

    @staticmethod
    def _doc(
        id: Optional[Union[str, int]],
        text: Optional[str],
        fingerprint: Optional[Union[int, str]],
        timestamp: Optional[float],
    ) -> dict[str, Any]:
        d: dict[str, Any] = {}
        if id is not None:
            d["id"] = id
        if text is not None:
            d["text"] = text
        if fingerprint is not None:
            d["fingerprint"] = fingerprint if isinstance(fingerprint, str) else f"{fingerprint:016x}"
        if timestamp is not None:
            d["timestamp"] = timestamp
        return d

    def check_and_insert(
        self,
        id: Union[str, int],
        text: Optional[str] = None,
        *,
        fingerprint: Optional[Union[int, str]] = None,
        timestamp: Optional[float] = None,
    ) -> dict[str, Any]:
        """``POST /v1/documents``: checks a document and stores it when it is unique."""
        return self._call("POST", "/v1/documents", self._doc(id, text, fingerprint, timestamp))

    def check_and_insert_many(self, docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """``POST /v1/documents/batch``: one answer per document (errors in place)."""
        return self._call("POST", "/v1/documents/batch", docs)

    def query(
        self, text: Optional[str] = None, *, fingerprint: Optional[Union[int, str]] = None
    ) -> dict[str, Any]:
        """``POST /v1/query``: the stored near-duplicates, without storing."""
        return self._call("POST", "/v1/query", self._doc(None, text, fingerprint, None))

    def get(self, id: str) -> Optional[dict[str, Any]]:
        """``GET /v1/documents/{id}``; None when it is not stored."""
        try:
            return self._call("GET", "/v1/documents/" + urllib.parse.quote(id, safe=""))
        except ServiceError as e:
            if e.status == 404:
                return None
            raise

    def remove(self, id: str) -> bool:
        """``DELETE /v1/documents/{id}``; False when it was not stored."""
        try:
            self._call("DELETE", "/v1/documents/" + urllib.parse.quote(id, safe=""))
            return True
        except ServiceError as e:
            if e.status == 404:
                return False
            raise

    def stats(self) -> dict[str, Any]:
        """``GET /v1/stats``."""
        return self._call("GET", "/v1/stats")

    def healthy(self) -> bool:
        """``GET /healthz`` answered ok."""
        try:
            return self._call("GET", "/healthz").get("status") == "ok"
        except (ServiceError, OSError):
            return False
