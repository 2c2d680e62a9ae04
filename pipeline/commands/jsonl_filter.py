"""What ``reconstruct`` and ``render`` share: JSONL in, one JSONL line out per input line, in order.

Each non-blank input line (bytes, decoded line by line: a byte that is not UTF-8 is that line's
error, whatever the locale) becomes ``convert(value)``; a line that is not JSON, or that ``convert``
rejects with one of ``errors``, becomes ``{"error", "line"}`` in its place and a message naming
the line on stderr. The other lines still come out.

A string holding a lone surrogate (a ``\\ud800`` escape without its pair: half of a UTF-16 pair, not
a character) is its line's error, naming the field: tokenizers either refuse it or silently encode
U+FFFD in its place, and neither is what the text says.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable, Iterable
from typing import Any, TextIO

from ..core.jsonl import JsonLineError, json_lines

__all__ = ["filter_lines", "lone_surrogate"]

_SURROGATE = re.compile("[\ud800-\udfff]")


def lone_surrogate(value: Any) -> str | None:
    """Where the first lone surrogate in a decoded JSON value is ("field 'messages[0].content': ..."), or None.
    Iterative: a value nested as deep as the JSON reader allows is walked without recursion."""
    stack = [("", value)]
    while stack:
        where, item = stack.pop()
        if isinstance(item, str):
            m = _SURROGATE.search(item)
            if m:
                where = where.encode("utf-8", "backslashreplace").decode("utf-8")[:200]  # a key may hold one too
                return (f"field '{where or '(top level)'}': a lone surrogate U+{ord(m.group()):04X} at character {m.start()} "
                        "(half of a UTF-16 pair, not a character: a tokenizer refuses it or writes U+FFFD); fix the text")
        elif isinstance(item, dict):
            for key, child in reversed(item.items()):
                stack.append((f"{where}.{key}" if where else key, child))
                stack.append((f"{where}.{key}" if where else key, key))  # the key itself, checked first
        elif isinstance(item, list):
            stack.extend((f"{where}[{i}]", child) for i, child in reversed(list(enumerate(item))))
    return None


def filter_lines(source: Iterable[bytes], name: str, convert: Callable[[Any], dict], errors: tuple[type[Exception], ...],
                 out: TextIO, *, ensure_ascii: bool = True) -> int:
    """Write ``convert(value)`` or an error object for each line of ``source``; the number of errors."""
    failures = 0
    for line_no, value in json_lines(source):
        try:
            if isinstance(value, JsonLineError):
                raise value
            surrogate = lone_surrogate(value)
            if surrogate:
                raise ValueError(surrogate)
            result = convert(value)
        except (JsonLineError, ValueError, *errors) as e:
            error = str(e)
        else:
            out.write(json.dumps(result, separators=(",", ":")) + "\n")
            continue
        failures += 1
        print(f"{name}:{line_no}: {error}", file=sys.stderr)
        out.write(json.dumps({"error": error, "line": line_no}, ensure_ascii=ensure_ascii) + "\n")
    out.flush()
    return failures
