"""A sample line read in one typed pass (pipeline/core/sample_lines.py) gives what the general reader gives.

``SampleIndex.read`` reads a compactly written line with ``read_compact`` and ``parse_sample(...,
ids_checked=True)``, and any other line with orjson, the duplicate-key check and ``parse_sample``. Here
every line of every shipped dataset, and lines written to trip the shortcut (keys written twice at the
top or inside a value, bools, floats, negative and huge ids, whitespace, escaped keys, NaN, lone
surrogates, invalid UTF-8, deep nesting, unknown keys, nulls, line endings), are read both ways: the
same sample, or the same error naming the same line and field. And the shortcut is taken where it should
be (every shipped line, as write_dataset writes them), so the comparison is not of the general reader
with itself.
"""

from __future__ import annotations

import json
from pathlib import Path

import orjson
import pytest

from pipeline.core.golden import GoldenError, GoldenSample
from pipeline.core.sample_lines import read_compact
from pytest_tokfidelity import index as index_module
from pytest_tokfidelity.index import SampleIndex

ROOT = Path(__file__).resolve().parent.parent
SHIPPED = sorted((ROOT / "golden").glob("*/samples.jsonl"))

BASE = {
    "id": "s1",
    "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "caf\u00e9 \u2014 \"quoted\" \\ back"}],
    "tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": "object", "required": ["a"],
                                                                           "properties": {"a": {"type": "string"}}}}}],
    "prompt_ids": [1, 2, 3],
    "output_ids": [4, 5, 4294967295, 0],
    "finish_reason": "stop",
}


def compact(sample) -> bytes:
    return json.dumps(sample, ensure_ascii=False, separators=(",", ":")).encode()


def _with(**changes) -> bytes:
    return compact({**BASE, **changes})


# Compact lines with id lists of ints from 0 to 2**32 - 1 (or null) and no key written twice: read in one
# pass (whatever parse_sample then makes of them).
TAKEN = [
    compact(BASE),
    compact(BASE) + b"\r\n",
    compact(BASE).replace(b'"output_ids":[4,', b'"output_ids":[ 4 ,'),  # whitespace inside the id list
    _with(output_ids=None),
    _with(prompt_ids=None),
    _with(output_ids=[]),
    compact({k: v for k, v in BASE.items() if k != "output_ids"}),
    compact({k: v for k, v in BASE.items() if k != "finish_reason"}),
    _with(finish_reason="tool_calls"),
    _with(finish_reason="weird"),
    _with(id=""),
    _with(id=7),
    _with(id=2**70),
    _with(id=True),
    _with(messages="not a list"),
    _with(tools={"a": 1}),
    _with(chat_template_kwargs={"enable_thinking": False}),
    _with(chat_template_kwargs=[1]),
    _with(tool_choice="required"),
    _with(tool_choice="sometimes"),
    _with(response={"choices": [{"message": {"content": "x"}, "finish_reason": "stop"}]}),
    _with(response="text"),
    _with(quirk="re-split", meta={"source": "x", "n": [1, 2.5, None, True]}),
    _with(meta={"big": 2**70, "neg": -(2**70), "float": 1.5e300, "zero": -0.0}),
    compact(BASE).replace(b'"Be brief."', b'"\\ud83d\\ude00 pair"'),
    compact(BASE).replace(b'"finish_reason":"stop"', b'"finish_reason":"stop","meta":' + b"[" * 200 + b"]" * 200),
    # "output_ids": written inside a value too: the output ids are not cut out of the line before the split
    _with(meta={"output_ids": [1, 2]}),
    compact({"meta": {"output_ids": [1, 2]}, **BASE}),  # written inside a value before the top-level key
    _with(meta={'x"output_ids': [7]}),  # a key that ends with output_ids: written x\"output_ids
    compact({"meta": {"output_ids": [1]}, **{k: v for k, v in BASE.items() if k != "output_ids"}}),  # nested only
    compact({"output_ids": BASE["output_ids"], **{k: v for k, v in BASE.items() if k != "output_ids"}}),  # first key
    compact({**{k: v for k, v in BASE.items() if k != "output_ids"}, "output_ids": [9, 8]}),  # last key
]

# A key twice, whitespace or an escape between the keys, a bool, a float, an id outside 0..2**32 - 1,
# NaN, a lone surrogate, invalid UTF-8, a control character, nesting past the limit, a BOM, a non-object:
# the general reader decides.
LEFT = [
    compact(BASE) + b" \n",
    b" " + compact(BASE),
    compact(BASE).replace(b'{"id":"s1",', b'{"id":"s1","id":"s2",'),  # a top-level key twice
    compact(BASE).replace(b'"output_ids":', b'"output_ids":[9],"output_ids":'),
    compact(BASE).replace(b'"output_ids":', b'"output\\u005fids":[9],"output_ids":'),  # twice, once escaped
    compact(BASE).replace(b'"output_ids":', b'"meta":{"output_ids":[1]},"output\\u005fids":'),  # escaped; nested plain
    compact(BASE).replace(b'{"role":"system",', b'{"role":"system","role":"user",'),  # twice inside a value
    compact(BASE).replace(b'"type":"string"', b'"type":"string","type":"number"'),
    compact(BASE).replace(b'{"id":', b'{"\\u0069d":'),  # an escaped key: the same key, more bytes
    compact(BASE).replace(b'{"id":"s1",', b'{"\\u0069d":"s0","id":"s1",'),
    compact(BASE).replace(b'"id":"s1",', b'"id" : "s1" ,'),
    _with(output_ids=[1, True, 3]),
    _with(output_ids=[False]),
    _with(prompt_ids=[1, True]),
    _with(output_ids=[1, 2.0]),
    _with(output_ids=[1, -1]),
    _with(output_ids=[4294967296]),
    _with(output_ids=[2**63 - 1]),
    _with(output_ids=[2**63]),
    _with(output_ids=[2**64 - 1]),
    _with(output_ids=[2**64]),
    _with(output_ids=[10**30]),
    compact(BASE).replace(b"4294967295", b"1e400"),
    compact(BASE).replace(b"4294967295", b"1E2"),
    _with(output_ids=["1"]),
    _with(output_ids=[[1]]),
    _with(output_ids=[None]),
    _with(output_ids={"a": 1}),
    compact(BASE).replace(b'"finish_reason":"stop"', b'"finish_reason":"stop","meta":NaN'),
    compact(BASE).replace(b'"finish_reason":"stop"', b'"finish_reason":"stop","meta":Infinity'),
    compact(BASE).replace(b'"Be brief."', b'"\\ud800 lone"'),  # a lone surrogate, escaped (capture writes these)
    compact(BASE).replace(b'"Be brief."', b'"\xff\xfe"'),  # not UTF-8
    compact(BASE).replace(b'"Be brief."', b'"tab\there"'),  # a raw control character
    compact(BASE).replace(b'{"id":"s1"', b'{"id\\n":"s0","id":"s1"'),
    compact(BASE).replace(b'"finish_reason":"stop"', b'"finish_reason":"stop","meta":' + b"[" * 1100 + b"]" * 1100),
    b"\xef\xbb\xbf" + compact(BASE),
    b"[1, 2]",
    b"{}",
    b'"just a string"',
    b"{not json}",
    compact(BASE)[:-1],
    compact(BASE) + b"}",
    compact(BASE) + b"x",
]
TRICKY = TAKEN + LEFT


def _read_both(tmp_path: Path, lines: list[bytes], monkeypatch) -> list[tuple]:
    """Each line read by SampleIndex.read with the shortcut and without it."""
    path = tmp_path / "samples.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    index = SampleIndex(path)
    fd = index_module.os.open(path, index_module.os.O_RDONLY)
    try:
        fast = [index.read(p, fd) for p in range(len(index))]
        with monkeypatch.context() as m:
            m.setattr(index_module, "read_compact", lambda data: None)
            general = [index.read(p, fd) for p in range(len(index))]
    finally:
        index_module.os.close(fd)
    return list(zip(fast, general, strict=True))


def _same(fast, general) -> None:
    assert type(fast) is type(general)
    if isinstance(general, GoldenError):
        assert (str(fast), fast.line, fast.field) == (str(general), general.line, general.field)
    else:
        assert fast == general


@pytest.mark.parametrize("line", TRICKY, ids=range(len(TRICKY)))
def test_a_tricky_line_reads_as_the_general_reader_reads_it(tmp_path, monkeypatch, line):
    # A line that is blank after its first bytes would be skipped by the index: every line here is not.
    ((fast, general),) = _read_both(tmp_path, [line], monkeypatch)
    _same(fast, general)


@pytest.mark.parametrize("line", TAKEN, ids=range(len(TAKEN)))
def test_a_compact_line_is_read_in_one_pass_as_orjson_reads_it(line):
    assert read_compact(line) == orjson.loads(line)


@pytest.mark.parametrize("line", LEFT, ids=range(len(LEFT)))
def test_a_line_the_pass_cannot_prove_is_left_to_the_general_reader(line):
    assert read_compact(line) is None


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.parent.name)
def test_every_shipped_line_reads_as_the_general_reader_reads_it(tmp_path, monkeypatch, path):
    lines = [line for line in path.read_bytes().splitlines() if line.strip()]
    assert all(read_compact(line) is not None for line in lines), "the shortcut should read every shipped line"
    for fast, general in _read_both(tmp_path, lines, monkeypatch):
        assert isinstance(general, GoldenSample)
        _same(fast, general)
