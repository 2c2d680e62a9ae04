"""results.json: build one from a run, read one back (checked), merge several (CI shards), write it.

The format is documented in ``schema.py``. Everything here is plain data: the pytest plugin
gives per-dataset facts and per-sample records, ``tokfidelity report`` reads files back.
``write_outputs`` writes results.json and report.html together: both are drawn in memory and
written to temporary files first, so that an error leaves both old files as they were.

Merged files are complete for a dataset only when the samples they ran (``ran``: ranges of
positions) together are every sample of it, each once: counts alone cannot tell two overlapping
partial runs from one full run.
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from ..core.files import atomic_path, read_input
from ..core.names import view_release
from . import details
from .schema import SCHEMA, VERSION, ResultsError, check_document

__all__ = [
    "dataset_entry", "results_document", "read_results", "merge_results", "write_results", "write_outputs",
    "results_bytes", "rates", "dataset_fingerprint", "snapshot_update_command", "gate_state", "SELECTION_REASONS",
    "ranges",
]

# Partial-run reasons that only narrow the selection: shards merged together may cover it all.
SELECTION_REASONS = ("-k ", "-m ", "--deselect", "--lf", "--tokfidelity-sample", "node ids given")
_WINDOW_KEYS = ("window",)


def _now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def dataset_fingerprint(file_hashes: Mapping[str, str]) -> str:
    """One sha256 over a dataset's files (name and sha256 of each)."""
    return hashlib.sha256(json.dumps(sorted(file_hashes.items())).encode()).hexdigest()


def snapshot_update_command(dataset: str, golden_dir: str | None = None) -> str:
    cmd = f"pytest --tokfidelity-dataset={dataset}"
    if golden_dir:
        cmd += f" --tokfidelity-golden-dir={golden_dir}"
    return cmd + " --snapshot-update"


def gate_state(note: str) -> str:
    """open | closed | unchanged, from the plugin's gate note."""
    return "open" if note.startswith("open") else "closed" if note.startswith("closed") else "unchanged"


def rates(counts: Mapping[str, Any]) -> dict[str, float]:
    n, tokens = counts.get("samples", 0), counts.get("tokens", 0)
    divergent = counts.get("policy", 0) + counts.get("known", 0) + counts.get("new", 0)

    def share(x: int) -> float:
        return round(x / n, 6) if n else 0.0

    return {
        "divergent_samples": share(divergent),
        "known_samples": share(counts.get("known", 0)),
        "new_samples": share(counts.get("new", 0)),
        "policy_samples": share(counts.get("policy", 0)),
        "hunks_per_1k_tokens": round(1000 * counts.get("hunks", 0) / tokens, 6) if tokens else 0.0,
    }


def dataset_entry(
    *, name: str, counts: Mapping[str, Any], samples_total: int, profile: str | None, tokenizer: str | None,
    tokenizer_fingerprint: str | None, view: str, golden_files: Mapping[str, str], accept: Mapping[str, float],
    max_known_divergence_rate: float, gate_note: str, problems: Sequence[str], partial_reasons: Sequence[str],
    wall_s: float, golden_dir: str | None = None, path: str | None = None,
    failed_checks: Sequence[Mapping[str, str]] = (), ran: Sequence[Sequence[int]] | None = None,
    by_view: Mapping[str, Mapping[str, Any]] | None = None,
) -> dict[str, Any]:
    """``ran``: the positions of the samples judged, as ranges (``ranges``); None: not known.
    ``by_view``: the counts of each view the samples were judged under (default: ``view``'s, ``counts``);
    ``counts`` are then their sum, a sample counted once per view."""
    counts = _plain_counts(counts)
    views = {v: _plain_counts(c) for v, c in (by_view or {view: counts}).items()}
    entry = {
        "name": name,
        "path": path,
        "profile": profile,
        "tokenizer": tokenizer,
        "tokenizer_fingerprint": tokenizer_fingerprint,
        "view": view,
        "dataset_fingerprint": dataset_fingerprint(golden_files),
        "golden_files": dict(golden_files),
        "accept": dict(accept),
        "max_known_divergence_rate": max_known_divergence_rate,
        "samples_total": samples_total,
        "samples_run": max((c.get("samples", 0) for c in views.values()), default=0),
        "counts": counts,
        "rates": rates(counts),
        "views": list(views),
        "by_view": {v: {"counts": c, "rates": rates(c), **({"engine": r} if (r := view_release(profile, v)) else {})}
                    for v, c in views.items()},
        "wall_s": round(wall_s, 3),
        "gate": {"state": gate_state(gate_note), "notes": [gate_note]},
        "problems": list(problems),
        "failed_checks": [dict(c) for c in failed_checks],
        "partial": bool(partial_reasons) or any(c.get("samples", 0) < samples_total for c in views.values()),
        "partial_reasons": list(partial_reasons),
        "snapshot_update": snapshot_update_command(name, golden_dir),
    }
    if ran is not None:
        entry["ran"] = [list(r) for r in ran]
    return entry


def _plain_counts(counts: Mapping[str, Any]) -> dict[str, Any]:
    return {k: (len(v) if isinstance(v, list) else v) for k, v in counts.items()}  # stale_snapshots: a count


def ranges(positions: Iterable[int]) -> list[list[int]]:
    """Sorted ``[start, end)`` ranges covering exactly ``positions``."""
    out: list[list[int]] = []
    for p in sorted(set(positions)):
        if out and out[-1][1] == p:
            out[-1][1] = p + 1
        else:
            out.append([p, p + 1])
    return out


def _sample_order(datasets: Sequence[Mapping[str, Any]]):
    order = {d["name"]: i for i, d in enumerate(datasets)}
    return lambda s: (order.get(s["dataset"], len(order)), s.get("line") or 0, s.get("id") or "")


def trim_details(samples: list[dict[str, Any]], limit: int) -> None:
    """Keep token windows for every new and every text-changing sample, and for the first ``limit``
    other samples of each dataset whose hunks all keep the text (samples come sorted)."""
    seen: dict[str, int] = {}
    for s in samples:
        if s["verdict"] == "new" or not s.get("detail") or not s.get("texts_identical") or \
                not all(h.get("text_preserving") for h in s.get("hunks", ())):
            continue
        n = seen[s["dataset"]] = seen.get(s["dataset"], 0) + 1
        if n > limit:
            s["detail"] = False
            for h in s["hunks"]:
                for key in _WINDOW_KEYS:
                    h.pop(key, None)


def results_document(
    datasets: list[dict[str, Any]], samples: list[dict[str, Any]], *, command: Sequence[str],
    partial_reasons: Sequence[str], code: Mapping[str, Any] | None = None, detail_limit: int | None = None,
) -> dict[str, Any]:
    detail_limit = details.DETAIL_LIMIT if detail_limit is None else detail_limit
    samples = sorted(samples, key=_sample_order(datasets))
    trim_details(samples, detail_limit)
    return {
        "schema": SCHEMA,
        "version": VERSION,
        "created": _now(),
        "command": list(command),
        "code": dict(code or {}),
        "partial": bool(partial_reasons) or any(d["partial"] for d in datasets),
        "partial_reasons": list(partial_reasons),
        "sources": [],
        "detail_limit": detail_limit,
        "datasets": datasets,
        "samples": samples,
    }


def read_results(path: str | os.PathLike) -> dict[str, Any]:
    """A results.json, checked against the schema; ResultsError names the file and field."""
    path = Path(path)
    try:
        text = read_input(path).decode("utf-8")  # a FIFO or a device is refused before it is read
    except OSError as e:
        raise ResultsError(f"{path}: cannot read: {e.strerror or e}") from None
    except UnicodeDecodeError as e:
        raise ResultsError(f"{path}: not UTF-8 (byte {e.start}): not a results.json") from None
    try:
        doc = json.loads(text, parse_constant=_no_constant)
    except RecursionError:
        raise ResultsError(f"{path}: not a results.json: nested too deeply") from None
    except ValueError as e:  # JSONDecodeError, NaN or Infinity, an integer of more than 4,300 digits
        raise ResultsError(f"{path}: not JSON: {e}") from None
    return check_document(doc, str(path))


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number JSON allows")


def _merge_counts(into: dict[str, Any], other: Mapping[str, Any]) -> None:
    for key, value in other.items():
        if isinstance(value, dict):
            target = into.setdefault(key, {})
            for k, v in value.items():
                target[k] = target.get(k, 0) + v
        else:
            into[key] = into.get(key, 0) + value


def _ran(d: Mapping[str, Any]) -> list[list[int]] | None:
    """Which samples a dataset entry covers; a complete entry of a file without ``ran`` covers all."""
    if "ran" in d:
        return [r for r in d["ran"] if r[1] > r[0]]
    if not d["partial"] and d["samples_run"] == d["samples_total"]:
        return [[0, d["samples_total"]]] if d["samples_total"] else []
    return None


def _union(a: list[list[int]], b: list[list[int]], name: str, where: str) -> list[list[int]]:
    out: list[list[int]] = []
    for start, end in sorted(a + b):
        if out and start < out[-1][1]:
            raise ResultsError(
                f"{where}: dataset {name}: samples at positions {start}..{min(end, out[-1][1]) - 1} were run in an "
                "earlier file too: the files overlap (the same shard twice, or -k selections that share samples); "
                "merge files whose runs share no sample"
            )
        if out and start == out[-1][1]:
            out[-1][1] = end
        else:
            out.append([start, end])
    return out


def _merge_dataset(into: dict[str, Any], other: Mapping[str, Any], where: str) -> None:
    for key in ("tokenizer_fingerprint", "dataset_fingerprint", "view", "views", "profile"):
        if into.get(key) is None:  # a shard that ran none of the dataset's samples never loaded its tokenizer
            into[key] = other.get(key)
        elif other.get(key) is not None and into[key] != other[key]:
            raise ResultsError(
                f"{where}: dataset {other['name']}: field '{key}' is {other.get(key)!r}, but an earlier file has "
                f"{into.get(key)!r}: these results come from different data, tokenizers or views and cannot be merged"
            )
    mine, theirs = into.get("ran"), _ran(other)
    into["ran"] = None if mine is None or theirs is None else _union(mine, theirs, other["name"], where)
    _merge_counts(into["counts"], other["counts"])
    for view, theirs in (other.get("by_view") or {}).items():
        _merge_counts(into.setdefault("by_view", {}).setdefault(view, {"counts": {}})["counts"], theirs["counts"])
    into["samples_run"] += other["samples_run"]
    if into["samples_run"] > into["samples_total"]:
        raise ResultsError(
            f"{where}: dataset {other['name']}: {into['samples_run']} samples run in all, more than its "
            f"{into['samples_total']}: the files overlap (the same shard twice?)"
        )
    into["wall_s"] = round(into["wall_s"] + other["wall_s"], 3)
    into["gate"]["notes"] += other["gate"]["notes"]
    into["problems"] += other["problems"]
    into["failed_checks"] = into.get("failed_checks", []) + other.get("failed_checks", [])
    into["partial_reasons"] += [r for r in other["partial_reasons"] if r not in into["partial_reasons"]]


def merge_results(docs: Iterable[tuple[str, Mapping[str, Any]]]) -> dict[str, Any]:
    """One document from several (e.g. CI shards of one run): counts summed, samples joined.
    A dataset is partial when its shards together ran fewer than all its samples, or any shard
    stopped for another reason than narrowing the selection."""
    datasets: dict[str, dict[str, Any]] = {}
    samples: dict[tuple[str, str], dict[str, Any]] = {}
    sources, command, code, detail_limit = [], [], {}, details.DETAIL_LIMIT
    for where, doc in docs:
        sources.append(where)
        command = command or doc["command"]
        code = code or doc.get("code", {})
        detail_limit = doc.get("detail_limit", detail_limit)
        for d in doc["datasets"]:
            if d["name"] in datasets:
                _merge_dataset(datasets[d["name"]], d, where)
            else:
                datasets[d["name"]] = json.loads(json.dumps(d))
                datasets[d["name"]]["ran"] = _ran(d)
        for s in doc["samples"]:
            key = (s["dataset"], s.get("id") or f"line {s.get('line')}", s.get("view"))
            if key in samples:
                view = f" under view {key[2]}" if key[2] else ""
                raise ResultsError(f"{where}: sample {key[0]}/{key[1]}{view} is in an earlier file too: the files overlap")
            samples[key] = s
    for d in datasets.values():
        states = sorted({gate_state(n) for n in d["gate"]["notes"]})
        d["gate"]["state"] = states[0] if len(states) == 1 else "mixed"
        d["rates"] = rates(d["counts"])
        for entry in (d.get("by_view") or {}).values():
            entry["rates"] = rates(entry["counts"])
        _merged_completeness(d)
    merged = results_document(list(datasets.values()), list(samples.values()), command=command,
                              partial_reasons=[], code=code, detail_limit=detail_limit)
    merged["partial"] = any(d["partial"] for d in merged["datasets"])
    merged["partial_reasons"] = sorted({r for d in merged["datasets"] if d["partial"] for r in d["partial_reasons"]})
    merged["sources"] = sources
    return merged


def _merged_completeness(d: dict[str, Any]) -> None:
    """A merged dataset is complete when its files together ran each of its samples once, and none
    stopped for another reason than narrowing the selection."""
    others = [r for r in d["partial_reasons"] if not r.startswith(SELECTION_REASONS)]
    ran = d.pop("ran")
    if ran is None:
        others.append("a file does not say which samples it ran (written by an older tokfidelity): "
                      "whether the files cover every sample cannot be told")
        d["partial_reasons"].append(others[-1])
    else:
        d["ran"] = ran
    covered = ran == ([[0, d["samples_total"]]] if d["samples_total"] else [])
    d["partial"] = not covered or bool(others)


def results_bytes(doc: Mapping[str, Any]) -> bytes:
    """results.json's bytes: UTF-8, or ASCII with escapes when a string holds a lone surrogate."""
    try:
        return (json.dumps(doc, ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")
    except UnicodeEncodeError:
        return (json.dumps(doc, separators=(",", ":")) + "\n").encode("ascii")


def write_results(doc: Mapping[str, Any], out_dir: str | os.PathLike) -> Path:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    path = out / "results.json"
    with atomic_path(path) as tmp:
        tmp.write_bytes(results_bytes(doc))
    return path


def write_outputs(doc: Mapping[str, Any], out_dir: str | os.PathLike) -> list[Path]:
    """DIR/results.json and DIR/report.html, together or not at all: both are drawn first, then both
    written to temporary files beside them; only when both are written are they renamed over the
    old files (results.json, then report.html). An error before that leaves the old files as they were."""
    from .html import render_page

    results, page = results_bytes(doc), render_page(doc)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / "results.json", out / "report.html"]
    with atomic_path(paths[1]) as page_tmp:
        page_tmp.write_bytes(page)
        with atomic_path(paths[0]) as results_tmp:
            results_tmp.write_bytes(results)
    return paths

