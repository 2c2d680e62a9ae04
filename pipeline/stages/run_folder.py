"""A stage's output folder belongs to one set of settings: ``run.json`` says which, and a later run must agree.

``claim_run_folder(out_dir, run_info, keys)`` writes ``run.json`` on the first run (atomically, with
the API key masked); on a later run it compares the ``keys`` that decide what the records mean
(dataset, profile, tokenizer fingerprint, model, and the view each provider serves with) and raises ``RunFolderMismatch`` when any differ,
so records made two ways never mix in one folder.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..core.errors import TokfidelityError
from ..core.files import atomic_write
from .secrets import KeyMask

__all__ = ["RunFolderMismatch", "claim_run_folder", "RUN_FILE", "GENERATE_KEYS"]

RUN_FILE = "run.json"
GENERATE_KEYS = ("dataset", "profile", "tokenizer_fingerprint", "model", "view_for")  # what a generation record means
# Keys later versions added: a run.json written before holds none, and means this.
_ABSENT = {"view_for": {}}


class RunFolderMismatch(TokfidelityError, ValueError):
    """The folder holds records made with other settings, or a run.json that cannot be read."""


def claim_run_folder(out_dir: Path, run_info: Mapping[str, Any], keys: Sequence[str], mask: KeyMask = KeyMask(None)) -> Path:
    """Write ``out_dir/run.json`` the first time; afterwards require it to agree on ``keys``."""
    run_path = out_dir / RUN_FILE
    if not run_path.exists():
        out_dir.mkdir(parents=True, exist_ok=True)
        return atomic_write(run_path, mask.text(json.dumps(dict(run_info), indent=2) + "\n"))  # never half a run.json
    try:
        previous = json.loads(run_path.read_text(encoding="utf-8"))
    except (ValueError, RecursionError):  # not JSON, not UTF-8, or nested past the parser's depth
        previous = None
    if not isinstance(previous, dict):
        raise RunFolderMismatch(
            f"{run_path} is not readable as a JSON object, so the records in {out_dir} cannot be matched to this run; "
            "restore it, or use another --out folder",
        )
    differing = [k for k in keys if previous.get(k, _ABSENT.get(k)) != run_info[k]]
    if differing:
        raise RunFolderMismatch(
            f"{out_dir} holds generations made with other settings "
            f"({', '.join(f'{k}: {previous.get(k, _ABSENT.get(k))!r} now {run_info[k]!r}' for k in differing)}); "
            "use another --out folder so the two runs do not mix"
        )
    return run_path
