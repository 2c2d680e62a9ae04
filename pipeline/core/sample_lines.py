"""A golden sample line read in one typed pass, where that gives exactly what the general reader gives.

The general reader of a ``samples.jsonl`` line (``pytest_tokfidelity/index.py``) decodes it with orjson,
looks for a key written twice (``jsonl.duplicate_key``: an ``orjson.dumps`` of the whole value and a
byte comparison) and checks that each token id is an int (``golden.parse_sample``: one C-level pass over
each id list). With ~3,700 ids a line, the dump and the check cost about as much again as the decode.

``read_compact`` does the same work in one pass over the ids, for a line written compactly (as
``write_dataset`` writes it), and answers None for any other line, which the general reader then reads:

- msgspec splits the line into its top-level keys and their values' raw bytes (``dict[str, Raw]``),
  without decoding them;
- the two id lists (``output_ids``, ``prompt_ids``) are decoded by msgspec as lists of ints from 0 to
  2**32 - 1, or null: a bool, a float, a string, an int out of that range fails the pass (orjson reads
  these ints as the same ints; the general reader decides the rest);
- every other value is decoded by orjson from its own bytes (a JSON value decodes alike alone or inside
  the line), and checked for a key written twice inside it;
- the line's length must be exactly the fewest bytes that can write ``{``, its keys (their characters
  between quotes), their values, ``:``, ``,`` and ``}``: every key is then written once, with no
  whitespace and no escape (a key written twice adds its bytes; msgspec keeps one of them).

The output ids, most of a line's bytes, are taken out before the split where ``"output_ids":`` is written
once in the line and followed by ``[``: the bytes up to the next ``]`` are decoded as above (msgspec fails
anything but a whole array of ints), and the line with ``[]`` in their place goes through the steps above,
its answer taking the ids only when it holds a top-level ``output_ids``. That key is then this one
occurrence: ``"output_ids":`` can only be written as the end of an object's key (a quote inside a string is
written escaped, and the quote after ``ids`` has no backslash before it), the key checks above find every
top-level key written plainly, and the cut-out bytes hold no key. So the split is not spent scanning
the ids a second time.

So a line this reads decodes to the value orjson gives, holds no duplicate key, and its id lists hold ints
only: ``parse_sample(..., ids_checked=True)`` makes the same sample of it, or raises the same error.
``tests/test_sample_lines.py`` compares it with the general reader on every shipped line and on lines
written to differ (duplicates, bools, floats, big ints, whitespace, escapes, depth, unknown keys).
"""

from __future__ import annotations

from typing import Annotated, Any

from .jsonl import duplicate_key

try:
    import msgspec
    from orjson import loads as _loads
except ImportError:  # pragma: no cover - both are dependencies; without them every line takes the general reader
    msgspec = None

__all__ = ["read_compact", "ID_FIELDS"]

ID_FIELDS = frozenset({"output_ids", "prompt_ids"})
_OUTPUT_IDS = b'"output_ids":'
_OUTPUT_IDS_ARRAY = _OUTPUT_IDS + b"["
_MAX_NESTING = 1000  # brackets in one value: below orjson's depth limit counted from the line's top (1024)

if msgspec is not None:
    _Id = Annotated[int, msgspec.Meta(ge=0, le=2**32 - 1)]
    _split = msgspec.json.Decoder(dict[str, msgspec.Raw]).decode
    _ids = msgspec.json.Decoder(list[_Id] | None).decode
    _failed: tuple[type[Exception], ...] = (msgspec.DecodeError, ValueError, TypeError, RecursionError)


def read_compact(data: bytes) -> dict[str, Any] | None:
    """The line ``data`` (one line of a samples file, its line ending included or not) decoded, when it
    is a compactly written JSON object with no key written twice and int-only id lists (module
    docstring); None where the general reader must decide."""
    if msgspec is None:
        return None
    at = data.find(_OUTPUT_IDS_ARRAY)
    if at >= 0:  # the output ids, most of the line, decoded once (not also scanned by the split)
        start = at + len(_OUTPUT_IDS)
        end = data.find(b"]", start) + 1
        if end and data.count(_OUTPUT_IDS) == 1:
            try:
                ids = _ids(memoryview(data)[start:end])
            except _failed:
                ids = None
            if ids is not None:
                out = _read(data[:start] + b"[]" + data[end:])
                if out is None:
                    return None  # the line without its ids fails a check: so does the whole line
                if "output_ids" in out:  # the cut was the top-level key's value
                    out["output_ids"] = ids
                    return out
    return _read(data)


def _read(data: bytes) -> dict[str, Any] | None:
    """read_compact's answer, from the whole line."""
    try:
        parts = _split(data)
    except _failed:
        return None
    end = len(data)
    if data.endswith(b"\n"):
        end -= 2 if data.endswith(b"\r\n") else 1
    size = 1 + len(parts)  # the braces and the commas between the keys
    out: dict[str, Any] = {}
    try:
        for key, part in parts.items():
            raw = memoryview(part)
            size += len(key.encode()) + 3 + len(raw)  # a key's fewest bytes: its characters and two quotes; then ':'
            if key in ID_FIELDS:
                out[key] = _ids(raw)
                continue
            data_part = bytes(raw)
            if data_part.count(b"[") + data_part.count(b"{") >= _MAX_NESTING:
                return None
            value = _loads(data_part)
            if (type(value) is dict or type(value) is list) and duplicate_key(data_part, value) is not None:
                return None
            out[key] = value
    except _failed:
        return None
    if not parts or size != end:
        return None
    return out
