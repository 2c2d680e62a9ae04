"""Whole-file writes: a reader, or a process killed mid-write, sees the old file or the new one, never half.

``atomic_write(path, text)`` writes to a temporary file in the same folder (a unique name: two
writers never share one) and renames it over ``path``. ``atomic_path(path)`` gives that temporary
path to a writer that needs a file name (safetensors, a tokenizer's ``save``). A failure removes
the temporary file and leaves ``path`` as it was.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = ["atomic_path", "atomic_write", "cache_root", "out_folder_problem"]


def cache_root() -> Path:
    """Where tokfidelity keeps what it rebuilds once (GGUF tokenizers, converted model folders,
    downloaded encodings): ``$TOKFIDELITY_CACHE_DIR``, default ``~/.cache/tokfidelity``."""
    return Path(os.environ.get("TOKFIDELITY_CACHE_DIR") or Path.home() / ".cache" / "tokfidelity")


@contextmanager
def atomic_path(path: os.PathLike | str) -> Iterator[Path]:
    """A fresh temporary path beside ``path``; renamed over ``path`` when the block ends without error."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        yield Path(tmp)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def atomic_write(path: os.PathLike | str, data: str | bytes, *, mkdir: bool = False) -> Path:
    """Write ``data`` (text as UTF-8, or bytes) to ``path`` in one rename. ``mkdir``: create the folder first."""
    path = Path(path)
    if mkdir:
        path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(path) as tmp:
        tmp.write_bytes(data.encode("utf-8") if isinstance(data, str) else data)
    return path


def out_folder_problem(out: os.PathLike | str, what: str = "a folder (created when missing)") -> str | None:
    """Why ``--out`` cannot be used as an output folder (it is a file), or None when it can."""
    out = Path(out)
    if out.exists() and not out.is_dir():
        return f"--out {out} is a file; give {what}"
    return None
