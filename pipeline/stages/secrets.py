"""The API key never reaches a record, a file or a message: ``KeyMask`` cuts it out of anything.

A server may echo the ``Authorization`` header back (in an error, or in a 200 body). The key is
masked in every form it can take there: raw (``Bearer sk-...`` becomes ``Bearer ***``), JSON-escaped
(``\\"``, ``\\\\``, ``\\/``, ``\\uXXXX`` escapes are undone by parsing first: ``mask_obj`` walks the
decoded object) and in text that still holds the JSON (``mask_text`` replaces each escaped spelling).
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["KeyMask", "MASK"]

MASK = "***"


class KeyMask:
    """``KeyMask(key).text(s)`` / ``.obj(o)``: ``s`` or ``o`` with every spelling of ``key`` replaced by ``***``."""

    def __init__(self, key: str | None):
        self.key = key or None
        forms: set[str] = set()
        if self.key:
            escaped = json.dumps(self.key)[1:-1]  # what json.dumps writes for it ('"' and '\\' escaped)
            forms = {self.key, escaped, escaped.replace("/", "\\/"), "".join(f"\\u{ord(c):04x}" for c in self.key)}
            forms |= {f.upper() for f in forms if f.startswith("\\u")}
        self._forms = sorted(forms, key=len, reverse=True)  # longest first: an escaped form holds the raw one

    def __bool__(self) -> bool:
        return self.key is not None

    def text(self, text: str) -> str:
        if self.key is None:
            return text
        for form in self._forms:
            if form in text:
                text = text.replace(form, MASK)
        return text

    def obj(self, value: Any) -> Any:
        """A copy of a decoded JSON value with the key masked in every string, keys included."""
        if self.key is None:
            return value
        if isinstance(value, str):
            return value.replace(self.key, MASK) if self.key in value else value
        if isinstance(value, dict):
            return {self.obj(k): self.obj(v) for k, v in value.items()}
        if isinstance(value, list):
            return [self.obj(v) for v in value]
        return value
