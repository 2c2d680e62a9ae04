"""Reading JSONL files of records that each have an ``id``, one bad line at a time.

Golden samples and prompts files share this: a line that is not JSON, that its parser rejects,
or that repeats an earlier id yields an error naming the file, line and field, and reading
goes on with the next line.
"""

from __future__ import annotations

import codecs
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

__all__ = ["read_records"]

T = TypeVar("T")
E = TypeVar("E", bound=Exception)


def read_records(path: Path, parse: Callable[[Any, Path, int], T], error: type[E]) -> Iterator[T | E]:
    """``parse(obj, path, line)`` for each non-blank line of an open-able file, in order.
    ``parse`` raises ``error(path, line, field, message)`` for a bad record; bad lines come
    out as ``error`` objects in their place. Records must have a unique ``.id``."""
    seen: dict[str, int] = {}
    with open(path, "rb") as f:
        for line_no, line in enumerate(f, 1):
            if line_no == 1 and line.startswith(codecs.BOM_UTF8):  # some editors write one
                line = line[len(codecs.BOM_UTF8) :]
            if not line.strip():
                continue
            try:
                line = line.decode("utf-8")
            except UnicodeDecodeError as e:
                yield error(path, line_no, None, f"not UTF-8: byte 0x{line[e.start]:02x} at column {e.start + 1}")
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as e:
                yield error(path, line_no, None, f"not valid JSON: {e.msg} (column {e.colno})")
                continue
            except RecursionError:
                yield error(path, line_no, None, "not valid JSON: nested too deeply")
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
