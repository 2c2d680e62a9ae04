"""The data a gated GPU stage (hidden-states, train) runs on: ``tokfidelity build`` output, made with the
tokenizer whose gate is open. Both stages apply this one rule."""

from __future__ import annotations

import json
import os
from pathlib import Path

from ..core.tokenizer import Tokenizer

__all__ = ["data_paths", "check_built_with", "gated_build", "EXPORT_META"]

EXPORT_META = "export.json"


def data_paths(data: os.PathLike | str) -> tuple[Path, Path]:
    """(train.jsonl, the build folder) from ``--data`` (the folder or the file); ValueError when missing."""
    data = Path(data)
    train = data / "train.jsonl" if data.is_dir() else data
    if not train.is_file():
        raise ValueError(f"{train} does not exist: run `tokfidelity build --in ... --out {data}` first")
    return train, train.parent


def check_built_with(build_dir: Path, gated: Tokenizer, dataset: str) -> None:
    """The records must come from the tokenizer the gate of ``dataset`` verified; ValueError otherwise."""
    meta_path = build_dir / EXPORT_META
    if not meta_path.is_file():
        raise ValueError(f"{meta_path} is missing: only `tokfidelity build` output can be used (it records the tokenizer)")
    try:
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
    except ValueError as e:  # not JSON, or not UTF-8
        raise ValueError(f"{meta_path}: not valid JSON ({e}); run `tokfidelity build` again") from None
    if not isinstance(meta, dict):
        raise ValueError(f"{meta_path}: expected a JSON object; run `tokfidelity build` again")
    if meta.get("tokenizer_fingerprint") != gated.fingerprint:
        raise ValueError(
            f"{build_dir} was built with tokenizer {meta.get('tokenizer')!r} ({str(meta.get('tokenizer_fingerprint'))[:12]}), "
            f"but the gate of {dataset} verified {gated.name!r} ({gated.fingerprint[:12]}): rebuild with the verified tokenizer"
        )


def gated_build(data: os.PathLike | str, tokenizer_spec: str, dataset: str) -> tuple[Path, Path]:
    """(train.jsonl, build folder) of ``--data``, checked against the gated tokenizer; ValueError naming the problem."""
    from ..core.tokenizer import load_tokenizer

    train, build_dir = data_paths(data)
    check_built_with(build_dir, load_tokenizer(tokenizer_spec), dataset)
    return train, build_dir
