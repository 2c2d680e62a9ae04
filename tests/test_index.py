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


# Writes, per process, where each dataset's index was built and whether it is what this process
# builds itself.
WHERE_PROBE = """
import json, os
COLLECTED = {}
def pytest_collection_finish(session):
    plugin = session.config.pluginmanager.get_plugin("tokfidelity-session")
    COLLECTED.update({ds.name: ds.indexed for ds in plugin.datasets})
def pytest_sessionfinish(session):
    plugin = session.config.pluginmanager.get_plugin("tokfidelity-session")
    worker = session.config.workerinput["workerid"] if hasattr(session.config, "workerinput") else "main"
    out = {}
    for ds in plugin.datasets:
        call = ds.indexed_elsewhere
        entry = {"elsewhere": call is not None and call.pid != os.getpid(), "indexed": ds.indexed, "at_collection": COLLECTED.get(ds.name)}
        if ds.indexed:
            index, others = ds.read_index()
            fields = lambda i: [i.ids, list(i.offsets), list(i.lengths), list(i.lines), list(i.crcs), i.sha256, i.duplicate_of, i.problem]
            entry["same"] = fields(ds.index) == fields(index) and ds._other_files == others
            entry["names"] = [ds.index.name(p) for p in range(len(ds.index))]
        out[ds.name] = entry
    with open(os.path.join(os.environ["PROBE_DIR"], f"where-{worker}.json"), "w") as f:
        json.dump(out, f)
"""


@pytest.mark.parametrize("mode", [(), ("-n", "2"), ("--collect-only",)], ids=["lone", "xdist", "collect-only"])
def test_a_lone_run_indexes_in_a_forked_process_what_it_would_index_itself(pytester, monkeypatch, mode):
    """While a lone pytest loads the tokenizers, its golden files are indexed in a forked process
    (session.py); xdist's processes and --collect-only index their own."""
    from test_plugin import exact_samples, make_dataset

    samples = exact_samples(5)
    first = make_dataset(pytester.path, "W1_first", samples)
    with open(first / "samples.jsonl", "a") as f:  # a repeated id, a blank line, a line that is not JSON
        f.write(json.dumps(samples[1]) + "\n\n" + '{"id": "broken", "output_ids": [1, 2\n')
    make_dataset(pytester.path, "W1_second", exact_samples(3))
    (pytester.path / "golden" / "W1_second" / "notes.md").write_text("a file the gate pins too\n")
    pytester.syspathinsert()
    pytester.makepyfile(tf_where=WHERE_PROBE)
    monkeypatch.setenv("PROBE_DIR", str(pytester.path))
    result = pytester.runpytest_subprocess(
        "-p", "no:randomly", "-p", "no:cacheprovider", "-p", "tf_where",
        f"--tokfidelity-state-dir={pytester.path / 'state'}", "--tokfidelity-dataset=W1", *mode,
    )
    where = {p.name: json.loads(p.read_text()) for p in pytester.path.glob("where-*.json")}
    if mode == ("-n", "2"):
        assert sorted(where) == ["where-gw0.json", "where-gw1.json", "where-main.json"]
        # the controller collects nothing (it indexes a dataset only once the tests ran, to count its samples)
        assert not any(d["at_collection"] for d in where["where-main.json"].values())
    else:
        assert sorted(where) == ["where-main.json"]
    for process, datasets in where.items():
        for name, d in datasets.items():
            assert d["elsewhere"] == (mode == () and process == "where-main.json"), (process, name)
            if d["indexed"]:
                assert d["same"], (process, name)
    if mode != ("--collect-only",):
        result.assert_outcomes(passed=16, failed=2)  # the samples but the repeat and the broken line, and 4 checks a dataset


@pytest.mark.skipif(not hasattr(os, "fork"), reason="forks")
def test_an_index_the_forked_process_failed_to_build_is_built_here(tmp_path):
    from pytest_tokfidelity.dataset import DatasetRun
    from pytest_tokfidelity.judge_pools import ForkedCall
    from test_plugin import exact_samples, make_dataset

    ds = DatasetRun(0, make_dataset(tmp_path, "W2", exact_samples(4)), None, None)
    ds.indexed_elsewhere = ForkedCall(lambda: 1 / 0)
    assert ds.index.ids == ["s0", "s1", "s2", "s3"]
    assert ds.index.sha256 == hashlib.sha256((ds.dir / "samples.jsonl").read_bytes()).hexdigest()
