"""Reading JSONL, one bad line at a time: the one reader and the one error mapper.

``json_lines(lines, path)`` decodes each non-blank line (a UTF-8 byte-order mark before the first
is dropped) and gives ``(line number, value)``; a line that is not UTF-8, not JSON, nested too
deeply or holding an integer longer than Python reads gives a ``JsonLineError`` as its value (naming
the file when ``path`` is given, and the line), and reading goes on. Every JSONL reader in the project (golden samples, prompts,
generation records, training records, capture's partial file, ``reconstruct``'s stdin) uses it,
so a bad line reads the same everywhere.

``read_records`` adds what golden samples and prompts files share: a parser per record and
unique ids.
"""

from __future__ import annotations

import codecs
import json
import os
import re
import sys
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from .errors import TokfidelityError
from .files import open_input

try:
    from orjson import dumps as _dumps
except ImportError:  # pragma: no cover - orjson is a dependency; without it every line takes the slow path
    _dumps = None

__all__ = ["JsonLineError", "JsonTextError", "duplicate_key", "duplicate_key_message", "parse_json", "json_lines", "read_json_lines", "read_records"]

T = TypeVar("T")
E = TypeVar("E", bound=Exception)


class JsonLineError(TokfidelityError, ValueError):
    """A JSONL line that is not a JSON value: ``message`` says why (not UTF-8, not valid JSON)."""


class JsonTextError(ValueError):
    """Text that ``parse_json`` cannot read: ``message`` says why and where (column), ``line`` which line."""

    def __init__(self, message: str, line: int = 1):
        super().__init__(message)
        self.message, self.line = message, line


def _long_integer(text: str) -> JsonTextError:
    limit = sys.get_int_max_str_digits()
    m = re.search(r"(?:^|[:\[,])\s*(-?[0-9]{%d,})" % (limit + 1), text) if limit else None  # a number where a value goes
    if m is None:
        return JsonTextError(f"not valid JSON: an integer of more than {limit} digits")
    start = m.start(1)
    line = text.count("\n", 0, start) + 1
    column = start - (text.rfind("\n", 0, start) + 1) + 1
    return JsonTextError(f"not valid JSON: an integer of {m.end(1) - start:,} digits (column {column}); "
                         f"Python reads at most {limit} (no token id or count is that long)", line)


def parse_json(text: str) -> Any:
    """``json.loads(text)``, every way it can fail a ``JsonTextError`` saying why and where: not JSON,
    nested too deeply, an integer longer than Python reads (4,300 digits)."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise JsonTextError(f"not valid JSON: {e.msg} (column {e.colno})", e.lineno) from None
    except RecursionError:
        raise JsonTextError("not valid JSON: nested too deeply") from None
    except ValueError:  # Python's limit on integer digits (sys.get_int_max_str_digits)
        raise _long_integer(text) from None


class _Duplicated(dict):
    """An object in which ``key`` appeared more than once (what ``_pairs`` builds, on the slow path only)."""

    key: str


def _pairs(pairs: list[tuple[str, Any]]) -> dict:
    value = dict(pairs)
    if len(value) == len(pairs):
        return value
    seen: set[str] = set()
    marked = _Duplicated(value)
    marked.key = next(k for k, _ in pairs if k in seen or seen.add(k))
    return marked


# A JSON string, and the colon after it when it is a key. Scanning valid JSON from its start, each match
# begins at a string's opening quote (nothing outside strings holds a quote), so keys are counted exactly.
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"(\s*:)?')


def _key_count(raw: bytes) -> int:
    found = _STRING.findall(raw)
    return len(found) - found.count(b"")


def duplicate_key(raw: bytes, value: Any) -> str | None:
    """The path of the first key written twice in one object of ``raw`` (``"messages[1].content"``), or
    None. ``value`` is ``raw`` decoded. JSON readers keep the last value in silence, so a person reading
    the file may see another value than the one used. Cheap where it matters: a line that is exactly
    the compact serialisation of its value (as ``write_dataset`` writes samples) cannot hold a duplicate,
    which one ``orjson.dumps`` and a byte comparison show; another line holds one only if it writes more
    keys than that serialisation (two C-level regex scans); only then is it parsed again to say where.
    Costs: ``bench/bench_input_limits.py``."""
    if _dumps is not None:
        try:
            canonical = _dumps(value)
        except (TypeError, ValueError):  # a lone surrogate, an integer past 64 bits: the slow path decides
            canonical = None
        if canonical is not None:
            raw = raw.strip()
            if canonical == raw or _key_count(raw) == _key_count(canonical):  # each object's keys once in canonical
                return None
    try:
        marked = json.loads(raw.decode("utf-8"), object_pairs_hook=_pairs)
    except (ValueError, RecursionError):
        return None  # not JSON: the caller's decoding says so
    stack: list[tuple[str, Any]] = [("", marked)]
    while stack:  # iterative: as deep as the reader allows, without recursion
        where, item = stack.pop()
        if isinstance(item, _Duplicated):
            return f"{where}.{item.key}" if where else item.key
        if isinstance(item, dict):
            stack.extend((f"{where}.{k}" if where else k, v) for k, v in reversed(item.items()))
        elif isinstance(item, list):
            stack.extend((f"{where}[{i}]", v) for i, v in reversed(list(enumerate(item))))
    return None


def duplicate_key_message(field: str) -> str:
    return (f"key {field.rsplit('.', 1)[-1]!r} appears twice in one object; JSON readers keep only the last value, "
            "which a person reading the file may not see: remove one")


def _decode(raw: bytes, path: os.PathLike | str | None, line_no: int, unique_keys: bool = False) -> Any:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        return JsonLineError(f"not UTF-8: byte 0x{raw[e.start]:02x} at column {e.start + 1}", path=path, line=line_no)
    try:
        value = parse_json(text.rstrip("\r\n"))  # without its line ending: an error's column is the line's own
    except JsonTextError as e:
        return JsonLineError(e.message, path=path, line=line_no)
    if unique_keys and isinstance(value, (dict, list)):
        field = duplicate_key(raw, value)
        if field is not None:
            return JsonLineError(duplicate_key_message(field), path=path, line=line_no, field=field)
    return value


def json_lines(lines: Iterable[bytes], path: os.PathLike | str | None = None, *, unique_keys: bool = False) -> Iterator[tuple[int, Any]]:
    """``(line number, decoded value or JsonLineError)`` for each non-blank line of ``lines`` (bytes).
    ``unique_keys``: a key written twice in one object is the line's error (``duplicate_key``)."""
    for line_no, raw in enumerate(lines, 1):
        if line_no == 1 and raw.startswith(codecs.BOM_UTF8):  # some editors write one
            raw = raw[len(codecs.BOM_UTF8) :]
        if raw.strip():
            yield line_no, _decode(raw, path, line_no, unique_keys)


def read_json_lines(path: os.PathLike | str, *, unique_keys: bool = False) -> Iterator[tuple[int, Any]]:
    """``json_lines`` over a file, read as bytes (errors name the file)."""
    with open_input(path) as f:  # a FIFO or a device is refused, not waited on
        yield from json_lines(f, path, unique_keys=unique_keys)


def read_records(path: Path, parse: Callable[[Any, Path, int], T], error: type[E], *, unique_keys: bool = False) -> Iterator[T | E]:
    """``parse(obj, path, line)`` for each non-blank line of an open-able file, in order.
    ``parse`` raises ``error(path, line, field, message)`` for a bad record; bad lines come
    out as ``error`` objects in their place. Records must have a unique ``.id`` (and, with
    ``unique_keys``, no object a key twice)."""
    seen: dict[str, int] = {}
    for line_no, obj in read_json_lines(path, unique_keys=unique_keys):
        if isinstance(obj, JsonLineError):
            yield error(path, line_no, obj.field, obj.message)
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
