"""Training records for drafter training: ``{id, input_ids, loss_mask}``, token ids only.

``tokfidelity build --in DIR --out OUT`` writes:

* ``OUT/train.jsonl``: one JSON object a line, ``{"id": str, "input_ids": [int], "loss_mask": [0|1],
  "prompt_len": int, "source": "capture" | "engine" | "reconstruction"}``. ``input_ids`` is the prompt (rendered with
  the profile's chat template by ``pipeline.core.render``) followed by the model's output ids (stop token
  included when it stopped); ``loss_mask`` is 0 on every prompt position and 1 on every output position,
  same length as ``input_ids``. These are the per-sample ``input_ids`` / ``loss_mask`` that SpecForge's
  offline EAGLE-3 data and vllm-project/speculators' EAGLE-3 data carry (their hidden-state files add
  ``hidden_state``/``hidden_states`` next to them: ``tokfidelity hidden-states`` writes those), without
  re-tokenising any text.
* ``OUT/export.json``: profile, tokenizer and its fingerprint, the input folder, counts, and ``files``: the
  sha256, rows and bytes of every file the build wrote (gated stages check them: ``built_data``). From a
  generate folder each record also carries the ``view`` its provider serves with, and ``views`` counts them:
  ``rebuilt`` (ids rebuilt from that text: the gated stages refuse a view the gate did not judge) and
  ``engine`` (the engine's own ids).

Inputs: a golden dataset folder (``manifest.json`` + ``samples.jsonl``: output ids as the engine
captured them; where ``prompt_ids`` are recorded, our rendering must equal them or the build fails with
a diagnosis), or a ``tokfidelity generate`` folder (``run.json`` + ``generations.jsonl``: reconstructed
output ids, or the server's own where it returned them (``ids_source: "engine"``: used also when the
check is ``reconstruction_differs``, and the server's prompt ids are checked like golden ones); other
records whose check is not ``ok`` are left out and counted, never used).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.fidelity import vocabulary_problem
from ..core.files import atomic_path, atomic_write, open_input, read_json_object
from ..core.jsonl import json_lines
from ..core.profiles import Profile
from ..core.prompt_check import PromptJudge
from ..core.render import RenderError
from ..core.tokenizer import Tokenizer
from .record_checks import LENGTH_CUT_MODES, PROMPT_CHECKS, MaskAudit, history_rerendered, prompt_check
from .turn_records import TURN_MODES, earlier_turns

__all__ = [
    "training_record",
    "prompt_difference",
    "BuildInput",
    "BuildResult",
    "open_build_input",
    "build_records",
    "write_export",
    "export_seal",
    "SEAL_FIELD",
    "read_training_records",
    "TRAIN_FILE",
    "EXPORT_META_FILE",
    "LEFT_OUT_FILE",
    "NOT_RECORDED",
]

TRAIN_FILE = "train.jsonl"
EXPORT_META_FILE = "export.json"
LEFT_OUT_FILE = "left_out.jsonl"  # one {"where", "id", "reason", "prompt_check"?} per sample not exported
NOT_RECORDED = "(not recorded)"  # the view of a generate record written before records carried one
SEAL_FIELD = "sealed_sha256"  # export.json's own field: the sha256 of all its others (export_seal)


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
        f"rendered [{window(ours)}] vs golden [{window(golden)}]. The engine rendered another template or "
        "pre-processing: check the tokenizer folder's chat template and the profile's tools_preprocess and "
        "chat_template_kwargs (pipeline/core/profiles.py)"
    )


@dataclass
class BuildInput:
    kind: str  # "golden" | "generations"
    path: Path  # the file read
    profile_name: str
    tokenizer_spec: str
    manifest: Any = None  # a golden dataset's manifest (the chat template it names renders its prompts)


def open_build_input(folder: os.PathLike | str) -> BuildInput:
    """Recognise a golden dataset folder or a generate output folder; ValueError says what was found."""
    folder = Path(folder)
    if (folder / "manifest.json").is_file():
        from ..core.golden import load_manifest

        manifest = load_manifest(folder)
        return BuildInput("golden", manifest.samples_path, manifest.profile, manifest.tokenizer, manifest)
    if (folder / "run.json").is_file():
        from .generate import RECORDS_FILE

        run_path = folder / "run.json"
        run = read_json_object(run_path, "is this a `tokfidelity generate` --out folder?")
        spec = run.get("tokenizer_spec") or run.get("tokenizer")
        if not isinstance(run.get("profile"), str) or not isinstance(spec, str):
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
    left_out_rows: list[dict[str, Any]] = field(default_factory=list)  # the same, one JSON object each (left_out.jsonl)
    prompt_mismatches: list[tuple[str, str]] = field(default_factory=list)  # (where, diagnosis): fail the build
    prompt_checked: int = 0  # samples whose golden prompt_ids were compared
    prompt_checks: dict[str, int] = field(default_factory=lambda: dict.fromkeys(PROMPT_CHECKS, 0))
    audit: MaskAudit = field(default_factory=MaskAudit)
    turns: str = "last"  # "all": a record for each earlier assistant turn too (turn_records.py)
    turn_records: int = 0  # records of earlier assistant turns written
    # generate input: exported records per the view their text came through (NOT_RECORDED: a record written
    # before views were recorded). "rebuilt": ids rebuilt from that text (the gated stages check these views);
    # "engine": the engine's own ids (exact whatever the view).
    views: dict[str, dict[str, int]] = field(default_factory=lambda: {"rebuilt": {}, "engine": {}})

    written_ids: dict[str, str] = field(default_factory=dict)  # each record's id (as JSON) -> where it came from

    def id_taken(self, record_id: Any, where: str, **fields: Any) -> bool:
        """Whether an earlier record has this id (a sample whose id is another's turn id, ``ID@messages[i]``,
        or a repeated id); if so it is left out, saying which: ids in train.jsonl are unique."""
        first = self.written_ids.get(json.dumps(record_id, sort_keys=True))
        if first is not None:
            self.leave_out(where, record_id, f"field 'id': {record_id!r} is the id of an earlier record ({first}); "
                           "ids in train.jsonl are unique: rename one of them", **fields)
        return first is not None

    def add(self, record: dict[str, Any], where: str) -> None:
        self.written_ids[json.dumps(record["id"], sort_keys=True)] = where
        self.records.append(record)

    def leave_out(self, where: str, sample_id: Any, why: str, **fields: Any) -> None:
        label = where if sample_id is None else f"{where} (id {sample_id!r})"
        self.left_out.append((label, why))
        self.left_out_rows.append({"where": where, "id": sample_id, "reason": why, **fields})


def _rows(path: Path) -> Iterator[tuple[int, Any]]:
    """Decoded lines; a bad line's value is a JsonLineError saying why (its text names no file)."""
    with open_input(path) as f:
        yield from json_lines(f)


@dataclass
class _Sample:
    """What build needs of one input sample, from either input kind."""

    id: Any
    messages: Any
    tools: Any
    output_ids: Any
    finish_reason: Any
    golden_prompt: list[int] | None = None
    usage: Any = None
    exact: bool = False  # ids from the engine (a golden capture, or a generate record with ids_source "engine")
    chat_template_kwargs: Any = None  # the request's template variables (Qwen3: {"enable_thinking": false})
    view: str | None = None  # generate: the view its provider serves with (None: a record written before views were)


def _generation_sample(item: Any) -> _Sample | str:
    """The sample of one generations.jsonl row, or why it cannot be used."""
    if not isinstance(item, dict):
        return f"expected a generation record (a JSON object), got {type(item).__name__}"
    engine = item.get("ids_source") == "engine"  # the server's own ids: usable also where the text gives others
    if item.get("check") != "ok" and not (engine and item.get("check") == "reconstruction_differs"):
        return f"check is {item.get('check')!r}: {item.get('check_detail', '')}"
    output_ids = item.get("output_ids")
    if not isinstance(output_ids, list) or not all(type(i) is int for i in output_ids):
        return "field 'output_ids': expected a list of token ids"
    golden_prompt = item.get("prompt_ids") if engine and isinstance(item.get("prompt_ids"), list) else None  # checked like golden ones
    view = item.get("view") if isinstance(item.get("view"), str) else None
    return _Sample(item.get("id"), item.get("messages"), item.get("tools"), output_ids, item.get("finish_reason"),
                   golden_prompt, usage=item.get("usage"), exact=engine, view=view,
                   chat_template_kwargs=item.get("chat_template_kwargs"))  # the request's: the prompt the model saw


def _input_samples(source: BuildInput) -> Iterator[tuple[int, Any, _Sample | str | Exception]]:
    """(line, id or None, sample | why it is unusable | a read error) for every line of the input."""
    if source.kind == "golden":
        from ..core.golden import read_samples

        for s in read_samples(source.path.parent):  # a GoldenError is an Exception with .line
            if isinstance(s, Exception):
                yield s.line, None, s
            else:
                yield s.line, s.id, _Sample(s.id, s.messages, s.tools, s.output_ids, s.finish_reason, s.prompt_ids, exact=True,
                                            chat_template_kwargs=s.chat_template_kwargs)
        return
    for line, item in _rows(source.path):
        sample_id = item.get("id") if isinstance(item, dict) else None
        yield line, sample_id, item if isinstance(item, Exception) else _generation_sample(item)


def build_records(
    source: BuildInput,
    profile: Profile,
    tokenizer: Tokenizer,
    on_progress=None,
    *,
    keep_prompt_mismatch: bool = False,
    length_cut: str = "drop",
    turns: str = "last",
) -> BuildResult:
    """Training records for every usable sample of ``source``, each with its ``prompt_check``, audited;
    ``turns="all"``: one more for each earlier assistant turn of a multi-turn conversation."""
    if length_cut not in LENGTH_CUT_MODES:
        raise ValueError(f"length_cut: expected one of {', '.join(LENGTH_CUT_MODES)}, got {length_cut!r}")
    if turns not in TURN_MODES:
        raise ValueError(f"turns: expected one of {', '.join(TURN_MODES)}, got {turns!r}")
    result = BuildResult(audit=MaskAudit(length_cut=length_cut), turns=turns)
    kind = "capture" if source.kind == "golden" else "reconstruction"
    renderer = PromptJudge(profile, tokenizer)  # the model's template, or openai-harmony for gpt-oss; tool sets cached
    for line, sample_id, sample in _input_samples(source):
        where = f"{source.path}:{line}"
        if on_progress:
            on_progress(1)
        if isinstance(sample, Exception):
            result.leave_out(where, None, str(sample))
        elif isinstance(sample, str):
            result.leave_out(where, sample_id, sample)
        else:
            _build_one(sample, where, kind, profile, tokenizer, result, keep_prompt_mismatch, renderer)
    return result


def _build_one(sample: _Sample, where: str, kind: str, profile: Profile, tokenizer: Tokenizer, result: BuildResult,
               keep_prompt_mismatch: bool, renderer: PromptJudge) -> None:
    output_ids = sample.output_ids
    if (outside := vocabulary_problem(output_ids, tokenizer)) is not None:
        result.leave_out(where, sample.id, f"field 'output_ids': {outside}")
        return
    if not sample.messages:
        result.leave_out(where, sample.id, "field 'messages' missing: the prompt cannot be rendered")
        return
    try:
        prompt_ids = renderer.ids(sample.messages, sample.tools, sample.chat_template_kwargs)
    except RenderError as e:
        result.leave_out(where, sample.id, str(e))
        return
    if sample.golden_prompt is not None:
        result.prompt_checked += 1
        diagnosis = prompt_difference(prompt_ids, sample.golden_prompt, tokenizer)
        if diagnosis:
            result.prompt_mismatches.append((f"{where} (id {sample.id!r})", diagnosis))
            return
        check, detail = "ok", None
    elif kind == "capture":
        check, detail = "unknown", "the golden sample records no prompt_ids"
    else:
        check, detail = prompt_check(len(prompt_ids), sample.usage)
    result.prompt_checks[check] += 1
    if check == "prompt_mismatch" and not keep_prompt_mismatch:
        result.leave_out(where, sample.id, f"prompt_check is 'prompt_mismatch': {detail} (--keep-prompt-mismatch exports it)",
                         prompt_check=check)
        return
    record = training_record(sample.id, prompt_ids, output_ids, "engine" if sample.exact and kind == "reconstruction" else kind)
    record["prompt_check"] = check
    if kind == "reconstruction":
        record["view"] = sample.view
    if result.id_taken(sample.id, where, prompt_check=check):
        return
    why = result.audit.check(record, sample.finish_reason, sample.exact, profile)
    if why:
        result.leave_out(where, sample.id, why, prompt_check=check)
        return
    has_history = any(isinstance(m, dict) and m.get("role") == "assistant" for m in sample.messages)
    def render(messages, tools, profile, tokenizer):
        return renderer.ids(messages, tools, sample.chat_template_kwargs)

    turns = history_rerendered(sample.messages, sample.tools, prompt_ids, profile, tokenizer, render) if has_history else []
    result.audit.note_history(f"{where} (id {sample.id!r})", turns, has_history)
    result.add(record, where)
    if kind == "reconstruction":
        tally = result.views["engine" if sample.exact else "rebuilt"]
        view = sample.view or NOT_RECORDED
        tally[view] = tally.get(view, 0) + 1
    if has_history and result.turns == "all":
        _add_turn_records(sample, where, profile, tokenizer, result, renderer)


def _add_turn_records(sample: _Sample, where: str, profile: Profile, tokenizer: Tokenizer, result: BuildResult,
                      renderer: PromptJudge) -> None:
    """The records of a conversation's earlier assistant turns (turn_records.py), each audited like any."""
    turns, problems = earlier_turns(sample.messages, sample.tools, sample.chat_template_kwargs, profile, tokenizer, renderer)
    for problem in problems:
        result.leave_out(where, sample.id, f"earlier assistant turn {problem}")
    for i, prompt, output in turns:
        record = training_record(f"{sample.id}@messages[{i}]", prompt, output, "history")
        record["turn"] = i
        if result.id_taken(record["id"], where):
            continue
        why = result.audit.check(record, "stop", False, profile)
        if why:
            result.leave_out(where, record["id"], why)
            continue
        result.add(record, where)
        result.turn_records += 1


def _write_jsonl(path: Path, rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Write one JSON line per row; the file's pin ``{"sha256", "rows", "bytes"}``, hashed as it is written."""
    digest, size = hashlib.sha256(), 0
    with atomic_path(path) as tmp, open(tmp, "wb") as f:
        for row in rows:
            line = (json.dumps(row, separators=(",", ":")) + "\n").encode("utf-8")
            digest.update(line)
            size += len(line)
            f.write(line)
    return {"sha256": digest.hexdigest(), "rows": len(rows), "bytes": size}


def write_export(out_dir: os.PathLike | str, records: Sequence[dict[str, Any]], meta: dict[str, Any],
                 left_out: Sequence[dict[str, Any]] = ()) -> Path:
    """Write train.jsonl, left_out.jsonl and export.json, each atomically (a re-run replaces them whole).
    export.json, written last, pins the others (``files``: name -> sha256, rows, bytes): gated stages
    run only on the very files this build wrote (``pipeline.stages.built_data``)."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    train = out_dir / TRAIN_FILE
    files = {TRAIN_FILE: _write_jsonl(train, records), LEFT_OUT_FILE: _write_jsonl(out_dir / LEFT_OUT_FILE, left_out)}
    meta_path = out_dir / EXPORT_META_FILE
    meta = {**meta, "files": files}
    atomic_write(meta_path, json.dumps({**meta, SEAL_FIELD: export_seal(meta)}, indent=2) + "\n")
    return train


def export_seal(meta: dict[str, Any]) -> str:
    """The sha256 of export.json's fields but the seal itself (key-sorted JSON). The gated stages take the
    build's claims from export.json (tokenizer, template, input kind, views rebuilt) as they take its
    files, only as build wrote them: a field edited by hand no longer matches the seal."""
    body = {k: v for k, v in meta.items() if k != SEAL_FIELD}
    return hashlib.sha256(json.dumps(body, sort_keys=True, ensure_ascii=False).encode("utf-8", "surrogatepass")).hexdigest()


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
