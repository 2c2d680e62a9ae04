"""Reading JSONL, one bad line at a time: the one reader and the one error mapper.

``json_lines(lines, path)`` decodes each non-blank line (a UTF-8 byte-order mark before the first
is dropped) and gives ``(line number, value)``; a line that is not UTF-8, not JSON, or nested too
deeply gives a ``JsonLineError`` as its value (naming the file when ``path`` is given, and the
line), and reading goes on. Every JSONL reader in the project (golden samples, prompts,
generation records, training records, capture's partial file, ``reconstruct``'s stdin) uses it,
so a bad line reads the same everywhere.

``read_records`` adds what golden samples and prompts files share: a parser per record and
unique ids.
"""

from __future__ import annotations

import codecs
import json
import os
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from .errors import TokfidelityError

__all__ = ["JsonLineError", "json_lines", "read_json_lines", "read_records"]

T = TypeVar("T")
E = TypeVar("E", bound=Exception)


class JsonLineError(TokfidelityError, ValueError):
    """A JSONL line that is not a JSON value: ``message`` says why (not UTF-8, not valid JSON)."""


def _decode(raw: bytes, path: os.PathLike | str | None, line_no: int) -> Any:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        return JsonLineError(f"not UTF-8: byte 0x{raw[e.start]:02x} at column {e.start + 1}", path=path, line=line_no)
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        return JsonLineError(f"not valid JSON: {e.msg} (column {e.colno})", path=path, line=line_no)
    except RecursionError:
        return JsonLineError("not valid JSON: nested too deeply", path=path, line=line_no)


def json_lines(lines: Iterable[bytes], path: os.PathLike | str | None = None) -> Iterator[tuple[int, Any]]:
    """``(line number, decoded value or JsonLineError)`` for each non-blank line of ``lines`` (bytes)."""
    for line_no, raw in enumerate(lines, 1):
        if line_no == 1 and raw.startswith(codecs.BOM_UTF8):  # some editors write one
            raw = raw[len(codecs.BOM_UTF8) :]
        if raw.strip():
            yield line_no, _decode(raw, path, line_no)


def read_json_lines(path: os.PathLike | str) -> Iterator[tuple[int, Any]]:
    """``json_lines`` over a file, read as bytes (errors name the file)."""
    with open(path, "rb") as f:
        yield from json_lines(f, path)


def read_records(path: Path, parse: Callable[[Any, Path, int], T], error: type[E]) -> Iterator[T | E]:
    """``parse(obj, path, line)`` for each non-blank line of an open-able file, in order.
    ``parse`` raises ``error(path, line, field, message)`` for a bad record; bad lines come
    out as ``error`` objects in their place. Records must have a unique ``.id``."""
    seen: dict[str, int] = {}
    for line_no, obj in read_json_lines(path):
        if isinstance(obj, JsonLineError):
            yield error(path, line_no, None, obj.message)
            continue
        try:
            record = parse(obj, path, line_no)
        except error as e:
            yield e
            continue
        if record.id in seen:
            yield error(path, line_no, "id", f"duplicate id {record.id!r} (first on line {seen[record.id]})")
            continue
        seen[record.id] = line_no
        yield record
