"""One run at a time per output folder: an exclusive ``flock`` on a lock file inside it.

``with folder_lock(out_dir, "generate"):`` holds ``out_dir/.tokfidelity.lock`` for the whole run;
a second run into the same folder gets ``FolderBusy`` at once, naming the holder (pid, host, start
time, command), before it reads, sends or writes anything. The kernel drops the lock when the
holder exits, ``kill -9`` included, so a stale lock file never blocks the next run.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from ..core.errors import TokfidelityError

__all__ = ["FolderBusy", "folder_lock", "LOCK_FILE"]

LOCK_FILE = ".tokfidelity.lock"


class FolderBusy(TokfidelityError, RuntimeError):
    """Another process holds the folder's lock."""

    def __init__(self, folder: Path, holder: dict):
        self.folder = folder
        self.holder = holder
        who = (
            f"pid {holder.get('pid', '?')} on host {holder.get('host', '?')}, "
            f"{holder.get('command', 'a run')} started {holder.get('started', '?')}"
        )
        super().__init__(
            f"{folder} is in use by another run ({who}); wait for it to finish (or stop it), "
            "or give another --out folder: two runs into one folder would pay for the same samples twice"
        )


def _holder(fd: int) -> dict:
    try:
        data = json.loads(os.pread(fd, 4096, 0) or b"{}")
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


@contextmanager
def folder_lock(folder: os.PathLike | str, command: str) -> Iterator[Path]:
    """Hold the folder's exclusive lock (creating the folder); raise FolderBusy when another run has it."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / LOCK_FILE
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise FolderBusy(folder, _holder(fd)) from None
        info = {"pid": os.getpid(), "host": socket.gethostname(), "command": f"tokfidelity {command}",
                "started": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
        os.ftruncate(fd, 0)
        os.pwrite(fd, (json.dumps(info) + "\n").encode(), 0)
        yield path
    finally:
        os.close(fd)  # releases the lock
