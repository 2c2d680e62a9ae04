"""Hidden-state files in the layouts the trainers' own readers load (``hidden-states --format``).

Every format holds, per training record, the record's ``input_ids``, the target model's last-layer
hidden states and EAGLE-3's three auxiliary layers, computed over exactly those ids. Files are written
under a temporary name and renamed, so a kill never leaves half a file that a reader would list.

* ``safetensors`` (default): ``<out>/<name>.safetensors`` (the id, escaped: ``gpu_stages.sample_file_name``) with SpecForge's key names: ``input_ids`` (int64
  [S]), ``loss_mask`` (int64 [S]), ``hidden_state`` (float32 [S, H]), ``aux_hidden_state`` (float32
  [S, 3H]). No trainer lists these files itself.
* ``specforge``: ``<out>/data_{i:08d}.ckpt`` written with ``torch.save``, the same four keys (plus ``id``).
  SpecForge 0.2.0 lists only ``.ckpt`` / ``.ckpt.gz`` files, sorted by path
  (``runtime/data_plane/offline_reader.py`` ``list_feature_files``; ``data/preprocessing.py``
  ``list_local_files``), and reads them with ``torch.load`` (``feature_store.load_feature_file``); the
  zero-padded index makes that order the order of ``train.jsonl``.
* ``speculators``: ``<out>/hidden_states/hs_{i}.safetensors`` with ``token_ids`` (int64 [S]) and
  ``hidden_states`` (float32 [S, 4, H]: the three aux layers, then the last layer), as speculators 0.9.0's
  ``ArrowDataset`` reads them through ``hs_connectors.FileTransfer`` (``hs_{file_idx}.safetensors`` under
  ``<datapath>/hidden_states``; ``hidden_states[:, :-1]`` are the aux layers, ``[:, -1]`` the target).
  ``i`` is the row of ``train.jsonl``; the arrow dataset at ``<out>`` must keep that order (README:
  speculators' ``prepare-data`` shuffles; build the dataset with ``build_speculator_training_dataset``).

``specforge`` and ``speculators`` also write ``<out>/order.jsonl``: ``{"index", "id", "file"}`` per record,
in ``train.jsonl`` order. A re-run into the same folder must have the same records at the same indices.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..core.files import atomic_path
from ..core.jsonl import JsonLineError, read_json_lines

__all__ = ["FORMATS", "ORDER_FILE", "file_for", "write_sample", "check_order", "write_order"]

FORMATS = ("safetensors", "specforge", "speculators")
ORDER_FILE = "order.jsonl"


def file_for(fmt: str, out_dir: Path, index: int, sample_id: Any) -> Path:
    """Where sample ``index`` (its row in train.jsonl) goes in an index-named format (``specforge``,
    ``speculators``); ``safetensors`` files are named by id (``gpu_stages.sample_files``)."""
    if fmt == "specforge":
        return out_dir / f"data_{index:08d}.ckpt"
    if fmt == "speculators":
        return out_dir / "hidden_states" / f"hs_{index}.safetensors"
    raise ValueError(f"unknown hidden-state format {fmt!r}; known: {', '.join(FORMATS)}")


def write_sample(fmt: str, target: Path, record: Mapping[str, Any], last, aux: Sequence, meta: Mapping[str, str]) -> None:
    """Write one sample: ``last`` is the last layer's states [S, H], ``aux`` the three aux layers' [S, H] each."""
    import torch

    input_ids = torch.tensor(record["input_ids"], dtype=torch.long)
    loss_mask = torch.tensor(record["loss_mask"], dtype=torch.long)
    target.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(target) as tmp:  # a temporary *.tmp beside it (no reader lists *.tmp), renamed when whole
        if fmt == "specforge":
            torch.save({"input_ids": input_ids, "loss_mask": loss_mask, "hidden_state": last.float().contiguous(),
                        "aux_hidden_state": torch.cat(list(aux), dim=-1).float().contiguous(), "id": str(record["id"])}, tmp)
        else:
            from safetensors.torch import save_file

            if fmt == "speculators":
                tensors = {"token_ids": input_ids, "hidden_states": torch.stack([*aux, last], dim=1).float().contiguous()}
            else:
                tensors = {"input_ids": input_ids, "loss_mask": loss_mask, "hidden_state": last.float().contiguous(),
                           "aux_hidden_state": torch.cat(list(aux), dim=-1).float().contiguous()}
            save_file(tensors, str(tmp), metadata=dict(meta))


def check_order(fmt: str, out_dir: Path, records: Sequence[Mapping[str, Any]]) -> None:
    """ValueError when ``out_dir`` holds index-named files of another train.jsonl."""
    path = out_dir / ORDER_FILE
    if fmt == "safetensors" or not path.is_file():
        return
    ids = [str(r["id"]) for r in records]
    for line_no, row in read_json_lines(path):
        try:
            if isinstance(row, JsonLineError):
                raise row
            index, sample_id = row["index"], row["id"]
        except (JsonLineError, KeyError, TypeError):
            raise ValueError(f"{path}:{line_no}: not an order record; move the folder away or give another --out") from None
        if isinstance(index, int) and index < len(ids) and ids[index] != sample_id:
            raise ValueError(
                f"{out_dir} holds hidden states of another train.jsonl (index {index} is {sample_id!r} there, "
                f"{ids[index]!r} here): give another --out"
            )


def write_order(fmt: str, out_dir: Path, records: Sequence[Mapping[str, Any]]) -> None:
    if fmt == "safetensors":
        return
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / ORDER_FILE
    with atomic_path(path) as tmp, open(tmp, "w", encoding="utf-8") as f:
        for index, record in enumerate(records):
            file = file_for(fmt, out_dir, index, record["id"]).relative_to(out_dir)
            f.write(json.dumps({"index": index, "id": str(record["id"]), "file": str(file)}) + "\n")
