"""Write what an engine captured as a golden dataset, safely re-runnable.

Each finished capture is appended whole to ``<dataset>/.capture-partial.jsonl`` as soon as it
is done, so a killed run loses at most the prompt in flight; running again skips every prompt
already captured (in the partial file or the finished ``samples.jsonl``). When all prompts are
done the manifest and ``samples.jsonl`` (prompt order) are written atomically and the partial
file is removed. Samples captured earlier for prompts that are not in this run's prompts are
kept after them (remove them from ``samples.jsonl`` by hand). Reviewed manifest settings (``max_known_divergence_rate``, ``accept``) of an
existing dataset are kept.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from ...core.files import read_input
from ...core.jsonl import read_json_lines
from ...core.golden import MANIFEST_FILE, SAMPLES_FILE, write_dataset
from ..prompts import Prompt
from .engine import CaptureEngine

__all__ = ["capture_dataset", "CaptureSummary", "sample_record", "PARTIAL_FILE"]

PARTIAL_FILE = ".capture-partial.jsonl"
KEPT_MANIFEST_KEYS = ("max_known_divergence_rate", "accept")


@dataclass
class CaptureSummary:
    dataset_dir: Path
    captured: int = 0  # this run
    reused: int = 0  # done by an earlier run
    kept: int = 0  # captured earlier for prompts not in this run: kept, never dropped
    failed: list[tuple[str, str]] = field(default_factory=list)  # (prompt id, error)
    finish_reasons: dict[str, int] = field(default_factory=dict)
    output_tokens: int = 0

    @property
    def total(self) -> int:
        return self.captured + self.reused + self.kept


def sample_record(prompt: Prompt, capture) -> dict:
    """The golden sample line for one capture (format: pipeline.core.golden)."""
    record = {"id": prompt.id, "messages": prompt.messages}
    if prompt.tools:
        record["tools"] = prompt.tools
    record.update(
        prompt_ids=capture.prompt_ids,
        output_ids=capture.output_ids,
        finish_reason=capture.finish_reason,
    )
    if getattr(capture, "response", None) is not None:
        record["response"] = capture.response
    if capture.meta:
        record["meta"] = capture.meta
    return record


def _read_done(path: Path) -> dict[str, dict]:
    """Whole records already written; a torn last line (killed mid-write), or any line that is not
    a whole sample record (not UTF-8, no output_ids), is ignored: its prompt is captured again."""
    done: dict[str, dict] = {}
    if not path.exists():
        return done
    for _, record in read_json_lines(path):  # a bad line's value is an error, not a dict: skipped
        if (
            isinstance(record, dict)
            and isinstance(record.get("id"), str)
            and isinstance(record.get("output_ids"), list)
            and "finish_reason" in record
        ):
            done[record["id"]] = record
    return done


def _finish_name(finish) -> str:
    return finish.get("type", "?") if isinstance(finish, dict) else str(finish)


def capture_dataset(
    engine: CaptureEngine,
    prompts: Iterable[Prompt],
    dataset_dir: str | os.PathLike,
    *,
    manifest: dict,
    sampling: dict,
    on_progress: Callable[[Prompt, dict | None, Exception | None], None] | None = None,
) -> CaptureSummary:
    """Capture every prompt with ``engine`` and write the dataset at ``dataset_dir``.

    ``manifest`` holds name, profile, tokenizer, api_view and source; the engine's
    ``describe()`` and the sampling settings are added to it. A prompt whose capture raises is
    reported (summary.failed, on_progress) and left out; the others are written.
    """
    dataset_dir = Path(dataset_dir)
    dataset_dir.mkdir(parents=True, exist_ok=True)
    partial_path = dataset_dir / PARTIAL_FILE
    done = _read_done(dataset_dir / SAMPLES_FILE)
    done.update(_read_done(partial_path))
    summary = CaptureSummary(dataset_dir)
    ordered: list[str] = []
    with open(partial_path, "a", encoding="utf-8") as partial:
        for prompt in prompts:
            ordered.append(prompt.id)
            if prompt.id in done:
                summary.reused += 1
                if on_progress:
                    on_progress(prompt, done[prompt.id], None)
                continue
            try:
                capture = engine.capture(prompt, sampling)
            except Exception as e:  # noqa: BLE001 - one bad prompt must not end the run
                summary.failed.append((prompt.id, f"{type(e).__name__}: {e}"))
                if on_progress:
                    on_progress(prompt, None, e)
                continue
            record = sample_record(prompt, capture)
            line = json.dumps(record, ensure_ascii=False, separators=(",", ":"))
            try:
                line.encode("utf-8")
            except UnicodeEncodeError:  # a lone surrogate (\ud800 in a prompt): written escaped, as it was given
                line = json.dumps(record, separators=(",", ":"))
            partial.write(line + "\n")
            partial.flush()
            done[prompt.id] = record
            summary.captured += 1
            if on_progress:
                on_progress(prompt, record, None)

    samples = [done[i] for i in ordered if i in done]
    listed = set(ordered)
    earlier = [record for i, record in done.items() if i not in listed]  # engine output is never thrown away
    summary.kept = len(earlier)
    samples += earlier
    for record in samples:
        reason = _finish_name(record["finish_reason"])
        summary.finish_reasons[reason] = summary.finish_reasons.get(reason, 0) + 1
        summary.output_tokens += len(record["output_ids"])
    full_manifest = dict(manifest)
    existing = dataset_dir / MANIFEST_FILE
    if existing.exists():
        try:
            old = json.loads(read_input(existing).decode("utf-8"))
        except (OSError, ValueError, RecursionError):  # not JSON (an integer too long to read included)
            old = {}
        for key in KEPT_MANIFEST_KEYS:
            if key in old and key not in manifest:
                full_manifest[key] = old[key]
    full_manifest.setdefault("max_known_divergence_rate", 0.0)
    full_manifest["engine"] = engine.describe()
    full_manifest["sampling"] = sampling
    full_manifest["samples"] = len(samples)
    write_dataset(dataset_dir, full_manifest, samples)
    if not summary.failed:
        partial_path.unlink(missing_ok=True)
    else:
        print(f"{partial_path}: kept ({len(summary.failed)} prompts failed; run again to retry them)", file=sys.stderr)
    return summary
