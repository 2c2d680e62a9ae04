"""CI shards: ``--tokfidelity-shard=I/N`` splits every dataset by a hash of the sample id,
each shard writes a shard record, and ``tokfidelity gate merge`` opens the gate only from all N of
them, green and agreeing."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from pipeline.cli import main
from pipeline.core import gate, shards
from pipeline.core.decision import DATASET_CHECKS, Counts
from pipeline.core.golden import load_manifest
from pipeline.core.shards import Shard, parse_shard, shard_number, shard_record_path
from pipeline.core.tokenizer import load_tokenizer
from pytest_tokfidelity.index import SampleIndex

ROOT = Path(__file__).resolve().parent.parent
SHIPPED = sorted(p for p in (ROOT / "golden").iterdir() if (p / "manifest.json").is_file())


# -- the split ------------------------------------------------------------------------------------
@pytest.mark.parametrize("text, shard", [("1/1", Shard(1, 1)), ("2/4", Shard(2, 4)), (" 4 / 4 ", Shard(4, 4))])
def test_parse_shard(text, shard):
    assert parse_shard(text) == shard and str(shard) == f"{shard.index}/{shard.of}"


@pytest.mark.parametrize("text", ["0/3", "4/3", "3", "1/0", "a/b", "", "-1/2", "1/2/3"])
def test_parse_shard_refuses(text):
    with pytest.raises(ValueError, match="I/N"):
        parse_shard(text)


@pytest.mark.parametrize("dataset", SHIPPED, ids=lambda p: p.name)
def test_shards_cover_every_shipped_sample_exactly_once(dataset):
    index = SampleIndex(dataset / "samples.jsonl")
    names = [index.name(p) for p in range(len(index))]
    assert len(names) == len(set(names)) > 0
    for of in (1, 2, 3, 5, 8):
        shards = [[n for n in names if Shard(i, of).holds(n)] for i in range(1, of + 1)]
        assert sorted(n for shard in shards for n in shard) == sorted(names)


def test_shards_cover_a_generated_dataset_exactly_once_and_evenly():
    names = [f"gen-{i:06d}" for i in range(20_000)] + ["line-7", "x@line-9", "\u00e9t\u00e9", "\ud800lone"]
    for of in (2, 3, 4, 7, 16):
        seen = Counter(shard_number(n, of) for n in names)
        assert sum(seen.values()) == len(names) and set(seen) == set(range(1, of + 1))
        assert max(seen.values()) < 1.1 * len(names) / of  # sha256 spreads ids evenly
        for n in names[:50]:
            assert [i for i in range(1, of + 1) if Shard(i, of).holds(n)] == [shard_number(n, of)]


def test_the_split_is_the_same_in_another_process():
    """hashlib, not hash(): another process, with another hash seed, puts each id in the same shard."""
    names = [f"b3-{i:04d}" for i in range(200)]
    here = [shard_number(n, 5) for n in names]
    code = "import json,sys; from pipeline.core.shards import shard_number; print(json.dumps([shard_number(n, 5) for n in json.load(sys.stdin)]))"
    env = {**os.environ, "PYTHONHASHSEED": "12345", "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-c", code], input=json.dumps(names), capture_output=True, text=True, env=env, check=True)
    assert json.loads(out.stdout) == here


# -- merging shard records -------------------------------------------------------------------------
@pytest.fixture
def golden(tmp_path) -> Path:
    """A copy of the shipped B3_magicoder (112 real Kimi K2.5 samples, two reviewed divergences)."""
    shutil.copytree(ROOT / "golden" / "B3_magicoder", tmp_path / "golden" / "B3_magicoder")
    return tmp_path / "golden"


def shard_sizes(dataset: Path, of: int) -> dict[int, int]:
    index = SampleIndex(dataset / "samples.jsonl")
    return Counter(shard_number(index.name(p), of) for p in range(len(index)))


def write_shards(golden: Path, state: Path, of: int = 3, *, skip=(), known: dict[int, int] | None = None, **per_shard):
    """Shard records as green shard runs write them (counts: every sample exact, or ``known[i]`` known)."""
    dataset = golden / "B3_magicoder"
    manifest = load_manifest(dataset)
    fingerprint = load_tokenizer(manifest.tokenizer).fingerprint
    sizes = shard_sizes(dataset, of)
    for i in range(1, of + 1):
        if i in skip:
            continue
        k = (known or {}).get(i, 0)
        args = dict(
            state_dir=state, green=True, reason="complete and green", counts=Counts(samples=sizes[i], exact=sizes[i] - k, known=k),
            expected=sizes[i], checks_passed=DATASET_CHECKS,
            tokenizer_spec=manifest.tokenizer, tokenizer_fingerprint=fingerprint, profile=manifest.profile,
            view=manifest.api_view, pytest_args=[f"--tokfidelity-shard={i}/{of}"],
        )
        args.update(per_shard.get(f"shard{i}", {}))
        shards.write_shard_record(dataset, Shard(i, of), **args)
    return dataset


def merge(golden: Path, state: Path) -> gate.GateStatus:
    return shards.merge_shards("B3", golden_dir=golden, state_dir=state)


def test_all_green_agreeing_shards_open_the_gate(golden, tmp_path):
    state = tmp_path / "state"
    write_shards(golden, state)
    merged = merge(golden, state)
    assert merged.open, merged.message
    record = gate.read_record(state, "B3_magicoder")
    assert record["status"] == "open" and record["counts"]["samples"] == 112 and record["counts"]["exact"] == 112
    assert "kind" not in record  # a full record, not a shard record
    assert gate.check_gate("B3_magicoder", golden_dir=golden, state_dir=state).open


def test_a_missing_shard_keeps_the_gate_closed(golden, tmp_path):
    state = tmp_path / "state"
    write_shards(golden, state, skip=(2,))
    merged = merge(golden, state)
    assert not merged.open and "missing: 2/3" in merged.message
    assert gate.read_record(state, "B3_magicoder")["status"] == "closed"
    assert not gate.check_gate("B3_magicoder", golden_dir=golden, state_dir=state).open


def test_a_failed_shard_keeps_the_gate_closed_and_closes_an_open_one(golden, tmp_path):
    state = tmp_path / "state"
    write_shards(golden, state)
    assert merge(golden, state).open
    write_shards(golden, state, shard2={"green": False, "reason": "1 test(s) failed"})
    merged = merge(golden, state)
    assert not merged.open and "shard 2/3 did not pass" in merged.message and "1 test(s) failed" in merged.message
    assert not gate.check_gate("B3_magicoder", golden_dir=golden, state_dir=state).open


def test_a_duplicated_shard_keeps_the_gate_closed(golden, tmp_path):
    state = tmp_path / "state"
    write_shards(golden, state)
    first = shard_record_path(state, "B3_magicoder", Shard(1, 3))
    shutil.copy(first, first.with_name("B3_magicoder.shard-1-of-3 (1).json"))  # a second artifact download
    merged = merge(golden, state)
    assert not merged.open and "shard 1/3 is duplicated" in merged.message


def test_a_renamed_shard_record_is_refused(golden, tmp_path):
    state = tmp_path / "state"
    write_shards(golden, state, skip=(3,))
    first = shard_record_path(state, "B3_magicoder", Shard(1, 3))
    shutil.copy(first, shard_record_path(state, "B3_magicoder", Shard(3, 3)))  # shard 1 passed off as shard 3
    merged = merge(golden, state)
    assert not merged.open and "named shard 3/3 but holds shard 1/3" in merged.message and "missing: 3/3" in merged.message


@pytest.mark.parametrize("field, value, label", [
    ("tokenizer_fingerprint", "0" * 64, "tokenizer fingerprint"),
    ("profile", "kimi-k2", "profile"),
])
def test_a_mismatched_shard_keeps_the_gate_closed(golden, tmp_path, field, value, label):
    state = tmp_path / "state"
    write_shards(golden, state)
    path = shard_record_path(state, "B3_magicoder", Shard(3, 3))
    record = json.loads(path.read_text())
    record[field] = value
    path.write_text(json.dumps(record))
    merged = merge(golden, state)
    assert not merged.open and f"shard 3/3 ({path.name}) differs from shard 1/3 in its {label}" in merged.message


def test_shards_of_other_golden_files_or_code_are_refused(golden, tmp_path):
    state = tmp_path / "state"
    write_shards(golden, state)
    path = shard_record_path(state, "B3_magicoder", Shard(2, 3))
    record = json.loads(path.read_text())
    record["golden_files"]["samples.jsonl"] = "0" * 64
    record["golden_sha256"] = "0" * 64
    path.write_text(json.dumps(record))
    assert "differs from shard 1/3 in its golden files" in merge(golden, state).message
    write_shards(golden, state)  # all agree again, but the disk has moved on since
    with open(golden / "B3_magicoder" / "samples.jsonl", "a") as f:
        f.write('{"id": "late", "output_ids": [1, 2], "finish_reason": "stop"}\n')
    merged = merge(golden, state)
    assert not merged.open and "golden file samples.jsonl changed since the shards ran" in merged.message


def test_shards_of_different_splits_are_refused(golden, tmp_path):
    state = tmp_path / "state"
    write_shards(golden, state, of=3)
    write_shards(golden, state, of=2)
    merged = merge(golden, state)
    assert not merged.open and "different splits" in merged.message


def test_the_merged_known_divergence_rate_is_held_to_the_manifest(golden, tmp_path):
    state = tmp_path / "state"
    limit = load_manifest(golden / "B3_magicoder").max_known_divergence_rate
    over = int(limit * 112) + 1  # within one shard's share, over the whole dataset's
    write_shards(golden, state, known={1: over})
    merged = merge(golden, state)
    assert not merged.open and "max_known_divergence_rate" in merged.message
    write_shards(golden, state, known={1: 1, 2: 1})
    assert merge(golden, state).open


def test_no_shard_records_and_unknown_dataset(golden, tmp_path, capsys):
    state = tmp_path / "state"
    merged = merge(golden, state)
    assert not merged.open and "no usable shard record" in merged.message
    assert main(["gate", "merge", "--dataset", "NOPE", "--golden-dir", str(golden), "--state-dir", str(state)]) == 2  # a usage error
    assert "NOPE" in capsys.readouterr().err


def test_cli_gate_merge(golden, tmp_path, capsys):
    state = tmp_path / "state"
    write_shards(golden, state, skip=(1,))
    argv = ["gate", "merge", "--dataset", "B3", "--golden-dir", str(golden), "--state-dir", str(state)]
    assert main(argv) == 1
    assert "missing: 1/3" in capsys.readouterr().err
    write_shards(golden, state)
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "3 shard records merged" in out and "gate for B3_magicoder is open" in out


# -- the plugin: shard runs, then the merge ---------------------------------------------------------
def run_shard(golden: Path, state: Path, shard: str, *extra: str) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly", "--tokfidelity-dataset=D1",
           f"--tokfidelity-golden-dir={golden}", f"--tokfidelity-state-dir={state}", f"--tokfidelity-shard={shard}", *extra]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(cmd, cwd=golden.parent, capture_output=True, text=True, env=env)


def test_three_shards_then_merge_open_the_gate_that_gated_stages_accept(tmp_path):
    """End to end: a CI matrix of 3 shard runs (each with its own state dir, as separate machines; one
    under xdist), their records gathered into one state dir, merged; the gated stages' own check accepts it."""
    from argparse import Namespace

    from pipeline.commands.gated import closed_gate_exit

    golden = tmp_path / "golden"
    shutil.copytree(ROOT / "golden" / "D1_glaive", golden / "D1_glaive")
    gathered = tmp_path / "gathered"
    ran = []
    for i in (1, 2, 3):
        state = tmp_path / f"machine{i}"
        result = run_shard(golden, state, f"{i}/3", *(("-n", "2") if i == 2 else ()))  # one machine under xdist
        assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
        assert f"shard {i}/3 green" in result.stdout
        ran += [line for line in result.stdout.splitlines() if line.startswith("D1_glaive:")]
        records = sorted(p.name for p in (state / "gates").iterdir())
        assert records == [f"D1_glaive.shard-{i}-of-3.json"]  # never the full record
        (gathered / "gates").mkdir(parents=True, exist_ok=True)
        shutil.copy(state / "gates" / records[0], gathered / "gates")
    total = sum(int(line.split(": ", 1)[1].split(" samples")[0]) for line in ran)
    assert total == 70  # every sample of D1_glaive ran in exactly one shard
    stage = Namespace(dataset="D1", golden_dir=str(golden), state_dir=str(gathered), tokenizer=None)
    assert closed_gate_exit(stage, "train")[0] is not None  # nothing merged yet: refused
    argv = ["gate", "merge", "--dataset", "D1", "--golden-dir", str(golden), "--state-dir", str(gathered)]
    assert main(argv) == 0
    code, status = closed_gate_exit(stage, "train")
    assert code is None and status.open
    assert gate.read_record(gathered, "D1_glaive")["counts"]["samples"] == 70


def test_a_failing_shard_writes_a_failed_record_and_the_merge_names_it(tmp_path):
    golden = tmp_path / "golden"
    shutil.copytree(ROOT / "golden" / "D1_glaive", golden / "D1_glaive")
    snapshots = golden / "D1_glaive" / "__snapshots__"
    if snapshots.exists():
        shutil.rmtree(snapshots)  # the reviewed divergences gone: their samples fail as new
    state = tmp_path / "state"
    results = {i: run_shard(golden, state, f"{i}/2") for i in (1, 2)}
    failed = [i for i, r in results.items() if r.returncode != 0]
    assert failed, "D1_glaive has reviewed divergences; without them some shard must fail"
    merged = shards.merge_shards("D1", golden_dir=golden, state_dir=state)
    assert not merged.open
    for i in failed:
        assert f"shard {i}/2 did not pass" in merged.message


@pytest.mark.parametrize("args, message", [
    (("--tokfidelity-shard=0/2",), "--tokfidelity-shard: expected I/N with 1 <= I <= N"),
    (("--tokfidelity-shard=2",), "--tokfidelity-shard: expected I/N"),
    (("--tokfidelity-shard=1/2", "--snapshot-update"), "--snapshot-update cannot run sharded"),
])
def test_shard_usage_errors(tmp_path, args, message):
    golden = tmp_path / "golden"
    shutil.copytree(ROOT / "golden" / "D1_glaive", golden / "D1_glaive")
    shard = next(a for a in args if a.startswith("--tokfidelity-shard=")).split("=", 1)[1]
    result = run_shard(golden, tmp_path / "state", shard, *[a for a in args if not a.startswith("--tokfidelity-shard=")])
    assert result.returncode == 4, result.stdout[-2000:]
    assert message in result.stderr
    assert not (tmp_path / "state" / "gates").exists()


def test_whole_dataset_checks_run_in_every_shard(tmp_path):
    """A stop-token problem in one sample fails test_stop_tokens in every shard, not only in the sample's own."""
    from pipeline.core.golden import write_dataset
    from pipeline.core.profiles import bind_profile

    kimi = load_tokenizer("kimi-k2.5")
    profile = bind_profile("kimi-k2.5", kimi)
    ids = lambda i: kimi.encode_ordinary(f"think {i}") + [profile.ids["think_end"]] + kimi.encode_ordinary(f"answer {i}")  # noqa: E731
    samples = [{"id": f"s{i}", "output_ids": ids(i) + [profile.stop_id], "finish_reason": "stop"} for i in range(12)]
    samples.append({"id": "bad-stop", "output_ids": ids(99) + [163533], "finish_reason": "stop"})
    golden = tmp_path / "golden"
    write_dataset(golden / "D1_stops", {"name": "D1_stops", "profile": "kimi-k2.5", "tokenizer": "kimi-k2.5", "source": "test"}, samples)
    own = shard_number("bad-stop", 2)
    for i in (1, 2):
        result = run_shard(golden, tmp_path / f"state{i}", f"{i}/2", "-rf")
        assert result.returncode == 1
        assert "FAILED golden/D1_stops/samples.jsonl::test_stop_tokens" in result.stdout
        assert ("golden/D1_stops/samples.jsonl::bad-stop" in result.stdout) == (i == own)
        record = json.loads((tmp_path / f"state{i}" / "gates" / f"D1_stops.shard-{i}-of-2.json").read_text())
        assert record["status"] == "failed" and "test_stop_tokens" not in record["checks_passed"]
