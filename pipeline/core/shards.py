"""CI shards: N machines verify one dataset, and one gate opens from their N shard records.

``pytest --tokfidelity-dataset=B3 --tokfidelity-shard=I/N`` judges the samples whose test name
(the sample id; ``line-N`` or ``ID@line-N`` where there is none or it repeats) hashes to shard I,
and runs the whole-dataset checks in every shard. Membership is ``sha256(name) mod N``: stable
across processes, machines and Python versions (``hash()`` is salted per process), and a sample
keeps its shard when others are added.

A shard run writes ``<state dir>/gates/<DATASET>.shard-I-of-N.json``: its counts, whether it was
green, and the same pins a full record holds (golden files, tokenizer fingerprint and files,
code and library fingerprints). It never writes the dataset's full record. ``merge_shards``
(``tokfidelity gate merge``) reads the N records gathered into one state dir and decides, with the
same ``decide`` a full run uses on the merged counts, whether the full record is written open.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import gate
from .decision import Completeness, Counts, decide
from .fingerprints import changed_inputs
from .pins import Pins

__all__ = ["Shard", "parse_shard", "shard_number", "shard_record_path", "shard_record_files", "read_shard_records",
           "ShardRecord", "SHARD_KIND", "GREEN", "FAILED", "write_shard_record", "merge_shards"]

SHARD_KIND = "shard"  # a shard record's "kind"; a full record has none
GREEN, FAILED = "green", "failed"  # a shard record's status (never "open": a shard opens nothing)
_NAME = re.compile(r"^\.?(?P<dataset>.+)\.shard-(?P<index>\d+)-of-(?P<of>\d+)")


@dataclass(frozen=True, slots=True)
class Shard:
    """Shard ``index`` of ``of`` (1 <= index <= of)."""

    index: int
    of: int

    def __str__(self) -> str:
        return f"{self.index}/{self.of}"

    def holds(self, name: str) -> bool:
        return shard_number(name, self.of) == self.index


def parse_shard(text: str) -> Shard:
    """``"I/N"`` -> Shard; ValueError saying what is expected."""
    m = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", text or "")
    if not m:
        raise ValueError(f"expected I/N (shard I of N, e.g. 2/4), got {text!r}")
    index, of = int(m.group(1)), int(m.group(2))
    if not 1 <= index <= of:
        raise ValueError(f"expected I/N with 1 <= I <= N, got {text!r}")
    return Shard(index, of)


def shard_number(name: str, of: int) -> int:
    """The shard (1..of) a sample belongs to, from its test name."""
    digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).digest()
    return int.from_bytes(digest[:8], "big") % of + 1


def shard_record_path(state_dir: str | os.PathLike, dataset: str, shard: Shard) -> Path:
    return Path(state_dir) / "gates" / f"{dataset}.shard-{shard.index}-of-{shard.of}.json"


def shard_record_files(state_dir: str | os.PathLike, dataset: str) -> list[Path]:
    """Every file in the state dir that looks like a shard record of ``dataset`` (copies included:
    ``B3.shard-1-of-3 (1).json`` from a second artifact download is a duplicate, not noise)."""
    folder = Path(state_dir) / "gates"
    if not folder.is_dir():
        return []
    prefix = f"{dataset}.shard-"
    return sorted(p for p in folder.iterdir() if p.name.startswith(prefix) and p.suffix == ".json" and p.is_file())


@dataclass(frozen=True)
class ShardRecord:
    path: Path
    record: Mapping[str, Any]  # {} when unreadable
    problem: str | None = None  # why the file is not a usable shard record

    @property
    def shard(self) -> Shard | None:
        s = self.record.get("shard") if isinstance(self.record, Mapping) else None
        if isinstance(s, Mapping) and type(s.get("index")) is int and type(s.get("of")) is int and 1 <= s["index"] <= s["of"]:
            return Shard(s["index"], s["of"])
        return None


def read_shard_records(state_dir: str | os.PathLike, dataset: str) -> list[ShardRecord]:
    out = []
    for path in shard_record_files(state_dir, dataset):
        try:
            record = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as e:
            out.append(ShardRecord(path, {}, f"{path}: unreadable ({e})"))
            continue
        except RecursionError:  # JSON nested deeper than the parser goes: never a record this code wrote
            out.append(ShardRecord(path, {}, f"{path}: unreadable (nested too deeply to be a shard record)"))
            continue
        if not isinstance(record, dict):
            out.append(ShardRecord(path, {}, f"{path}: not a JSON object"))
            continue
        rec = ShardRecord(path, record)
        if record.get("kind") != SHARD_KIND or rec.shard is None:
            out.append(ShardRecord(path, record, f"{path}: not a shard record (field 'kind' or 'shard' missing or malformed)"))
        elif record.get("dataset") != dataset:
            out.append(ShardRecord(path, record, f"{path}: a shard record of dataset {record.get('dataset')!r}, not {dataset!r}"))
        else:
            m = _NAME.match(path.name)
            named = Shard(int(m.group("index")), int(m.group("of"))) if m else None
            if named is not None and named != rec.shard:
                out.append(ShardRecord(path, record, f"{path}: the file is named shard {named} but holds shard {rec.shard}"))
            else:
                out.append(rec)
    return out


# Fields on which every shard of one merge must agree: what was verified, with what, by what code.
AGREED = (
    ("golden_sha256", "golden files"),
    ("tokenizer", "tokenizer"),
    ("tokenizer_fingerprint", "tokenizer fingerprint"),
    ("profile", "profile"),
    ("view", "API view"),
    ("views", "API views"),
    ("template_sha256", "chat template"),
    ("code_fingerprint", "code and library fingerprint"),
    ("reconstructor", "reconstruction judged"),
    ("renderer", "prompt rendering judged"),
    ("own_files", "project's own source files"),
    ("format", "record format"),
)


def shard_set_problems(records: list[ShardRecord]) -> tuple[list[str], dict[int, ShardRecord], int | None]:
    """(problems, the usable record of each shard index, N) of the shard records of one dataset:
    unreadable, split differently, duplicated, missing, failed, or disagreeing on what they verified."""
    problems = [r.problem for r in records if r.problem]
    usable = [r for r in records if not r.problem]
    splits = sorted({r.shard.of for r in usable})
    if not usable:
        return problems + ["no usable shard record"], {}, None
    if len(splits) > 1:
        listing = "; ".join(f"{r.path.name} is shard {r.shard}" for r in usable)
        return problems + [f"the shard records come from different splits ({listing})"], {}, None
    of = splits[0]
    by_index: dict[int, list[ShardRecord]] = {}
    for r in usable:
        by_index.setdefault(r.shard.index, []).append(r)
    for index, group in sorted(by_index.items()):
        if len(group) > 1:
            problems.append(f"shard {index}/{of} is duplicated: {', '.join(r.path.name for r in group)}")
    missing = [i for i in range(1, of + 1) if i not in by_index]
    if missing:
        problems.append(f"shard record(s) missing: {', '.join(f'{i}/{of}' for i in missing)} (expected {of} files "
                        f"named <DATASET>.shard-I-of-{of}.json)")
    first = {i: group[0] for i, group in by_index.items()}
    for i, r in sorted(first.items()):
        if r.record.get("status") != GREEN:
            problems.append(f"shard {i}/{of} did not pass ({r.path.name}): {r.record.get('reason') or 'status ' + repr(r.record.get('status'))}")
    ref = first[min(first)]
    for i, r in sorted(first.items()):
        for key, label in AGREED:
            if r.record.get(key) != ref.record.get(key):
                problems.append(f"shard {i}/{of} ({r.path.name}) differs from shard {ref.shard} in its {label}")
    return problems, first, of


def write_shard_record(
    dataset_dir: str | os.PathLike,
    shard: Any,
    *,
    state_dir: str | os.PathLike | None = None,
    green: bool,
    reason: str,
    counts: Counts,
    expected: int,
    checks_passed: Sequence[str],
    tokenizer_spec: str | None,
    tokenizer_fingerprint: str | None,
    profile: str | None,
    view: str | Sequence[str],
    pins: Pins | None = None,
    pytest_args: Sequence[str] = (),
    tokenizer_location: str | None = None,
    prompts: str = "on",
    own: Mapping[str, Any] | None = None,
) -> Path:
    """Record one shard's run (``<DATASET>.shard-I-of-N.json``): its counts, whether it was green,
    and the same pins as a full record. It opens nothing; ``merge_shards`` decides."""
    dataset_dir = Path(dataset_dir)
    record = {
        "format": gate.RECORD_FORMAT,
        "kind": SHARD_KIND,
        "shard": {"index": shard.index, "of": shard.of},
        "status": GREEN if green else FAILED,
        "reason": reason,
        "dataset": dataset_dir.name,
        "prompts": prompts,
        **gate.pinned_fields(dataset_dir, tokenizer_spec, tokenizer_fingerprint, profile, view, pins, tokenizer_location, own),
        "expected": expected,
        "checks_passed": sorted(checks_passed),
        "counts": counts.to_record(),
        "pytest_args": list(pytest_args),
        "time": gate.now_iso(),
    }
    return gate.write_record_json(shard_record_path(state_dir or gate.default_state_dir(), dataset_dir.name, shard), record)


def _merged_problems(dataset_dir: Path, manifest: Any, shards: Mapping[int, Any]) -> tuple[list[str], Counts]:
    """What keeps merged, agreeing, green shard records from opening the gate: golden files or code
    that differ from what the shards ran, counts that do not add up to the dataset, the manifest's limits."""
    ref = shards[min(shards)].record
    golden, code = changed_inputs(ref, dataset_dir)
    problems = [f"{n} since the shards ran" for n in golden + code]
    if manifest is not None and (judged := gate.judged_views(ref)) != set(manifest.views):
        problems.append(f"the shards judged the views {', '.join(sorted(judged)) or 'none recorded'}, "
                        f"the manifest lists {', '.join(manifest.views)}")
    merged, checks = Counts(), None
    for index, shard in sorted(shards.items()):
        try:
            counts = Counts.from_dict(shard.record.get("counts", {}))
        except ValueError as e:
            problems.append(f"shard {shard.shard} ({shard.path.name}): {e}")
            continue
        if counts.samples != shard.record.get("expected") or counts.passed != counts.samples:
            problems.append(f"shard {shard.shard} ({shard.path.name}) passed {counts.passed} of {shard.record.get('expected')!r} samples")
        merged.merge(counts)
        these = set(shard.record.get("checks_passed") or ())
        checks = these if checks is None else checks & these
    if problems:
        return problems, merged
    expected = gate.count_samples(dataset_dir / "samples.jsonl") * max(1, len(gate.judged_views(ref)))
    decision = decide(merged, manifest, Completeness(expected=expected, passed=merged.passed, checks_passed=frozenset(checks or ())))
    return ([] if decision.open else [decision.reason]), merged


def merge_shards(
    dataset: str, *, golden_dir: str | os.PathLike | None = None, state_dir: str | os.PathLike | None = None
) -> gate.GateStatus:
    """Open the gate of ``dataset`` from the shard records gathered in the state dir: only when all N
    exist once, every one was green, they agree on golden files, tokenizer and code, those are this
    checkout's, and the merged counts pass ``decide`` (the known-divergence rate within the manifest's
    limit). Otherwise a closed record says which shard, or what, keeps it shut."""
    from .golden import GoldenError, load_manifest

    state = Path(state_dir) if state_dir is not None else gate.default_state_dir()
    gdir = Path(golden_dir) if golden_dir is not None else gate.default_golden_dir()
    command = f"tokfidelity gate merge --dataset {dataset}"
    try:
        dataset_dir = gate.resolve_dataset_dir(gdir, dataset)
    except ValueError as e:
        return gate.GateStatus(False, dataset, str(e), command, "name one dataset with --dataset (a folder NAME, or the NAME of NAME_*)", unknown=True)
    name = dataset_dir.name
    problems, shards, of = shard_set_problems(read_shard_records(state, name))
    try:
        manifest = load_manifest(dataset_dir)
    except GoldenError as e:
        problems.append(f"the manifest is invalid ({e})")
    merged = Counts()
    if not problems:
        problems, merged = _merged_problems(dataset_dir, manifest, shards)
    if problems:
        reason = f"merge of the shard records in {state / 'gates'} refused: " + "; ".join(problems)
        step = "run (again) the shards named above, gather their records in the state dir, then merge again"
        gate.write_closed_record(name, state_dir=state, reason=reason, counts=merged, pytest_args=[command], next_step=step)
        return gate.GateStatus(False, name, f"gate for {name} is closed: {reason}", command, f"{step}: `{command}`")
    ref = shards[min(shards)].record
    path = gate.write_open_record(
        dataset_dir, state_dir=state, tokenizer_spec=ref["tokenizer"], tokenizer_fingerprint=ref["tokenizer_fingerprint"],
        profile=ref["profile"], view=ref["views"] if isinstance(ref.get("views"), list) else ref["view"], counts=merged,
        pytest_args=[command] + [f"shard {i}/{of}: {' '.join(shards[i].record.get('pytest_args') or [])}" for i in sorted(shards)],
        prompts="off" if any(shards[i].record.get("prompts") == "off" for i in shards) else "on",
        pins=Pins(dict(ref.get("golden_files") or {}), dict(ref.get("tokenizer_files") or {}), dict(ref.get("template_files") or {}),
                  ref.get("template_sha256")),
        tokenizer_location=ref.get("tokenizer_location"),
        own={k: ref[k] for k in ("reconstructor", "renderer", "own_files") if k in ref} or None,
    )
    return gate.GateStatus(
        True, name,
        f"gate for {name} is open: {of} shard records merged ({merged.samples} samples, {merged.exact} exact, "
        f"{merged.policy} by policy, {merged.known} known divergences); record {path}",
        command,
    )
