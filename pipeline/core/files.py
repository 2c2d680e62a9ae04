"""Whole-file writes: a reader, or a process killed mid-write, sees the old file or the new one, never half.

``atomic_write(path, text)`` writes to a temporary file in the same folder (a unique name: two
writers never share one; mode 0666 less the umask, as any new file) and renames it over ``path``.
``atomic_path(path)`` gives that temporary path to a writer that needs a file name (safetensors, a
tokenizer's ``save``). A failure removes the temporary file, leaves ``path`` as it was and names
``path`` (not the temporary file) in the OSError; ``os_error_message`` says it in one line.

``open_input(path)`` opens a file tokfidelity reads, refusing, before a byte is read, what is not a
regular file: a FIFO would block the reader forever, a device (``/dev/zero``) never end. Every input
file (samples, manifests, prompts, records, pinned files) is opened through it or ``read_input``.
"""

from __future__ import annotations

import errno
import json
import os
import secrets
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

__all__ = ["NotARegularFile", "atomic_path", "atomic_write", "cache_root", "open_input", "os_error_message", "out_folder_problem",
           "read_input"]


def cache_root() -> Path:
    """Where tokfidelity keeps what it rebuilds once (GGUF tokenizers, converted model folders,
    downloaded encodings): ``$TOKFIDELITY_CACHE_DIR``, default ``~/.cache/tokfidelity``."""
    return Path(os.environ.get("TOKFIDELITY_CACHE_DIR") or Path.home() / ".cache" / "tokfidelity")


def _create_temporary(path: Path) -> Path:
    """A new, empty file beside ``path`` under a unique name, with the mode any new file gets here
    (0666 less the umask, as ``open`` gives: not mkstemp's 0600, so a record or report is as readable
    as the user's umask says)."""
    for _ in range(100):
        tmp = path.parent / f".{path.name}.{secrets.token_hex(6)}.tmp"
        try:
            os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
        except FileExistsError:  # another writer drew the same name: draw again
            continue
        except OSError as e:  # named after the file meant, not its temporary name
            raise OSError(e.errno, e.strerror, str(path)) from None
        return tmp
    raise FileExistsError(f"{path.parent}: no free temporary name for {path.name} after 100 tries")


@contextmanager
def atomic_path(path: os.PathLike | str) -> Iterator[Path]:
    """A fresh temporary path beside ``path``; renamed over ``path`` when the block ends without error."""
    path = Path(path)
    tmp = _create_temporary(path)
    try:
        yield Path(tmp)
        os.replace(tmp, path)
    except OSError as e:  # a full disk, a read-only folder...: named after the file meant, not its temporary name
        tmp.unlink(missing_ok=True)
        if e.filename in (None, str(tmp), tmp) and e.errno is not None:  # a write to the temporary file names none
            raise OSError(e.errno, e.strerror, str(path)) from None
        raise
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def os_error_message(e: OSError) -> str:
    """One line for a failed file operation: the file, what the system said, and what to do next."""
    where = e.filename2 if e.filename2 is not None else e.filename
    code = errno.errorcode.get(e.errno, "") if e.errno is not None else ""
    if e.errno in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG):
        advice = "the disk, a quota or the file-size limit is full: free space (or raise the limit) and run the same command again"
    elif e.errno in (errno.EACCES, errno.EPERM) and where is not None and os.path.isfile(where) and not os.access(where, os.R_OK):
        advice = "it cannot be read by this user: make it readable, or move it away"
    elif e.errno in (errno.EROFS, errno.EACCES, errno.EPERM):
        advice = "it is not writable here: make it writable, or give another folder"
    elif e.errno == errno.ENOTDIR:
        advice = "a part of that path is a file, not a folder: give another path"
    else:
        advice = "check the path and run the same command again"
    what = f"{e.strerror or e}" + (f" [{code}]" if code else "")
    return f"{where}: {what}; {advice}" if where is not None else f"{what}; {advice}"


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


def read_json_object(path: os.PathLike | str, remedy: str) -> dict:
    """The JSON object a tool of ours wrote at ``path``. ValueError naming the file and what is wrong with it
    (unreadable, not JSON, nested past the parser's depth, not an object), then ``remedy``: what to do."""
    try:
        data = json.loads(read_input(path).decode("utf-8"))
    except OSError as e:
        raise ValueError(f"{path}: cannot be read ({e.strerror or e})") from None
    except (ValueError, RecursionError) as e:  # not JSON, not UTF-8, or nested past the parser's depth
        raise ValueError(f"{path}: not valid JSON ({e or 'nested too deeply'}); {remedy}") from None
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a JSON object; {remedy}")
    return data
