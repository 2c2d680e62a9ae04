"""Whole-file writes: a reader, or a process killed mid-write, sees the old file or the new one, never half.

``atomic_write(path, text)`` writes to a temporary file in the same folder (a unique name: two
writers never share one) and renames it over ``path``. ``atomic_path(path)`` gives that temporary
path to a writer that needs a file name (safetensors, a tokenizer's ``save``). A failure removes
the temporary file and leaves ``path`` as it was.

``open_input(path)`` opens a file tokfidelity reads, refusing, before a byte is read, what is not a
regular file: a FIFO would block the reader forever, a device (``/dev/zero``) never end. Every input
file (samples, manifests, prompts, records, pinned files) is opened through it or ``read_input``.
"""

from __future__ import annotations

import errno
import os
import stat
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = ["NotARegularFile", "atomic_path", "atomic_write", "cache_root", "open_input", "out_folder_problem", "read_input"]


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


class NotARegularFile(OSError):
    """An input path that is a FIFO, a device or a socket (``strerror`` says which)."""


_KINDS = ((stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
          (stat.S_ISSOCK, "a socket"))


def open_input(path: os.PathLike | str):
    """``open(path, "rb")``, but a folder raises IsADirectoryError and a FIFO, device or socket raises
    NotARegularFile, both before anything is read (a FIFO is opened without waiting for a writer)."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        mode = os.fstat(fd).st_mode
        if stat.S_ISDIR(mode):
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(path))
        if not stat.S_ISREG(mode):
            kind = next((name for test, name in _KINDS if test(mode)), "not a regular file")
            raise NotARegularFile(errno.EINVAL, f"is {kind}, not a regular file; give a file", str(path))
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_input(path: os.PathLike | str) -> bytes:
    """The bytes of an input file (``open_input``'s checks first)."""
    with open_input(path) as f:
        return f.read()
