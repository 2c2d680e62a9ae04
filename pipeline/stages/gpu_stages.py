"""The GPU stages after ``build``: target-model hidden states, then drafter training.

Both run existing engines on the exported ``train.jsonl`` (``pipeline.stages.export``), never a home-made
trainer:

* ``hidden_states_with_transformers``: a transformers causal LM (a GGUF file, a Hugging Face folder,
  or ``pkg:PACKAGE/FILE``) run forward with ``output_hidden_states=True`` over each record's
  ``input_ids``. One ``<out>/<name>.safetensors`` per sample (``sample_file_name``: the id, with any
  byte other than ASCII letters, digits, ``-_.`` written ``%XX``, so distinct ids never share a file), with SpecForge's offline EAGLE-3 keys:
  ``input_ids`` (int64 [seq]), ``loss_mask`` (int64 [seq]), ``hidden_state`` (float32 [seq, hidden]:
  the last layer) and ``aux_hidden_state`` (float32 [seq, 3*hidden]: three layers concatenated, EAGLE-3's
  low/middle/high features, by default decoder layers 1, n/2-1 and n-4). ``fmt="specforge"`` and
  ``fmt="speculators"`` write the layouts those trainers' readers load instead
  (``pipeline.stages.hidden_state_formats``). A re-run skips samples whose
  file exists; files are written to a temporary name and renamed, so a kill never leaves half a file.
* ``run_configured_command``: any command line (SpecForge's ``prepare_hidden_states.py`` /
  ``train_eagle3.py``, speculators' scripts, ...) with the data paths substituted for ``{data}``,
  ``{hidden_states}``, ``{out}``; its output streams through and its exit code is returned.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import string
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core.model_files import FolderCodeRefused, transformers_source
from .export import read_training_records
from .hidden_state_formats import FORMATS, check_order, file_for, write_order, write_sample

__all__ = ["HiddenStatesResult", "hidden_states_with_transformers", "sample_file_name", "sample_files", "default_aux_layers", "run_configured_command", "fill_command"]


def default_aux_layers(num_layers: int) -> tuple[int, int, int]:
    """EAGLE-3's three feature layers (low, middle, high) for a model with ``num_layers`` decoder layers."""
    return (1, max(1, num_layers // 2 - 1), max(1, num_layers - 4))


@dataclass
class HiddenStatesResult:
    written: list[Path] = field(default_factory=list)
    skipped: int = 0  # files already there
    seconds: float = 0.0
    model: str = ""
    aux_layers: tuple[int, ...] = ()


def hidden_states_with_transformers(
    train_path: os.PathLike | str,
    model_spec: str,
    out_dir: os.PathLike | str,
    *,
    limit: int | None = None,
    aux_layers: Sequence[int] | None = None,
    threads: int | None = None,
    on_progress: Callable[[int], None] | None = None,
    fmt: str = "safetensors",
) -> HiddenStatesResult:
    """Forward every training record (or the first ``limit``) through the model; write files in ``fmt``
    (``pipeline.stages.hidden_state_formats``: safetensors, specforge, speculators)."""
    import torch

    if fmt not in FORMATS:
        raise ValueError(f"unknown hidden-state format {fmt!r}; known: {', '.join(FORMATS)}")
    out_dir = Path(out_dir)
    records = list(read_training_records(train_path))
    if limit is not None:
        records = records[:limit]
    if fmt == "safetensors":
        named = sample_files(records, out_dir)  # one distinct file per sample, or ValueError before any work
        targets = [named[str(r["id"])] for r in records]
    else:
        check_order(fmt, out_dir, records)
        targets = [file_for(fmt, out_dir, i, r["id"]) for i, r in enumerate(records)]
    todo = [i for i, target in enumerate(targets) if not target.exists()]
    result = HiddenStatesResult(skipped=len(records) - len(todo), model=model_spec)
    if not todo:
        write_order(fmt, out_dir, records)
        return result
    if threads:
        torch.set_num_threads(threads)
    start = time.monotonic()
    model = _load_model(model_spec)
    vocab = model.get_input_embeddings().weight.shape[0]
    n_layers = model.config.num_hidden_layers
    layers = tuple(aux_layers) if aux_layers else default_aux_layers(n_layers)
    if any(not 0 <= i < n_layers for i in layers):
        raise ValueError(f"aux layers {layers} out of range for a model with {n_layers} decoder layers")
    result.aux_layers = layers
    out_dir.mkdir(parents=True, exist_ok=True)
    write_order(fmt, out_dir, records)
    meta = {"model": model_spec, "aux_layers": json.dumps(layers)}
    for index in todo:
        record = records[index]
        ids = record["input_ids"]
        if ids and (min(ids) < 0 or max(ids) >= vocab):
            raise ValueError(
                f"sample {record['id']!r}: token id {min(ids) if min(ids) < 0 else max(ids)} is outside the model's vocabulary ({vocab} rows): "
                f"the training data was built with another tokenizer than {model_spec}'s"
            )
        with torch.inference_mode():
            out = model(input_ids=torch.tensor([ids], dtype=torch.long), output_hidden_states=True, use_cache=False)
        states = out.hidden_states  # embeddings, then one per decoder layer
        write_sample(fmt, targets[index], record, states[-1][0], [states[i + 1][0] for i in layers], {"id": str(record["id"]), **meta})
        result.written.append(targets[index])
        if on_progress:
            on_progress(1)
    result.seconds = time.monotonic() - start
    return result


def _load_model(model_spec: str):
    import torch
    from transformers import AutoModelForCausalLM

    from .capture.transformers_engine import resolve_model_path

    path = resolve_model_path(model_spec)
    try:
        with transformers_source(path) as (folder, kwargs):  # a GGUF alone; no model-folder code ever runs
            return AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32, trust_remote_code=False, **kwargs).eval()
    except FolderCodeRefused:
        raise
    except Exception as e:  # noqa: BLE001 - a damaged file fails anywhere inside transformers or gguf
        raise ValueError(f"{path}: cannot be loaded as a model ({type(e).__name__}: {e})") from None


_NAME_CHARS = frozenset(string.ascii_letters + string.digits + "-_.")
_MAX_NAME = 200


def sample_file_name(sample_id: str) -> str:
    """A file name for a sample id, distinct for distinct ids (``a/b`` -> ``a%2Fb``, ``a_b`` -> ``a_b``).

    ASCII letters, digits, ``-``, ``_`` and ``.`` stay; every other UTF-8 byte (``%`` and a leading
    ``.`` included) is written ``%XX``, so the name decodes back to the id. A name over 200
    characters keeps its start and ends in ``~`` and the id's sha256 (``~`` appears in no other name)."""
    raw = str(sample_id).encode("utf-8", "surrogatepass")
    name = "".join(
        chr(b) if chr(b) in _NAME_CHARS and not (i == 0 and b == 0x2E) else f"%{b:02X}" for i, b in enumerate(raw)
    ) or "%"
    if len(name) > _MAX_NAME:
        name = name[: _MAX_NAME - 65] + "~" + hashlib.sha256(raw).hexdigest()
    return name


def sample_files(records: Sequence[dict], out_dir: Path) -> dict[str, Path]:
    """``id -> out_dir/<name>.safetensors`` for every record; ValueError when two records would share a file."""
    targets: dict[str, Path] = {}
    owner: dict[str, str] = {}
    for record in records:
        sample_id = str(record["id"])
        name = sample_file_name(sample_id)
        if name in owner:
            raise ValueError(
                f"samples {owner[name]!r} and {sample_id!r} would both be written to {name}.safetensors "
                "(an id appears twice in the training records): rebuild them with `tokfidelity build`"
            )
        owner[name] = sample_id
        targets[sample_id] = out_dir / f"{name}.safetensors"
    return targets


def fill_command(command: str | Sequence[str], values: dict[str, str]) -> list[str]:
    """Split a command line and substitute ``{data}``, ``{hidden_states}``, ``{out}`` in each argument."""
    argv = shlex.split(command) if isinstance(command, str) else list(command)
    if not argv:
        raise ValueError("the configured command is empty")
    try:
        return [arg.format(**values) for arg in argv]
    except KeyError as e:
        raise ValueError(f"unknown placeholder {{{e.args[0]}}} in the command; known: {', '.join('{' + k + '}' for k in values)}") from None
    except (IndexError, ValueError) as e:  # '{}', '{0}', a lone '{'
        raise ValueError(
            f"cannot fill the command's placeholders ({e}); known: {', '.join('{' + k + '}' for k in values)}; "
            "write a literal brace as {{ or }}"
        ) from None


def run_configured_command(argv: Sequence[str], *, log_path: Path | None = None, env: dict[str, str] | None = None) -> int:
    """Run the engine's command, streaming its output; record what ran and how it ended in ``log_path``."""
    start = time.time()
    try:
        completed = subprocess.run(list(argv), env={**os.environ, **(env or {})}, stdout=sys.stdout, stderr=sys.stderr)
        code = completed.returncode
    except FileNotFoundError:
        print(f"command not found: {argv[0]!r}", file=sys.stderr)
        code = 127
    except OSError as e:  # not executable, a folder, ...
        print(f"cannot run {argv[0]!r}: {e.strerror or e}", file=sys.stderr)
        code = 126
    if log_path is not None:
        log: dict[str, Any] = {"argv": list(argv), "started": start, "seconds": round(time.time() - start, 3), "exit_code": code}
        log_path.parent.mkdir(parents=True, exist_ok=True)
        log_path.write_text(json.dumps(log, indent=2) + "\n", encoding="utf-8")
    return code
