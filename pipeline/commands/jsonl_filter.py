"""What ``reconstruct`` and ``render`` share: JSONL in, one JSONL line out per input line, in order.

Each non-blank input line (bytes, decoded line by line: a byte that is not UTF-8 is that line's
error, whatever the locale) becomes ``convert(value)``; a line that is not JSON, or that ``convert``
rejects with one of ``errors``, becomes ``{"error", "line"}`` in its place and a message naming
the line on stderr. The other lines still come out.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterable
from typing import Any, TextIO

from ..core.jsonl import JsonLineError, json_lines

__all__ = ["filter_lines"]


def filter_lines(source: Iterable[bytes], name: str, convert: Callable[[Any], dict], errors: tuple[type[Exception], ...],
                 out: TextIO, *, ensure_ascii: bool = True) -> int:
    """Write ``convert(value)`` or an error object for each line of ``source``; the number of errors."""
    failures = 0
    for line_no, value in json_lines(source):
        try:
            if isinstance(value, JsonLineError):
                raise value
            result = convert(value)
        except (JsonLineError, *errors) as e:
            error = str(e)
        else:
            out.write(json.dumps(result, separators=(",", ":")) + "\n")
            continue
        failures += 1
        print(f"{name}:{line_no}: {error}", file=sys.stderr)
        out.write(json.dumps({"error": error, "line": line_no}, ensure_ascii=ensure_ascii) + "\n")
    out.flush()
    return failures
