"""SampleIndex reads samples.jsonl in blocks (pytest_tokfidelity/index.py): whatever the block size,
it finds the lines a line-by-line reading finds, with the same offsets, line numbers, ids and
CRCs, and the sha256 of the whole file."""

from __future__ import annotations

import codecs
import hashlib
import json
import os
import random
import zlib

import pytest

from pipeline.core.golden import GoldenError
from pytest_tokfidelity import index as index_module
from pytest_tokfidelity.index import SampleIndex


def reference(data: bytes) -> dict:
    """What reading the file a line at a time gives (lines end at b"\\n"; a BOM on line 1 is skipped;
    blank lines are skipped; an id is the object's "id", a non-empty string or an integer)."""
    out = {"offsets": [], "lengths": [], "lines": [], "crcs": [], "ids": []}
    offset = 0
    for line_no, line in enumerate(data.split(b"\n") if data else [], 1):
        full = line + b"\n" if offset + len(line) < len(data) else line
        start = offset
        if line_no == 1 and full.startswith(codecs.BOM_UTF8):
            full, start = full[3:], start + 3
        if full.strip():
            try:
                obj = json.loads(full)
                value = obj.get("id") if isinstance(obj, dict) else None
            except ValueError:
                value = None
            value = str(value) if type(value) is int else value if isinstance(value, str) and value else None
            out["offsets"].append(start)
            out["lengths"].append(len(full))
            out["lines"].append(line_no)
            out["crcs"].append(zlib.crc32(full))
            out["ids"].append(value)
        offset += len(line) + 1
    return out


def random_file(rng: random.Random) -> bytes:
    lines = []
    for _ in range(rng.randrange(0, 15)):
        kind = rng.random()
        if kind < 0.6:
            ids = ",".join(str(rng.randrange(200_000)) for _ in range(rng.randrange(40)))
            lines.append(f'{{"id":"s{rng.randrange(6)}","output_ids":[{ids}],"finish_reason":"stop"}}'.encode())
        elif kind < 0.75:
            lines.append(rng.choice([b"", b" ", b"\t", b"\r", b" \x0b\x0c"]))
        elif kind < 0.9:
            lines.append(f'{{"output_ids":[1],"id":"late{rng.randrange(3)}"}}'.encode())
        else:
            lines.append(rng.choice([b"not json", b"[1, 2]", b'{"id": 7}', b'{"id": "caf\xc3\xa9"}']))
    data = b"\n".join(lines) + rng.choice([b"", b"\n", b"\r\n"])
    return codecs.BOM_UTF8 + data if rng.random() < 0.2 else data


@pytest.mark.parametrize("block", [1, 2, 7, 64, 1 << 24])
def test_blocks_of_any_size_index_what_a_line_by_line_reading_finds(tmp_path, monkeypatch, block):
    monkeypatch.setattr(index_module, "_BLOCK", block)
    rng = random.Random(block)
    for n in range(60):
        data = random_file(rng)
        path = tmp_path / f"samples-{n}.jsonl"
        path.write_bytes(data)
        index = SampleIndex(path)
        want = reference(data)
        got = {key: list(getattr(index, key)) for key in want}
        assert got == want, data
        assert index.sha256 == hashlib.sha256(data).hexdigest()
        fd = os.open(path, os.O_RDONLY)
        try:  # each line reads back whole, past its CRC check
            for p in range(len(index)):
                sample = index.read(p, fd)
                assert not (isinstance(sample, GoldenError) and "changed on disk" in str(sample)), data
        finally:
            os.close(fd)


def test_no_thread_outlives_the_pass(tmp_path):
    """The judges are forked after indexing, which needs a process with one thread."""
    import threading

    path = tmp_path / "samples.jsonl"
    path.write_bytes(b'{"id":"a","output_ids":[1],"finish_reason":"stop"}\n' * 1000)
    before = threading.active_count()  # (an xdist worker has execnet's threads)
    SampleIndex(path)
    assert threading.active_count() == before
    assert not [t for t in threading.enumerate() if t.name.startswith("tokfidelity-sha256")]
