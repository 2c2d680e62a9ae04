"""The data a gated GPU stage (hidden-states, train) runs on: ``tokfidelity build`` output, made with the
tokenizer whose gate is open, and byte for byte the files that build wrote (export.json pins each
one's sha256 and rows, so another build's export.json beside this train.jsonl is refused). Both
stages apply this one rule."""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Any

from ..core.files import open_input, read_json_object
from ..core.golden import DEFAULT_VIEW
from ..core.tokenizer import Tokenizer
from .export import EXPORT_META_FILE as EXPORT_META
from .export import NOT_RECORDED, SEAL_FIELD, TRAIN_FILE, export_seal

__all__ = ["data_paths", "check_built_with", "gated_build", "file_pin", "EXPORT_META", "TRAIN_FILE"]



def data_paths(data: os.PathLike | str) -> tuple[Path, Path]:
    """(train.jsonl, the build folder) from ``--data`` (the folder or the file); ValueError when missing."""
    data = Path(data)
    train = data / TRAIN_FILE if data.is_dir() else data
    if not train.is_file():
        raise ValueError(f"{train} does not exist: run `tokfidelity build --in ... --out {data}` first")
    return train, train.parent


def file_pin(path: Path) -> dict[str, Any]:
    """``{"sha256", "rows", "bytes"}`` of a file in one read: what ``tokfidelity build`` pins in export.json."""
    digest, rows, size = hashlib.sha256(), 0, 0
    with open_input(path) as f:
        while chunk := f.read(1 << 20):
            digest.update(chunk)
            rows += chunk.count(b"\n")
            size += len(chunk)
    return {"sha256": digest.hexdigest(), "rows": rows, "bytes": size}


def _read_meta(meta_path: Path) -> dict[str, Any]:
    if not meta_path.is_file():
        raise ValueError(f"{meta_path} is missing: only `tokfidelity build` output can be used (it records the tokenizer)")
    meta = read_json_object(meta_path, "run `tokfidelity build` again")
    if SEAL_FIELD not in meta:
        raise ValueError(f"{meta_path}: field {SEAL_FIELD!r} is missing (an older `tokfidelity build`, or not its output); "
                         "run `tokfidelity build` again")
    if meta[SEAL_FIELD] != export_seal(meta):
        raise ValueError(f"{meta_path} is not the export.json `tokfidelity build` wrote: its fields do not match its "
                         f"{SEAL_FIELD!r} (edited by hand?); run `tokfidelity build` again")
    return meta


def _verify_files(build_dir: Path, meta_path: Path, files: Any) -> list[str]:
    """Hash every file export.json pins, once each; ValueError naming the first that differs."""
    rebuild = f"run `tokfidelity build --in ... --out {build_dir}` again"
    if not isinstance(files, dict) or TRAIN_FILE not in files:
        raise ValueError(f"{meta_path}: field 'files' (the sha256 and rows of each file the build wrote) is missing "
                         f"(an older `tokfidelity build`, or not its output); {rebuild}")
    verified = []
    for name, pin in sorted(files.items()):
        if not (isinstance(pin, dict) and isinstance(pin.get("sha256"), str) and type(pin.get("rows")) is int):
            raise ValueError(f"{meta_path}: field 'files.{name}': expected {{\"sha256\", \"rows\"}}; {rebuild}")
        if name in ("", ".", "..") or Path(name).name != name:
            raise ValueError(f"{meta_path}: field 'files': {name!r} is not a file name of the build folder; {rebuild}")
        path = build_dir / name
        if not path.is_file():
            raise ValueError(f"{path} is missing or not a regular file, but {meta_path} pins it; {rebuild}")
        try:
            actual = file_pin(path)
        except OSError as e:
            raise ValueError(f"{path}: cannot be read ({e.strerror or e})") from None
        if actual["sha256"] != pin["sha256"] or actual["rows"] != pin["rows"]:
            raise ValueError(
                f"{path} is not the file this build wrote: it has {actual['rows']} rows, sha256 {actual['sha256'][:12]}; "
                f"{meta_path} pins {pin['rows']} rows, sha256 {pin['sha256'][:12]} (edited, replaced, or another "
                f"build's export.json beside it); {rebuild}"
            )
        verified.append(f"{name} ({actual['rows']} rows, sha256 {actual['sha256'][:12]})")
    return verified


def _view_problem(meta_path: Path, meta: dict[str, Any], judged: frozenset[str], assumed: str, dataset: str,
                  open_command: str) -> tuple[str | None, str]:
    """(why the build's records may not be used: they were rebuilt from text through a view the gate of
    ``dataset`` did not judge, or None; a note on views, to print).

    ``views.rebuilt`` in export.json counts records whose ids were rebuilt from the text of a provider
    serving with each view. A build from before views were recorded has no ``views``; its records, like a
    generate record without a ``view`` (NOT_RECORDED), are taken as rebuilt through ``assumed``, the
    manifest's view: the one view a gate judged then, the one generate's records were read under."""
    views = meta.get("views")
    rebuilt = views.get("rebuilt") if isinstance(views, dict) else None
    if "views" in meta and not (isinstance(rebuilt, dict) and all(type(n) is int for n in rebuilt.values())):
        return f"{meta_path}: field 'views.rebuilt': expected an object {{\"VIEW\": records}}; run `tokfidelity build` again", ""
    note = ""
    if rebuilt is None:
        if meta.get("input_kind") != "generations":
            return None, ""  # a golden dataset: the engine's captured ids, no view between
        rebuilt = {NOT_RECORDED: meta.get("samples") if type(meta.get("samples")) is int else 0}
    if rebuilt.get(NOT_RECORDED):
        note = (f"; {rebuilt[NOT_RECORDED]} records record no view (generated or built before views were recorded): "
                f"taken as rebuilt through the manifest's view {assumed}")
    counts: dict[str, int] = {}
    for view, n in rebuilt.items():
        key = assumed if view == NOT_RECORDED else view
        counts[key] = counts.get(key, 0) + n
    unjudged = {v: n for v, n in sorted(counts.items()) if n and v not in judged}
    if not unjudged:
        return None, note
    what = ", ".join(f"{n} through view {v}" for v, n in unjudged.items())
    names = ", ".join(unjudged)
    return (f"{meta_path}: records rebuilt from the text of a view the gate of {dataset} did not judge ({what}; judged: "
            f"{', '.join(sorted(judged)) or 'none'}){note}. Judge the dataset under {names}: add {names} to the manifest's "
            f"api_views and run `{open_command}`; or build without those records (generate them through a judged view: "
            "--view-for PROVIDER=VIEW)"), note


_UNCHECKED = object()


def check_built_with(build_dir: Path, gated: Tokenizer, dataset: str, judged: frozenset[str] | None = None,
                     assumed_view: str = DEFAULT_VIEW, open_command: str = "", template_sha256: Any = _UNCHECKED) -> str:
    """The records must come from the tokenizer the gate of ``dataset`` verified, with the chat template it
    verified (``template_sha256``, the gate record's; not checked when not given), through views it judged
    (``judged``; None: not checked), and every file of the build folder must be the one ``tokfidelity build``
    wrote (sha256 and rows pinned in export.json, export.json itself sealed): ValueError naming the file
    otherwise. Returns what was verified (each file hashed once), to print."""
    meta_path = build_dir / EXPORT_META
    meta = _read_meta(meta_path)

    if meta.get("tokenizer_fingerprint") != gated.fingerprint:
        raise ValueError(
            f"{build_dir} was built with tokenizer {meta.get('tokenizer')!r} ({str(meta.get('tokenizer_fingerprint'))[:12]}), "
            f"but the gate of {dataset} verified {gated.name!r} ({gated.fingerprint[:12]}): rebuild with the verified tokenizer"
        )
    if template_sha256 is not _UNCHECKED and meta.get("template_sha256") != template_sha256:
        built, verified = (str(v)[:12] if v else "none" for v in (meta.get("template_sha256"), template_sha256))
        raise ValueError(
            f"{build_dir} was built with a chat template ({', '.join(meta.get('template_files') or {}) or 'none recorded'}, "
            f"content sha256 {built}) that is not the one the gate of {dataset} verified ({verified}): its prompt ids are "
            "unverified; rebuild with the verified tokenizer's files"
        )
    verified = _verify_files(build_dir, meta_path, meta.get("files"))
    note = ""
    if judged is not None:  # after the pins: the counts are those of the very train.jsonl the build wrote
        problem, note = _view_problem(meta_path, meta, judged, assumed_view, dataset, open_command)
        if problem:
            raise ValueError(problem)
    return f"verified {', '.join(verified)} against {meta_path} (each file hashed once){note}"


def gated_build(data: os.PathLike | str, tokenizer_spec: str, status: Any, assumed_view: str = DEFAULT_VIEW) -> tuple[Path, Path, str]:
    """(train.jsonl, build folder, what was verified) of ``--data``, checked against the open gate ``status``
    (a GateStatus: its tokenizer, chat template and judged views; ``assumed_view`` for records that record
    none) and the file pins of export.json; ValueError naming the problem."""
    from ..core.tokenizer import load_tokenizer

    train, build_dir = data_paths(data)
    if train.name != TRAIN_FILE:
        raise ValueError(f"--data {data}: expected a `tokfidelity build` --out folder or the {TRAIN_FILE} in it")
    note = check_built_with(build_dir, load_tokenizer(tokenizer_spec), status.dataset, status.views, assumed_view,
                            status.open_command, status.template_sha256)
    return train, build_dir, note
