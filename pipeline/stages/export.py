"""Training records for drafter training: ``{id, input_ids, loss_mask}``, token ids only.

``tokfidelity build --in DIR --out OUT`` writes:

* ``OUT/train.jsonl``: one JSON object a line, ``{"id": str, "input_ids": [int], "loss_mask": [0|1],
  "prompt_len": int, "source": "capture" | "reconstruction"}``. ``input_ids`` is the prompt (rendered with
  the profile's chat template by ``pipeline.core.render``) followed by the model's output ids (stop token
  included when it stopped); ``loss_mask`` is 0 on every prompt position and 1 on every output position,
  same length as ``input_ids``. These are the per-sample ``input_ids`` / ``loss_mask`` that SpecForge's
  offline EAGLE-3 data and vllm-project/speculators' EAGLE-3 data carry (their hidden-state files add
  ``hidden_state``/``hidden_states`` next to them: ``tokfidelity hidden-states`` writes those), without
  re-tokenising any text.
* ``OUT/export.json``: profile, tokenizer and its fingerprint, the input folder, counts.

Inputs: a golden dataset folder (``manifest.json`` + ``samples.jsonl``: output ids as the engine
captured them; where ``prompt_ids`` are recorded, our rendering must equal them or the build fails with
a diagnosis), or a ``tokfidelity generate`` folder (``run.json`` + ``generations.jsonl``: reconstructed
output ids; records whose check is not ``ok`` are left out and counted, never used).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.profiles import Profile
from ..core.render import RenderError, render_prompt
from ..core.tokenizer import Tokenizer

__all__ = [
    "training_record",
    "prompt_difference",
    "BuildInput",
    "BuildResult",
    "open_build_input",
    "build_records",
    "write_export",
    "read_training_records",
    "TRAIN_FILE",
    "EXPORT_META_FILE",
]

TRAIN_FILE = "train.jsonl"
EXPORT_META_FILE = "export.json"


def training_record(sample_id: str, prompt_ids: Sequence[int], output_ids: Sequence[int], source: str) -> dict[str, Any]:
    return {
        "id": sample_id,
        "input_ids": [*prompt_ids, *output_ids],
        "loss_mask": [0] * len(prompt_ids) + [1] * len(output_ids),
        "prompt_len": len(prompt_ids),
        "source": source,
    }


def prompt_difference(ours: Sequence[int], golden: Sequence[int], tokenizer: Tokenizer, context: int = 4) -> str | None:
    """None when equal; else where the rendered prompt leaves the golden prompt ids, with token texts."""
    if list(ours) == list(golden):
        return None
    n = next((i for i, (a, b) in enumerate(zip(ours, golden)) if a != b), min(len(ours), len(golden)))

    def window(ids: Sequence[int]) -> str:
        lo = max(0, n - context)
        parts = []
        for i in range(lo, min(len(ids), n + context + 1)):
            mark = ">" if i == n else ""
            text = repr(tokenizer.token_text(ids[i])) if tokenizer.is_valid_id(ids[i]) else "(outside the vocabulary)"
            parts.append(f"{mark}{ids[i]}:{text}")
        return " ".join(parts) or "(end)"

    return (
        f"rendered prompt ({len(ours)} ids) differs from the golden prompt_ids ({len(golden)} ids) at index {n}; "
        f"rendered [{window(ours)}] vs golden [{window(golden)}]. The profile's chat format does not match the "
        "engine's template: fix the profile (pipeline/profiles.py chat_format, chat_default_system) or pipeline/render.py"
    )


@dataclass
class BuildInput:
    kind: str  # "golden" | "generations"
    path: Path  # the file read
    profile_name: str
    tokenizer_spec: str


def open_build_input(folder: os.PathLike | str) -> BuildInput:
    """Recognise a golden dataset folder or a generate output folder; ValueError says what was found."""
    folder = Path(folder)
    if (folder / "manifest.json").is_file():
        from ..core.golden import load_manifest

        manifest = load_manifest(folder)
        return BuildInput("golden", manifest.samples_path, manifest.profile, manifest.tokenizer)
    if (folder / "run.json").is_file():
        from .generate import RECORDS_FILE

        run_path = folder / "run.json"
        try:
            run = json.loads(run_path.read_text(encoding="utf-8"))
        except ValueError as e:  # not JSON, or not UTF-8
            raise ValueError(f"{run_path}: not valid JSON ({e})") from None
        spec = (run.get("tokenizer_spec") or run.get("tokenizer")) if isinstance(run, dict) else None
        if not isinstance(run, dict) or not isinstance(run.get("profile"), str) or not isinstance(spec, str):
            raise ValueError(f"{run_path}: fields 'profile' and 'tokenizer' missing (is this a `tokfidelity generate` --out folder?)")
        return BuildInput("generations", folder / RECORDS_FILE, run["profile"], spec)
    raise ValueError(
        f"{folder} is neither a golden dataset (manifest.json + samples.jsonl) nor a `tokfidelity generate` "
        "output folder (run.json + generations.jsonl)"
    )


@dataclass
class BuildResult:
    records: list[dict[str, Any]] = field(default_factory=list)
    left_out: list[tuple[str, str]] = field(default_factory=list)  # (where, why): flagged or unusable
    prompt_mismatches: list[tuple[str, str]] = field(default_factory=list)  # (where, diagnosis): fail the build
    prompt_checked: int = 0  # samples whose golden prompt_ids were compared


def _rows(path: Path) -> Iterator[tuple[int, Any]]:
    with open(path, "rb") as f:
        for line_no, line in enumerate(f, 1):
            if line.strip():
                try:
                    yield line_no, json.loads(line.decode("utf-8"))
                except json.JSONDecodeError as e:
                    yield line_no, ValueError(f"not valid JSON: {e.msg} (column {e.colno})")
                except UnicodeDecodeError as e:
                    yield line_no, ValueError(f"not UTF-8: byte 0x{line[e.start]:02x} at column {e.start + 1}")
                except RecursionError:
                    yield line_no, ValueError("not valid JSON: nested too deeply")


def build_records(source: BuildInput, profile: Profile, tokenizer: Tokenizer, on_progress=None) -> BuildResult:
    """Training records for every usable sample of ``source``."""
    result = BuildResult()
    kind = "capture" if source.kind == "golden" else "reconstruction"
    if source.kind == "golden":
        from ..core.golden import read_samples

        items = ((s.line, s) for s in read_samples(source.path.parent))  # a GoldenError is an Exception with .line
    else:
        items = _rows(source.path)
    for line, item in items:
        where = f"{source.path}:{line}"
        if on_progress:
            on_progress(1)
        if isinstance(item, Exception):
            result.left_out.append((where, str(item)))
            continue
        if source.kind == "golden":
            sample_id, messages, tools, output_ids, golden_prompt = item.id, item.messages, item.tools, item.output_ids, item.prompt_ids
        else:
            if not isinstance(item, dict):
                result.left_out.append((where, f"expected a generation record (a JSON object), got {type(item).__name__}"))
                continue
            if item.get("check") != "ok":
                result.left_out.append((f"{where} (id {item.get('id')!r})", f"check is {item.get('check')!r}: {item.get('check_detail', '')}"))
                continue
            sample_id, messages, tools, output_ids, golden_prompt = item.get("id"), item.get("messages"), item.get("tools"), item.get("output_ids"), None
            if not isinstance(output_ids, list) or not all(type(i) is int for i in output_ids):
                result.left_out.append((f"{where} (id {sample_id!r})", "field 'output_ids': expected a list of token ids"))
                continue
        if output_ids and (min(output_ids) < 0 or max(output_ids) >= tokenizer.n_vocab):
            bad = sorted({i for i in output_ids if not 0 <= i < tokenizer.n_vocab})
            result.left_out.append((
                f"{where} (id {sample_id!r})",
                f"field 'output_ids': ids {bad[:5]} are outside the vocabulary of {tokenizer.name} (0..{tokenizer.n_vocab - 1})",
            ))
            continue
        if not messages:
            result.left_out.append((f"{where} (id {sample_id!r})", "field 'messages' missing: the prompt cannot be rendered"))
            continue
        try:
            prompt_ids = render_prompt(messages, tools, profile, tokenizer)
        except RenderError as e:
            result.left_out.append((f"{where} (id {sample_id!r})", str(e)))
            continue
        if golden_prompt is not None:
            result.prompt_checked += 1
            diagnosis = prompt_difference(prompt_ids, golden_prompt, tokenizer)
            if diagnosis:
                result.prompt_mismatches.append((f"{where} (id {sample_id!r})", diagnosis))
                continue
        result.records.append(training_record(sample_id, prompt_ids, output_ids, kind))
    return result


def write_export(out_dir: os.PathLike | str, records: Sequence[dict[str, Any]], meta: dict[str, Any]) -> Path:
    """Write train.jsonl and export.json, each atomically (a re-run replaces both whole)."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    train = out_dir / TRAIN_FILE
    tmp = train.with_name(train.name + ".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        for record in records:
            f.write(json.dumps(record, separators=(",", ":")) + "\n")
    os.replace(tmp, train)
    meta_path = out_dir / EXPORT_META_FILE
    tmp = meta_path.with_name(meta_path.name + ".tmp")
    tmp.write_text(json.dumps(meta, indent=2) + "\n", encoding="utf-8")
    os.replace(tmp, meta_path)
    return train


def read_training_records(path: os.PathLike | str) -> Iterator[dict[str, Any]]:
    """Records of a train.jsonl, checked: ValueError names the line and field."""
    path = Path(path)
    if path.is_dir():
        path = path / TRAIN_FILE
    for line, row in _rows(path):
        if isinstance(row, Exception):
            raise ValueError(f"{path}:{line}: {row}")
        if not isinstance(row, dict):
            raise ValueError(f"{path}:{line}: expected a JSON object, got {type(row).__name__} (is this a `tokfidelity build` train.jsonl?)")
        for key in ("id", "input_ids", "loss_mask"):
            if key not in row:
                raise ValueError(f"{path}:{line}: field {key!r} missing (is this a `tokfidelity build` train.jsonl?)")
        for key in ("input_ids", "loss_mask"):
            if not isinstance(row[key], list) or not all(type(i) is int for i in row[key]):
                raise ValueError(f"{path}:{line}: field {key!r}: expected a list of integers")
        if len(row["input_ids"]) != len(row["loss_mask"]):
            raise ValueError(f"{path}:{line}: field 'loss_mask' has {len(row['loss_mask'])} entries for {len(row['input_ids'])} input_ids")
        yield row
