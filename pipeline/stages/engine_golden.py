"""Every bulk sample whose ids the server returned is a golden sample: write them as a golden dataset.

``golden_from_generations(generate_dir, dataset_dir, name)`` reads a ``tokfidelity generate`` folder
and writes the records that carry the engine's ids (``ids_source: "engine"``, check ``ok`` or
``reconstruction_differs``) in the golden format (``pipeline.core.golden``): ``output_ids`` the
engine's, ``prompt_ids`` the server's, and ``response`` the message text the server sent, so the
fidelity suite judges exactly the response ``generate`` judged. Other records are counted, not
written. The manifest names the generate run as its source.

``generate`` writes records as their responses arrive, so their order changes from run to run;
the samples are written in the natural order of their ids (``p2`` before ``p10``), so that the
same generations always give the same golden files.
"""

from __future__ import annotations

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

from ..core.files import read_json_object
from ..core.golden import DEFAULT_VIEW, write_dataset
from ..core.names import profile_views
from .capture.chat_engine import response_message
from .generate import RECORDS_FILE, RUN_FILE, USABLE_ENGINE_CHECKS, load_finished

__all__ = ["golden_from_generations", "EngineGoldenResult"]


@dataclass
class EngineGoldenResult:
    dataset_dir: Path
    written: int
    left_out: int  # records without engine ids, or with a check that leaves their ids unproven


def _natural(sample_id) -> tuple[list, str]:
    """``p2`` before ``p10``: digit runs compare as numbers, the rest as text; ties (``p1``, ``p01``) by the id itself."""
    text = str(sample_id)
    return [(0, int(part), "") if part.isdecimal() else (1, 0, part) for part in re.split(r"(\d+)", text)], text


def _read_run(run_path: Path) -> dict:
    """run.json of a generate folder, with the fields golden-from needs; ValueError naming the file and field."""
    run = read_json_object(run_path, "is this a `tokfidelity generate` --out folder?")
    spec = run.get("tokenizer_spec") or run.get("tokenizer")
    if not isinstance(run.get("profile"), str) or not profile_views(run["profile"]):
        raise ValueError(f"{run_path}: field 'profile': expected a profile name, got {run.get('profile')!r}")
    if not isinstance(spec, str) or not spec:
        raise ValueError(f"{run_path}: field 'tokenizer': expected the tokenizer the run used, got {spec!r}")
    return run


def _sample(record: dict, where: str, views: tuple[str, ...]) -> tuple[dict, str]:
    """(the golden sample of one engine-id record, the view it was served under); ValueError naming the line and field."""
    def bad(field: str, expected: str, value) -> ValueError:
        return ValueError(f"{where}: field {field!r}: expected {expected}, got {value!r:.80}")

    messages = record.get("messages")
    if not isinstance(messages, list) or not messages:
        raise bad("messages", "the request's non-empty list of messages", messages)
    view = record.get("view")
    if view is None:
        view = DEFAULT_VIEW  # no view: generate ran without --view-for
    elif not isinstance(view, str) or view not in views:
        raise bad("view", f"one of the profile's views ({', '.join(views)})", view)
    response = response_message(record["response"]) if isinstance(record.get("response"), dict) else None
    if response is None:
        raise bad("response", "the chat completion the server sent (an object with choices[0].message)", record.get("response"))
    output_ids = record.get("output_ids")
    if not isinstance(output_ids, list) or not all(type(i) is int for i in output_ids):
        raise bad("output_ids", "a list of token ids", output_ids)
    sample = {"id": record["id"], "messages": messages}
    for key in ("tools", "chat_template_kwargs"):
        if record.get(key):
            sample[key] = record[key]
    if record.get("prompt_ids") is not None:
        sample["prompt_ids"] = record["prompt_ids"]
    sample.update(output_ids=output_ids, finish_reason=record.get("finish_reason"), response=response)
    return sample, view


def golden_from_generations(generate_dir: os.PathLike | str, dataset_dir: os.PathLike | str, name: str | None = None,
                            *, max_known_divergence_rate: float = 0.0) -> EngineGoldenResult:
    generate_dir, dataset_dir = Path(generate_dir), Path(dataset_dir)
    run = _read_run(generate_dir / RUN_FILE)
    records_path = generate_dir / RECORDS_FILE
    load_finished(records_path)  # checks every line (and cuts a torn last one) before reading
    samples, left_out, views = [], 0, set()
    with open(records_path, encoding="utf-8") as f:
        for line_no, line in enumerate(f, 1):
            record = json.loads(line)
            if record.get("ids_source") != "engine" or record.get("check") not in USABLE_ENGINE_CHECKS:
                left_out += 1
                continue
            sample, view = _sample(record, f"{records_path}:{line_no}", profile_views(run["profile"]))
            samples.append(sample)
            views.add(view)
    manifest = {
        "name": name or dataset_dir.name,
        "profile": run["profile"],
        "tokenizer": run.get("tokenizer_spec") or run["tokenizer"],
        # the view each record was generated under (generate --view-for), else SGLang's
        **({"api_views": sorted(views)} if len(views) > 1 else {"api_view": next(iter(views), DEFAULT_VIEW)}),
        "source": (f"Engine-returned ids of `tokfidelity generate` records ({generate_dir.name}): model {run.get('model')!r} "
                   f"at {run.get('base_url')}; output ids and prompt ids as the server returned them, response text as it sent it."),
        "max_known_divergence_rate": max_known_divergence_rate,
        "samples": len(samples),
    }
    samples.sort(key=lambda s: _natural(s["id"]))
    write_dataset(dataset_dir, manifest, samples)
    return EngineGoldenResult(dataset_dir, len(samples), left_out)
